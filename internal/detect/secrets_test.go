package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

// TestSecretsByIdentity: the same credential file under another name is
// a read of that secret, whether the session knew it from its start or
// from an open by its own name.
func TestSecretsByIdentity(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "the AWS credentials renamed into the workspace, then read",
			build: func(b *builder) {
				b.secrets = []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 2049, Ino: 77}}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "mv ~/.aws/credentials notes.txt && cat notes.txt")
				mv := ag.spawn(200, "t1", "/usr/bin/mv", "mv", home+"/.aws/credentials", proj+"/notes.txt")
				mv.rename(home+"/.aws/credentials", proj+"/notes.txt")
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat", "notes.txt")
				cat.openObj(proj+"/notes.txt", "read", 2049, 77)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "~/.aws/credentials") || !strings.Contains(fs[0].Detail, "the same file by another name") || fs[0].ToolCallID != "t1" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "an SSH key read by name, then through a hard link by its own client: not a client's read",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat ~/.ssh/id_ed25519 >/dev/null; ln ~/.ssh/id_ed25519 /tmp/k; ssh -i /tmp/k x")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.ssh/id_ed25519")
				cat.openObj(home+"/.ssh/id_ed25519", "read", 2049, 99)
				ssh := ag.spawn(201, "t1", "/usr/bin/ssh", "ssh", "-i", "/tmp/k", "x")
				ssh.openObj("/tmp/k", "read", 2049, 99)
			},
			want: []string{"high sensitive-read", "high sensitive-read"},
		},
		{
			name: "a directory given a removed credential file's inode number is nothing",
			build: func(b *builder) {
				b.secrets = []manifest.Secret{{Path: "/home/other/.pypirc", Dev: 2049, Ino: 77}}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "npm test")
				npm := ag.spawn(200, "t1", "/usr/bin/npm", "npm", "test")
				e := npm.openObj(home+"/.npm/_logs", "read", 2049, 77)
				e.Object.FileType = "dir"
			},
			want: nil,
		},
		{
			name: "an ordinary file with another identity is nothing",
			build: func(b *builder) {
				b.secrets = []manifest.Secret{{Path: home + "/.aws/credentials", Dev: 2049, Ino: 77}}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat notes.txt")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", "notes.txt")
				cat.openObj(proj+"/notes.txt", "read", 2049, 78)
			},
			want: nil,
		},
	})
}

// TestOtherEnviron: another process's environment is a secret read; a
// process's own is not.
func TestOtherEnviron(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "a tool call reads the agent's environment",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat /proc/$PPID/environ")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", "/proc/100/environ")
				cat.open("/proc/100/environ", "read")
				cat.open("/proc/200/environ", "read")
				cat.open("/proc/self/environ", "read")
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "environment of process 100") || fs[0].ToolCallID != "t1" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
	})
}

// TestClientAsOracle: a credential's own client asked to print it, or run
// with a library or a helper of the caller's choosing, is no client's use.
func TestClientAsOracle(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "git credential fill by a tool call; git's own helper under git-remote-https",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "printf 'protocol=https\\nhost=x\\n' | git credential fill")
				g := ag.spawn(200, "t1", "/usr/bin/git", "git", "credential", "fill")
				h := g.spawn(201, "", "/usr/bin/git", "git", "credential-store", "get")
				h.open(home+"/.git-credentials", "read")
				b.shell("t2", "git push")
				p := ag.spawn(300, "t2", "/usr/bin/git", "git", "push")
				r := p.spawn(301, "", "/usr/lib/git-core/git-remote-https", "git-remote-https", "origin", "https://x/r")
				h2 := r.spawn(302, "", "/usr/bin/git", "git", "credential-store", "get")
				h2.open(home+"/.git-credentials", "read")
			},
			want: []string{"high sensitive-read", "info sensitive-read"},
		},
		{
			name: "ssh run with LD_PRELOAD reads the key",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "LD_PRELOAD=./dump.so ssh host true")
				ssh := ag.spawn(200, "t1", "/usr/bin/ssh", "ssh", "host", "true")
				ssh.exec.Process.Env = []string{"LD_PRELOAD=./dump.so"}
				ssh.open(home+"/.ssh/id_ed25519", "read")
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "LD_PRELOAD") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "scp with a transport program of the caller's choosing",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "scp -S ./leak.sh f host:")
				scp := ag.spawn(200, "t1", "/usr/bin/scp", "scp", "-S", "./leak.sh", "f", "host:")
				scp.open(home+"/.ssh/id_ed25519", "read")
			},
			want: []string{"high sensitive-read"},
		},
		{
			// A client names no file when it uses its own credential: one
			// whose command names it is a reader for whoever named it.
			name: "git diff of the credential file, curl file:// of .netrc; git pull reads it as its own",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "git diff --no-index ~/.git-credentials /dev/null")
				g := ag.spawn(200, "t1", "/usr/bin/git", "git", "diff", "--no-index", home+"/.git-credentials", "/dev/null").home(home)
				g.open(home+"/.git-credentials", "read")
				b.shell("t2", "curl -s file://$HOME/.netrc")
				c := ag.spawn(300, "t2", "/usr/bin/curl", "curl", "-s", "file://"+home+"/.netrc").home(home)
				c.open(home+"/.netrc", "read")
				b.shell("t4", "ssh -i ~/.ssh/id_ed25519 host true")
				sh := ag.spawn(500, "t4", "/usr/bin/ssh", "ssh", "-i", home+"/.ssh/id_ed25519", "host", "true").home(home)
				sh.open(home+"/.ssh/id_ed25519", "read")
				b.shell("t5", "curl -s --netrc --resolve api.github.com:443:127.0.0.1 https://api.github.com/")
				cr := ag.spawn(600, "t5", "/usr/bin/curl", "curl", "-s", "--netrc", "--resolve", "api.github.com:443:127.0.0.1", "https://api.github.com/").home(home)
				cr.open(home+"/.netrc", "read")
				b.shell("t3", "git pull")
				p := ag.spawn(400, "t3", "/usr/bin/git", "git", "pull").home(home)
				h := p.spawn(401, "", "/usr/bin/git", "git", "credential-store", "get")
				h.open(home+"/.git-credentials", "read")
			},
			want: []string{"high sensitive-read", "high sensitive-read", "high sensitive-read", "info sensitive-read", "info sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "by name") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
	})
}

// TestSecretIdentityReused: an inode number freed when a credential file
// was replaced (an agent rewriting its config through a rename) and given
// to a workspace file later is no credential.
func TestSecretIdentityReused(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "the agent rewrites ~/.claude.json; its old inode number comes back as calc.sh",
			build: func(b *builder) {
				b.secrets = []manifest.Secret{{Path: home + "/.claude.json", Dev: 2049, Ino: 500}}
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.open(home+"/.claude.json.tmp.1", "write,create")
				ag.rename(home+"/.claude.json.tmp.1", home+"/.claude.json")
				b.tool("t1", transcript.KindEdit, proj+"/calc.sh")
				ag.inCall("t1").openObj(proj+"/calc.sh", "read", 2049, 500)
			},
			want: nil,
		},
	})
}

// TestSecretStorePrint: secrets that live in no file are read through
// their store's command line: keyctl print, secret-tool lookup.
func TestSecretStorePrint(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "keyctl print, secret-tool lookup; keyctl add and show are not reads",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "keyctl print $(keyctl search @u user tok)")
				ag.spawn(200, "t1", "/usr/bin/keyctl", "keyctl", "search", "@u", "user", "tok").exit(0)
				ag.spawn(201, "t1", "/usr/bin/keyctl", "keyctl", "print", "123456").exit(0)
				b.shell("t2", "secret-tool lookup service gh")
				ag.spawn(300, "t2", "/usr/bin/secret-tool", "secret-tool", "lookup", "service", "gh").exit(0)
				b.shell("t3", "keyctl show @u")
				ag.spawn(400, "t3", "/usr/bin/keyctl", "keyctl", "show", "@u").exit(0)
			},
			want: []string{"high sensitive-read", "high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "kernel keyring") || fs[0].ToolCallID != "t1" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
	})
}

package detect

import (
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestWhoseHome: credential and agent files are known under the HOME
// each process had, every /home/NAME and /root, not only the session's.
func TestWhoseHome(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "env -i HOME=/srv/ci: the subtree's home",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "env -i HOME=/srv/ci sh -c 'cat ~/.aws/credentials ~/.codex/auth.json'")
				sh := ag.spawn(200, "t1", "/usr/bin/dash", "sh", "-c", "cat ~/.aws/credentials ~/.codex/auth.json").home("/srv/ci")
				cat := sh.spawn(201, "", "/usr/bin/cat", "cat", "/srv/ci/.aws/credentials", "/srv/ci/.codex/auth.json")
				cat.open("/srv/ci/.aws/credentials", "read")
				cat.open("/srv/ci/.codex/auth.json", "read")
			},
			want: []string{"high sensitive-read", "high agent-config-read"},
		},
		{
			name: "the same reads with no HOME recorded: /srv/ci is no home",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat /srv/ci/.aws/credentials")
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat", "/srv/ci/.aws/credentials")
				cat.open("/srv/ci/.aws/credentials", "read")
			},
			want: nil,
		},
		{
			name: "another home's HOME does not leak to a sibling",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "HOME=/srv/a true")
				ag.spawn(200, "t1", "/usr/bin/true", "true").home("/srv/a")
				b.shell("t2", "cat /srv/b/.aws/credentials")
				cat := ag.spawn(201, "t2", "/usr/bin/cat", "cat", "/srv/b/.aws/credentials").home("/srv/b")
				cat.open("/srv/a/.aws/credentials", "read") // not its home
				cat.open("/srv/b/.aws/credentials", "read") // its home
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "/srv/b/") {
					t.Errorf("finding on %q, want /srv/b", fs[0].Title)
				}
			},
		},
		{
			name: "an account's home outside /home, read under another HOME",
			build: func(b *builder) {
				b.homes = []string{"/root", "/var/lib/jenkins", "/srv", "/srv/agent"}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "HOME=/tmp/decoy cat /var/lib/jenkins/.ssh/id_rsa /srv/agent/.aws/credentials /srv/agent/.codex/auth.json")
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat").home("/tmp/decoy")
				cat.open("/var/lib/jenkins/.ssh/id_rsa", "read")
				cat.open("/srv/agent/.aws/credentials", "read") // /srv/agent's, the longer home
				cat.open("/srv/agent/.codex/auth.json", "read")
				cat.open("/var/lib/other/.ssh/id_rsa", "read") // no account's home
			},
			want: []string{"high sensitive-read", "high sensitive-read", "high agent-config-read"},
		},
		{
			name: "the workspace is an account's home (useradd -d /srv/app app): its files are the project's",
			build: func(b *builder) {
				b.cwd = "/srv/app"
				b.homes = []string{"/root", "/srv/app"}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat .npmrc .claude/commands/x.md")
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat", ".npmrc", ".claude/commands/x.md")
				cat.open("/srv/app/.npmrc", "read")
				cat.open("/srv/app/.claude/commands/x.md", "read")
			},
			// a project's .npmrc is medium anywhere (the policy's
			// ".npmrc"); as the account's ~/.npmrc it would be high
			want: []string{"medium sensitive-read"},
		},
		{
			name: "sudo -u: another user's and root's keys",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat /home/other/.ssh/id_rsa /root/.ssh/id_ed25519")
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat")
				cat.open("/home/other/.ssh/id_rsa", "read")
				cat.open("/root/.ssh/id_ed25519", "read")
			},
			want: []string{"high sensitive-read", "high sensitive-read"},
		},
	})
}

// TestTrustByProgram: "its own client" is the program the kernel ran,
// installed before the session: never argv[0], a script's name, a copy
// in a temporary directory or the workspace, nor a client's child.
func TestTrustByProgram(t *testing.T) {
	creds := home + "/.aws/credentials"
	read := func(bin string, argv ...string) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", strings.Join(argv, " "))
			ag.spawn(200, "t1", bin, argv...).open(creds, "read")
		}
	}
	runCases(t, []ruleCase{
		{name: "the real aws", build: read("/usr/local/bin/aws", "aws", "s3", "ls"), want: []string{"info sensitive-read"}},
		{name: "exec -a aws cat", build: read("/usr/bin/cat", "aws", creds), want: []string{"high sensitive-read"}},
		{name: "python3 aws.py in the workspace", build: read("/usr/bin/python3", "python3", "aws.py"), want: []string{"high sensitive-read"}},
		{name: "a copy of cat in /tmp named aws", build: read("/tmp/aws", "aws", creds), want: []string{"high sensitive-read"}},
		{name: "git diff --no-index reads a key", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "git diff --no-index /dev/null ~/.ssh/id_rsa")
			ag.spawn(200, "t1", "/usr/bin/git", "git", "diff", "--no-index", "/dev/null", home+"/.ssh/id_rsa").open(home+"/.ssh/id_rsa", "read")
		}, want: []string{"high sensitive-read"}},
		{name: "ssh reads its key", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "git fetch")
			g := ag.spawn(200, "t1", "/usr/bin/git", "git", "fetch")
			g.spawn(201, "", "/usr/bin/ssh", "ssh", "git@example.com").open(home+"/.ssh/id_rsa", "read")
		}, want: []string{"info sensitive-read"}},
		{name: "./aws.py through its #! line", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "./aws.py")
			ag.spawn(200, "t1", "/usr/bin/python3", "/usr/bin/python3", "./aws.py").script(proj+"/aws.py").open(creds, "read")
		}, want: []string{"high sensitive-read"}},
		{name: "an aws the session wrote", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "cp /bin/cat /opt/tools/aws && /opt/tools/aws ~/.aws/credentials")
			cp := ag.spawn(200, "t1", "/usr/bin/cp", "cp", "/bin/cat", "/opt/tools/aws")
			cp.open("/opt/tools/aws", "write,create")
			ag.spawn(201, "t1", "/opt/tools/aws", "aws", creds).open(creds, "read")
		}, want: []string{"high sensitive-read", "high write-then-exec"}},
		{name: "the real aws's child is not aws", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "aws configure")
			aws := ag.spawn(200, "t1", "/usr/local/bin/aws", "aws", "configure")
			aws.spawn(201, "", "/usr/bin/cat", "cat", creds).open(creds, "read")
		}, want: []string{"high sensitive-read"}},
		{name: "npm run through node is npm", build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "npm whoami")
			ag.spawn(200, "t1", "/usr/bin/node", "npm", "/usr/lib/node_modules/npm/bin/npm-cli.js", "whoami").open(home+"/.npmrc", "read")
		}, want: []string{"info sensitive-read"}},
	})
}

// TestWorkspaceUnderTmp: a project under /tmp is the workspace, not
// scratch: its edits count for claims and its scripts are no temporary
// files.
func TestWorkspaceUnderTmp(t *testing.T) {
	const ws = "/tmp/x/project"
	runCases(t, []ruleCase{
		{
			name: "sed -i fixed the lint errors",
			build: func(b *builder) {
				b.cwd = ws
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "sed -i 's/  / /' src/app.py")
				sed := ag.spawn(200, "t1", "/usr/bin/sed", "sed", "-i", "s/  / /", "src/app.py")
				sed.open(ws+"/src/sedAbc123", "write,create")
				sed.rename(ws+"/src/sedAbc123", ws+"/src/app.py")
				b.wait(time.Second)
				b.claim(transcript.ClaimEdited, "I fixed the lint errors.", "")
			},
			want: nil,
		},
		{
			name: "nothing written: the claim is still checked",
			build: func(b *builder) {
				b.cwd = ws
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo done > /tmp/scratch.txt")
				ag.spawn(200, "t1", "/usr/bin/dash", "sh", "-c", "echo done > /tmp/scratch.txt").open("/tmp/scratch.txt", "write,create")
				b.wait(time.Second)
				b.claim(transcript.ClaimEdited, "I fixed the lint errors.", "")
			},
			want: []string{"medium claim-edit-mismatch"},
		},
		{
			name: "a script the agent wrote there and ran is no temporary file",
			build: func(b *builder) {
				b.cwd = ws
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "printf '#!/bin/sh\\necho hi\\n' > run.sh && sh run.sh")
				sh := ag.spawn(200, "t1", "/usr/bin/dash", "sh", "-c", "printf x > run.sh && sh run.sh")
				sh.open(ws+"/run.sh", "write,create")
				sh.spawn(201, "", "/usr/bin/dash", "sh", "run.sh").open(ws+"/run.sh", "read")
			},
			want: []string{"low write-then-exec"},
			check: func(t *testing.T, fs []Finding) {
				if strings.Contains(fs[0].Detail, "temporary") {
					t.Errorf("detail %q calls the workspace temporary", fs[0].Detail)
				}
			},
		},
		{
			name: "the git top level above the cwd is the workspace",
			build: func(b *builder) {
				b.cwd = ws + "/sub"
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t0", "git status")
				ag.spawn(199, "t0", "/usr/bin/git", "git", "status").open(ws+"/.git/HEAD", "read")
				b.shell("t1", "sed -i s/a/b/ ../README.md")
				ag.spawn(200, "t1", "/usr/bin/sed", "sed", "-i", "s/a/b/", "../README.md").open(ws+"/README.md", "write")
				b.wait(time.Second)
				b.claim(transcript.ClaimEdited, "I updated the docs.", "")
			},
			want: nil,
		},
		{
			name: "without the git top level, a write above the cwd in /tmp is scratch",
			build: func(b *builder) {
				b.cwd = ws + "/sub"
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "sed -i s/a/b/ ../README.md")
				ag.spawn(200, "t1", "/usr/bin/sed", "sed", "-i", "s/a/b/", "../README.md").open(ws+"/README.md", "write")
				b.wait(time.Second)
				b.claim(transcript.ClaimEdited, "I updated the docs.", "")
			},
			want: []string{"medium claim-edit-mismatch"},
		},
	})
}

package detect

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSensitiveRead runs the sensitive-read cases.
func TestSensitiveRead(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "tool call reads cloud credentials",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat ~/.aws/credentials")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.aws/credentials")
				cat.open(home+"/.aws/credentials", "read")
				cat.exit(0)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				want := Frameworks{ATTACK: []string{"T1552.001"}, ATLAS: []string{"AML.T0055"}, OWASPLLM: []string{"LLM02"}, SAIF: []string{"Sensitive Data Disclosure"}}
				if f.ToolCallID != "t1" || !strings.Contains(f.Title, "~/.aws/credentials") || !slices.Equal(f.Frameworks.ATLAS, want.ATLAS) || !slices.Equal(f.Frameworks.ATTACK, want.ATTACK) {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "own client and the agent itself: info",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/gemini")
				ag.open(proj+"/.env", "read") // Gemini CLI loads .env for its key
				b.shell("t1", "npm test")
				npm := ag.spawn(200, "t1", "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "test")
				npm.open(home+"/.npmrc", "read")
				npm.open(proj+"/src/a.test.js", "read")
				b.wait(time.Second)
				npm.exit(0)
			},
			want: []string{"info sensitive-read", "info sensitive-read"},
		},
		{
			name: "unattributed process reads root's key; .env read by a call",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				py := b.stranger(300, "/usr/bin/python3", "python3", "/tmp/x.py")
				py.open("/root/.ssh/id_ed25519", "read")
				py.open("/root/.ssh/known_hosts", "read")
				py.open("/root/.ssh/id_ed25519.pub", "read")
				b.shell("t1", "cat .env")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", ".env")
				cat.open(proj+"/.env", "read")
				cat.open(proj+"/.env.example", "read")
			},
			want: []string{"high sensitive-read", "medium sensitive-read", "medium unattributed-activity"},
			check: func(t *testing.T, fs []Finding) {
				if fs[0].ToolCallID != "" || !strings.Contains(fs[0].Detail, "unattributed") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "its client reads it, then cat in the same call: the client's read hides nothing",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "aws sts get-caller-identity; cat ~/.aws/credentials")
				aws := ag.spawn(200, "t1", "/usr/local/bin/aws", "aws", "sts", "get-caller-identity")
				aws.open(home+"/.aws/credentials", "read")
				aws.exit(0)
				cat := ag.spawn(201, "t1", "/usr/bin/cat", "cat", home+"/.aws/credentials")
				cat.open(home+"/.aws/credentials", "read")
				cat.exit(0)
			},
			want: []string{"high sensitive-read", "info sensitive-read"},
		},
		{
			name: "browser cookies",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/codex")
				b.shell("t1", "sqlite3 ~/.config/google-chrome/Default/Cookies .dump")
				s := ag.spawn(200, "t1", "/usr/bin/sqlite3", "sqlite3", home+"/.config/google-chrome/Default/Cookies", ".dump")
				s.open(home+"/.config/google-chrome/Default/Cookies", "read")
			},
			want: []string{"high sensitive-read"},
		},
	})
}

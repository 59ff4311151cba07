package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestClaimEditMismatch runs the claim-edit-mismatch cases. It is one long table of cases,
// each a short session, so it runs past 80 lines.
func TestClaimEditMismatch(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "claimed edit never written",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindRead, proj+"/src/app.py")
				ag.inCall("t1").open(proj+"/src/app.py", "read")
				b.claim(transcript.ClaimEdited, "I've updated `src/app.py` to validate input.", "src/app.py")
			},
			want: []string{"medium claim-edit-mismatch"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; !strings.Contains(f.Title, "src/app.py") || f.Claim == "" {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "write failed",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindWrite, "/etc/app.conf")
				ag.inCall("t1").openFail("/etc/app.conf", "write,create", 13)
				b.claim(transcript.ClaimCreated, "Created `/etc/app.conf`.", "/etc/app.conf", "t1")
			},
			// The refused write into /etc is an attempt on the system's
			// configuration too (persistence, rule_persistence.go).
			want: []string{"medium claim-edit-mismatch", "medium persistence"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "claim-edit-mismatch"); !strings.Contains(f.Detail, "error 13") || len(f.Evidence) != 1 {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "edit through a temporary file and rename",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.tool("t1", transcript.KindEdit, proj+"/README.md")
				ag.inCall("t1").open(proj+"/README.md.tmp.1", "write,create")
				ag.inCall("t1").rename(proj+"/README.md.tmp.1", proj+"/README.md")
				b.claim(transcript.ClaimEdited, "Updated README.md with the new flags.", "README.md", "t1")
			},
			want: nil,
		},
		{
			name: "vague claim, nothing written",
			build: func(b *builder) {
				b.agent(100, "/usr/local/bin/claude")
				b.claim(transcript.ClaimCreated, "The project has been created.", "")
			},
			want: []string{"medium claim-edit-mismatch"},
		},
		{
			name: "deleted, and it was",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "rm old.js")
				rm := ag.spawn(200, "t1", "/usr/bin/rm", "rm", "old.js")
				rm.unlink(proj + "/old.js")
				rm.exit(0)
				b.claim(transcript.ClaimDeleted, "I've deleted old.js.", "old.js", "t1")
			},
			want: nil,
		},
		{
			name: "deleted, but it was not",
			build: func(b *builder) {
				b.agent(100, "/usr/local/bin/claude")
				b.claim(transcript.ClaimDeleted, "I've deleted `old.js`.", "old.js")
			},
			want: []string{"medium claim-edit-mismatch"},
		},
		{
			name: "files written that nothing mentions",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 gen.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "gen.py")
				py.open(proj+"/gen.py", "read")
				py.open(proj+"/out/report.csv", "write,create")
				py.open(proj+"/__pycache__/gen.cpython-312.pyc", "write,create")
				py.open("/tmp/scratch", "write,create")
				py.exit(0)
			},
			want: []string{"low claim-edit-mismatch"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "t1" || !strings.Contains(f.Detail, "out/report.csv") || strings.Contains(f.Detail, "pyc") || strings.Contains(f.Detail, "scratch") {
					t.Errorf("finding %+v", f)
				}
			},
		},
	})
}

// TestClaimPaths checks which words of a claim name files.
func TestClaimPaths(t *testing.T) {
	tests := []struct {
		subject string
		want    []string
	}{
		{"src/app.py", []string{"src/app.py"}},
		{"main.go README.md", []string{"main.go", "README.md"}},
		{"config.Load", nil},
		{"fmt.Println", nil},
		{".gitignore", []string{".gitignore"}},
		{"1.2.3", nil},
		{"https://example.com/x.js", nil},
		{"lib/", []string{"lib/"}},
		{"`./cmd/polygraph/main.go`,", []string{"./cmd/polygraph/main.go"}},
	}
	for _, tt := range tests {
		if got := claimPaths(tt.subject); !slices.Equal(got, tt.want) {
			t.Errorf("claimPaths(%q) = %q, want %q", tt.subject, got, tt.want)
		}
	}
}

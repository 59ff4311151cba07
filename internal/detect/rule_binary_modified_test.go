package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/integrity"
)

// TestBinaryModified runs the binary-modified cases.
func TestBinaryModified(t *testing.T) {
	dpkgTrue := integrity.Verdict{Role: integrity.RoleBinary, Path: "/tmp/x/true", SHA256: "aa", MD5: "bb",
		Status: integrity.Modified, Source: integrity.SourceDpkg, Package: "coreutils", Of: "/usr/bin/true",
		Expected: "7a52c94ace40d9c052cf40f3541637c3", ExpectedAlgo: "md5"}
	seen := integrity.Verdict{Role: integrity.RoleBinary, Path: "/home/dev/.local/bin/tool", SHA256: "cc",
		Status: integrity.Modified, Source: integrity.SourceFirstSeen, Expected: "dd", ExpectedAlgo: "sha256"}
	verified := integrity.Verdict{Role: integrity.RoleBinary, Path: "/usr/bin/ls", Status: integrity.Verified, Source: integrity.SourceDpkg}
	runCases(t, []ruleCase{
		{
			name: "dpkg mismatch, run twice, one finding on the first call",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "true")
				ag.spawn(200, "t1", "/tmp/x/true", "true").judged(dpkgTrue, nil).exit(0)
				b.shell("t2", "true")
				ag.spawn(201, "t2", "/tmp/x/true", "true").judged(dpkgTrue, nil).exit(0)
				ag.spawn(202, "t2", "/usr/bin/ls", "ls").judged(verified, nil).exit(0)
			},
			want: []string{"high binary-modified"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "t1" || len(f.Evidence) != 2 || !strings.Contains(f.Detail, dpkgTrue.Expected) ||
					!strings.Contains(f.Detail, "coreutils") || !strings.Contains(f.Title, "/usr/bin/true") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "first-seen mismatch is medium",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "tool")
				ag.spawn(200, "t1", seen.Path, "tool").judged(seen, nil)
			},
			want: []string{"medium binary-modified"},
		},
		{
			name: "a modified script",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 x.py")
				s := integrity.Verdict{Role: integrity.RoleScript, Path: proj + "/x.py", Status: integrity.Modified,
					Source: integrity.SourcePin, Expected: "ee", ExpectedAlgo: "sha256", SHA256: "ff"}
				ag.spawn(200, "t1", "/usr/bin/python3.11", "python3", "x.py").judged(verified, &s)
			},
			want: []string{"high binary-modified"},
		},
		{
			name: "no verdicts (an older session)",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "true")
				ag.spawn(200, "t1", "/tmp/x/true", "true")
			},
		},
	})
}

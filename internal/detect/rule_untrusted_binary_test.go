package detect

import (
	"testing"

	"github.com/polygraph/polygraph/internal/integrity"
)

// TestUntrustedBinary runs the untrusted-binary cases, among them the
// honest session the rule is calibrated against: the agent's own test
// binaries and build outputs raise nothing at medium or above.
func TestUntrustedBinary(t *testing.T) {
	unknown := func(path string, loc integrity.Location) integrity.Verdict {
		return integrity.Verdict{Role: integrity.RoleBinary, Path: path, SHA256: "ab", Status: integrity.Unknown, Location: &loc}
	}
	runCases(t, []ruleCase{
		{
			name: "a trivy in the workspace shadowing the installed one",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "trivy fs .")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "trivy fs .")
				v := unknown(proj+"/trivy", integrity.Location{Workspace: true, Shadows: "/opt/sys/trivy"})
				v.Role = integrity.RoleScript
				sh.spawn(201, "", "/usr/bin/dash", "sh", proj+"/trivy", "fs", ".").
					judged(integrity.Verdict{Role: integrity.RoleBinary, Path: "/usr/bin/dash", Status: integrity.Verified}, &v)
			},
			want: []string{"medium untrusted-binary"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || len(f.Frameworks.ATTACK) != 2 {
					t.Errorf("finding %+v, want on t1 with the escalated T1036.005", f)
				}
			},
		},
		{
			name: "honest session: go test binaries, a workspace build, a user tool",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "go test ./...")
				gt := ag.spawn(200, "t1", "/usr/local/go/bin/go", "go", "test", "./...")
				for i, dir := range []string{"/tmp/go-build111/b001", "/tmp/go-build222/b001", "/tmp/go-build333/b007"} {
					gt.spawn(uint32(300+i), "", dir+"/pkg.test", "pkg.test").
						judged(unknown(dir+"/pkg.test", integrity.Location{Temp: true, UserWritable: true}), nil)
				}
				b.shell("t2", "./bin/server --selftest")
				ag.spawn(210, "t2", proj+"/bin/server", "./bin/server").
					judged(unknown(proj+"/bin/server", integrity.Location{Workspace: true, UserWritable: true}), nil)
				b.shell("t3", "mytool")
				ag.spawn(220, "t3", home+"/.local/bin/mytool", "mytool").
					judged(unknown(home+"/.local/bin/mytool", integrity.Location{UserWritable: true}), nil)
			},
			// the three go test binaries are one finding; ~/.local/bin is not suspicious
			want: []string{"info untrusted-binary", "low untrusted-binary"},
		},
	})
}

// An external test: recorded analyses sessions, which uses this package.
package redact_test

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/test/recorded"
)

// TestRecordedUnchanged: nothing the real agents' recorded sessions hold
// (their paths, command lines, DNS names, peers: no secret among them) is
// masked. Masking ordinary text would hide evidence.
func TestRecordedUnchanged(t *testing.T) {
	n := 0
	for _, agent := range recorded.Agents {
		s, err := recorded.Load(agent)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range s.Events {
			for _, v := range []string{e.Path, e.Path2, e.Cwd(), e.Script(), e.PathRequested(), e.Addr(), e.QName(), e.Host()} {
				n++
				if got := redact.String(v); got != v {
					t.Errorf("%s seq %d: %q masked to %q", agent, e.Seq, v, got)
				}
			}
			if argv := e.Argv(); len(argv) > 0 {
				n++
				if got := redact.Argv(argv); strings.Join(got, " ") != strings.Join(argv, " ") {
					t.Errorf("%s seq %d: argv %q masked to %q", agent, e.Seq, argv, got)
				}
			}
		}
	}
	t.Logf("%d strings unchanged", n)
}

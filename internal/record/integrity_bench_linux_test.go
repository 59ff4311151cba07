package record

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// stormScript is the bench's exec storm: 2,000 runs of /bin/true.
const stormScript = `i=0; while [ $i -lt 2000 ]; do /bin/true; i=$((i+1)); done`

// BenchmarkExecStormIntegrity records the exec storm with integrity
// checking on and off, beside the bare command, so that what hashing and
// judging every exec costs shows as the difference of the two recorded
// runs (sensor load and session close are in both). It reports the
// whole recording (ns/op), the session's own span (session-ms, from
// creating it to closing it, which includes draining the integrity
// queue) and, with checking on, how many execs got a verdict that is not
// "unavailable" (a full queue refuses execs rather than slow the tree).
func BenchmarkExecStormIntegrity(b *testing.B) {
	testenv.RequireRoot(b)
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command("sh", "-c", stormScript).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, tc := range []struct {
		name string
		off  bool
	}{{"integrity-off", true}, {"integrity-on", false}} {
		b.Run(tc.name, func(b *testing.B) {
			var cmdNS time.Duration
			var judged, verdicts int
			for b.Loop() {
				res, err := Record(context.Background(), Options{Home: b.TempDir(), Mode: "run",
					Command: []string{"sh", "-c", stormScript}, NoIntegrity: tc.off})
				testenv.Feature(b, "BPF sensor", err)
				r, err := session.Open(res.Meta.Path)
				if err != nil {
					b.Fatal(err)
				}
				cmdNS += r.Meta().EndedAt.Sub(r.Meta().StartedAt)
				vs, err := r.Verdicts()
				if err != nil {
					b.Fatal(err)
				}
				for _, v := range vs {
					verdicts++
					if v.Status != "unavailable" {
						judged++
					}
				}
				r.Close()
			}
			b.ReportMetric(float64(cmdNS.Milliseconds())/float64(b.N), "session-ms")
			if !tc.off {
				b.ReportMetric(float64(verdicts)/float64(b.N), "verdicts/op")
				b.ReportMetric(float64(judged)/float64(max(verdicts, 1))*100, "judged-%")
			}
		})
	}
}

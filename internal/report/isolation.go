package report

import (
	"fmt"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// writeIsolation adds an isolated session's lines to the summary: what
// was enforced, what was refused or killed, and the tree's resources.
func writeIsolation(b *strings.Builder, iso *manifest.Isolation) {
	if iso == nil {
		return
	}
	fmt.Fprintf(b, "  isolation  %d paths masked, %d egress entries allowed", len(iso.Masked), len(iso.Egress))
	if iso.PIDNamespace {
		b.WriteString(", own PID namespace")
	}
	if iso.MemoryMax > 0 {
		fmt.Fprintf(b, ", memory ≤ %s", human.Bytes(iso.MemoryMax))
	}
	if iso.PidsMax > 0 {
		fmt.Fprintf(b, ", pids ≤ %d", iso.PidsMax)
	}
	b.WriteString("\n")
	if len(iso.Removed) > 0 {
		fmt.Fprintf(b, "             removed at start (left by killed sessions): %s\n", listed(textsafe.Lines(iso.Removed), 4))
	}
	if len(iso.Denied) > 0 {
		var dests []string
		var n uint64
		for _, d := range iso.Denied {
			n += d.Count
			dest := d.Dest
			if dest == "" {
				dest = "raw/ICMP socket"
			}
			dests = append(dests, d.Hook+" "+dest)
		}
		fmt.Fprintf(b, "  refused    %d network attempts: %s\n", n, listed(dests, 5))
	}
	for _, k := range iso.Killed {
		if k.What == "unix" || k.What == "fifo" {
			how := map[string]string{"unix": "connected to", "fifo": "opened a FIFO held by"}[k.What]
			fmt.Fprintf(b, "  killed     pid %d by the edge gate (it %s %s, pid %d, outside the session)\n",
				k.PID, how, textsafe.Line(k.Path), k.Target)
			continue
		}
		fmt.Fprintf(b, "  killed     pid %d by a kill rule (%s %s)\n", k.PID, k.What, textsafe.Line(k.Path))
	}
	if len(iso.Gated) > 0 {
		var wait time.Duration
		var stopped []string
		for _, g := range iso.Gated {
			wait += time.Duration(g.WaitNS)
			if !g.Allowed {
				stopped = append(stopped, fmt.Sprintf("%s (%s)", textsafe.Line(g.Path), g.Status))
			}
		}
		fmt.Fprintf(b, "  exec gate  %d execs judged, mean wait %v", len(iso.Gated), (wait / time.Duration(len(iso.Gated))).Round(time.Microsecond))
		if len(stopped) > 0 {
			fmt.Fprintf(b, "; killed: %s", listed(stopped, 4))
		}
		b.WriteString("\n")
	}
	if u := iso.Usage; u != nil {
		fmt.Fprintf(b, "  resources  cpu %v user, %v system; memory peak %s; io %s read, %s written; pids peak %d\n",
			time.Duration(u.CPUUserNS).Round(time.Millisecond), time.Duration(u.CPUSystemNS).Round(time.Millisecond),
			human.Bytes(u.MemoryPeak), human.Bytes(u.IORead), human.Bytes(u.IOWrite), u.PidsPeak)
		if len(u.Missing) > 0 {
			fmt.Fprintf(b, "             not accounted here: %s\n", strings.Join(u.Missing, ", "))
		}
	}
}

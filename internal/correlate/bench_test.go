package correlate

import (
	"fmt"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

// BenchmarkAttribute attributes a long synthetic session: 500 calls (shell
// calls with a 20-process subtree each, reads and writes in between) and
// about 200k events, most of them the agent's own file activity.
func BenchmarkAttribute(b *testing.B) {
	s := newSim()
	agent := s.root(0, 100, claudeBin, "-p", "x")
	s.connect(1, agent, "127.0.0.1", 8080)
	var calls []*transcript.ToolCall
	pid := uint32(1000)
	for i := 0; i < 500; i++ {
		start := 1000 + i*1000
		if i%2 == 0 {
			cmd := fmt.Sprintf("make -C dir%d test", i)
			calls = append(calls, shellCall(fmt.Sprintf("c%d", i), cmd, start, start+800))
			pid++
			sh := s.spawn(start+10, agent, pid, claudeWrapper(cmd)...)
			for j := 0; j < 20; j++ {
				pid++
				c := s.spawn(start+20+j, sh, pid, "cc", "-c", fmt.Sprintf("f%d.c", j))
				for k := 0; k < 10; k++ {
					s.open(start+20+j, c, fmt.Sprintf("%s/dir%d/f%d.h", project, i, k), "read", 3)
				}
				s.exit(start+21+j, c, 0)
			}
			s.exit(start+700, sh, 0)
		} else {
			p := fmt.Sprintf("%s/src/file%d.go", project, i)
			calls = append(calls, pathCall(fmt.Sprintf("c%d", i), transcript.KindEdit, "Edit", p, start, start+100))
			s.open(start+10, agent, p, "read", 20)
			s.open(start+20, agent, p, "write", 20)
		}
		for k := 0; k < 150; k++ {
			s.open(start+900, agent, home+"/.claude/projects/p/s.jsonl", "write", 30)
		}
	}
	t := tr(home+"/.claude/projects/p/s.jsonl", calls...)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := Attribute(s.evs, t, meta(), Options{})
		if res.Counts[ReasonUnattributed] != 0 {
			b.Fatalf("unattributed: %d", res.Counts[ReasonUnattributed])
		}
	}
	b.ReportMetric(float64(len(s.evs)), "events")
	_ = event.KindExec
}

package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "bpf-call",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindBPF},
		Summary:    "a bpf(2) call from the traced tree: loading or attaching a program (high), any other command (medium)",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1562.006"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      bpfCall,
	})
}

// bpfLoads are the bpf(2) commands that put a program in the kernel or
// hook one up: what could blind or feed the sensor.
var bpfLoads = map[string]bool{"BPF_PROG_LOAD": true, "BPF_PROG_ATTACH": true, "BPF_LINK_CREATE": true,
	"BPF_RAW_TRACEPOINT_OPEN": true, "BPF_LINK_UPDATE": true, "BPF_PROG_DETACH": true, "BPF_LINK_DETACH": true}

// bpfCall is the bpf-call rule: one finding per image and command, the
// first call's event as evidence with the count in the detail.
func bpfCall(s *run) []Finding {
	type key struct{ img, cmd string }
	first := map[key]int{}
	var out []Finding
	for i, e := range s.events {
		if e.Kind != event.KindBPF || e.Call == nil || s.followedAt(i) {
			continue
		}
		k := key{e.ExecID, e.BPFCmd()}
		if i, ok := first[k]; ok {
			out[i].Evidence = append(out[i].Evidence, e.Seq)
			continue
		}
		sev := SeverityMedium
		if bpfLoads[e.BPFCmd()] && !e.Failed() {
			sev = s.rule.Severity
		}
		call, who := s.actor(e)
		res := "it worked"
		if e.Failed() {
			res = fmt.Sprintf("it failed (%d)", *e.Result)
		}
		detail := fmt.Sprintf("%s called bpf(%s): %s.", who, e.BPFCmd(), res)
		first[k] = len(out)
		out = append(out, s.finding(sev, "bpf(2) call: "+e.BPFCmd(), detail, call, []uint64{e.Seq}, false))
	}
	return out
}

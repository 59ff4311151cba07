package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "sensor-tamper",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindSignal},
		Summary:    "a signal aimed at polygraph itself from the traced tree (kill, tkill, tgkill, pidfd_send_signal; its process group: medium)",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1562.001"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      sensorTamper,
	})
}

// sensorTamper is the sensor-tamper rule: the tree signalled the process
// recording it. Even signal 0 (a probe: is it there?) counts; the sensor
// records only signals whose target is polygraph's pid, every process, or
// polygraph's process group (which `run` shares with the command: a tool
// passing Ctrl-C on to its group does that, hence medium).
func sensorTamper(s *run) []Finding {
	var out []Finding
	for i, e := range s.events {
		if e.Kind != event.KindSignal || e.Call == nil || s.followedAt(i) {
			continue
		}
		call, who := s.actor(e)
		sev := s.rule.Severity
		target := fmt.Sprintf("polygraph (pid %d)", e.TargetPID())
		switch t := int32(e.TargetPID()); {
		case t == -1:
			target = "every process, polygraph included"
		case t == 0:
			target, sev = "its own process group, which polygraph is in", SeverityMedium
		case t < 0:
			target, sev = fmt.Sprintf("process group %d, which polygraph is in", -t), SeverityMedium
		}
		res := "delivered"
		if e.Failed() {
			res = fmt.Sprintf("refused (%d)", *e.Result)
		}
		detail := fmt.Sprintf("%s sent signal %d to %s with %s: %s.", who, e.Signo(), target, e.Method(), res)
		out = append(out, s.finding(sev, "Signal sent to the recorder", detail, call, []uint64{e.Seq}, false))
	}
	return out
}

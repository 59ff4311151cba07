package detect

import (
	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "process-inject",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindInject},
		Summary:    "a write into another process (ptrace attach, seize, pokes and register writes, process_vm_writev, /proc/PID/mem): outside the tree high, inside it or refused medium",
		Severity:   SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1055"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      processInject,
	})
}

// processInject is the process-inject rule: one finding per image,
// target and method, the first call's event as evidence with the rest.
// A process outside the tree that the tree writes into runs the tree's
// code under another name (the sensor adopts it, so what it does next is
// recorded and attributed through the injector).
func processInject(s *run) []Finding {
	return perTarget(s, event.KindInject, func(e *event.Event, outside bool) (Severity, string) {
		sev := SeverityMedium
		if outside && !e.Failed() {
			sev = s.rule.Severity
		}
		return sev, "Write into another process: " + e.Method()
	})
}

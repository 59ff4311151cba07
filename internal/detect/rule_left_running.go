package detect

import (
	"fmt"
	"strings"
)

func init() {
	register(&Rule{
		ID:         "left-running",
		Scope:      ScopeSession,
		Summary:    "a process of the traced tree was still running when tracing stopped (after the command exited and --linger passed)",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{ATTACK: []string{"T1543"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      leftRunning,
	})
}

// leftRunning is the left-running rule: one finding per leftover. What
// it does after tracing stopped is not recorded, which is the point: a
// daemon the agent started keeps acting with the agent's rights, unseen.
// The finding is attributed the way its exec was (by lineage, to the call
// that started it); one ended by --kill-leftovers says so (its exit was
// recorded, since polygraph ends leftovers before it stops tracing).
func leftRunning(s *run) []Finding {
	var out []Finding
	for _, l := range s.in.Leftovers {
		cmd := strings.Join(l.Argv, " ")
		if cmd == "" {
			cmd = l.Comm
		}
		var call, who string
		var evidence []uint64
		if e := s.tree.ExecOf(l.ExecID); e != nil {
			call, who = s.actor(e)
			evidence = append(evidence, e.Seq)
		} else {
			who = fmt.Sprintf("a process of the tree (pid %d)", l.PID)
		}
		fate := "It was still running when polygraph stopped tracing; what it did after that is not recorded."
		if im := s.tree.Image(l.ExecID); im != nil && im.Process != nil {
			if ex := im.Process.ExitEvent(); ex != nil && ex.Process != nil {
				how := "exited"
				switch {
				case ex.Signal() != 0:
					how = fmt.Sprintf("was killed by signal %d", ex.Signal())
				case ex.ExitCode() != nil:
					how = fmt.Sprintf("exited with status %d", *ex.ExitCode())
				}
				fate = "It " + how + " as tracing stopped (--kill-leftovers ends what is left before tracing stops)."
				evidence = append(evidence, ex.Seq)
			}
		}
		detail := fmt.Sprintf("`%s` (pid %d), started by %s, outlived the traced command. %s",
			excerpt(cmd, 160), l.PID, who, fate)
		out = append(out, s.finding(s.rule.Severity, fmt.Sprintf("Left running: %s (pid %d)", excerpt(cmd, 80), l.PID),
			detail, call, evidence, false))
	}
	return out
}

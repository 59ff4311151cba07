package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:       "framework-log-divergence",
		Scope:    ScopeSession,
		Summary:  "the agent framework's own log says a shell call was not executed, or gives it a return code, and the kernel saw otherwise",
		Severity: SeverityInfo,
		check:    frameworkLogDivergence,
	})
}

// frameworkLogDivergence is the framework-log-divergence rule: the agent's
// framework log (not the model's words) says how a shell call went, and the
// kernel saw it go otherwise. It logged a call as not executed
// (mini-swe-agent's "action was not executed") whose process the kernel saw
// run, or it gave a return code other than the one the call's process
// exited with. Usually the framework's own convention (mini logs its submit
// command, which ran, as not executed), hence info: the finding records
// that its log is not an account of what ran, without calling it a lie.
func frameworkLogDivergence(s *run) []Finding {
	tr, r := s.in.Transcript, s.in.Attribution
	if tr == nil || r == nil {
		return nil
	}
	var out []Finding
	for _, tc := range tr.ToolCalls {
		if tc.Kind != transcript.KindShell || tc.Rejected {
			continue
		}
		act := r.ByCall[tc.ID]
		if act == nil || act.RootExecID == "" {
			continue
		}
		// The root image may be the agent's fork before it exec'd the
		// command: the call's first exec names what ran.
		var evidence []uint64
		who := act.RootExecID
		if len(act.Execs) > 0 {
			evidence = append(evidence, act.Execs[0].Seq)
			who = act.Execs[0].ExecID
		}
		ran := "ran"
		if x := act.RootExit; x != nil {
			evidence = append(evidence, x.Seq)
			ran = "ran and " + exitWords(x)
		}
		cmd := excerpt(tc.Command, 100)
		switch {
		case tc.NotExecuted:
			out = append(out, s.finding(s.rule.Severity,
				fmt.Sprintf("The agent's log says `%s` was not executed; the kernel saw it run", excerpt(tc.Command, 60)),
				fmt.Sprintf("%s's log records tool call %s (`%s`) as not executed, but its process %s %s.",
					tr.Agent, tc.ID, cmd, s.tree.Describe(who), ran),
				tc.ID, evidence, false))
		case tc.ExitCode != nil && act.RootExit != nil && !sameExit(*tc.ExitCode, act.RootExit):
			out = append(out, s.finding(s.rule.Severity,
				fmt.Sprintf("The agent's log gives `%s` return code %d; the kernel saw it %s", excerpt(tc.Command, 60), *tc.ExitCode, exitWords(act.RootExit)),
				fmt.Sprintf("%s's log records return code %d for tool call %s (`%s`), but its process %s %s.",
					tr.Agent, *tc.ExitCode, tc.ID, cmd, s.tree.Describe(who), ran),
				tc.ID, evidence, false))
		}
	}
	return out
}

// sameExit reports whether a logged return code is what the exit event
// shows; a negative code is Python's way of saying "killed by signal -code".
func sameExit(code int, x *event.Event) bool {
	if code < 0 {
		return x.Signal() == -code
	}
	return x.Signal() == 0 && x.ExitCode() != nil && *x.ExitCode() == code
}

// exitWords says how a process ended, as "exited N" or "was killed by
// signal N".
func exitWords(x *event.Event) string {
	switch {
	case x.Signal() != 0:
		return fmt.Sprintf("was killed by signal %d", x.Signal())
	case x.ExitCode() != nil:
		return fmt.Sprintf("exited %d", *x.ExitCode())
	}
	return "exited"
}

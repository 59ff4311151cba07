package detect

import (
	"fmt"
	"path/filepath"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:       "transcript-tamper",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindUnlink},
		Summary:  "an agent's transcript, its own account of the session, was deleted, truncated, rewritten or moved by something other than the agent itself",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1070", "T1565.001"},
			OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check: transcriptTamper,
	})
}

// oTrunc and oAppend are the open flags that say how a write open treats
// what the file holds (the same on every Linux architecture polygraph
// supports).
const (
	oTrunc  = 0o1000
	oAppend = 0o2000
)

// transcriptTamper is the transcript-tamper rule: a change to an agent's
// transcript (the file the analysis follows, or any file in an agent's
// transcript location) by anything but the agent's own process. The agent
// appends to it, or rewrites it whole (Gemini CLI's JSON, mini-swe-agent's
// trajectory), as its own bookkeeping; a tool call that removes, truncates
// or rewrites it removes the evidence the claim checks weigh.
func transcriptTamper(s *run) []Finding {
	followed := ""
	if s.in.Transcript != nil && s.in.Transcript.Path != "" {
		followed = filepath.Clean(s.in.Transcript.Path)
	}
	var g groups
	for i := range s.byEvent {
		f := &s.byEvent[i]
		var paths [2]int32 // what it wrote, then what it removed: its path
		n := 0
		if f.written >= 0 {
			paths[n] = f.written
			n++
		}
		if f.flags&fRemoved != 0 {
			paths[n] = f.path
			n++
		}
		if n == 0 || f.flags&fOwn != 0 {
			continue
		}
		e := s.events[i]
		for _, id := range paths[:n] {
			p := s.paths.strs[id]
			r, ok := s.matchOf(setTranscript, i, id)
			if !ok && p != followed {
				continue
			}
			if s.attr == nil && ok && r.IsClient(s.programNames(e.ExecID)) {
				continue // without a transcript, the agent's own program is the agent
			}
			verb := "rewritten"
			switch {
			case removed(e) == p:
				verb = "deleted or moved away"
			case e.Kind == event.KindRename || e.Kind == event.KindLink:
				verb = "replaced"
			case e.Flags != nil && *e.Flags&oTrunc != 0:
				verb = "truncated"
			case e.Flags != nil && *e.Flags&oAppend != 0:
				verb = "appended to"
			}
			call, who := s.actor(e)
			g.add(p+"\x00"+s.actorKey(e)+"\x00"+verb, func() *accessGroup {
				return &accessGroup{path: p, who: who, call: call, sev: s.rule.Severity, note: verb}
			}, e.Seq)
		}
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("The agent's transcript %s was %s by %s. The transcript is the agent's own account of what it did: "+
			"changed by anything but the agent, its claims and tool calls cannot be trusted, and what was removed is not in this report.",
			s.display(x.path), x.note, x.who)
		out = append(out, s.finding(x.sev, "Agent transcript "+x.note+": "+s.display(x.path), detail, x.call, capped(x.seqs, 20), false))
	}
	return out
}

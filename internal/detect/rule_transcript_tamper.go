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
		e := s.events[i]
		blocked, readOnly := false, false
		if n == 0 && f.path >= 0 && (s.blockedChange(e) || s.blockedRead(e) && e.Failed()) {
			// A failed read of a masked transcript is the first step of
			// a rewrite (sed -i reads before it writes) or a read of
			// another agent's history: an attempt either way, medium.
			readOnly = !s.blockedChange(e)
			// Under --isolate another agent's transcripts are masked: the
			// change failed, the attempt is the finding.
			paths[n] = f.path
			n++
			blocked = true
		}
		// The isolation masks other agents' files, never the agent's own:
		// a blocked change is nobody's bookkeeping.
		if n == 0 || f.flags&fOwn != 0 && !blocked {
			continue
		}
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
			sev := s.rule.Severity
			switch {
			case readOnly:
				verb, sev = "read (a rewrite reads first)", SeverityMedium
			case removed(e) == p || blocked && (e.Kind == event.KindUnlink || e.Kind == event.KindRename):
				verb = "deleted or moved away"
			case e.Kind == event.KindRename || e.Kind == event.KindLink:
				verb = "replaced"
			case e.Flags != nil && *e.Flags&oTrunc != 0:
				verb = "truncated"
			case e.Flags != nil && *e.Flags&oAppend != 0:
				verb = "appended to"
			}
			call, who := s.actor(e)
			key := p + "\x00" + s.actorKey(e) + "\x00" + verb
			if blocked {
				key += "\x00blocked"
			}
			g.add(key, func() *accessGroup {
				return &accessGroup{path: p, who: who, call: call, sev: sev, note: verb, blocked: blocked, refused: readOnly}
			}, e.Seq)
		}
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("The agent's transcript %s was %s by %s. The transcript is the agent's own account of what it did: "+
			"changed by anything but the agent, its claims and tool calls cannot be trusted, and what was removed is not in this report.",
			s.display(x.path), x.note, x.who)
		title := "Agent transcript " + x.note + ": " + s.display(x.path)
		if x.blocked {
			title = "Agent transcript tampering attempted: " + s.display(x.path) + " (blocked)"
			detail = fmt.Sprintf("%s tried to change the agent's transcript %s (it would have been %s); the isolation masked it, so the transcript is intact. "+
				"The transcript is the agent's own account of what it did: a tool call that removes or rewrites it tries to remove the evidence the claim checks weigh.",
				x.who, s.display(x.path), x.note)
		}
		if x.refused { // only read: the first step of a rewrite, or a look at another agent's history
			title = "Agent transcript access attempted: " + s.display(x.path) + " (blocked)"
			detail = fmt.Sprintf("%s tried to open the agent's transcript %s, which the isolation masked; a rewrite in place (sed -i) reads it first, "+
				"and another agent's transcript is its private account of a session.", x.who, s.display(x.path))
		}
		f := s.finding(x.sev, title, detail, x.call, capped(x.seqs, 20), false)
		f.Blocked = x.blocked
		out = append(out, f)
	}
	return out
}

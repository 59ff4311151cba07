package detect

import (
	"fmt"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:       "agent-config-read",
		Scope:    ScopeEvent,
		Kinds:    []event.Kind{event.KindOpen},
		Summary:  "an AI agent's credentials or configuration were read by something other than that agent itself",
		Severity: SeverityHigh,
		Frameworks: Frameworks{ATTACK: []string{"T1552.001"}, ATLAS: []string{"AML.T0083"},
			OWASPLLM: []string{"LLM02", "LLM07"}, SAIF: []string{saifSensitive}},
		check: agentConfigRead,
	})
}

// agentConfigRead is the agent-config-read rule: an agent's credentials
// or settings read by anything but that agent.
func agentConfigRead(s *run) []Finding {
	var g groups
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.flags&fRead == 0 {
			continue
		}
		r, alias, ok := s.secretMatch(setAgentConfig, i, f.path)
		if !ok {
			continue
		}
		e := s.events[i]
		sev := severity(r.Severity, s.rule.Severity)
		note := ""
		names := s.programNames(e.ExecID)
		if f.flags&fOwn != 0 {
			// The agent's own activity: its own stores are its to read;
			// another agent's are not. The agent is known by what its
			// process ran, any image of it (a launcher that execs), and
			// by the command the session started (or joined) it as.
			own := append(s.processNames(e.ExecID), s.commandNames()...)
			if len(r.Clients) == 0 || len(own) == 0 || r.IsClient(own) {
				continue
			}
			note = fmt.Sprintf("read by the agent itself (%s), which is not that store's agent", strings.Join(own, "/"))
		} else if r.IsClient(names) && alias == "" {
			if s.attr == nil {
				continue // without a transcript, the agent's own program is the agent
			}
			sev, note = SeverityInfo, fmt.Sprintf("read by that agent's own program (%s), started by a tool call", strings.Join(names, "/"))
		}
		path := e.Path
		if alias != "" {
			note, path = joinNote(note, "opened as "+s.display(e.Path)+", the same file by another name"), alias
		}
		call, who := s.actor(e)
		g.add(path+"\x00"+e.Path+"\x00"+s.actorKey(e)+"\x00"+string(sev), func() *accessGroup {
			return &accessGroup{path: path, who: who, call: call, sev: sev, note: note}
		}, e.Seq)
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s was read by %s", s.display(x.path), x.who)
		if x.note != "" {
			detail += ": " + x.note
		}
		out = append(out, s.finding(x.sev, "Agent credentials or configuration read: "+s.display(x.path),
			detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

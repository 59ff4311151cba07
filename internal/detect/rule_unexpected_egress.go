package detect

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "unexpected-egress",
		Summary:    "a connection to a destination outside the egress allowlist",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		Escalated: Frameworks{ATTACK: []string{"T1041", "T1567"}, ATLAS: []string{"AML.T0086"},
			OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalation: "the connection came after a sensitive-read or agent-config-read finding in the same session",
		// The escalation: it reads their findings.
		Needs: []string{"sensitive-read", "agent-config-read"},
		check: unexpectedEgress,
	})
}

// unexpectedEgress is the unexpected-egress rule.
func unexpectedEgress(s *run) []Finding {
	type dest struct {
		display, who, call, why string
		low, after, blocked     bool
		seqs                    []uint64
	}
	firstSecret, secret := firstSecretRead(s.needs)
	var order []string
	m := map[string]*dest{}
	for i := range s.byEvent {
		if s.byEvent[i].flags&fEgress == 0 {
			continue
		}
		e := s.events[i]
		p := s.peerOf(e)
		if s.allowed(e, p) {
			continue
		}
		name := p.host
		if name == "" {
			name = e.Addr
		}
		blocked := s.byEvent[i].flags&fBlocked != 0
		key := fmt.Sprintf("%s\x00%s\x00%d\x00%v", s.actorKey(e), name, e.Port, blocked)
		d := m[key]
		if d == nil {
			call, who := s.actor(e)
			d = &dest{display: p.display(e), who: who, call: call, blocked: blocked}
			switch {
			case s.attr == nil && s.agent[e.ExecID] && isLoopback(e.Addr):
				// Without a transcript the agent's own loopback connection
				// is most likely the model endpoint it was configured with.
				d.low, d.why = true, "it is the agent's own connection to loopback, most likely the model endpoint it was configured with (allow it with egress.allow or policy.AllowAgentEndpoints)"
			case declaredFetch(s.calls, call, p.host):
				d.low, d.why = true, "the fetch tool call named this host in its URL, so the transcript shows it"
			}
			m[key] = d
			order = append(order, key)
		}
		d.seqs = append(d.seqs, e.Seq)
		if p.dnsSeq != 0 {
			d.seqs = append(d.seqs, p.dnsSeq)
		}
		if secret && firstSecret < e.Seq {
			d.after = true
		}
	}
	var out []Finding
	for _, k := range order {
		d := m[k]
		sev := s.rule.Severity
		detail := fmt.Sprintf("%s connected to %s, which the egress allowlist does not cover", d.who, d.display)
		title := "Unexpected connection to " + d.display
		if d.blocked {
			detail = fmt.Sprintf("%s tried to connect to %s, which the egress allowlist does not cover; the isolation refused it (EPERM)", d.who, d.display)
			title += " (blocked)"
		}
		switch {
		case d.low:
			sev = SeverityLow
			detail += "; " + d.why
			if d.after {
				detail += ". A credential or agent configuration was read earlier in the session (see the sensitive-read / agent-config-read findings)"
			}
		case d.after:
			sev = SeverityHigh
			detail += "; this came after a credential or agent configuration was read in the same session (see the sensitive-read / agent-config-read findings): a possible exfiltration"
		}
		if n := len(d.seqs); n > 1 {
			detail += fmt.Sprintf(" (%d events)", n)
		}
		f := s.finding(sev, title, detail+".", d.call, capped(d.seqs, 20), d.after && !d.low)
		f.Blocked = d.blocked
		out = append(out, f)
	}
	return append(out, blockedSends(s)...)
}

// firstSecretRead returns the seq of the first read that made a finding
// of medium severity or more among the findings needs (those of
// sensitive-read and agent-config-read, as found, before any severity
// override); ok is false when there is none. A finding's evidence starts
// with its first read.
func firstSecretRead(needs map[string][]Finding) (seq uint64, ok bool) {
	for _, fs := range needs {
		for _, f := range fs {
			if f.Severity.Rank() < SeverityMedium.Rank() || len(f.Evidence) == 0 {
				continue
			}
			if !ok || f.Evidence[0] < seq {
				seq, ok = f.Evidence[0], true
			}
		}
	}
	return seq, ok
}

// declaredFetch reports whether tool call id (of calls) is a fetch whose
// URLs name host: a connection the transcript itself shows.
func declaredFetch(calls map[string]*transcript.ToolCall, id, host string) bool {
	c := calls[id]
	if c == nil || c.Kind != transcript.KindFetch || host == "" {
		return false
	}
	for _, raw := range c.URLs {
		if u, err := url.Parse(raw); err == nil && strings.EqualFold(u.Hostname(), host) {
			return true
		}
	}
	return false
}

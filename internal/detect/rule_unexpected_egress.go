package detect

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"

	"github.com/polygraph/polygraph/internal/transcript"
)

func init() {
	register(&Rule{
		ID:         "unexpected-egress",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindConnect, event.KindSend, event.KindDNS, event.KindNet, event.KindUring},
		Summary:    "a connection to a destination outside the egress allowlist",
		Severity:   SeverityMedium,
		Frameworks: Frameworks{OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		Escalated: Frameworks{ATTACK: []string{"T1041", "T1567"}, ATLAS: []string{"AML.T0086"},
			OWASPLLM: []string{"LLM02"}, SAIF: []string{saifSensitive}},
		Escalation: "bytes left for the destination after a sensitive-read or agent-config-read finding's read in the same session",
		// The escalation: it reads their findings.
		Needs: []string{"sensitive-read", "agent-config-read"},
		check: unexpectedEgress,
	})
}

// egressDest is one destination of one actor, as unexpected-egress
// reports it.
type egressDest struct {
	display, who, call, why string
	dest                    string // addr:port as the isolation's denials name it
	low, weak, after        bool
	blocked                 bool     // the isolation refused it (blocked.go)
	sends                   []string // what the tree sent there, when not a connect
	seqs                    []uint64
}

// unexpectedEgress is the unexpected-egress rule: every destination the
// tree connected or sent to that the policy does not allow, by actor.
func unexpectedEgress(s *run) []Finding {
	secretAt, secret := firstSecretRead(s.needs)
	var order []string
	m := map[string]*egressDest{}
	sentAfter := bytesSentAfter(s, secretAt, secret)
	for i := range s.byEvent {
		e := s.events[i]
		send, ok := egressCandidate(s, i)
		if !ok {
			continue
		}
		p := s.peerOf(e)
		allowed, weak := s.verdict(e, p)
		if allowed && !weak {
			continue
		}
		name := p.host
		if name == "" {
			name = e.Addr()
		}
		blocked := s.byEvent[i].flags&fBlocked != 0
		key := fmt.Sprintf("%s\x00%s\x00%d\x00%v", s.actorKey(e), name, e.Port(), blocked)
		d := m[key]
		if d == nil {
			d = newEgressDest(s, e, p, weak)
			d.blocked = blocked
			m[key] = d
			order = append(order, key)
		}
		if send != "" && !slices.Contains(d.sends, send) {
			d.sends = append(d.sends, send)
		}
		d.seqs = append(d.seqs, e.Seq)
		if p.dnsSeq != 0 {
			d.seqs = append(d.seqs, p.dnsSeq)
		}
		// Bytes that left after the read escalate; a connect after it
		// does too when no byte counter says otherwise.
		if secret {
			if n, counted := sentAfter[peerKey(e)]; counted && n > 0 || !counted && secretAt < e.Seq {
				d.after = true
			}
		}
	}
	var out []Finding
	for _, k := range order {
		out = append(out, egressFinding(s, m[k]))
	}
	return append(out, blockedSends(s)...)
}

// egressCandidate reports whether events[i] took something out of the
// tree: a connect; a net counter of bytes sent to a peer the process never
// connected to (a send on an unconnected socket, a UDP datagram); a DNS
// message to a server (judged by dnsAllowed like a connect). send says
// what it was when not a connect.
func egressCandidate(s *run, i int) (send string, ok bool) {
	e, f := s.events[i], &s.byEvent[i]
	switch {
	case f.flags&fEgress != 0:
		return "", true
	case e.Kind == event.KindSend && (e.Family() == "ipv4" || e.Family() == "ipv6") && e.Addr() != "" && e.Port() != 53 && !e.Failed():
		// A datagram (or a raw packet) to a destination named in the
		// call: UDP carries data out as well as a connection does.
		if s.internalLoopback(e) {
			return "", false
		}
		return "a datagram", true
	case f.flags&fNetSent != 0 && unrecordedPeer(e):
		// An unconnected socket (UDP sendto) records no destination:
		// its send events name them (above). A process whose DNS
		// messages or recorded sends do not explain it sent elsewhere.
		if len(s.dnsByPID[e.PID]) > 0 || s.sentTo[e.PID] || s.accepted[e.PID] || s.agentOwn(e) {
			return "", false
		}
		return human.Bytes(e.BytesSent()) + " sent on an unconnected socket", true
	case f.flags&fNetSent != 0 && (e.Family() == "ipv4" || e.Family() == "ipv6"):
		if s.connected[peerKey(e)] || isLoopback(e.Addr()) || s.accepted[e.PID] {
			// What a connect already shows, a server's replies, or a send
			// whose destination the socket did not record.
			return "", false
		}
		return human.Bytes(e.BytesSent()) + " sent", true
	case e.Kind == event.KindDNS && e.Addr() != "" && !s.connected[peerKey(e)]:
		if e.QName() == "" {
			return "data to port 53 that is not a DNS query", true
		}
		return "a DNS query for " + e.QName(), true
	}
	return "", false
}

// unrecordedPeer reports whether net event e's peer is the unspecified
// address, port 0: the counter of an unconnected socket.
func unrecordedPeer(e *event.Event) bool {
	return e.Kind == event.KindNet && e.Port() == 0 && (e.Addr() == "0.0.0.0" || e.Addr() == "::")
}

// newEgressDest starts the destination of event e, named p.
func newEgressDest(s *run, e *event.Event, p peer, weak bool) *egressDest {
	call, who := s.actor(e)
	d := &egressDest{display: p.display(e), who: who, call: call}
	if a, err := netip.ParseAddr(e.Addr()); err == nil {
		d.dest = netip.AddrPortFrom(a, e.Port()).String()
	}
	if unrecordedPeer(e) {
		d.display = "an unrecorded destination"
	}
	switch {
	case weak:
		d.low, d.weak, d.why = true, true, "only a DNS query the process made just before names it "+p.host+": no recorded answer or hosts entry ties the address to that name, so it may have connected anywhere"
	case s.attr == nil && s.agent[e.ExecID] && isLoopback(e.Addr()):
		// Without a transcript the agent's own loopback connection is
		// most likely the model endpoint it was configured with.
		d.low, d.why = true, "it is the agent's own connection to loopback, most likely the model endpoint it was configured with (allow it with egress.allow or policy.AllowAgentEndpoints)"
	case declaredFetch(s.calls, call, p.host):
		d.low, d.why = true, "the fetch tool call named this host in its URL, so the transcript shows it"
	}
	return d
}

// egressFinding is the finding on destination d.
func egressFinding(s *run, d *egressDest) Finding {
	sev := s.rule.Severity
	how := "connected to"
	if len(d.sends) > 0 {
		how = "sent to (" + strings.Join(d.sends, ", ") + ")"
	}
	covered := "which the egress allowlist does not cover"
	if d.weak {
		covered = "which the egress allowlist covers only by name"
	}
	detail := fmt.Sprintf("%s %s %s, %s", d.who, how, d.display, covered)
	if d.blocked {
		detail = fmt.Sprintf("%s tried to connect to %s, %s; the isolation refused it (EPERM)", d.who, d.display, covered)
		if l := outsideListener(s, d.dest); l != "" {
			detail += "; " + l + " listens there, a process outside the tree that would have acted for it unrecorded"
		}
	}
	switch {
	case d.low && d.after:
		// After a secret was read, nothing the tree could arrange (a
		// lookup of an allowed name before the connect, a fetch the
		// transcript names) vouches for where the bytes went.
		sev = SeverityHigh
		detail += "; bytes left for it after a credential or agent configuration was read in the same session (see the sensitive-read / agent-config-read findings): a possible exfiltration. " +
			"What would otherwise lower it does not count after a secret read: " + d.why
	case d.low:
		sev = SeverityLow
		detail += "; " + d.why
	case d.after:
		sev = SeverityHigh
		detail += "; bytes left for it after a credential or agent configuration was read in the same session (see the sensitive-read / agent-config-read findings): a possible exfiltration"
	}
	if n := len(d.seqs); n > 1 {
		detail += fmt.Sprintf(" (%d events)", n)
	}
	title := "Unexpected connection to "
	if len(d.sends) > 0 {
		title = "Unexpected traffic to "
	}
	title += d.display
	if d.blocked {
		title += " (blocked)"
	}
	f := s.finding(sev, title, detail+".", d.call, capped(d.seqs, 20), d.after)
	f.Blocked = d.blocked
	return f
}

// bytesSentAfter adds up, per process and peer, the bytes the net
// counters say were sent after the event with seq from (when ok): a
// counter's time is that of its last send. A peer with counters but none
// after the read is in the map with 0.
func bytesSentAfter(s *run, from uint64, ok bool) map[pidPeer]uint64 {
	out := map[pidPeer]uint64{}
	if !ok {
		return out
	}
	read := s.eventAt(from)
	for i := range s.byEvent {
		e := s.events[i]
		if e.Kind != event.KindNet {
			continue
		}
		k := peerKey(e)
		if e.BytesSent() > 0 && read != nil && e.TS.After(read.TS) {
			out[k] += e.BytesSent()
		} else if _, seen := out[k]; !seen {
			out[k] = 0
		}
	}
	return out
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

// outsideListener names the process the isolation's denials say listened
// on dest (a refused loopback connect's address) when the session ended,
// "" for none or for one of the tree's own processes.
func outsideListener(s *run, dest string) string {
	iso := s.in.Meta.Isolation
	if iso == nil || dest == "" {
		return ""
	}
	for _, d := range iso.Denied {
		if d.Dest != dest || d.ListenerPID == 0 {
			continue
		}
		for i, e := range s.events {
			if e.PID == d.ListenerPID && e.Kind != event.KindFollow && !s.followedAt(i) {
				return "" // the tree's own server
			}
		}
		if d.ListenerExe != "" {
			return fmt.Sprintf("%s (pid %d)", path.Base(d.ListenerExe), d.ListenerPID)
		}
		return fmt.Sprintf("pid %d", d.ListenerPID)
	}
	return ""
}

package detect

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// peer is where a connect or net event went, with the name it went by.
type peer struct {
	host     string // DNS name, "" when unknown
	inferred bool   // host is the name the process looked up just before, not a recorded answer
	dnsSeq   uint64 // the dns event that named it, 0 for none
}

// peerOf names the destination of a connect or net event: the event's own
// host, a recorded DNS answer for the address, or the last name the same
// process looked up within the DNS window before it.
func (a *analysis) peerOf(e *event.Event) peer {
	if e.Host != "" {
		return peer{host: e.Host}
	}
	if ip, err := netip.ParseAddr(e.Addr); err == nil {
		if d := a.answers[ip.Unmap()]; d != nil {
			return peer{host: d.QName, dnsSeq: d.Seq}
		}
	}
	qs := a.dnsByPID[e.PID]
	// The queries are in seq order: start at the last one before e.
	n := sort.Search(len(qs), func(i int) bool { return qs[i].Seq > e.Seq })
	for i := n - 1; i >= 0; i-- {
		d := qs[i]
		if e.TS.Sub(d.TS) > a.pol.Thresholds.DNSWindow {
			break
		}
		if d.QName == "" || strings.EqualFold(d.QType, "PTR") {
			continue
		}
		return peer{host: strings.TrimSuffix(d.QName, "."), inferred: true, dnsSeq: d.Seq}
	}
	return peer{}
}

func (p peer) display(e *event.Event) string {
	hp := net.JoinHostPort(e.Addr, strconv.Itoa(int(e.Port)))
	switch {
	case p.host == "":
		return hp
	case p.inferred:
		return fmt.Sprintf("%s (%s, looked up just before)", hp, p.host)
	}
	return fmt.Sprintf("%s (%s)", hp, p.host)
}

// isEgress reports whether e is an IP connection attempt that went out
// (succeeded or is in progress).
func isEgress(e *event.Event) bool {
	return e.Kind == event.KindConnect && (e.Family == "ipv4" || e.Family == "ipv6") && succeeded(e) && e.Addr != ""
}

// internalLoopback reports whether a loopback connect went to a server
// the traced tree itself runs: one it bound that port for, or one that
// accepted a loopback connection right then (an ephemeral port bound as 0).
func (a *analysis) internalLoopback(e *event.Event) bool {
	if !isLoopback(e.Addr) {
		return false
	}
	if a.binds[e.Port] {
		return true
	}
	// acceptsLo is sorted: look for one in [ts-100ms, ts+2s].
	from := e.TS.Add(-100 * time.Millisecond)
	i := sort.Search(len(a.acceptsLo), func(i int) bool { return !a.acceptsLo[i].Before(from) })
	return i < len(a.acceptsLo) && !a.acceptsLo[i].After(e.TS.Add(2*time.Second))
}

// allowed reports whether a connect is expected: the agent's own API
// traffic, allowed by policy, or to a server inside the tree.
func (a *analysis) allowed(e *event.Event, p peer) bool {
	if at, ok := a.attribution(e); ok && at.ToolCallID == "" && at.Reason == correlate.ReasonAgentAPI {
		return true
	}
	return a.pol.AllowEgress(p.host, e.Addr, e.Port) || a.internalLoopback(e)
}

// unexpectedEgress is the unexpected-egress rule.
func (a *analysis) unexpectedEgress() []Finding {
	type dest struct {
		display, who, call, why string
		low, after              bool
		seqs                    []uint64
	}
	var order []string
	m := map[string]*dest{}
	for i := range a.facts {
		if a.facts[i].flags&fEgress == 0 {
			continue
		}
		e := a.events[i]
		p := a.peerOf(e)
		if a.allowed(e, p) {
			continue
		}
		name := p.host
		if name == "" {
			name = e.Addr
		}
		key := fmt.Sprintf("%s\x00%s\x00%d", a.actorKey(e), name, e.Port)
		d := m[key]
		if d == nil {
			call, who := a.actor(e)
			d = &dest{display: p.display(e), who: who, call: call}
			switch {
			case a.attr == nil && a.agent[e.ExecID] && isLoopback(e.Addr):
				// Without a transcript the agent's own loopback connection
				// is most likely the model endpoint it was configured with.
				d.low, d.why = true, "it is the agent's own connection to loopback, most likely the model endpoint it was configured with (allow it with egress.allow or policy.AllowAgentEndpoints)"
			case a.declaredFetch(call, p.host):
				d.low, d.why = true, "the fetch tool call named this host in its URL, so the transcript shows it"
			}
			m[key] = d
			order = append(order, key)
		}
		d.seqs = append(d.seqs, e.Seq)
		if p.dnsSeq != 0 {
			d.seqs = append(d.seqs, p.dnsSeq)
		}
		if len(a.secretReads) > 0 && slices.Min(a.secretReads) < e.Seq {
			d.after = true
		}
	}
	var out []Finding
	for _, k := range order {
		d := m[k]
		sev := ruleSeverity(policy.RuleUnexpectedEgress)
		detail := fmt.Sprintf("%s connected to %s, which the egress allowlist does not cover", d.who, d.display)
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
		out = append(out, a.finding(policy.RuleUnexpectedEgress, sev, "Unexpected connection to "+d.display,
			detail+".", d.call, capped(d.seqs, 20), d.after && !d.low))
	}
	return out
}

// massPublish is the mass-publish rule: one finding per session that puts
// together publish commands, package artifacts built, and bytes sent to
// registries.
func (a *analysis) massPublish() []Finding {
	th := a.pol.Thresholds
	var publishes []*event.Event
	publishImage := map[string]bool{}
	for n, i := range a.execs {
		if !a.runs(cmdPublish, int32(n)) {
			continue
		}
		e := a.events[i]
		publishImage[e.ExecID] = true
		if a.procs.hasAncestor(e.ExecID, func(p *proc) bool { return publishImage[p.id] }) {
			continue // a child of a publish (npm publish → node …) is the same publish
		}
		publishes = append(publishes, e)
	}
	artifacts := map[string]uint64{}
	var artifactOrder []string
	for i := range a.facts {
		f := &a.facts[i]
		if f.written < 0 || f.flags&fCreated == 0 || !a.is(setArtifact, f.written) {
			continue
		}
		p := a.paths.strs[f.written]
		if _, ok := artifacts[p]; !ok {
			artifacts[p] = a.events[i].Seq
			artifactOrder = append(artifactOrder, p)
		}
	}
	// Bytes sent to registries, from the per-peer net counters; the host of
	// a peer is the one its connect went by.
	connHost := map[string]peer{}
	for i := range a.facts {
		if a.facts[i].flags&fEgress != 0 {
			e := a.events[i]
			connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr, e.Port)] = a.peerOf(e)
		}
	}
	var sent uint64
	var netSeqs []uint64
	for i := range a.facts {
		if a.facts[i].flags&fNetSent == 0 {
			continue
		}
		e := a.events[i]
		p, ok := connHost[fmt.Sprintf("%d\x00%s\x00%d", e.PID, e.Addr, e.Port)]
		if !ok {
			p = a.peerOf(e)
		}
		if a.pol.IsPublishHost(p.host, e.Addr, e.Port) {
			sent += e.BytesSent
			netSeqs = append(netSeqs, e.Seq)
		}
	}

	P, A := len(publishes), len(artifacts)
	bytesHigh := th.RegistryBytesSent > 0 && sent > th.RegistryBytesSent
	manyArtifacts := th.Artifacts > 0 && A >= th.Artifacts
	var sev Severity
	switch {
	case th.PublishCount > 0 && P >= th.PublishCount:
		sev = SeverityHigh
	case manyArtifacts && (P > 0 || bytesHigh):
		sev = SeverityHigh
	case bytesHigh && P > 0:
		sev = SeverityHigh
	case bytesHigh:
		sev = SeverityMedium
	case P > 0, manyArtifacts:
		sev = SeverityLow
	default:
		return nil
	}

	var parts []string
	var evidence []uint64
	calls := map[string]bool{}
	if P > 0 {
		var cmds []string
		for _, e := range publishes {
			cmds = append(cmds, "`"+excerpt(strings.Join(e.Argv, " "), 80)+"`")
			evidence = append(evidence, e.Seq)
			calls[a.callOf(e)] = true
		}
		parts = append(parts, fmt.Sprintf("%s ran (%s)", plural(P, "publish command", "publish commands"), list(cmds, 5)))
	}
	if A > 0 {
		var shown []string
		for _, p := range artifactOrder {
			shown = append(shown, a.display(p))
			evidence = append(evidence, artifacts[p])
		}
		parts = append(parts, fmt.Sprintf("%s built (%s)", plural(A, "package artifact was", "package artifacts were"), list(shown, 5)))
	}
	if sent > 0 {
		parts = append(parts, fmt.Sprintf("%s was sent to registry hosts (an install sends far less; threshold %s)", bytesize(sent), bytesize(th.RegistryBytesSent)))
		evidence = append(evidence, netSeqs...)
	}
	call := ""
	if len(calls) == 1 {
		for c := range calls {
			call = c
		}
	}
	title := "Package publishing"
	if sev.Rank() >= SeverityHigh.Rank() {
		title = "Mass package publishing"
	}
	detail := strings.Join(parts, "; ") + "."
	if P == 0 && sent > 0 {
		detail += " No publish command was seen: uploads may go straight to a registry API."
	}
	slices.Sort(evidence)
	return []Finding{a.finding(policy.RuleMassPublish, sev, title, detail, call, capped(evidence, 50), false)}
}

// bytesize formats a byte count for people.
func bytesize(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// declaredFetch reports whether tool call id is a fetch whose URLs name
// host: a connection the transcript itself shows.
func (a *analysis) declaredFetch(id, host string) bool {
	c := a.calls[id]
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

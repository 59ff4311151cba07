package detect

import (
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
)

// peer is where a connect or net event went, with the name it went by.
type peer struct {
	host string // DNS name, "" when unknown
	// inferred: host is only the name the process looked up just before;
	// no recorded answer or hosts entry ties the address to it.
	inferred bool
	dnsSeq   uint64 // the dns event that named it, 0 for none
}

// peerOf names the destination of a connect or net event: the event's own
// host, a recorded DNS answer for the address, /etc/hosts, or else the
// last name the same process looked up within the DNS window before it,
// unless that query's recorded answers name other addresses.
func (s *facts) peerOf(e *event.Event) peer {
	if e.Host() != "" {
		return peer{host: e.Host()}
	}
	ip, err := netip.ParseAddr(e.Addr())
	if err == nil {
		ip = ip.Unmap()
		if d := s.answers[ip]; d != nil {
			return peer{host: strings.TrimSuffix(d.QName(), "."), dnsSeq: d.Seq}
		}
		// Loopback names (localhost) say nothing about where bytes went.
		if h := s.in.Hosts[ip.String()]; h != "" && !ip.IsLoopback() {
			return peer{host: h}
		}
	}
	qs := s.dnsByPID[e.PID]
	// The queries are in seq order: start at the last one before e.
	n := sort.Search(len(qs), func(i int) bool { return qs[i].Seq > e.Seq })
	for i := n - 1; i >= 0; i-- {
		d := qs[i]
		if e.TS.Sub(d.TS) > s.pol.Thresholds.DNSWindow {
			break
		}
		if d.QName() == "" || strings.EqualFold(d.QType(), "PTR") || len(d.Answers()) > 0 {
			// An answered query names its answers (s.answers), not e's address.
			continue
		}
		return peer{host: strings.TrimSuffix(d.QName(), "."), inferred: true, dnsSeq: d.Seq}
	}
	return peer{}
}

// pidPeer is a process and a destination address (unmapped), for the
// per-peer indexes.
type pidPeer struct {
	pid  uint32
	addr netip.Addr
	port uint16
}

// peerKey is e's process and destination.
func peerKey(e *event.Event) pidPeer {
	a, _ := netip.ParseAddr(e.Addr())
	return pidPeer{e.PID, a.Unmap(), e.Port()}
}

// dnsAllowed reports whether e, to port 53, is allowed DNS: to one of the
// system's resolvers or a local stub, and the process sent that peer a
// message that parsed as a DNS query. Data of any other shape to port 53
// is judged like traffic to any other port.
func (s *facts) dnsAllowed(e *event.Event) bool {
	return e.Port() == 53 && s.pol.AllowDNS(e.Addr(), s.in.Resolvers) && s.dnsSent[peerKey(e)]
}

func (p peer) display(e *event.Event) string {
	hp := net.JoinHostPort(e.Addr(), strconv.Itoa(int(e.Port())))
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
	return e.Kind == event.KindConnect && (e.Family() == "ipv4" || e.Family() == "ipv6") && succeeded(e) && e.Addr() != ""
}

// internalLoopback reports whether a loopback connect went to a server
// the traced tree itself runs: one it bound that port for, or one that
// accepted a loopback connection right then (an ephemeral port bound as 0).
func (s *facts) internalLoopback(e *event.Event) bool {
	if !isLoopback(e.Addr()) {
		return false
	}
	if s.binds[e.Port()] {
		return true
	}
	// acceptsLo is sorted: look for one in [ts-100ms, ts+2s].
	from := e.TS.Add(-100 * time.Millisecond)
	i := sort.Search(len(s.acceptsLo), func(i int) bool { return !s.acceptsLo[i].Before(from) })
	return i < len(s.acceptsLo) && !s.acceptsLo[i].After(e.TS.Add(2*time.Second))
}

// allowed reports whether a connect or send is expected: the agent's own
// API traffic, allowed by policy (by a name only inferred from a query,
// too: see verdict), DNS to the resolvers, or to a server inside the tree.
func (s *facts) allowed(e *event.Event, p peer) bool {
	ok, _ := s.verdict(e, p)
	return ok
}

// verdict is allowed's answer, with weak set when only a name inferred
// from a DNS query (no recorded answer) allows the destination: the
// unexpected-egress rule reports those at low, as a query alone does not
// say where a process connected.
func (s *facts) verdict(e *event.Event, p peer) (ok, weak bool) {
	if at, ok := s.attribution(e); ok && at.ToolCallID == "" && at.Reason == correlate.ReasonAgentAPI {
		return true, false
	}
	if s.dnsAllowed(e) || !unrecordedPeer(e) && s.internalLoopback(e) {
		return true, false
	}
	if !s.pol.AllowEgress(p.host, e.Addr(), e.Port()) {
		return false, false
	}
	// The agent's own traffic by the name it looked up is its API (a
	// transcript's attribution says so; without one, the agent's images).
	if p.inferred && !s.pol.AllowEgress("", e.Addr(), e.Port()) && !s.agentOwn(e) && !s.agent[e.ExecID] {
		return true, true
	}
	return true, false
}

// ParseResolvConf returns the nameservers of a resolv.conf.
func ParseResolvConf(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "nameserver" {
			addr, _, _ := strings.Cut(f[1], "%") // a zone: fe80::1%eth0
			if _, err := netip.ParseAddr(addr); err == nil {
				out = append(out, addr)
			}
		}
	}
	return out
}

// ParseHosts returns the first name of each address of a hosts file, by
// the address's canonical (unmapped) form.
func ParseHosts(data []byte) map[string]string {
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		if k := a.Unmap().String(); out[k] == "" {
			out[k] = strings.ToLower(strings.TrimSuffix(f[1], "."))
		}
	}
	return out
}

// offTree reports whether connect or net event x went to a peer outside
// the traced tree, other than DNS: loopback counts (a local server the
// tree does not run is as remote as any), the tree's own servers do not.
func offTree(s *facts, x *event.Event) bool {
	a, err := netip.ParseAddr(x.Addr())
	return err == nil && !a.Unmap().IsUnspecified() && x.Port() != 53 && !s.internalLoopback(x)
}

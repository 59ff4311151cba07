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
	host     string // DNS name, "" when unknown
	inferred bool   // host is the name the process looked up just before, not a recorded answer
	dnsSeq   uint64 // the dns event that named it, 0 for none
}

// peerOf names the destination of a connect or net event: the event's own
// host, a recorded DNS answer for the address, or the last name the same
// process looked up within the DNS window before it.
func (s *facts) peerOf(e *event.Event) peer {
	if e.Host != "" {
		return peer{host: e.Host}
	}
	if ip, err := netip.ParseAddr(e.Addr); err == nil {
		if d := s.answers[ip.Unmap()]; d != nil {
			return peer{host: d.QName, dnsSeq: d.Seq}
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
func (s *facts) internalLoopback(e *event.Event) bool {
	if !isLoopback(e.Addr) {
		return false
	}
	if s.binds[e.Port] {
		return true
	}
	// acceptsLo is sorted: look for one in [ts-100ms, ts+2s].
	from := e.TS.Add(-100 * time.Millisecond)
	i := sort.Search(len(s.acceptsLo), func(i int) bool { return !s.acceptsLo[i].Before(from) })
	return i < len(s.acceptsLo) && !s.acceptsLo[i].After(e.TS.Add(2*time.Second))
}

// allowed reports whether a connect is expected: the agent's own API
// traffic, allowed by policy, or to a server inside the tree.
func (s *facts) allowed(e *event.Event, p peer) bool {
	if at, ok := s.attribution(e); ok && at.ToolCallID == "" && at.Reason == correlate.ReasonAgentAPI {
		return true
	}
	return s.pol.AllowEgress(p.host, e.Addr, e.Port) || s.internalLoopback(e)
}

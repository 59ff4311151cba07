package detect

import (
	"net"
	"strconv"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
)

// Traffic: where a session's connections went
//
// polygraph stats counts connections and bytes by destination. It names
// and classes them here, as the rules and baselines do: the name from the
// recorded DNS answers (peerOf, destination), the agent's model API from
// correlate's attribution, the package registries from the policy, a
// server of the tree's own by internalLoopback.

// The destination classes of a Flow.
const (
	// DestModel is the agent's model API: a destination correlate
	// attributed some of the agent's own traffic to (agent-api).
	DestModel = "model"
	// DestRegistry is a package registry of the policy (registries).
	DestRegistry = "registry"
	// DestDNS is port 53.
	DestDNS = "dns"
	// DestLocal is a server the traced tree runs itself, on loopback.
	DestLocal = "local"
	// DestOther is anything else.
	DestOther = "other"
)

// Flow is what a session's processes did with one destination.
type Flow struct {
	// Dest is host:port, the host named where the session recorded a
	// name for the address (as baselines key their hosts).
	Dest  string `json:"dest"`
	Class string `json:"class"`
	// Connects are the connects to it that went out (succeeded or under
	// way), in seq order.
	Connects []*event.Event `json:"-"`
	// Sent and Recv are the bytes the net events count, both ways.
	Sent uint64 `json:"bytes_sent"`
	Recv uint64 `json:"bytes_recv"`
}

// Traffic returns every IP destination of session in, in the order first
// reached: its connects and the bytes exchanged with it.
func Traffic(in Input) []*Flow {
	s := newFacts(in)
	// The model API is a destination, whoever connects to it.
	model := map[string]bool{}
	for _, e := range s.events {
		if at, ok := s.attribution(e); ok && at.ToolCallID == "" && at.Reason == correlate.ReasonAgentAPI && e.Kind != event.KindDNS {
			model[net.JoinHostPort(e.Addr(), strconv.Itoa(int(e.Port())))] = true
		}
	}
	byDest := map[string]*Flow{}
	var out []*Flow
	for i, e := range s.events {
		f := &s.byEvent[i]
		switch {
		case f.flags&fEgress != 0 && f.flags&fBlocked == 0:
		case e.Kind == event.KindNet && (e.Family() == "ipv4" || e.Family() == "ipv6") &&
			!(e.Port() == 0 && (e.Addr() == "0.0.0.0" || e.Addr() == "::")):
		default:
			continue
		}
		dest := destination(e, s.peerOf(e))
		fl := byDest[dest]
		if fl == nil {
			fl = &Flow{Dest: dest, Class: s.destClass(e, model)}
			byDest[dest] = fl
			out = append(out, fl)
		}
		if e.Kind == event.KindNet {
			fl.Sent += e.BytesSent()
			fl.Recv += e.BytesRecv()
		} else {
			fl.Connects = append(fl.Connects, e)
		}
	}
	return out
}

// destClass classes the destination of connect or net event e; model
// holds the model API's addr:port.
func (s *facts) destClass(e *event.Event, model map[string]bool) string {
	switch {
	case model[net.JoinHostPort(e.Addr(), strconv.Itoa(int(e.Port())))]:
		return DestModel
	case e.Port() == 53:
		return DestDNS
	case s.internalLoopback(e):
		return DestLocal
	case s.pol.IsRegistry(s.peerOf(e).host, e.Addr(), e.Port()):
		return DestRegistry
	}
	return DestOther
}

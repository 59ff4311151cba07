package correlate

import (
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// network classifies a network event of the agent's own process (core) or
// of one of its helpers; im is the event's image.
func (a *attributor) network(e *event.Event, im *lineage.Image, at *Attribution, core bool) {
	if core && (e.Kind == event.KindConnect || e.Kind == event.KindDNS || e.Kind == event.KindNet) {
		if ci := a.fetchCall(e); ci != nil {
			at.Reason, at.ToolCallID, at.Detail = ReasonInProcess, ci.tc.ID, "host"
			a.record(ci, e, im, "", "", false)
			return
		}
	}
	switch {
	case e.Kind == event.KindDNS && a.api.dns(e),
		e.Kind != event.KindDNS && a.api.peer(e) && e.Kind != event.KindBind:
		at.Reason, at.Detail = ReasonAgentAPI, "model-api"
	case e.Family() == "unix" && a.env.bookkeeping(e.Addr(), e.Kind == event.KindBind) != "":
		at.Reason, at.Detail = ReasonAgentBookkeeping, "local-socket"
	case core && e.Kind == event.KindBind && e.Port() == 0 && (e.Addr() == "::1" || e.Addr() == "127.0.0.1"):
		// A bind to an ephemeral loopback port that is never listened on:
		// urllib3 (mini-swe-agent's requests) probing for IPv6 at import.
		at.Reason, at.Detail = ReasonAgentBookkeeping, "socket-probe"
	default:
		at.Detail = "agent-network"
	}
}

// fetchCall finds the in-process fetch call whose URL host the event names.
func (a *attributor) fetchCall(e *event.Event) *callInfo {
	names := []string{strings.ToLower(e.Host()), strings.ToLower(e.Addr()), strings.ToLower(strings.TrimSuffix(e.QName(), "."))}
	for _, ci := range a.calls.at(e.TS) {
		if len(ci.hosts) == 0 {
			continue
		}
		for _, h := range ci.hosts {
			for _, n := range names {
				if n != "" && n == h {
					return ci
				}
			}
		}
	}
	return nil
}

// coreEvents returns those of evs that the agent's own processes made.
func (a *attributor) coreEvents(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if a.ownerOf(a.tree.Of(e)).kind == ownCore {
			out = append(out, e)
		}
	}
	return out
}

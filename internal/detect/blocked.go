package detect

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// An isolated session (run --isolate) refuses some of what the rules
// look for: the read of a masked credential finds an empty mask, the
// connect outside the allowlist fails with EPERM. The attempt is still
// the finding, with Blocked set: the intent is evidence whether or not
// it worked.

// linuxEPERM is the errno the egress control refuses with.
const linuxEPERM = 1

// masked reports whether path lies in what the isolation hid from the
// tree (and not in what it kept visible inside a mask).
func (s *facts) masked(path string) bool {
	iso := s.in.Meta.Isolation
	if iso == nil || path == "" {
		return false
	}
	under := func(list []string) bool {
		for _, m := range list {
			if path == m || strings.HasPrefix(path, m+"/") {
				return true
			}
		}
		return false
	}
	return under(iso.Masked) && !under(iso.Kept)
}

// blockedRead reports whether e is an open asking to read a masked path:
// a failed one (a file inside a masked directory is not there) or one
// that opened the mask itself (the empty directory or file in the
// store's place). The attempt counts.
func (s *facts) blockedRead(e *event.Event) bool {
	return e.Kind == event.KindOpen && strings.Contains(e.Access, "read") && s.masked(e.Path)
}

// blockedChange reports whether e is a failed attempt to change a masked
// path: an open asking to write or create it, its removal, a rename of
// it.
func (s *facts) blockedChange(e *event.Event) bool {
	if !e.Failed() || !s.masked(e.Path) {
		return false
	}
	switch e.Kind {
	case event.KindOpen:
		return strings.Contains(e.Access, "write") || strings.Contains(e.Access, "create")
	case event.KindUnlink, event.KindRename:
		return true
	}
	return false
}

// blockedConnect reports whether e is an IP connect the isolation's
// egress control refused.
func (s *facts) blockedConnect(e *event.Event) bool {
	return s.in.Meta.Isolation != nil && e.Kind == event.KindConnect && (e.Family() == "ipv4" || e.Family() == "ipv6") &&
		e.Addr() != "" && e.Result != nil && *e.Result == -linuxEPERM
}

// blockedSends are the unexpected-egress findings for the UDP sends the
// egress control refused, which no connect event stands for: the
// session's metadata has them (dest, count, first pid), no event does.
func blockedSends(s *run) []Finding {
	iso := s.in.Meta.Isolation
	if iso == nil {
		return nil
	}
	var out []Finding
	for _, d := range iso.Denied {
		if d.Hook != "sendmsg4" && d.Hook != "sendmsg6" {
			continue
		}
		ap, err := netip.ParseAddrPort(d.Dest)
		if err != nil || s.pol.AllowEgress("", ap.Addr().String(), ap.Port()) {
			continue
		}
		detail := fmt.Sprintf("pid %d sent a UDP datagram to %s, which the egress allowlist does not cover; the isolation refused it (EPERM)", d.PID, d.Dest)
		if d.Count > 1 {
			detail += fmt.Sprintf(" (%d times)", d.Count)
		}
		f := s.finding(s.rule.Severity, "Unexpected UDP send to "+d.Dest+" (blocked)", detail+".", "", nil, false)
		f.Blocked = true
		out = append(out, f)
	}
	return out
}

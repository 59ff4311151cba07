package detect

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// display shows a path with its home directory as "~".
func (s *facts) display(p string) string {
	if h, ok := homeRel(p, s.home); ok {
		return h
	}
	return p
}

func homeRel(p, home string) (string, bool) {
	home = strings.TrimRight(home, "/")
	if home != "" && strings.HasPrefix(p, home+"/") {
		return "~/" + p[len(home)+1:], true
	}
	return "", false
}

// succeeded reports whether e did what it asked (no -errno result). A
// connect in progress (EINPROGRESS, a non-blocking connect) counts.
func succeeded(e *event.Event) bool {
	if e.Result == nil || *e.Result >= 0 {
		return true
	}
	return e.Kind == event.KindConnect && *e.Result == -115
}

// removed returns the path e removed or moved away, "" for other events.
func removed(e *event.Event) string {
	if !succeeded(e) {
		return ""
	}
	switch e.Kind {
	case event.KindUnlink, event.KindRename:
		return e.Path
	}
	return ""
}

func isLoopback(addr string) bool {
	ip, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	ip = ip.Unmap()
	return ip.IsLoopback() || ip.IsUnspecified()
}

// list joins up to n items, saying how many more there were.
func list(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// capped keeps at most n seqs (the first ones), so a finding about a
// flood of events stays readable.
func capped(seqs []uint64, n int) []uint64 {
	if len(seqs) > n {
		return seqs[:n]
	}
	return seqs
}

// plural counts n of a thing, one or many.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// joinNote joins two notes with "; ", either of which may be empty.
func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

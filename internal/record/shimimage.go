package record

import (
	"slices"
	"sync"

	"github.com/polygraph/polygraph/internal/event"
)

// shimImages knows the images of the shim, whose events are polygraph's
// own and stay out of the session. The shim is tracked once it has
// exec'd polygraph, under the image its start time names; but the parent
// learns the exec succeeded when the exec closes the shim's close-on-exec
// fds, before the kernel reports the exec, so tracking can begin first and
// the kernel then reports the exec itself, under an image named for the
// exec's time. That exec is known by what the kernel says of it: the shim's
// pid running polygraph's own binary with ShimArg.
type shimImages struct {
	mu   sync.Mutex
	pid  uint32
	self string   // polygraph's own binary, as the kernel resolves it
	ids  []string // the shim's image ids
	// execd: the shim's pid has exec'd something else, the command; no
	// later exec is the shim's.
	execd bool
}

// set names the shim: its pid and the image its start time gives.
func (s *shimImages) set(pid uint32, id, self string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pid, s.self, s.ids = pid, self, append(s.ids, id)
}

// owns reports whether ev is the shim's and not the command's: an event of
// one of its images, or its exec of polygraph, which becomes one. Its exit
// (when the command could not be started) is a fact about the command.
func (s *shimImages) owns(ev *event.Event) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid == 0 || ev.PID != s.pid {
		return false
	}
	if slices.Contains(s.ids, ev.ExecID) {
		return ev.Kind != event.KindExit
	}
	if ev.Kind != event.KindExec || s.execd {
		return false
	}
	if ev.Process != nil && ev.Path == s.self && len(ev.Argv()) > 1 && ev.Argv()[1] == ShimArg {
		s.ids = append(s.ids, ev.ExecID)
		return true
	}
	s.execd = true
	return false
}

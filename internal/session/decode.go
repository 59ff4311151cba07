package session

import (
	"github.com/polygraph/polygraph/internal/event"
)

// maxReadInterned bounds an interner, as maxInterned bounds the writer's
// path cache: past it the interner starts over, so a read of a week-long
// `watch` streamed through a callback that keeps nothing stays flat.
const maxReadInterned = 1 << 17

// interner hands out one copy of each repeated string an Events call
// reads. A session repeats the same few thousand paths, comms, exec ids
// and access modes a million times; without it every event read would
// hold its own copies. It also allocates the events (see slab).
type interner struct {
	m     map[string]string
	evs   event.Slab[event.Event]
	procs event.Slab[event.Process]
	nets  event.Slab[event.Network]
}

// event returns a new zero event.
func (in *interner) event() *event.Event { return in.evs.New() }

// process returns a new zero Process.
func (in *interner) process() *event.Process { return in.procs.New() }

// network returns a new zero Network.
func (in *interner) network() *event.Network { return in.nets.New() }

func newInterner() *interner { return &interner{m: make(map[string]string, 1024)} }

// str returns the shared copy of s, which the caller owns and lets the
// interner keep (a string the driver just allocated).
func (in *interner) str(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in.m[s]; ok {
		return v
	}
	in.add(s)
	return s
}

// bytes returns the shared copy of b as a string; b is not kept.
func (in *interner) bytes(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if v, ok := in.m[string(b)]; ok { // no allocation: a map lookup by string(b)
		return v
	}
	s := string(b)
	in.add(s)
	return s
}

func (in *interner) add(s string) {
	if len(in.m) >= maxReadInterned {
		clear(in.m)
	}
	in.m[s] = s
}

// kind returns the event.Kind constant spelled s (or an interned copy of
// an unknown kind: a newer polygraph's session).
func (in *interner) kind(s string) event.Kind {
	if k, ok := kindByName[s]; ok {
		return k
	}
	return event.Kind(in.str(s))
}

// kindByName maps the kinds' names to the constants.
var kindByName = func() map[string]event.Kind {
	m := make(map[string]event.Kind, len(event.Kinds))
	for _, k := range event.Kinds {
		m[string(k)] = k
	}
	return m
}()

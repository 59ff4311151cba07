package event

import "unsafe"

// Slab hands out zero values of T allocated 16 KiB at a time, one of the
// allocator's size classes, where one value alone would be rounded up to
// the next class and cost an allocation of its own. A slab lives as long
// as any of its values: a caller keeping one value in seventy keeps them
// all, one keeping every value (the report keeps every event) saves the
// rounding and most of the time allocating them takes. The decoders
// allocate events and their small optional fields this way.
type Slab[T any] struct{ free []T }

// New returns a pointer to a new zero T.
func (s *Slab[T]) New() *T {
	if len(s.free) == 0 {
		var zero T
		s.free = make([]T, max(1, 16<<10/int(unsafe.Sizeof(zero))))
	}
	v := &s.free[0]
	s.free = s.free[1:]
	return v
}

// Ptr returns a pointer to a copy of v, from the slab.
func (s *Slab[T]) Ptr(v T) *T {
	p := s.New()
	*p = v
	return p
}

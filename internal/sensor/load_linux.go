package sensor

import (
	"errors"
	"maps"

	"github.com/cilium/ebpf"
)

// bigProgram is the program whose verification is most of the sensor's
// start: sys_exit, one switch over every hooked syscall (~0.35 s on an
// idle 6.18 host, 97,000 instructions processed, against ~0.05 s for all
// the others together).
const bigProgram = "sys_exit"

// loadCollection loads spec as ebpf.NewCollection does, but verifies the
// big program on its own goroutine while the others are verified: the
// kernel verifies one program per call, and a host with a second core
// spends the others' time beside it. The maps (and the global variables'
// maps) are made first and shared by both loads.
func loadCollection(spec *ebpf.CollectionSpec) (*ebpf.Collection, error) {
	if _, ok := spec.Programs[bigProgram]; !ok || len(spec.Programs) < 2 {
		return ebpf.NewCollection(spec)
	}
	only := func(keep func(name string) bool) *ebpf.CollectionSpec {
		c := spec.Copy()
		maps.DeleteFunc(c.Programs, func(name string, _ *ebpf.ProgramSpec) bool { return !keep(name) })
		return c
	}
	shared, err := ebpf.NewCollection(only(func(string) bool { return false }))
	if err != nil {
		return nil, err
	}
	opts := ebpf.CollectionOptions{MapReplacements: shared.Maps}
	type loaded struct {
		coll *ebpf.Collection
		err  error
	}
	big := make(chan loaded, 1)
	go func() {
		c, err := ebpf.NewCollectionWithOptions(only(func(n string) bool { return n == bigProgram }), opts)
		big <- loaded{c, err}
	}()
	rest, errRest := ebpf.NewCollectionWithOptions(only(func(n string) bool { return n != bigProgram }), opts)
	b := <-big
	if err := errors.Join(b.err, errRest); err != nil {
		for _, c := range []*ebpf.Collection{b.coll, rest, shared} {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	// The programs hold the maps they use; the loads' clones of the
	// shared maps are closed, the shared collection keeps its own.
	coll := &ebpf.Collection{Maps: shared.Maps, Variables: shared.Variables, Programs: map[string]*ebpf.Program{}}
	for _, c := range []*ebpf.Collection{b.coll, rest} {
		maps.Copy(coll.Programs, c.Programs)
		for _, m := range c.Maps {
			m.Close()
		}
	}
	return coll, nil
}

package sensor

import (
	"fmt"

	"github.com/cilium/ebpf"
)

// flagOutside is EVF_OUTSIDE (bpf/watch.h): the record is of a process
// outside every traced tree, reported because watch mode is on.
const flagOutside = 1 << 7

// setWatch sets watch_mode before load; off, the verifier drops the
// watch code.
func setWatch(spec *ebpf.CollectionSpec, on bool) error {
	if !on {
		return nil
	}
	vs := spec.Variables["watch_mode"]
	if vs == nil {
		return fmt.Errorf("BPF object has no watch_mode")
	}
	if err := vs.Set(uint32(1)); err != nil {
		return fmt.Errorf("set watch_mode: %w", err)
	}
	return nil
}

// FileID names a file by device (st_dev, as stat returns it) and inode.
type FileID struct {
	Dev uint64
	Ino uint64
}

// WatchFiles adds files and directories to the watched set: in watch
// mode, a process outside every traced tree that opens one of them, or a
// file directly inside a watched directory, is reported (its open event).
func (s *Sensor) WatchFiles(ids []FileID) error {
	m := s.coll.Maps["watched"]
	if m == nil {
		return fmt.Errorf("BPF object has no watched map")
	}
	for i, id := range ids {
		k := polygraphWatchKey{Ino: id.Ino, Dev: KernelDev(id.Dev)}
		if err := m.Update(&k, uint32(i), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("watch file %d:%d: %w", id.Dev, id.Ino, err)
		}
	}
	return nil
}

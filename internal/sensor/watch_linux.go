package sensor

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"

	"github.com/polygraph/polygraph/internal/agent"
)

// flagOutside is EVF_OUTSIDE (bpf/watch.h): the record is of a process
// outside every traced tree, reported because watch mode is on.
const flagOutside = 1 << 7

// Sizes of the kernel's agent test (bpf/watch.h: keep in sync).
const (
	watchNameLen = 32
	watchFrags   = 8
	watchFragLen = 64
)

// execFilter is what the kernel's agent test at exec is given
// (watch_candidate in bpf/watch.h): the names that make an exec a
// candidate and the fragments looked for in its argv[1]. ok is false when
// the profiles cannot be put that way (a fragment with no whole path
// component, or too many or too long to fit): then every exec is reported.
func execFilter(programs, installs []string) (names [][watchNameLen]byte, frags [watchFrags][watchFragLen]byte, ok bool) {
	if len(installs) > watchFrags {
		return nil, frags, false
	}
	key := func(n string) (k [watchNameLen]byte) {
		copy(k[:watchNameLen-1], n) // cut as bpf_probe_read_kernel_str cuts it
		return k
	}
	for _, p := range programs {
		names = append(names, key(p))
	}
	for i, f := range installs {
		if len(f) >= watchFragLen {
			return nil, frags, false
		}
		copy(frags[i][:], f)
		// The whole components are those with a '/' on both sides; a
		// path holding f has each of them as a directory above the image.
		parts := strings.Split(f, "/")
		last := ""
		for i := 1; i < len(parts)-1; i++ {
			if parts[i] != "" {
				last = parts[i]
			}
		}
		if last == "" {
			return nil, frags, false
		}
		names = append(names, key(last))
	}
	return names, frags, true
}

// setWatch sets watch_mode before load, and the agent test at exec; off,
// the verifier drops the watch code.
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
	_, frags, ok := execFilter(agent.Programs(), agent.Installs())
	if !ok {
		return nil // watch_filter stays 0: every exec is reported
	}
	for name, v := range map[string]any{"watch_filter": uint32(1), "watch_nfrags": uint32(len(agent.Installs())), "watch_frags": frags} {
		vs := spec.Variables[name]
		if vs == nil {
			return fmt.Errorf("BPF object has no %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// fillWatchNames fills watch_names after load (setWatch turned the test on).
func (s *Sensor) fillWatchNames() error {
	m := s.coll.Maps["watch_names"]
	if m == nil {
		return fmt.Errorf("BPF object has no watch_names map")
	}
	names, _, ok := execFilter(agent.Programs(), agent.Installs())
	if !ok {
		return nil
	}
	for _, k := range names {
		if err := m.Update(k, uint8(1), ebpf.UpdateAny); err != nil {
			return fmt.Errorf("watch name %q: %w", strings.TrimRight(string(k[:]), "\x00"), err)
		}
	}
	return nil
}

// NotAgent tells the kernel that process pid, whose exec it reported in
// watch mode, is no agent's: its children's execs need not be reported
// for its sake (watch_cands). A pid it does not hold is no error.
func (s *Sensor) NotAgent(pid uint32) {
	if m := s.coll.Maps["watch_cands"]; m != nil {
		_ = m.Delete(pid)
	}
}

// FileID names a watched file or directory by device (st_dev, as stat
// returns it) and inode, with the inode of the directory it is in.
type FileID struct {
	Dev uint64
	Ino uint64
	// Dir says it is a directory: a file directly inside matches too.
	Dir bool
	// ParentIno is the inode of the directory holding it (0: unknown,
	// and then it is not watched).
	ParentIno uint64
}

// Values of the watched map (bpf/watch.h: keep in sync).
const (
	watchSelf  = 1
	watchDir   = 2
	watchChild = 4
)

// WatchFiles adds files and directories to the watched set: in watch
// mode, a process outside every traced tree that opens one of them, or a
// file directly inside a watched directory, is reported (its open event).
// The kernel looks an open up by its file's directory first: each
// entry's directory is in the set too (watchChild).
func (s *Sensor) WatchFiles(ids []FileID) error {
	m := s.coll.Maps["watched"]
	if m == nil {
		return fmt.Errorf("BPF object has no watched map")
	}
	flags := map[polygraphWatchKey]uint32{}
	for _, id := range ids {
		dev := KernelDev(id.Dev)
		self := polygraphWatchKey{Ino: id.Ino, Dev: dev}
		flags[self] |= watchSelf
		if id.Dir {
			flags[self] |= watchDir
		}
		if id.ParentIno != 0 {
			flags[polygraphWatchKey{Ino: id.ParentIno, Dev: dev}] |= watchChild
		}
	}
	for k, v := range flags {
		if err := m.Update(&k, v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("watch file %d:%d: %w", k.Dev, k.Ino, err)
		}
	}
	return nil
}

package sensor

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// The security ring (sec_events) carries the rare, security-relevant
// records (process tree, network, calls at other processes or the kernel,
// io_uring set-up, opens of the files MarkSensitive named), so that a storm
// of ordinary opens overflowing the main ring cannot push them out. The
// reader merges the two rings into one stream in timestamp order: it holds
// a security record back until the main ring has been read past its time
// (the main ring found empty after it, or a main record later than it
// read), so an exit never overtakes its process's last opens; and before
// handing on a main record later than its last look at the security ring
// it looks again, so a record committed before that main record (an
// inject before the target's reads) is never overtaken by it. Records that
// took longer than mergeSlack between their timestamp and their commit can
// still come out of order.
//
// A record of a process outside every traced tree (watch mode's execs and
// watched opens, EVF_OUTSIDE) is handed on as soon as it is read: no main
// record is about its process, so there is nothing to merge it with, and
// holding it made the reader wake every mergeSlack while the host exec'd
// (watch's user space cost ~41 µs an exec on an exec storm, most of it
// those wake-ups).

// mergeSlack is how long a record may take from its timestamp to its
// commit for the merge to place it in order.
const mergeSlack = 2 * time.Millisecond

// mainBatch bounds the main-ring records read between two looks at the
// security ring, so a storm on the main ring cannot starve it.
const mainBatch = 4096

// outside reports whether raw is the record of a process outside every
// traced tree (ev_header.flags has EVF_OUTSIDE).
func outside(raw []byte) bool {
	return len(raw) > 1 && raw[1]&flagOutside != 0
}

// secRec is a security-ring record held for the merge.
type secRec struct {
	ts  uint64
	raw []byte
}

// recTS is a record's boot-clock timestamp (ev_header.ts).
func recTS(raw []byte) uint64 {
	if len(raw) < 24 {
		return 0
	}
	return binary.LittleEndian.Uint64(raw[16:24])
}

// bootNS is the boot clock now, the clock of the records' timestamps.
func bootNS() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return uint64(ts.Nano())
}

// bootClock reads the boot clock without a syscall per record: one
// clock_gettime(CLOCK_BOOTTIME) when synced, the runtime's monotonic clock
// (vDSO) since. The two advance together but for time suspended, so
// between syncs now is at most the true boot clock, never past it: the
// merge then holds security records a little longer, never too short.
// (A clock_gettime syscall per record was a sixth of the sensor's user
// space CPU in a file storm.)
type bootClock struct {
	base uint64
	at   time.Time
}

func (c *bootClock) sync() { c.base, c.at = bootNS(), time.Now() }

func (c *bootClock) now() uint64 { return c.base + uint64(time.Since(c.at)) }

// readSec takes every record waiting in the security ring into s.pend,
// in timestamp order. It never blocks.
func (s *Sensor) readSec() {
	if s.secReader == nil {
		return
	}
	s.secSeen = s.clock.now()
	if s.secReader.AvailableBytes() == 0 {
		return // no syscall: this runs before most main records of a storm
	}
	s.secReader.SetDeadline(time.Now())
	n := len(s.pend)
	for {
		var rec ringbuf.Record
		if err := s.secReader.ReadInto(&rec); err != nil {
			break
		}
		if outside(rec.RawSample) {
			s.handle(rec.RawSample, true)
			continue
		}
		s.pend = append(s.pend, secRec{recTS(rec.RawSample), rec.RawSample})
	}
	if len(s.pend) > n {
		slices.SortStableFunc(s.pend, func(a, b secRec) int {
			switch {
			case a.ts < b.ts:
				return -1
			case a.ts > b.ts:
				return 1
			}
			return 0
		})
	}
}

// emitSecBefore hands on the held security records older than ts.
func (s *Sensor) emitSecBefore(ts uint64) {
	i := 0
	for i < len(s.pend) && s.pend[i].ts <= ts {
		s.handle(s.pend[i].raw, true)
		i++
	}
	if i > 0 {
		s.pend = slices.Delete(s.pend, 0, i)
	}
}

// fileKey is a file's identity as the kernel's maps key it.
type fileKey struct {
	dev uint32 // the kernel's encoding (KernelDev)
	ino uint64
}

// maxSecPaths bounds the guarded files noteGuarded remembers.
const maxSecPaths = 4096

// noteGuarded remembers the path of a guarded file an open from the
// security ring names, so that GuardedRepeats can name the file whose
// repeats the kernel counted by identity. Called before ev is handed on.
func (s *Sensor) noteGuarded(ev *event.Event) {
	if ev.Object == nil || ev.Object.Ino == 0 {
		return
	}
	k := fileKey{KernelDev(ev.Object.Dev), ev.Object.Ino}
	if _, ok := s.secPaths[k]; ok || len(s.secPaths) >= maxSecPaths {
		return
	}
	if s.secPaths == nil {
		s.secPaths = map[fileKey]string{}
	}
	s.secPaths[k] = ev.Path
}

// guardedRepeats sums the kernel's counts of repeated guarded opens
// (map sec_repeats) per file, most first; a file whose path no record
// named is given by identity.
func (s *Sensor) guardedRepeats() []manifest.Repeat {
	m := s.coll.Maps["sec_repeats"]
	if m == nil {
		return nil
	}
	sums := map[fileKey]uint64{}
	var k polygraphSecOpenKey
	var n uint64
	for it := m.Iterate(); it.Next(&k, &n); {
		if n > 0 {
			sums[fileKey{k.Dev, k.Ino}] += n
		}
	}
	out := make([]manifest.Repeat, 0, len(sums))
	for f, n := range sums {
		p, ok := s.secPaths[f]
		if !ok {
			p = fmt.Sprintf("(dev %d:%d, inode %d)", f.dev>>20, f.dev&(1<<20-1), f.ino)
		}
		out = append(out, manifest.Repeat{Path: p, Count: n})
	}
	slices.SortFunc(out, func(a, b manifest.Repeat) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Path, b.Path))
	})
	return out
}

// MarkSensitive puts the file identity of each existing path into the
// kernel's sec_files map: an open of such a file, or of a file directly
// in such a directory, goes to the security ring. It returns how many it
// put (and logs it at debug). The identity is the one stat gives, which is the kernel's for the
// usual file systems (not for btrfs subvolumes, whose stat device is not
// the superblock's, nor overlayfs lower files).
func (s *Sensor) MarkSensitive(paths []string) int {
	m := s.coll.Maps["sec_files"]
	if m == nil {
		return 0
	}
	n := 0
	for i, p := range paths {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err != nil {
			continue
		}
		k := polygraphFileId{Ino: st.Ino, Dev: KernelDev(st.Dev)}
		if err := m.Update(&k, uint8(1), ebpf.UpdateAny); err != nil {
			if errors.Is(err, fs.ErrExist) {
				continue
			}
			// Full: the rest stay in the main ring (the rules still
			// see their opens; a storm can crowd them out).
			slog.Warn("the security ring's file map is full: the other guarded files' opens stay in the main ring",
				"marked", n, "candidates_left", len(paths)-i, "error", err)
			break
		}
		n++
	}
	slog.Debug("sensitive files marked for the security ring", "candidates", len(paths), "marked", n)
	return n
}

// newSecReader opens the security ring's reader.
func (s *Sensor) newSecReader() error {
	r, err := ringbuf.NewReader(s.coll.Maps["sec_events"])
	if err != nil {
		return err
	}
	s.secReader = r
	return nil
}

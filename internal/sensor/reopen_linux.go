package sensor

import (
	"encoding/binary"
	"log/slog"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"

	"github.com/polygraph/polygraph/internal/event"
)

// Repeated read-only opens (bpf/reopen.h): the kernel records an image's
// first two opens of a file in full, the second marked flagCounted, and
// counts the later ones in map reopen. The sensor keeps, per process, the opens so marked,
// and drains their counts when the image ends (its exec or exit record)
// and when tracing stops, into one open event per file: a copy of the
// first with Object.Repeats and the time of the last repeat.

// flagCounted is EVF_COUNTED (bpf/events.h) on an open record.
const flagCounted = 1 << 4

// oPath is O_PATH; reopenAccPath is REOPEN_ACC_PATH (bpf/reopen.h).
const (
	oPath         = 0o10000000
	reopenAccPath = 1
)

// counted is one open whose repeats the kernel counts.
type counted struct {
	key   polygraphSecOpenKey
	first event.Event // the recorded open, whose copy carries the count
}

// reopens holds the counted opens of one process's current image.
type reopens struct {
	imageNS uint64
	opens   []counted
}

// hdrImageOff is where a record's header keeps its image's start time,
// which the decoded event has only inside its exec id.
var hdrImageOff = int(unsafe.Offsetof(polygraphEvHeader{}.ImageNs))

// noteCounted remembers ev, decoded from raw, an open the kernel marked
// counted. Called before ev is handed on. The key is the kernel's: the
// file's identity as noteGuarded keys it, the image from the header.
func (s *Sensor) noteCounted(raw []byte, ev *event.Event) {
	if s.reopen == nil || len(raw) < hdrImageOff+8 || ev.Object == nil {
		return
	}
	k := polygraphSecOpenKey{
		Ino:     ev.Object.Ino,
		ImageNs: binary.NativeEndian.Uint64(raw[hdrImageOff:]),
		Dev:     KernelDev(ev.Object.Dev),
		Tgid:    ev.PID,
	}
	if ev.Flags != nil && *ev.Flags&oPath != 0 {
		k.Acc = reopenAccPath
	}
	if s.counted == nil {
		s.counted = map[uint32]*reopens{}
	}
	r := s.counted[ev.PID]
	if r == nil || r.imageNS != k.ImageNs {
		if r != nil {
			s.drainCounted(ev.PID) // a record of the image before came late
		}
		r = &reopens{imageNS: k.ImageNs}
		s.counted[ev.PID] = r
	}
	c := counted{key: k, first: *ev}
	o := *ev.Object
	c.first.Object = &o
	r.opens = append(r.opens, c)
}

// drainCounted turns the counts of pid's counted opens (every process's
// when pid is 0) into open events, and removes them from the map.
func (s *Sensor) drainCounted(pid uint32) {
	if s.reopen == nil {
		return
	}
	drain := func(r *reopens) {
		var v polygraphReopenVal
		for i := range r.opens {
			c := &r.opens[i]
			if err := s.reopen.LookupAndDelete(&c.key, &v); err != nil {
				continue // not made (the map was full, or another thread's open made it), or drained
			}
			if v.Count == 0 {
				continue
			}
			e := c.first
			o := *c.first.Object
			o.Repeats = v.Count
			e.Object = &o
			e.Seq = 0
			e.TS = s.dec.BootOffset.Add(time.Duration(v.LastNs))
			s.emit(&e)
		}
	}
	if pid != 0 {
		if r := s.counted[pid]; r != nil {
			delete(s.counted, pid)
			drain(r)
		}
		return
	}
	for p, r := range s.counted {
		delete(s.counted, p)
		drain(r)
	}
	// Entries no record named (the record was lost: the loss is counted)
	// are removed, so a long watch does not fill the map.
	var k polygraphSecOpenKey
	var v polygraphReopenVal
	var stale []polygraphSecOpenKey
	it := s.reopen.Iterate()
	for it.Next(&k, &v) {
		stale = append(stale, k)
	}
	for i := range stale {
		_ = s.reopen.Delete(&stale[i])
	}
	if len(stale) > 0 {
		slog.Debug("counted opens no record named", "entries", len(stale))
	}
}

// reopenMap is the kernel's map of counted opens, nil where it is missing.
func reopenMap(c *ebpf.Collection) *ebpf.Map { return c.Maps["reopen"] }

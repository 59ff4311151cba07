package sensor

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/polygraph/polygraph/internal/procfs"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/event"
)

// Sensor is the loaded and attached set of BPF programs.
type Sensor struct {
	coll        *ebpf.Collection
	hooks       string // HookPath
	tracked     *ebpf.Map
	lost        *ebpf.Map
	peerBytes   *ebpf.Map
	links       []link.Link
	reader      *ringbuf.Reader
	secReader   *ringbuf.Reader     // the security ring (secring_linux.go)
	pend        []secRec            // security records waiting for the merge
	clock       bootClock           // the merge's boot clock
	secSeen     uint64              // boot time of the last look at the security ring
	secPaths    map[fileKey]string  // guarded files opened, by identity, for GuardedRepeats
	reopen      *ebpf.Map           // counted opens (reopen_linux.go)
	counted     map[uint32]*reopens // the opens whose repeats are counted, by pid
	dec         *Decoder
	queue       chan *event.Event
	unavailable []string

	mu       sync.Mutex
	dropped  uint64 // events dropped because the sink was slow
	badRecs  uint64 // records that did not decode
	wg       sync.WaitGroup
	stopOnce sync.Once
	final    bool // the reader is draining after Stop: block instead of dropping
}

// privileged reports whether this process may load and attach the
// sensor: CAP_SYS_ADMIN, or CAP_BPF with CAP_PERFMON.
func privileged() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return os.Geteuid() == 0
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	return has(unix.CAP_SYS_ADMIN) || has(unix.CAP_BPF) && has(unix.CAP_PERFMON)
}

// optionalBTF names the tp_btf programs that need a tracepoint not every
// kernel has, and what is lost without it.
var optionalBTF = map[string]struct{ target, feature string }{
	"handle_send_length": {"btf_trace_sock_send_length", "bytes per peer (kernel ≥ 6.3)"},
	"handle_recv_length": {"btf_trace_sock_recv_length", "bytes per peer (kernel ≥ 6.3)"},
	"handle_consume_skb": {"btf_trace_consume_skb", "following a process outside the tree that receives the tree's Unix socket messages"},
}

// New loads and attaches the sensor. Nothing is traced until Track adds a
// process. The caller must Close it.
func New(opts Options) (*Sensor, error) {
	if opts.SecRingBytes == 0 {
		opts.SecRingBytes = 4 << 20
	}
	if opts.QueueLen == 0 {
		opts.QueueLen = 65536
	}
	if !privileged() {
		return nil, ErrPermission
	}
	// BPF memory is charged to the memory cgroup on kernels ≥ 5.11; where
	// it is not, lifting the limit may be refused (no CAP_SYS_RESOURCE)
	// and loading still works for small maps.
	if err := rlimit.RemoveMemlock(); err != nil {
		slog.Debug("could not lift RLIMIT_MEMLOCK", "error", err)
	}
	spec, err := loadPolygraph()
	if err != nil {
		return nil, fmt.Errorf("load BPF spec: %w", err)
	}
	ncpu, err := ebpf.PossibleCPU()
	if err != nil {
		ncpu = runtime.NumCPU()
	}
	if opts.RingBytes == 0 {
		opts.RingBytes = DefaultRingBytes(ncpu)
	}
	spec.Maps["scratch"].MaxEntries = uint32(ncpu)
	spec.Maps["events"].MaxEntries = uint32(opts.RingBytes)
	spec.Maps["sec_events"].MaxEntries = uint32(opts.SecRingBytes)
	// The kernel side tells a signal aimed at polygraph by its pid and
	// process group.
	for name, v := range map[string]uint32{"sensor_pid": uint32(os.Getpid()), "sensor_pgid": uint32(unix.Getpgrp())} {
		if vs := spec.Variables[name]; vs != nil {
			if err := vs.Set(v); err != nil {
				return nil, fmt.Errorf("set %s: %w", name, err)
			}
		}
	}

	if err := setWatch(spec, opts.Watch); err != nil {
		return nil, err
	}
	s := &Sensor{queue: make(chan *event.Event, opts.QueueLen)}
	// Drop the optional programs whose hook this kernel lacks, instead of
	// failing the whole load.
	if kspec, err := btf.LoadKernelSpec(); err == nil {
		drop, lost := missingHooks(kspec)
		for _, prog := range drop {
			delete(spec.Programs, prog)
		}
		for _, f := range lost {
			s.noteUnavailable(f)
		}
	}
	// The faster hooks are probed beside the load (a few ms).
	probed := make(chan string, 1)
	go func() { probed <- probeHooks() }()
	s.coll, err = loadCollection(spec)
	s.hooks = <-probed
	if err != nil {
		// The verifier refuses with EACCES too: that is no lack of privilege.
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("load BPF programs: the verifier refused them: %w", err)
		}
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, ErrPermission
		}
		return nil, fmt.Errorf("load BPF programs: %w", err)
	}
	s.tracked, s.lost, s.peerBytes = s.coll.Maps["tracked"], s.coll.Maps["lost"], s.coll.Maps["peer_bytes"]
	s.reopen = reopenMap(s.coll)
	if opts.Watch {
		if err := s.fillWatchNames(); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.attach(spec); err != nil {
		s.Close()
		return nil, err
	}
	s.reader, err = ringbuf.NewReader(s.coll.Maps["events"])
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("open ring buffer: %w", err)
	}
	if err := s.newSecReader(); err != nil {
		s.Close()
		return nil, fmt.Errorf("open the security ring buffer: %w", err)
	}
	s.dec = NewDecoder(bootOffset())
	s.dec.PageKB = uint64(os.Getpagesize() / 1024)
	s.dec.Environ = procEnviron
	s.dec.Exe = procExe
	return s, nil
}

// missingHooks returns the optional programs whose hook this kernel
// lacks, to drop before loading, and what is lost without them or on an
// older io_uring (probeRing), as the session's unavailable names it. New
// and Probe (polygraph --version) both ask it, so the two never disagree.
func missingHooks(kspec *btf.Spec) (drop, lost []string) {
	var s Sensor
	for _, prog := range slices.Sorted(maps.Keys(optionalBTF)) {
		o := optionalBTF[prog]
		var td *btf.Typedef
		if err := kspec.TypeByName(o.target, &td); err != nil {
			drop = append(drop, prog)
			s.noteUnavailable(o.feature)
		}
	}
	s.probeRing(kspec)
	return drop, s.unavailable
}

func (s *Sensor) noteUnavailable(f string) {
	for _, u := range s.unavailable {
		if u == f {
			return
		}
	}
	s.unavailable = append(s.unavailable, f)
}

// Hooks lists the tracepoints the sensor attaches its programs to (the
// bench attaches empty programs to the same ones to measure the floor).
func Hooks() ([]string, error) {
	spec, err := loadPolygraph()
	if err != nil {
		return nil, err
	}
	var hooks []string
	for _, ps := range spec.Programs {
		hooks = append(hooks, strings.TrimPrefix(ps.SectionName, "tp_btf/"))
	}
	slices.Sort(hooks)
	return hooks, nil
}

// attach attaches every loaded program to its hook. All are tp_btf
// (BTF-typed raw tracepoints): they need no tracefs, and detach at once.
func (s *Sensor) attach(spec *ebpf.CollectionSpec) error {
	for name, ps := range spec.Programs {
		prog := s.coll.Programs[name]
		if prog == nil {
			continue
		}
		if !strings.HasPrefix(ps.SectionName, "tp_btf/") {
			return fmt.Errorf("program %s: unexpected section %q", name, ps.SectionName)
		}
		l, err := link.AttachTracing(link.TracingOptions{Program: prog})
		if err != nil {
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
				return ErrPermission
			}
			return fmt.Errorf("attach %s: %w", ps.SectionName, err)
		}
		s.links = append(s.links, l)
	}
	return nil
}

// Unavailable lists the features this kernel did not allow, for the
// session record and a one-line notice.
func (s *Sensor) Unavailable() []string { return s.unavailable }

// Decoder exposes the sensor's decoder, for seeding processes.
func (s *Sensor) Decoder() *Decoder { return s.dec }

// Track adds a running process to the traced set; its future children
// are traced from their fork on. imageNS is the boot-clock start of its
// current image (see StartTimeNS).
func (s *Sensor) Track(pid uint32, imageNS uint64) error {
	v := polygraphProcInfo{ImageNs: imageNS}
	if err := s.tracked.Update(pid, &v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("track pid %d: %w", pid, err)
	}
	return nil
}

// Prune forgets the traced pids whose process is gone (or a zombie). A
// process that attach found and that exited before its entry was written
// never gets the exit that removes the entry, and would keep the tree
// "alive" for ever.
func (s *Sensor) Prune() {
	for _, pid := range s.Tracked() {
		if procfs.Gone(int(pid)) {
			_ = s.tracked.Delete(pid)
		}
	}
}

// Tracked returns the pids the kernel still counts as traced and alive,
// but for the followed processes (outside the tree, traced while they act
// for it: bpf/follow.h), which are not the tree's to wait for, report as
// left running or end.
func (s *Sensor) Tracked() []uint32 {
	var pids []uint32
	var k uint32
	var v polygraphProcInfo
	it := s.tracked.Iterate()
	for it.Next(&k, &v) {
		if !IsFollowed(v.Flags) {
			pids = append(pids, k)
		}
	}
	return pids
}

// FollowedFlag is PI_FOLLOWED in a tracked entry's flags (keep in sync with
// bpf/events.h): a process outside the tree, followed while it acts for it.
const FollowedFlag = 1 << 3

// IsFollowed reports whether a tracked entry's flags mark a followed
// process.
func IsFollowed(flags uint32) bool { return flags&FollowedFlag != 0 }

// TrackedMapFile returns a new descriptor of the tracked-pids map, for a
// process that must find the traced tree after polygraph is gone (the
// recorder's watchdog). The caller closes it.
func (s *Sensor) TrackedMapFile() (*os.File, error) {
	fd, err := unix.FcntlInt(uintptr(s.tracked.FD()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate the tracked-pids map: %w", err)
	}
	return os.NewFile(uintptr(fd), "tracked-pids"), nil
}

// Start runs the reader until Stop; decoded events go to sink, which runs
// on its own goroutine so a slow sink never stalls the ring buffer (events
// it cannot keep up with are dropped and counted).
func (s *Sensor) Start(sink Sink) {
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		for ev := range s.queue {
			sink(ev)
		}
	}()
	go func() {
		defer s.wg.Done()
		defer close(s.queue)
		s.readLoop()
	}()
}

func (s *Sensor) emit(ev *event.Event) {
	if s.final {
		s.queue <- ev
		return
	}
	select {
	case s.queue <- ev:
	default:
		s.mu.Lock()
		s.dropped++
		s.mu.Unlock()
	}
}

// drainEvery is how often the reader drains the ring buffer when the
// kernel did not wake it (it wakes it only once WAKEUP_BYTES wait).
const drainEvery = 50 * time.Millisecond

// readLoop reads both rings until Stop, merging them (secring_linux.go):
// each round it takes the security ring's waiting records, then reads the
// main ring (waiting up to drainEvery for its first record when nothing is
// held), handing on each held security record before the first main
// record later than it.
func (s *Sensor) readLoop() {
	var rec ringbuf.Record
	for {
		s.clock.sync()
		s.readSec()
		wait := drainEvery
		if len(s.pend) > 0 {
			wait = mergeSlack
		}
		s.reader.SetDeadline(time.Now().Add(wait))
		var err error
		for n := 0; n < mainBatch; n++ {
			before := s.clock.now()
			if err = s.reader.ReadInto(&rec); err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					// The main ring was empty at before: what it
					// will still get is later.
					s.emitSecBefore(before - uint64(mergeSlack))
				}
				break
			}
			s.reader.SetDeadline(time.Now())
			ts := recTS(rec.RawSample)
			if ts > s.secSeen {
				s.readSec()
			}
			s.emitSecBefore(ts)
			s.handle(rec.RawSample, false)
		}
		if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if errors.Is(err, ringbuf.ErrFlushed) {
			// Tracing stopped: the rest of the security ring, then the
			// processes still alive get their byte counters now.
			s.final = true
			s.readSec()
			s.emitSecBefore(^uint64(0))
			s.drainCounted(0)
			s.drainPeers(0, nil)
			s.drainRing(0)
			return
		}
		if !errors.Is(err, ringbuf.ErrClosed) {
			slog.Warn("ring buffer read failed", "error", err)
		}
		return
	}
}

// handle decodes one record and hands its event on; sec says it came
// from the security ring.
func (s *Sensor) handle(raw []byte, sec bool) {
	ev, err := s.dec.Decode(raw)
	if err != nil {
		s.mu.Lock()
		s.badRecs++
		s.mu.Unlock()
		slog.Debug("undecodable record", "error", err)
		return
	}
	if raw[1]&flagOutside != 0 {
		// Watch mode: a process no tree holds; nothing of it is needed
		// for the next record, and there are many.
		s.dec.Forget(ev.PID)
	}
	switch {
	case sec && ev.Kind == event.KindOpen:
		s.noteGuarded(ev)
	case ev.Kind == event.KindOpen && raw[1]&flagCounted != 0:
		s.noteCounted(raw, ev)
	case ev.Kind == event.KindExec || ev.Kind == event.KindExit:
		// the image ends: its counted opens first
		s.drainCounted(ev.PID)
	}
	s.emit(ev)
	if ev.Kind == event.KindExit {
		// Draining walks the whole map (every bucket of it, however
		// empty): only for a process the kernel says has counters.
		if raw[1]&flagPeers != 0 {
			s.drainPeers(ev.PID, ev)
		}
		s.drainRing(ev.PID)
		s.dec.Forget(ev.PID)
	}
}

// drainPeers turns the byte counters of pid (all pids when pid is 0) into
// net events and removes them from the map.
func (s *Sensor) drainPeers(pid uint32, like *event.Event) {
	var k polygraphPeerKey
	var v polygraphPeerVal
	type kv struct {
		k polygraphPeerKey
		v polygraphPeerVal
	}
	var found []kv
	it := s.peerBytes.Iterate()
	for it.Next(&k, &v) {
		if pid == 0 || k.Pid == pid {
			found = append(found, kv{k, v})
		}
	}
	for _, f := range found {
		_ = s.peerBytes.Delete(f.k)
		e := &event.Event{Kind: event.KindNet, PID: f.k.Pid, TID: f.k.Pid,
			Network: &event.Network{BytesSent: f.v.Sent, BytesRecv: f.v.Recv}}
		e.TS = s.dec.BootOffset.Add(time.Duration(f.v.LastNs))
		if like != nil && like.PID == f.k.Pid {
			e.PPID, e.Comm, e.ExecID, e.ParentExecID = like.PPID, like.Comm, like.ExecID, like.ParentExecID
		} else {
			e.ExecID = s.dec.ExecIDOf(f.k.Pid)
		}
		e.Network.Port = f.k.Port
		switch f.k.Family {
		case 2:
			e.Network.Family, e.Network.Addr = "ipv4", fmt.Sprintf("%d.%d.%d.%d", f.k.Addr[0], f.k.Addr[1], f.k.Addr[2], f.k.Addr[3])
		case 10:
			_, e.Network.Addr, _ = sockaddr(append([]byte{10, 0, 0, 0, 0, 0, 0, 0}, f.k.Addr[:]...))
			e.Network.Family = "ipv6"
		}
		s.emit(e)
	}
}

// Stats reads the loss counters.
func (s *Sensor) Stats() Stats {
	var st Stats
	for slot, dst := range []*uint64{&st.RingLost, &st.TrackLost, &st.SecRingLost} {
		var vals []uint64
		if err := s.lost.Lookup(uint32(slot), &vals); err == nil {
			for _, v := range vals {
				*dst += v
			}
		}
	}
	s.mu.Lock()
	st.Dropped, st.BadRecs = s.dropped, s.badRecs
	s.mu.Unlock()
	st.WalkHits, st.WalkUnknown = s.dec.walkHits.Load(), s.dec.walkMisses.Load()
	st.GuardedRepeats = s.guardedRepeats()
	return st
}

// Stop detaches the programs, delivers every record already in the ring
// buffer and the remaining byte counters, and waits for the sink to finish.
func (s *Sensor) Stop() {
	s.stopOnce.Do(func() {
		s.closeLinks()
		if s.secReader != nil {
			s.secReader.Flush()
		}
		if s.reader != nil {
			s.reader.Flush()
		}
		s.wg.Wait()
	})
}

// closeLinks detaches every program.
func (s *Sensor) closeLinks() {
	for _, l := range s.links {
		l.Close()
	}
	s.links = nil
}

// Close releases everything. It is safe to call after a failed New.
func (s *Sensor) Close() error {
	s.closeLinks()
	if s.reader != nil {
		s.reader.Close()
	}
	if s.secReader != nil {
		s.secReader.Close()
	}
	if s.coll != nil {
		s.coll.Close()
	}
	return nil
}

// bootOffset is the wall-clock time at boot-clock zero.
func bootOffset() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return time.Now()
	}
	return time.Now().Add(-time.Duration(ts.Nano()))
}

// StartTimeNS returns the boot-clock start time of pid in ns (from
// /proc/PID/stat, in clock ticks), the image id of a process that was
// running before tracing began.
func StartTimeNS(pid int) (uint64, error) { return procfs.StartTimeNS(pid) }

package guard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/procfs"
	"github.com/polygraph/polygraph/internal/sensor"
)

// killNames maps the BPF program's KILL_* codes to Killed.What.
var killNames = map[uint32]string{1: "exec", 2: "write", 3: "ungated", 4: "shared"}

// gate_ev.what of a stopped Unix connect (GATE_UNIX) and of a stopped
// open of a named FIFO (GATE_FIFO).
const (
	gateUnix = 1
	gateFIFO = 2
)

// enforcer is the loaded kill-rule and exec-gate programs of a session.
// Its links are not pinned: when polygraph dies the kill rules and the
// gate go with it (a stopped exec stays stopped until Cleanup kills the
// session's cgroup).
type enforcer struct {
	objs   enforceObjects
	links  []link.Link
	rd     *ringbuf.Reader
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	gated  []Gated
	unix   []Killed                 // the Unix connects and FIFO opens UnixPeer refused
	cgroup string                   // the session's cgroup v2 path, from the hierarchy's root
	rules  map[enforceInoKey]string // rule files and directories, for Killed.Path
}

// attachEnforce loads the programs for the session cgroup at dir and
// attaches those o asks for.
func attachEnforce(dir string, o Options) (_ *enforcer, err error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return nil, fmt.Errorf("session cgroup id: %w", err)
	}
	e := &enforcer{}
	if root, err := cgroup2Root(); err == nil {
		e.cgroup = "/" + strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
	}
	if err := loadEnforceObjects(&e.objs, nil); err != nil {
		return nil, fmt.Errorf("load the kill and gate programs: %w", err)
	}
	defer func() {
		if err != nil {
			e.close()
		}
	}()
	// A cgroup v2 id is its kernfs inode number.
	if err := e.objs.SessionCg.Update(st.Ino, uint8(1), ebpf.UpdateAny); err != nil {
		return nil, fmt.Errorf("session cgroup id: %w", err)
	}
	cfg := enforceCfg{}
	if o.Gate != nil {
		cfg.Gate = 1
	}
	if o.UnixPeer != nil {
		cfg.UnixEdge = 1
	}
	if err := e.objs.Config.Update(uint32(0), &cfg, ebpf.UpdateAny); err != nil {
		return nil, err
	}
	e.rules = map[enforceInoKey]string{}
	k := o.Kill
	if k == nil {
		k = &Kill{}
	}
	for _, l := range []struct {
		m     *ebpf.Map
		paths []string
	}{{e.objs.KillExec, k.Exec}, {e.objs.KillWrite, k.Write}} {
		for _, p := range l.paths {
			key, err := inoKey(p)
			if errors.Is(err, os.ErrNotExist) {
				slog.Warn("kill rule path does not exist; it matches nothing", "path", p)
				continue
			}
			if err != nil {
				return nil, err
			}
			e.rules[key] = p
			if err := l.m.Update(&key, uint8(1), ebpf.UpdateAny); err != nil {
				return nil, fmt.Errorf("kill rule %s: %w", p, err)
			}
		}
	}
	// Exec carries the gate too; write costs every syscall exit of the
	// machine a compare, so it is attached only when there are rules.
	if len(k.Exec) > 0 || o.Gate != nil {
		if err := e.attach(e.objs.EnforceExec); err != nil {
			return nil, err
		}
	}
	if len(k.Write) > 0 {
		if err := e.attach(e.objs.EnforceOpen); err != nil {
			return nil, err
		}
	}
	if o.UnixPeer != nil {
		if err := e.attach(e.objs.EnforceEdge); err != nil {
			return nil, err
		}
	}
	if o.Gate != nil || o.UnixPeer != nil {
		if e.rd, err = ringbuf.NewReader(e.objs.Gate); err != nil {
			return nil, fmt.Errorf("gate ring buffer: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		e.cancel = cancel
		e.wg.Add(1)
		go e.serveGate(ctx, o.Gate, o.UnixPeer)
	}
	return e, nil
}

func (e *enforcer) attach(p *ebpf.Program) error {
	l, err := link.AttachTracing(link.TracingOptions{Program: p, AttachType: ebpf.AttachTraceRawTp})
	if err != nil {
		return fmt.Errorf("attach %s: %w", p, err)
	}
	e.links = append(e.links, l)
	return nil
}

// inoKey is the BPF key of a rule path: its inode and its device in the
// kernel's encoding (major << 20 | minor), not stat's.
func inoKey(p string) (enforceInoKey, error) {
	var st unix.Stat_t
	if !strings.HasPrefix(p, "/") {
		return enforceInoKey{}, fmt.Errorf("kill rule %q: want an absolute path", p)
	}
	if err := unix.Stat(p, &st); err != nil {
		return enforceInoKey{}, fmt.Errorf("kill rule %s: %w", p, err)
	}
	return enforceInoKey{Ino: st.Ino, Dev: sensor.KernelDev(st.Dev)}, nil
}

// serveGate judges each stopped exec as it comes, each in its own
// goroutine so a slow hash does not hold up the others.
func (e *enforcer) serveGate(ctx context.Context, judge GateFunc, peer UnixPeerFunc) {
	defer e.wg.Done()
	for {
		rec, err := e.rd.Read()
		if err != nil {
			if !errors.Is(err, os.ErrClosed) {
				slog.Warn("exec gate stopped reading", "err", err)
			}
			return
		}
		var ev enforceGateEv
		if len(rec.RawSample) < 40 {
			continue
		}
		ev.Pid = binary.NativeEndian.Uint32(rec.RawSample[0:4])
		ev.Ns = binary.NativeEndian.Uint64(rec.RawSample[8:16])
		ev.What = binary.NativeEndian.Uint32(rec.RawSample[16:20])
		ev.Peer = binary.NativeEndian.Uint32(rec.RawSample[20:24])
		ev.Ino = binary.NativeEndian.Uint64(rec.RawSample[24:32])
		ev.Dev = binary.NativeEndian.Uint32(rec.RawSample[32:36])
		ev.Readers = binary.NativeEndian.Uint16(rec.RawSample[36:38])
		ev.Writers = binary.NativeEndian.Uint16(rec.RawSample[38:40])
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			switch ev.What {
			case gateUnix:
				e.judgeUnix(peer, ev)
			case gateFIFO:
				e.judgeFIFO(peer, ev)
			default:
				e.judge(ctx, judge, ev)
			}
		}()
	}
}

// judge runs the gate on one stopped exec and continues or kills it.
func (e *enforcer) judge(ctx context.Context, judge GateFunc, ev enforceGateEv) {
	allow, path, verdict := judge(ctx, ev.Pid)
	sig := unix.SIGKILL
	if allow {
		sig = unix.SIGCONT
	}
	err := unix.Kill(int(ev.Pid), sig)
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	g := Gated{PID: ev.Pid, Path: path, Verdict: verdict, Allowed: allow,
		Wait: time.Duration(ts.Nano() - int64(ev.Ns))}
	if err != nil && !errors.Is(err, unix.ESRCH) {
		slog.Warn("exec gate could not signal", "pid", ev.Pid, "signal", sig, "err", err)
	}
	e.mu.Lock()
	e.gated = append(e.gated, g)
	e.mu.Unlock()
}

// judgeUnix asks peer about one stopped Unix connect's listener (the
// process that listened) and about every process outside the session
// that holds the listening socket (the kernel names it from 6.10: with
// socket activation the one that listened is the service manager and
// another serves), and continues or kills the caller.
func (e *enforcer) judgeUnix(peer UnixPeerFunc, ev enforceGateEv) {
	outside := []uint32{ev.Peer}
	if ev.Ino != 0 {
		for _, pid := range procfs.SocketHolders(ev.Ino) {
			if uint32(pid) != ev.Peer && uint32(pid) != ev.Pid && !e.inSession(pid) {
				outside = append(outside, uint32(pid))
			}
		}
	}
	for _, pid := range outside {
		if pid == 0 && len(outside) > 1 {
			continue // the one that listened is gone; its heirs are judged
		}
		allow, exe := false, ""
		if peer != nil {
			allow, exe = peer(ev.Pid, pid)
		}
		if !allow {
			e.edgeVerdict(ev.Pid, false, Killed{PID: ev.Pid, What: "unix", Path: exe, Target: pid})
			return
		}
	}
	e.edgeVerdict(ev.Pid, true, Killed{})
}

// judgeFIFO looks for the processes holding one stopped open's named
// FIFO: those outside the session are asked about (peer), and the first
// refused kills the caller; none outside, or all allowed, continues it.
// A process that was blocked in its own open of the FIFO until the
// caller's woke it is counted by the kernel (ev.Readers, ev.Writers)
// before its descriptor shows in /proc: the look is made again, for up
// to fifoSettle, until the descriptors found account for the kernel's
// counts.
func (e *enforcer) judgeFIFO(peer UnixPeerFunc, ev enforceGateEv) {
	dev := unix.Mkdev(ev.Dev>>20, ev.Dev&(1<<20-1))
	var holders []procfs.Holder
	for deadline := time.Now().Add(fifoSettle); ; time.Sleep(2 * time.Millisecond) {
		holders = procfs.Holders(dev, ev.Ino)
		r, w := 0, 0
		for _, h := range holders {
			r, w = r+h.Reads, w+h.Writes
		}
		if r >= int(ev.Readers) && w >= int(ev.Writers) || time.Now().After(deadline) {
			break
		}
	}
	for _, h := range holders {
		if uint32(h.PID) == ev.Pid || e.inSession(h.PID) {
			continue
		}
		allow, exe := false, ""
		if peer != nil {
			allow, exe = peer(ev.Pid, uint32(h.PID))
		}
		if !allow {
			e.edgeVerdict(ev.Pid, false, Killed{PID: ev.Pid, What: "fifo", Path: exe, Target: uint32(h.PID)})
			return
		}
	}
	e.edgeVerdict(ev.Pid, true, Killed{})
}

// fifoSettle is how long judgeFIFO waits for the FIFO's other ends to
// show in /proc.
const fifoSettle = 200 * time.Millisecond

// inSession reports whether process pid is in the session's cgroup (or
// one below it); a process gone, or whose cgroup cannot be read, is not.
func (e *enforcer) inSession(pid int) bool {
	p, err := procfs.CgroupV2(pid)
	return err == nil && e.cgroup != "" && (p == e.cgroup || strings.HasPrefix(p, e.cgroup+"/"))
}

// edgeVerdict continues the stopped process pid, or kills it and keeps
// k.
func (e *enforcer) edgeVerdict(pid uint32, allow bool, k Killed) {
	sig := unix.SIGCONT
	if !allow {
		// kept before the kill: whoever waits for the process sees it
		sig = unix.SIGKILL
		e.mu.Lock()
		e.unix = append(e.unix, k)
		e.mu.Unlock()
	}
	if err := unix.Kill(int(pid), sig); err != nil && !errors.Is(err, unix.ESRCH) {
		slog.Warn("the edge gate could not signal", "pid", pid, "signal", sig, "err", err)
	}
}

func (e *enforcer) gatedSoFar() []Gated {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Gated(nil), e.gated...)
}

// kills reads what the programs killed.
func (e *enforcer) kills() ([]Killed, error) {
	var (
		pid uint32
		r   enforceKillRec
		out []Killed
	)
	it := e.objs.Kills.Iterate()
	for it.Next(&pid, &r) {
		out = append(out, Killed{PID: pid, What: killNames[r.What], Path: e.rules[r.File]})
	}
	e.mu.Lock()
	out = append(out, e.unix...)
	e.mu.Unlock()
	return out, it.Err()
}

func (e *enforcer) close() error {
	var errs []error
	for _, l := range e.links {
		errs = append(errs, l.Close())
	}
	e.links = nil
	if e.rd != nil {
		errs = append(errs, e.rd.Close())
	}
	if e.cancel != nil {
		e.cancel()
	}
	e.wg.Wait()
	errs = append(errs, e.objs.Close())
	return errors.Join(errs...)
}

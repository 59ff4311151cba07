package sensor

import (
	"fmt"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/rlimit"
)

// The sensor's hooks are tracepoints: tp_btf sys_exit, which every
// syscall of the host runs (the floor, docs/bench.md), and the scheduler's
// fork, exec and exit. Hooks on the traced operations themselves (fentry
// on the kernel's file and socket functions, or BPF LSM) would spare the
// host's other syscalls that program; not every kernel lets them load
// (lockdown, a kernel without trampolines, the BPF LSM not enabled), so
// the sensor asks at start, and the session says which path ran and what
// the faster one answered (Meta.Hooks). Only the tracepoint path exists
// yet: where the probe finds fentry or LSM usable, the session says so.

// tracepointPath names the hooks the sensor runs on.
const tracepointPath = "tracepoints: tp_btf sys_exit (every syscall of the host runs it) and sched_process_fork/exec/exit"

// probeHooks tries to load and attach an empty fentry program on
// security_file_open and an empty BPF LSM program on file_open (each
// returns 0: allowed, nothing changes), detaches them at once, and says
// which hooks the sensor runs on and what these answered.
func probeHooks() string {
	ret := asm.Instructions{asm.Mov.Imm(asm.R0, 0), asm.Return()}
	try := func(spec *ebpf.ProgramSpec, attach func(*ebpf.Program) (link.Link, error)) string {
		p, err := ebpf.NewProgram(spec)
		if err != nil {
			return "refused: " + short(err)
		}
		defer p.Close()
		l, err := attach(p)
		if err != nil {
			return "refused: " + short(err)
		}
		l.Close()
		return "loads (not used yet)"
	}
	fentry := try(&ebpf.ProgramSpec{Type: ebpf.Tracing, AttachType: ebpf.AttachTraceFEntry, AttachTo: "security_file_open",
		Instructions: ret, License: "GPL"}, func(p *ebpf.Program) (link.Link, error) {
		return link.AttachTracing(link.TracingOptions{Program: p})
	})
	lsm := try(&ebpf.ProgramSpec{Type: ebpf.LSM, AttachType: ebpf.AttachLSMMac, AttachTo: "file_open",
		Instructions: ret, License: "GPL"}, func(p *ebpf.Program) (link.Link, error) {
		return link.AttachLSM(link.LSMOptions{Program: p})
	})
	return fmt.Sprintf("%s; fentry %s; BPF LSM %s", tracepointPath, fentry, lsm)
}

// short is an error's message without cilium's long context.
func short(err error) string {
	s := err.Error()
	if i := strings.Index(s, " (MEMLOCK"); i > 0 {
		s = s[:i] // cilium's hint: the memlock limit was lifted
	}
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// HookPath says which hooks the sensor runs on, and what the faster ones
// (fentry, BPF LSM) answered when it started.
func (s *Sensor) HookPath() string { return s.hooks }

// HookReport probes the hooks without loading the sensor (`polygraph
// --version`): which path the sensor would run on here and what fentry
// and BPF LSM answer. It needs the privileges New needs.
func HookReport() (string, error) {
	if !privileged() {
		return "", ErrPermission
	}
	_ = rlimit.RemoveMemlock()
	return probeHooks(), nil
}

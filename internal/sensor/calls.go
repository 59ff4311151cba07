package sensor

import (
	"fmt"
	"path"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// ev_call.method (bpf/events.h, CALL_*).
var callMethods = [...]string{1: "ptrace", 2: "process_vm_writev", 3: "proc_mem", 4: "kill", 5: "tkill", 6: "tgkill",
	7: "pidfd_send_signal", 8: "bpf", 9: "process_vm_readv", 10: "unix", 11: "fifo", 12: "file", 13: "exec"}

// unixTypes names a followed Unix socket's type (ev_call.arg of a follow:
// SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET).
var unixTypes = map[uint32]string{1: "unix_stream", 2: "unix_dgram", 5: "unix_seqpacket"}

// byHandleFlag marks, in an open record's flags, an open_by_handle_at
// (BY_HANDLE in bpf/polygraph.bpf.c): no path was named.
const byHandleFlag = 1 << 30

// fdTakenFlag marks, in an open record's flags, a pidfd_getfd (FD_TAKEN):
// the file is another process's open file, asked for as /proc/PID/fd/N;
// the rest of the flags are how that process opened it.
const fdTakenFlag = 1 << 29

// fdReceivedFlag marks, in an open record's flags, a file received over a
// Unix socket in SCM_RIGHTS (FD_RECEIVED): no path was named; the rest of
// the flags are how the sender opened it.
const fdReceivedFlag = 1 << 28

func (d *Decoder) decodeCall(b []byte) (*event.Event, error) {
	r, err := castHeader[polygraphEvCall](b)
	if err != nil {
		return nil, err
	}
	e := d.base(&r.H, recordKinds[r.H.Kind])
	e.Result = d.i64.Ptr(r.Result)
	c := e.Call
	if int(r.Method) < len(callMethods) {
		c.Method = callMethods[r.Method]
	}
	switch r.H.Kind {
	case evInject, evMemRead:
		c.TargetPID = r.Target
		if r.Method == 1 {
			c.Method = ptraceRequest(r.Arg)
		}
		c.TargetNSLocal = r.NsLocal != 0
		if !c.TargetNSLocal {
			// before the call: an adopted target was outside
			in := r.TargetImageNs != 0 && r.Adopted == 0
			c.TargetInTree = &in
			// An outside target's executable was walked at the call;
			// /proc only where the kernel could not (no
			// bpf_task_from_pid), now, when it may have changed.
			if r.ExeLen > 0 {
				ps, err := pieces(b, int(r.ExeLen))
				if err != nil {
					return nil, err
				}
				c.TargetExe = walked(ps[0])
			}
			if c.TargetExe == "" {
				c.TargetExe = d.exe(r.Target)
			}
		}
		if r.TargetImageNs != 0 {
			c.TargetExecID = event.ExecID(r.Target, r.TargetImageNs)
		}
		if r.Adopted != 0 {
			// The target's image from now on: the kernel tracks it with
			// this image_ns, and its parent is the injector's image, so
			// the tree (and attribution) runs through the injector.
			c.Adopted = true
			d.procs[r.Target] = &proc{imageNS: r.TargetImageNs, execID: c.TargetExecID, parentExecID: e.ExecID}
		}
	case evFollow:
		// The followed process's new image: its parent is the image of
		// the tree's process that reached it, so what it does from now is
		// attributed to that process's call (as an adopted inject target's).
		c.TargetPID = r.Target
		c.TargetExecID = event.ExecID(r.Target, r.TargetImageNs)
		in := true
		c.TargetInTree = &in
		if r.Method == 10 {
			if n, ok := unixTypes[r.Arg]; ok {
				c.Method = n
			}
		}
		c.TargetExe = d.exe(r.H.Pid)
		d.procs[r.H.Pid] = &proc{imageNS: r.H.ImageNs, execID: e.ExecID, parentExecID: c.TargetExecID}
		e.ParentExecID = c.TargetExecID
	case evSignal:
		c.TargetPID = r.Target
		c.Signo = int(r.Arg)
	case evBPF:
		c.BPFCmd = bpfCmd(r.Arg)
	}
	return e, nil
}

// ptraceRequests names the ptrace requests the sensor reports.
var ptraceRequests = map[uint32]string{1: "ptrace_peektext", 2: "ptrace_peekdata", 3: "ptrace_peekuser",
	6: "ptrace_pokeuser", 12: "ptrace_getregs", 13: "ptrace_setregs", 14: "ptrace_getfpregs", 15: "ptrace_setfpregs",
	0x4204: "ptrace_getregset", 0x4205: "ptrace_setregset"}

func ptraceRequest(req uint32) string {
	if n, ok := ptraceRequests[req]; ok {
		return n
	}
	switch req {
	case 4:
		return "ptrace_poketext"
	case 5:
		return "ptrace_pokedata"
	case 16:
		return "ptrace_attach"
	case 0x4206:
		return "ptrace_seize"
	}
	return fmt.Sprintf("ptrace_%d", req)
}

// bpfCmds names the bpf(2) commands (enum bpf_cmd).
var bpfCmds = [...]string{"BPF_MAP_CREATE", "BPF_MAP_LOOKUP_ELEM", "BPF_MAP_UPDATE_ELEM", "BPF_MAP_DELETE_ELEM",
	"BPF_MAP_GET_NEXT_KEY", "BPF_PROG_LOAD", "BPF_OBJ_PIN", "BPF_OBJ_GET", "BPF_PROG_ATTACH", "BPF_PROG_DETACH",
	"BPF_PROG_TEST_RUN", "BPF_PROG_GET_NEXT_ID", "BPF_MAP_GET_NEXT_ID", "BPF_PROG_GET_FD_BY_ID",
	"BPF_MAP_GET_FD_BY_ID", "BPF_OBJ_GET_INFO_BY_FD", "BPF_PROG_QUERY", "BPF_RAW_TRACEPOINT_OPEN", "BPF_BTF_LOAD",
	"BPF_BTF_GET_FD_BY_ID", "BPF_TASK_FD_QUERY", "BPF_MAP_LOOKUP_AND_DELETE_ELEM", "BPF_MAP_FREEZE",
	"BPF_BTF_GET_NEXT_ID", "BPF_MAP_LOOKUP_BATCH", "BPF_MAP_LOOKUP_AND_DELETE_BATCH", "BPF_MAP_UPDATE_BATCH",
	"BPF_MAP_DELETE_BATCH", "BPF_LINK_CREATE", "BPF_LINK_UPDATE", "BPF_LINK_GET_FD_BY_ID", "BPF_LINK_GET_NEXT_ID",
	"BPF_ENABLE_STATS", "BPF_ITER_CREATE", "BPF_LINK_DETACH", "BPF_PROG_BIND_MAP", "BPF_TOKEN_CREATE"}

func bpfCmd(c uint32) string {
	if int(c) < len(bpfCmds) {
		return bpfCmds[c]
	}
	return fmt.Sprintf("BPF_CMD_%d", c)
}

// handleObject is openObject for an open_by_handle_at, which names no
// path: the object's path is the event's, "handle" says why there is no
// other.
func (d *Decoder) handleObject(r *polygraphEvPath, obj []byte) (*event.Object, string) {
	return d.unnamedObject(r, obj, "handle")
}

// unnamedObject is the object of an open that named no path (a handle, a
// received file): why says how it came.
func (d *Decoder) unnamedObject(r *polygraphEvPath, obj []byte, why string) (*event.Object, string) {
	o, p := d.openObject(r, obj, "")
	o.PathRequested = ""
	o.PathDiffers = why
	return o, p
}

// loaderArgOptions are the ld.so options that take the next argument.
var loaderArgOptions = map[string]bool{"--library-path": true, "--preload": true, "--audit": true, "--argv0": true,
	"--inhibit-rpath": true, "--glibc-hwcaps-mask": true, "--glibc-hwcaps-prepend": true}

// loaderProgram returns the program a dynamic loader run as a command
// (`ld.so PROG ARGS`) loads, as argv names it, or "" if path is no
// loader or argv names no program. The kernel ran the loader; the
// program is only a file the loader maps, so without this the record
// would name ld.so alone.
func loaderProgram(p string, argv []string) string {
	b := path.Base(p)
	if !strings.HasPrefix(b, "ld-linux") && !strings.HasPrefix(b, "ld-musl") && b != "ld.so" && !strings.HasPrefix(b, "ld64.so") {
		return ""
	}
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		switch {
		case loaderArgOptions[a]:
			i++
		case a == "--list" || a == "--verify" || a == "--help" || a == "--version" || a == "--list-tunables" || a == "--list-diagnostics":
			return "" // the loader reports on itself, or lists a program without running it
		case strings.HasPrefix(a, "--"):
		default:
			return a
		}
	}
	return ""
}

package detect

import (
	"fmt"
	"path"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// The tests build small synthetic sessions with a builder: processes that
// exec, open, connect and exit, each event attributed as the process says,
// and a transcript of tool calls and claims.

const home = "/home/dev"
const proj = home + "/proj"

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

type builder struct {
	now    time.Time
	seq    uint64
	events []*event.Event
	attr   []correlate.Attribution
	tr     *transcript.Transcript
	calls  map[string]*correlate.CallActivity
	agents []string
	pol    *policy.Policy
	noAttr bool
	root   int
	lost   map[string]uint64
	left   []session.Leftover
	cwd    string              // the session's and every process's cwd (proj unless set)
	iso    *manifest.Isolation // the session ran isolated (blocked_test.go)
	homes  []string            // the machine's homes (meta.Homes)
	trust  []string            // meta.TrustFiles
	// secrets are the credential files by identity (meta.Secrets).
	secrets []manifest.Secret
	// verdicts are the integrity verdicts on the execs (judged).
	verdicts []integrity.Result
}

func newBuilder() *builder {
	return &builder{now: t0, tr: &transcript.Transcript{Agent: "claude-code"}, calls: map[string]*correlate.CallActivity{}, cwd: proj}
}

// proc is a process image in a test session; its events are attributed to
// call (with reason) as set.
type tproc struct {
	b      *builder
	pid    uint32
	img    string
	parent string
	comm   string
	call   string
	reason correlate.Reason
	late   bool
	detail string       // the attribution's detail
	exec   *event.Event // the exec that started it (spawn)
}

func (b *builder) wait(d time.Duration) { b.now = b.now.Add(d) }

func (b *builder) emit(p *tproc, e *event.Event) *event.Event {
	b.seq++
	b.now = b.now.Add(10 * time.Millisecond)
	e.Seq, e.TS, e.PID, e.TID, e.Comm, e.ExecID = b.seq, b.now, p.pid, p.pid, p.comm, p.img
	if e.ParentExecID == "" {
		e.ParentExecID = p.parent
	}
	b.events = append(b.events, e)
	b.attr = append(b.attr, correlate.Attribution{Seq: e.Seq, ToolCallID: p.call, Reason: p.reason, AfterReturn: p.late, Detail: p.detail})
	if p.call != "" {
		ca := b.calls[p.call]
		if ca == nil {
			ca = &correlate.CallActivity{Call: b.call(p.call)}
			b.calls[p.call] = ca
		}
		ca.Events = append(ca.Events, e.Seq)
		if e.Kind == event.KindExec {
			ca.Execs = append(ca.Execs, e)
		}
	}
	return e
}

// agent starts the agent process (its events are bookkeeping).
func (b *builder) agent(pid uint32, bin string) *tproc {
	p := &tproc{b: b, pid: pid, img: event.ExecID(pid, uint64(b.seq+1)), comm: path.Base(bin), reason: correlate.ReasonAgentBookkeeping}
	p.exec = b.emit(p, &event.Event{Kind: event.KindExec, Path: bin, Process: &event.Process{Argv: []string{path.Base(bin)}, Cwd: b.cwd}})
	b.agents = append(b.agents, p.img)
	b.root = int(pid)
	return p
}

// stranger is a process outside any call (unattributed).
func (b *builder) stranger(pid uint32, bin string, argv ...string) *tproc {
	p := &tproc{b: b, pid: pid, img: event.ExecID(pid, uint64(b.seq+1)), comm: path.Base(bin), reason: correlate.ReasonUnattributed}
	b.emit(p, &event.Event{Kind: event.KindExec, Path: bin, Process: &event.Process{Argv: argv, Cwd: b.cwd}})
	return p
}

// call adds (or returns) a tool call of the transcript.
func (b *builder) call(id string) *transcript.ToolCall {
	for _, c := range b.tr.ToolCalls {
		if c.ID == id {
			return c
		}
	}
	c := &transcript.ToolCall{ID: id, Kind: transcript.KindShell, StartedAt: b.now}
	b.tr.ToolCalls = append(b.tr.ToolCalls, c)
	return c
}

func (b *builder) shell(id, command string) *transcript.ToolCall {
	c := b.call(id)
	c.Kind, c.Tool, c.Command, c.Cwd = transcript.KindShell, "Bash", command, b.cwd
	return c
}

func (b *builder) tool(id string, kind transcript.Kind, paths ...string) *transcript.ToolCall {
	c := b.call(id)
	c.Kind, c.Tool, c.Paths = kind, string(kind), paths
	return c
}

func (b *builder) claim(kind transcript.ClaimKind, text, subject string, calls ...string) {
	if calls == nil {
		calls = []string{}
	}
	b.tr.Claims = append(b.tr.Claims, &transcript.Claim{Kind: kind, Text: text, Subject: subject, At: b.now, ToolCallIDs: calls})
}

// own returns the agent process doing what nothing explains: no call's
// path, none of its bookkeeping (correlate's "agent-file").
func (p *tproc) own() *tproc {
	q := *p
	q.call, q.reason, q.detail = "", correlate.ReasonUnattributed, correlate.DetailAgentFile
	return &q
}

// inCall returns the agent process acting for an in-process tool call.
func (p *tproc) inCall(id string) *tproc {
	q := *p
	q.call, q.reason = id, correlate.ReasonInProcess
	return &q
}

// spawn forks and execs a child. A child of the agent belongs to call
// (lineage) when call is set; other children inherit their parent's.
func (p *tproc) spawn(pid uint32, call string, bin string, argv ...string) *tproc {
	b := p.b
	forkImg := event.ExecID(pid, uint64(b.seq+1))
	c := &tproc{b: b, pid: pid, img: forkImg, parent: p.img, comm: p.comm, call: p.call, reason: p.reason, late: p.late}
	if call != "" {
		c.call, c.reason = call, correlate.ReasonLineage
	}
	b.emit(p, &event.Event{Kind: event.KindFork, Process: &event.Process{ChildPID: pid, ChildExecID: forkImg}})
	img := event.ExecID(pid, uint64(b.seq+1))
	if len(argv) == 0 {
		argv = []string{path.Base(bin)}
	}
	c.parent, c.img = forkImg, img
	c.exec = b.emit(c, &event.Event{Kind: event.KindExec, Path: bin, Process: &event.Process{Argv: argv, Cwd: b.cwd}})
	c.comm = path.Base(bin)
	return c
}

// home sets the HOME the process's exec recorded.
func (p *tproc) home(h string) *tproc { p.exec.Process.Home = h; return p }

// script sets the #! script the process's exec ran (its bin being the
// interpreter).
func (p *tproc) script(file string) *tproc { p.exec.Process.Script = file; return p }

func (p *tproc) open(file, access string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindOpen, Path: file, Access: access, Result: event.Ptr(int64(3))})
}

// openObj is open of file, which the kernel found to be (dev, ino).
func (p *tproc) openObj(file, access string, dev, ino uint64) *event.Event {
	e := p.open(file, access)
	e.Object = &event.Object{Dev: dev, Ino: ino, FileType: "file", Nlink: 1}
	return e
}

func (p *tproc) openFail(file, access string, errno int64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindOpen, Path: file, Access: access, Result: event.Ptr(-errno)})
}

func (p *tproc) rename(from, to string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindRename, Path: from, Path2: to, Result: event.Ptr(int64(0))})
}

func (p *tproc) unlink(file string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindUnlink, Path: file, Result: event.Ptr(int64(0))})
}

func (p *tproc) dns(name string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindDNS, Network: &event.Network{QName: name, QType: "A", Addr: "127.0.0.53", Port: 53}})
}

func (p *tproc) connect(addr string, port uint16) *event.Event {
	fam := "ipv4"
	if len(addr) > 0 && addr[0] == ':' || len(addr) > 4 && addr[4] == ':' {
		fam = "ipv6"
	}
	return p.b.emit(p, &event.Event{Kind: event.KindConnect, Result: event.Ptr(int64(-115)), Network: &event.Network{Family: fam, Proto: "tcp", Addr: addr, Port: port}})
}

func (p *tproc) sent(addr string, port uint16, n uint64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindNet, Network: &event.Network{Family: "ipv4", Addr: addr, Port: port, BytesSent: n}})
}

func (p *tproc) bind(port uint16) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindBind, Result: event.Ptr(int64(0)), Network: &event.Network{Family: "ipv4", Addr: "127.0.0.1", Port: port}})
}

func (p *tproc) accept(peer string, port uint16) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindAccept, Result: event.Ptr(int64(5)), Network: &event.Network{Family: "ipv4", Addr: peer, Port: port}})
}

func (p *tproc) exit(code int) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindExit, Process: &event.Process{ExitCode: event.Ptr(code)}})
}

func (p *tproc) killed(sig int) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindExit, Process: &event.Process{Signal: sig}})
}

// judged records the integrity verdicts on the process's current image:
// its binary and, when given, its script.
func (p *tproc) judged(bin integrity.Verdict, script *integrity.Verdict) *tproc {
	p.b.verdicts = append(p.b.verdicts, integrity.Result{ExecID: p.img, PID: p.pid, Binary: bin, Script: script})
	return p
}

// hash sets the exec-time hash of the process's program.
func (p *tproc) hash(h string) *tproc { p.exec.Process.SHA256 = h; return p }

// after marks the process's further events as happening after its call
// returned.
func (p *tproc) after() *tproc { p.late = true; return p }

// input assembles the detector's input.
func (b *builder) input() Input {
	in := Input{Events: b.events, Meta: session.Meta{Home: home, Homes: b.homes, Cwd: b.cwd, RootPID: b.root, Lost: b.lost, Isolation: b.iso,
		Secrets: b.secrets, TrustFiles: b.trust},
		Leftovers: b.left, Policy: b.pol, Verdicts: b.verdicts}
	if b.noAttr {
		return in
	}
	r := &correlate.Result{AgentExecIDs: b.agents, Attributions: correlate.NewAttributions(b.events, b.attr), Events: b.events, ByCall: map[string]*correlate.CallActivity{},
		Counts: map[correlate.Reason]int{}}
	for i, at := range b.attr {
		r.Counts[at.Reason]++
		if at.Reason == correlate.ReasonUnattributed {
			r.Unattributed = append(r.Unattributed, b.events[i])
		}
	}
	for _, c := range b.tr.ToolCalls {
		ca := b.calls[c.ID]
		if ca == nil {
			ca = &correlate.CallActivity{Call: c}
		}
		r.Calls = append(r.Calls, ca)
		r.ByCall[c.ID] = ca
	}
	in.Transcript, in.Attribution = b.tr, r
	return in
}

func summary(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = fmt.Sprintf("%s %s", f.Severity, f.Rule)
	}
	return out
}

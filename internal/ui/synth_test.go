package ui

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// synth writes a synthetic Claude Code session of about n events into
// the polygraph home, and its transcript where Claude Code writes it under
// root: a hundred Bash calls, each a shell running a program that opens
// hundreds of project files and some libraries, sometimes connects, and
// exits; as bench/synth.go's, with a transcript, so the page has calls.
// It returns the session's id.
func synth(t testing.TB, home, root string, n int) string {
	t.Helper()
	calls := max(1, n/1000)
	start := time.Now().Add(-time.Duration(n) * 100 * time.Microsecond).Add(-time.Minute).Truncate(time.Millisecond)
	uhome, cwd := filepath.Join(root, "home"), filepath.Join(root, "project")
	meta := session.Meta{Mode: "run", Command: []string{"claude", "-p", "fix the failing test"}, User: "dev", UID: 1000,
		Home: uhome, Hostname: "bench", Kernel: "synthetic", Cwd: cwd, RootPID: 1000, StartedAt: start}
	w, err := session.Create(home, meta)
	if err != nil {
		t.Fatal(err)
	}
	g := &synthGen{w: w, rng: rand.New(rand.NewPCG(1, 2)), ts: start, cwd: cwd, home: uhome, nextPID: 2000}
	root0 := g.proc(nil, 1000, "claude", "/usr/bin/claude", meta.Command)
	sid := "5e0c1a2b-0000-4000-8000-00000000beef"
	var tr []map[string]any
	line := func(typ string, at time.Time, msg map[string]any) {
		tr = append(tr, map[string]any{"type": typ, "message": msg, "timestamp": at.UTC().Format(time.RFC3339Nano),
			"cwd": cwd, "sessionId": sid, "uuid": fmt.Sprintf("u%d", len(tr)), "version": "2.1.332"})
	}
	line("user", g.ts, map[string]any{"role": "user", "content": "fix the failing test"})
	per := n / calls
	for k := 0; k < calls; k++ {
		id := fmt.Sprintf("toolu_synth%04d", k)
		prog := synthPrograms[k%len(synthPrograms)]
		cmd := fmt.Sprintf("cd %s && %s # step %d", cwd, strings.Join(prog.argv, " "), k)
		g.tick()
		line("assistant", g.ts, map[string]any{"role": "assistant", "id": "msg_" + id, "content": []any{
			map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"command": cmd}}}})
		g.tick()
		sh := g.proc(root0, g.pid(), "bash", "/bin/bash", []string{"/bin/bash", "-c", cmd})
		p := g.proc(sh, g.pid(), prog.comm, prog.path, prog.argv)
		for g.count < (k+1)*per-4 {
			access := "read"
			if g.rng.IntN(50) == 0 {
				access = "write,create"
			}
			f := int(5000 * g.rng.Float64() * g.rng.Float64())
			g.open(p, fmt.Sprintf("%s/internal/pkg%02d/file%04d.go", cwd, f%40, f), access)
			if g.rng.IntN(400) == 0 {
				c := g.base(p, event.KindConnect)
				c.Network.Family, c.Network.Proto, c.Network.Addr, c.Network.Port, c.Result = "ipv4", "tcp", "140.82.112.3", 443, event.Ptr(int64(0))
				g.add(c)
			}
		}
		g.exit(p, 0)
		g.exit(sh, 0)
		g.tick()
		line("user", g.ts, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": "ok", "is_error": false}}})
	}
	g.tick()
	line("assistant", g.ts, map[string]any{"role": "assistant", "id": "msg_end", "content": []any{
		map[string]any{"type": "text", "text": "Fixed it; the tests pass."}}})
	g.exit(root0, 0)
	exit := 0
	if err := w.Close(&exit); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(uhome, ".claude", "projects", mangle(cwd))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, l := range tr {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, sid+".jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return w.Meta().ID
}

// mangle is a directory as Claude Code names its project after it.
func mangle(p string) string {
	return strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return c
		}
		return '-'
	}, p)
}

type synthGen struct {
	w         *session.Writer
	rng       *rand.Rand
	ts        time.Time
	cwd, home string
	count     int
	nextPID   uint32
}

type synthProc struct {
	pid    uint32
	execID string
	comm   string
}

var synthPrograms = []struct {
	comm, path string
	argv       []string
}{
	{"go", "/usr/local/go/bin/go", []string{"go", "test", "./..."}},
	{"grep", "/usr/bin/grep", []string{"grep", "-rn", "TODO", "."}},
	{"git", "/usr/bin/git", []string{"git", "status", "--short"}},
	{"node", "/usr/bin/node", []string{"node", "scripts/check.js"}},
}

func (g *synthGen) pid() uint32 { g.nextPID++; return g.nextPID }

func (g *synthGen) tick() { g.ts = g.ts.Add(time.Duration(50+g.rng.IntN(100)) * time.Microsecond) }

func (g *synthGen) add(e *event.Event) {
	g.tick()
	e.TS = g.ts
	g.w.Add(e)
	g.count++
}

func (g *synthGen) base(p *synthProc, k event.Kind) *event.Event {
	e := &event.Event{Kind: k, PID: p.pid, TID: p.pid, Comm: p.comm, ExecID: p.execID}
	e.Complete()
	return e
}

// proc forks a child of parent (nil: the root) and execs path in it.
func (g *synthGen) proc(parent *synthProc, pid uint32, comm, path string, argv []string) *synthProc {
	ns := uint64(g.ts.UnixNano())
	forked := &synthProc{pid: pid, execID: event.ExecID(pid, ns), comm: comm}
	pexe := ""
	if parent != nil {
		f := g.base(parent, event.KindFork)
		f.Process.ChildPID, f.Process.ChildExecID = pid, forked.execID
		g.add(f)
		pexe = forked.execID
	}
	p := &synthProc{pid: pid, execID: event.ExecID(pid, ns+1000), comm: comm}
	ex := g.base(p, event.KindExec)
	ex.ParentExecID = pexe
	ex.Path, ex.Process.Argv, ex.Process.Cwd, ex.Process.Home, ex.Process.UID = path, argv, g.cwd, g.home, event.Ptr(uint32(1000))
	ex.Result = event.Ptr(int64(0))
	g.add(ex)
	for _, l := range []string{"/etc/ld.so.cache", "/lib/x86_64-linux-gnu/libc.so.6"} {
		g.open(p, l, "read")
	}
	return p
}

func (g *synthGen) open(p *synthProc, path, access string) {
	e := g.base(p, event.KindOpen)
	e.Path, e.Access = path, access
	e.Flags = event.Ptr(uint32(0x80000))
	if access != "read" {
		e.Flags = event.Ptr(uint32(0x80241))
	}
	e.Result = event.Ptr(int64(3 + g.rng.IntN(20)))
	g.add(e)
}

func (g *synthGen) exit(p *synthProc, code int) {
	e := g.base(p, event.KindExit)
	e.Process.ExitCode, e.Process.DurationNS, e.Process.CPUNS, e.Process.MaxRSSKB = event.Ptr(code), uint64(50e6), uint64(20e6), 30000
	g.add(e)
}

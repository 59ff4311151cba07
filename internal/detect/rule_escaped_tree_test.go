package detect

import (
	"path"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

// unixConnect emits a Unix connect that reached peer (outside the tree).
func (p *tproc) unixConnect(sock string, peerPID uint32, peerExe string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindConnect, Result: event.Ptr(int64(0)),
		Network: &event.Network{Family: "unix", Addr: sock, PeerPID: peerPID, PeerExe: peerExe, PeerInTree: event.Ptr(false)}})
}

// followed is the process outside the tree (pid, its program bin) that
// p reached through method: a follow event starts its new image, whose
// parent is p's, and its events are p's call's.
func (p *tproc) followed(pid uint32, method, bin string) *tproc {
	b := p.b
	img := event.ExecID(pid, uint64(b.seq+1))
	f := &tproc{b: b, pid: pid, img: img, parent: p.img, comm: path.Base(bin), call: p.call, reason: correlate.ReasonLineage}
	if p.call == "" {
		f.reason = p.reason
	}
	b.emit(f, &event.Event{Kind: event.KindFollow, Call: &event.Call{Method: method, TargetPID: p.pid, TargetExecID: p.img, TargetExe: bin}})
	return f
}

// TestEscapedTree runs the escaped-tree cases.
func TestEscapedTree(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "tmux asked to run a command by its server outside the tree",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "tmux send-keys -t 0 'curl x' Enter")
				tm := ag.spawn(200, "t1", "/usr/bin/tmux", "tmux", "send-keys", "-t", "0", "curl x", "Enter")
				tm.unixConnect("/tmp/tmux-0/default", 42, "/usr/bin/tmux")
				nscd := ag.spawn(201, "t1", "/usr/bin/id", "id")
				nscd.unixConnect("/var/run/nscd/socket", 7, "/usr/sbin/nscd")
			},
			want: []string{"high escaped-tree"}, // a multiplexer runs what it is sent
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Title, "tmux (pid 42)") || fs[0].ToolCallID != "t1" {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "isolated: the Unix connect to a multiplexer's server was stopped and killed",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.iso.Killed = []manifest.Kill{{PID: 200, What: "unix", Path: "/usr/bin/tmux", Target: 42}}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "tmux run-shell 'curl x'")
				tm := ag.spawn(200, "t1", "/usr/bin/tmux", "tmux", "run-shell", "curl x")
				tm.unixConnect("/tmp/tmux-0/default", 42, "/usr/bin/tmux")
			},
			want: []string{"high escaped-tree"},
			check: func(t *testing.T, fs []Finding) {
				if !fs[0].Blocked || !strings.HasSuffix(fs[0].Title, "tmux (pid 42) (blocked)") || !strings.Contains(fs[0].Detail, "killed it") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "isolated: the open of a FIFO a helper outside holds was stopped and killed",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.iso.Killed = []manifest.Kill{{PID: 200, What: "fifo", Path: "/usr/bin/python3.11", Target: 55}}
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo ~/.aws/credentials > req.fifo")
				sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "echo ~/.aws/credentials > req.fifo")
				sh.emit(&event.Event{Kind: event.KindPeer, Path: proj + "/req.fifo", Result: event.Ptr(int64(0)),
					Network: &event.Network{PeerPID: 55, PeerExe: "/usr/bin/python3.11"}})
			},
			want: []string{"medium escaped-tree"},
			check: func(t *testing.T, fs []Finding) {
				if !fs[0].Blocked || !strings.HasSuffix(fs[0].Title, "(pid 55) (blocked)") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "isolated: the agent's own in-process write to a FIFO a helper holds was refused: still the tree's attempt",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				b.iso.Killed = []manifest.Kill{{PID: 100, What: "fifo", Path: "/usr/bin/python3.11", Target: 55}}
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.emit(&event.Event{Kind: event.KindPeer, Path: proj + "/req.fifo", Result: event.Ptr(int64(0)),
					Network: &event.Network{PeerPID: 55, PeerExe: "/usr/bin/python3.11"}})
			},
			want: []string{"medium escaped-tree"},
			check: func(t *testing.T, fs []Finding) {
				if !fs[0].Blocked {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "a helper started before the session, after a secret read; the docker daemon",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat ~/.aws/credentials | socat - UNIX:/tmp/helper.sock; docker ps")
				cat := ag.spawn(200, "t1", "/usr/bin/cat", "cat", home+"/.aws/credentials")
				cat.open(home+"/.aws/credentials", "read")
				so := ag.spawn(201, "t1", "/usr/bin/socat", "socat", "-", "UNIX:/tmp/helper.sock")
				so.unixConnect("/tmp/helper.sock", 55, "/usr/bin/python3.11")
			},
			want: []string{"high sensitive-read", "high escaped-tree"},
		},
		{
			name: "a FIFO read by a process outside the tree",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "echo run > /tmp/watch.fifo")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "echo run > /tmp/watch.fifo")
				sh.emit(&event.Event{Kind: event.KindPeer, Path: "/tmp/watch.fifo", Access: "read",
					Network: &event.Network{PeerPID: 77, PeerExe: "/usr/bin/bash", PeerInTree: event.Ptr(false)}})
			},
			want: []string{"medium escaped-tree"},
		},
		{
			name: "a datagram daemon, followed, reads the secret and sends it out",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 ask.py /run/helper.sock")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "ask.py")
				py.emit(&event.Event{Kind: event.KindSend, Result: event.Ptr(int64(30)),
					Network: &event.Network{Family: "unix", Addr: "/run/helper.sock", AddrUser: true}})
				d := py.followed(55, "unix_dgram", "/usr/bin/python3.11")
				d.open(home+"/.aws/credentials", "read")
				d.connect("127.0.0.1", 9999)
			},
			want: []string{"high escaped-tree", "high sensitive-read", "high unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if !strings.Contains(f.Title, "python3.11 (pid 55)") || f.ToolCallID != "t1" ||
					!strings.Contains(f.Detail, "Unix datagram socket") || !strings.Contains(f.Detail, "127.0.0.1:9999") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "isolated: the followed daemon, outside the mount namespace, read the masked file",
			build: func(b *builder) {
				b.iso = isolated()
				b.iso.Denied = nil
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 ask.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "ask.py")
				d := py.followed(55, "unix_stream", "/usr/bin/python3.11")
				d.open(home+"/.aws/credentials", "read")
			},
			want: []string{"high escaped-tree", "high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if fs[1].Blocked || strings.Contains(fs[1].Title, "(blocked)") {
					t.Errorf("the followed read is marked blocked: %+v", fs[1])
				}
			},
		},
		{
			name: "a process that opened a file the tree wrote runs a program and connects out: its own work (an editor, a language server)",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "mv build.sh.new build.sh")
				mv := ag.spawn(200, "t1", "/usr/bin/mv", "mv", "build.sh.new", "build.sh")
				w := mv.followed(300, "file", "/usr/bin/dash")
				w.open(proj+"/build.sh", "read")
				w.spawn(301, "", "/usr/bin/make", "make")
				w.connect("203.0.113.7", 443)
			},
			want: nil,
		},
		{
			name: "a process that opened a file the tree wrote reads a secret: recorded, not judged (sudo in a concurrent session)",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "mv build.sh.new build.sh")
				mv := ag.spawn(200, "t1", "/usr/bin/mv", "mv", "build.sh.new", "build.sh")
				w := mv.followed(300, "file", "/usr/bin/sudo")
				w.open(proj+"/build.sh", "read")
				w.open("/etc/shadow", "read")
			},
			want: nil,
		},
		{
			name: "a watcher re-runs the script the tree rewrote: it reads a secret and sends it out (the flow)",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "mv build.sh.new build.sh")
				mv := ag.spawn(200, "t1", "/usr/bin/mv", "mv", "build.sh.new", "build.sh")
				w := mv.followed(300, "file", "/usr/bin/dash")
				w.open(proj+"/build.sh", "read")
				cat := w.spawn(301, "", "/usr/bin/cat", "cat", home+"/.aws/credentials")
				cat.open(home+"/.aws/credentials", "read")
				nc := w.spawn(302, "", "/usr/bin/nc", "nc", "203.0.113.7", "9")
				nc.connect("203.0.113.7", 9)
			},
			want: []string{"high escaped-tree"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, ".aws/credentials") || !strings.Contains(fs[0].Detail, "203.0.113.7") {
					t.Errorf("the finding does not name the read and the send: %s", fs[0].Detail)
				}
			},
		},
		{
			name: "a dev server reloads the module the tree rewrote, reads a secret and answers with it (the flow)",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "cat > app.py")
				sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "cat > app.py")
				sh.open(proj+"/app.py", "write,create")
				d := sh.followed(300, "file", "/usr/bin/python3.11")
				d.open(proj+"/app.py", "read")
				d.open(home+"/.aws/credentials", "read")
				d.sent("127.0.0.1", 35918, 206)
			},
			want: []string{"high escaped-tree"},
		},
		{
			name: "a dev server reloads the .env the agent wrote and answers the agent's request: its own file, no secret of the user's",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "printf 'PORT=3000' > .env; curl localhost:3000")
				sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "printf 'PORT=3000' > .env")
				sh.open(proj+"/.env", "write,create")
				d := sh.followed(300, "file", "/usr/bin/node")
				d.open(proj+"/.env", "read")
				d.sent("127.0.0.1", 35918, 120)
			},
			want: nil,
		},
		{
			name: "a process that opened a file the tree wrote sends, then reads a secret: no flow",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "mv build.sh.new build.sh")
				mv := ag.spawn(200, "t1", "/usr/bin/mv", "mv", "build.sh.new", "build.sh")
				w := mv.followed(300, "file", "/usr/bin/backup")
				w.open(proj+"/build.sh", "read")
				w.connect("203.0.113.7", 443)
				w.open(home+"/.aws/credentials", "read")
			},
			want: nil,
		},
		{
			name: "the agent itself reached another instance of it, which read its own credentials: the agent's business",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "make test")
				ag.spawn(200, "t1", "/usr/bin/make", "make", "test")
				other := ag.followed(4245, "file", "/usr/local/bin/claude")
				other.open("/tmp/other/home/.aws/credentials", "read")
				other.connect("127.0.0.1", 33465)
			},
			want: nil,
		},
		{
			name: "followed system services and a peer that only reads and answers: nothing",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "getent passwd me; logger hi")
				g := ag.spawn(200, "t1", "/usr/bin/getent", "getent", "passwd", "me")
				n := g.followed(7, "unix_stream", "/usr/sbin/nscd")
				n.open("/etc/passwd", "read")
				n.dns("example.com")
				l := ag.spawn(201, "t1", "/usr/bin/logger", "logger", "hi")
				j := l.followed(8, "unix_dgram", "/usr/lib/systemd/systemd-journald")
				j.open("/var/log/journal/x/system.journal", "write")
				r := ag.spawn(202, "t1", "/usr/bin/python3", "python3", "ask.py")
				h := r.followed(9, "unix_stream", "/usr/bin/python3")
				h.open(proj+"/README.md", "read")
			},
			want: nil,
		},
	})
}

// TestFollowedOwnWork: what a followed process does that is neither a
// read nor traffic is its own work: another polygraph that opened a file
// the tree wrote and loads its programs, signals, mounts, is judged by
// no rule (and being followed alone raises nothing).
func TestFollowedOwnWork(t *testing.T) {
	runCases(t, []ruleCase{{
		name: "a concurrent polygraph, followed, loads its programs",
		build: func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "npm test")
			sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "npm test")
			sh.open(proj+"/out.log", "write,create")
			pg := sh.followed(900, "file", "/usr/bin/polygraph")
			pg.open(proj+"/out.log", "read")
			for _, cmd := range []string{"BPF_PROG_LOAD", "BPF_RAW_TRACEPOINT_OPEN", "BPF_MAP_CREATE"} {
				pg.emit(&event.Event{Kind: event.KindBPF, Result: event.Ptr(int64(3)), Call: &event.Call{Method: "bpf", BPFCmd: cmd}})
			}
			pg.emit(&event.Event{Kind: event.KindMount, Path: "/sys/fs/bpf", Result: event.Ptr(int64(0)),
				Mount: &event.Mount{MountOp: "mount", FSType: "bpf"}})
		},
		want: []string{"low claim-edit-mismatch"}, // the tree's own unmentioned out.log; nothing of the follower's
	}})
}

package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// unixConnect emits a Unix connect that reached peer (outside the tree).
func (p *tproc) unixConnect(sock string, peerPID uint32, peerExe string) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindConnect, Result: event.Ptr(int64(0)),
		Network: &event.Network{Family: "unix", Addr: sock, PeerPID: peerPID, PeerExe: peerExe, PeerInTree: event.Ptr(false)}})
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
	})
}

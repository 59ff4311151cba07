package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
)

func isolated() *manifest.Isolation {
	return &manifest.Isolation{
		Masked: []string{home + "/.aws", home + "/.netrc", home + "/.claude"},
		Kept:   []string{home + "/.claude/settings.json"},
		Denied: []manifest.Denial{
			{Dest: "203.0.113.9:9999", Hook: "sendmsg4", Protocol: 17, Count: 2, PID: 200},
			{Dest: "203.0.113.9:443", Hook: "connect4", Protocol: 6, Count: 1, PID: 200},
		},
	}
}

// TestBlocked: under isolation the attempts on masked credentials and
// outside the allowlist are findings with blocked set; without it, a
// failed read is no read and a refused connect no connection.
func TestBlocked(t *testing.T) {
	attempt := func(b *builder) {
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell("t1", "cat ~/.aws/credentials ~/.netrc; curl https://203.0.113.9/")
		sh := ag.spawn(200, "t1", "/usr/bin/sh", "sh", "-c", "...")
		sh.openFail(home+"/.aws/credentials", "read", 2) // inside a masked directory: not there
		sh.open(home+"/.netrc", "read")                  // the empty file over it
		sh.open(home+"/.claude/settings.json", "read")   // kept
		sh.b.emit(sh, &event.Event{Kind: event.KindConnect, Result: event.Ptr(int64(-1)),
			Network: &event.Network{Family: "ipv4", Proto: "tcp", Addr: "203.0.113.9", Port: 443}})
		sh.exit(1)
	}
	runCases(t, []ruleCase{
		{
			name: "isolated",
			build: func(b *builder) {
				b.iso = isolated()
				attempt(b)
			},
			// The kept file's read is the agent-config-read it always was.
			want: []string{"high sensitive-read", "high sensitive-read", "high unexpected-egress", "medium agent-config-read", "medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				for _, f := range fs {
					if blocked := f.Rule != "agent-config-read"; f.Blocked != blocked || strings.Contains(f.Title, "(blocked)") != blocked {
						t.Errorf("blocked %v, want %v: %+v", f.Blocked, blocked, f)
					}
				}
			},
		},
		{
			name:  "not isolated",
			build: attempt,
			// The .netrc read succeeded; the rest failed, and a failed
			// read or connect is no finding without isolation.
			want: []string{"high sensitive-read", "medium agent-config-read"},
			check: func(t *testing.T, fs []Finding) {
				if fs[0].Blocked {
					t.Errorf("blocked without isolation: %+v", fs[0])
				}
			},
		},
	})
}

// TestBlockedLocalServer: a refused loopback connect names the process
// outside the tree that listened there (the isolation's denials have it),
// and not one of the tree's own.
func TestBlockedLocalServer(t *testing.T) {
	build := func(listener uint32) func(b *builder) {
		return func(b *builder) {
			b.iso = isolated()
			b.iso.Denied = []manifest.Denial{{Dest: "127.0.0.1:43899", Hook: "connect4", Protocol: 6, Count: 1, PID: 200,
				ListenerPID: listener, ListenerExe: "/usr/bin/python3.11"}}
			ag := b.agent(100, "/usr/local/bin/claude")
			b.shell("t1", "curl http://127.0.0.1:43899/")
			sh := ag.spawn(200, "t1", "/usr/bin/curl", "curl", "http://127.0.0.1:43899/")
			sh.b.emit(sh, &event.Event{Kind: event.KindConnect, Result: event.Ptr(int64(-1)),
				Network: &event.Network{Family: "ipv4", Proto: "tcp", Addr: "127.0.0.1", Port: 43899}})
		}
	}
	runCases(t, []ruleCase{
		{
			name:  "a dev server outside the tree",
			build: build(4321),
			want:  []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if !fs[0].Blocked || !strings.Contains(fs[0].Detail, "python3.11 (pid 4321) listens there") {
					t.Errorf("%+v", fs[0])
				}
			},
		},
		{
			name:  "the tree's own server",
			build: build(200),
			want:  []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if strings.Contains(fs[0].Detail, "listens there") {
					t.Errorf("the tree's own process named as outside: %+v", fs[0])
				}
			},
		},
	})
}

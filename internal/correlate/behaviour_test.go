package correlate

import (
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/transcript"
)

// TestAgentByBehaviour: the agent is the process that holds the model
// connection and starts the tools, and the processes that started it,
// whatever their names and command lines; its model traffic is the
// model's, a tool's connection is not.
func TestAgentByBehaviour(t *testing.T) {
	t.Run("an unknown agent relaunching under other command lines", func(t *testing.T) {
		s := newSim()
		root := s.root(0, 100, "/opt/falcon/bin/falcon", "--endpoint", "http://127.0.0.1:9999", "--task", "fix it")
		// Its relaunches carry none of its arguments: no command line
		// says they are the agent.
		stage := s.execAs(2, s.spawn(2, root, 101), "/tmp/falcon-rt-1/worker", "falcon-worker", "--stage=1")
		engine := s.execAs(4, s.spawn(4, stage, 102), "/tmp/falcon-rt-1/worker", "engine")
		api := s.connect(10, engine, "127.0.0.1", 9999)
		s.net(12, engine, "127.0.0.1", 9999, 2000, 9000)
		wrote := s.open(20, engine, project+"/main.py", "write,create", 5) // its write tool
		sh := s.spawn(30, engine, 103, "bash", "-c", "python3 main.py")
		out := s.connect(31, sh, "203.0.113.5", 443)

		res := Attribute(s.evs, nil, meta(), Options{})
		consistent(t, s.evs, res)
		want(t, res, api, ReasonAgentAPI, "")
		want(t, res, out, ReasonUnattributed, "")
		for _, id := range []string{root, stage, engine} {
			if !slices.Contains(res.AgentExecIDs, id) {
				t.Errorf("%s is not taken for the agent: %v", id, res.AgentExecIDs)
			}
		}
		if slices.Contains(res.AgentExecIDs, sh) {
			t.Errorf("the tool %s is taken for the agent", sh)
		}
		if at := res.Of(wrote.Seq); at == nil || at.Reason == ReasonLineage {
			t.Errorf("the engine's own write: %+v", at)
		}
		if res.AgentBy != AgentByBehaviour || !strings.Contains(res.AgentNote, "127.0.0.1:9999") || !strings.Contains(res.AgentNote, "engine") {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}
	})

	t.Run("its own files are named after the program it was started as", func(t *testing.T) {
		s := newSim()
		hash := func(h string) { s.evs[len(s.evs)-1].Process.SHA256 = h }
		root := s.root(0, 100, "/usr/bin/env", "-i", "HOME="+home, "/opt/falcon/bin/falcon", "--task", "fix it")
		hash("e")
		root = s.execAs(1, root, "/opt/falcon/bin/falcon", "/opt/falcon/bin/falcon", "--task", "fix it")
		hash("f")
		// A copy of itself in a temporary directory, run under another
		// name: the same bytes.
		engine := s.execAs(4, s.spawn(4, root, 102), "/tmp/rt-9/worker", "engine")
		hash("f")
		s.connect(10, engine, "127.0.0.1", 9999)
		s.net(12, engine, "127.0.0.1", 9999, 2000, 9000)
		journal := s.open(15, engine, home+"/.local/state/falcon/journal.jsonl", "write,create", 5)
		s.spawn(30, engine, 103, "bash", "-c", "make")

		res := Attribute(s.evs, nil, meta(), Options{})
		want(t, res, journal, ReasonAgentBookkeeping, "")
	})

	t.Run("the earliest connection is not enough: the agent starts the tools", func(t *testing.T) {
		s := newSim()
		root := s.root(0, 100, "/opt/falcon/bin/falcon", "--task", "fix it")
		tel := s.spawn(1, root, 101, "/opt/falcon/bin/telemetry")
		s.connect(2, tel, "198.51.100.7", 443)
		api := s.connect(10, root, "127.0.0.1", 9999)
		s.net(11, root, "127.0.0.1", 9999, 500, 5000)
		s.spawn(20, root, 102, "bash", "-c", "make")

		res := Attribute(s.evs, nil, meta(), Options{})
		want(t, res, api, ReasonAgentAPI, "")
		if res.AgentBy != AgentByBoth {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}
	})

	t.Run("a server the agent started, reaching out first, is not the agent", func(t *testing.T) {
		s := newSim()
		root := s.root(0, 100, "/usr/local/bin/claude", "-p", "fix it")
		mcp := s.spawn(1, root, 101, "npx", "some-mcp-server")
		early := s.connect(3, mcp, "198.51.100.9", 443)
		s.spawn(4, mcp, 102, "node", "server.js")
		api := s.connect(10, root, "127.0.0.1", 9999)
		s.net(11, root, "127.0.0.1", 9999, 500, 5000)
		mk := s.spawn(120, root, 103, "bash", "-c", "make test")
		calls := []*transcript.ToolCall{shellCall("c1", "make test", 100, 200)}

		res := Attribute(s.evs, tr(home+"/.claude/projects/p/s.jsonl", calls...), meta(), Options{})
		want(t, res, api, ReasonAgentAPI, "")
		if at := res.Of(early.Seq); at == nil || at.Reason == ReasonAgentAPI {
			t.Errorf("the server's own connection: %+v", at)
		}
		if slices.Contains(res.AgentExecIDs, mcp) || slices.Contains(res.AgentExecIDs, mk) {
			t.Errorf("agent images %v hold the server's or the tool's", res.AgentExecIDs)
		}
		if res.AgentBy != AgentByBoth || !strings.Contains(res.AgentNote, "127.0.0.1:9999") {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}
		// Without a transcript: the agent started the server.
		res = Attribute(s.evs, nil, meta(), Options{})
		if at := res.Of(early.Seq); at == nil || at.Reason == ReasonAgentAPI || slices.Contains(res.AgentExecIDs, mcp) {
			t.Errorf("without a transcript, the server's connection %+v, agent images %v", at, res.AgentExecIDs)
		}
	})

	t.Run("a connection after the first tool call is a tool's", func(t *testing.T) {
		// The agent reaches its model through a Unix socket: no
		// connection to go by. The only one is the tool's, after the
		// first call started: it is not the model's.
		s := newSim()
		root := s.root(0, 100, "/usr/local/bin/claude", "-p", "fix it")
		curl := s.spawn(1000, root, 101, "curl", "-s", "https://example.com")
		out := s.connect(1010, curl, "93.184.216.34", 443)
		s.net(1020, curl, "93.184.216.34", 443, 100, 100000)
		calls := []*transcript.ToolCall{shellCall("c1", "curl -s https://example.com", 900, 1100)}

		res := Attribute(s.evs, tr(home+"/.claude/projects/p/s.jsonl", calls...), meta(), Options{})
		want(t, res, out, ReasonLineage, "c1")
		if res.AgentBy != AgentByProfile {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}
	})

	t.Run("an agent that ran no tool", func(t *testing.T) {
		// A known model API is enough; a first connection after which
		// nothing was started (npm reaching its registry) says nothing.
		s := newSim()
		root := s.root(0, 100, "/opt/falcon/bin/falcon", "--task", "explain it")
		api := s.connect(10, root, "160.79.104.10", 443)
		api.Network.Host = "api.anthropic.com"
		s.net(11, root, "160.79.104.10", 443, 500, 5000)
		res := Attribute(s.evs, nil, meta(), Options{})
		want(t, res, api, ReasonAgentAPI, "")
		if res.AgentBy != AgentByBoth || !strings.Contains(res.AgentNote, "a known model API") {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}

		s = newSim()
		root = s.root(0, 100, "/usr/bin/bash", "-c", "npm install")
		npm := s.spawn(1, root, 101, "npm", "install")
		reg := s.connect(10, npm, "104.16.1.35", 443)
		res = Attribute(s.evs, nil, meta(), Options{})
		want(t, res, reg, ReasonUnattributed, "")
		if res.AgentBy != AgentByProfile {
			t.Errorf("agent by %q: %q", res.AgentBy, res.AgentNote)
		}
	})

	t.Run("no agent among outsiders", func(t *testing.T) {
		s := newSim()
		root := s.root(0, 100, "/usr/bin/cat", "/home/u/.ssh/id_rsa")
		s.connect(10, root, "203.0.113.5", 443)
		m := meta()
		m.Outsiders = true
		if res := Attribute(s.evs, nil, m, Options{}); res.AgentBy != "" || len(res.AgentExecIDs) != 0 {
			t.Errorf("agent by %q, images %v", res.AgentBy, res.AgentExecIDs)
		}
	})
}

package transcript

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The corpus has no Gemini .jsonl, no stream-json, no OTel and no pre-2.1
// Claude Code subagent layout, so these hand-made files follow the formats
// as the agents' sources write them (see testdata/README.md).

func parseFixture(t *testing.T, name string, opts Options) (*Transcript, map[string]*ToolCall) {
	t.Helper()
	tr, err := ParseFile(filepath.Join("testdata", name), opts)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*ToolCall{}
	for _, tc := range tr.ToolCalls {
		if m[tc.ID] != nil {
			t.Errorf("call %s appears twice", tc.ID)
		}
		m[tc.ID] = tc
	}
	return tr, m
}

// callWant is what a fixture test checks on one call; empty fields are not
// checked.
type callWant struct {
	kind       Kind
	tool       string
	command    string
	exit       *int
	isError    bool
	rejected   bool
	background bool
	rewound    bool
	parent     string
	polls      string
	cwd        string
	path       string
}

func checkCalls(t *testing.T, got map[string]*ToolCall, want map[string]callWant) {
	t.Helper()
	if len(got) != len(want) {
		ids := slices.Sorted(func(yield func(string) bool) {
			for id := range got {
				if !yield(id) {
					return
				}
			}
		})
		t.Errorf("%d calls %v, want %d", len(got), ids, len(want))
	}
	for id, w := range want {
		tc := got[id]
		if tc == nil {
			t.Errorf("call %s missing", id)
			continue
		}
		switch {
		case w.kind != "" && tc.Kind != w.kind,
			w.tool != "" && tc.Tool != w.tool,
			w.command != "" && tc.Command != w.command,
			w.exit != nil && (tc.ExitCode == nil || *tc.ExitCode != *w.exit),
			w.exit == nil && tc.ExitCode != nil && tc.Kind == KindShell,
			tc.IsError != w.isError, tc.Rejected != w.rejected, tc.Background != w.background, tc.Rewound != w.rewound,
			tc.ParentID != w.parent, tc.Polls != w.polls,
			w.cwd != "" && tc.Cwd != w.cwd,
			w.path != "" && !contains(tc.Paths, w.path):
			t.Errorf("call %s = %+v (exit %v)\nwant %+v (exit %v)", id, *tc, deref(tc.ExitCode), w, deref(w.exit))
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

func claimKinds(cs []*Claim) map[ClaimKind][]string {
	m := map[ClaimKind][]string{}
	for _, c := range cs {
		m[c.Kind] = append(m[c.Kind], c.ToolCallIDs...)
	}
	return m
}

func checkClaims(t *testing.T, got []*Claim, want map[ClaimKind][]string) {
	t.Helper()
	g := claimKinds(got)
	for k, ids := range want {
		have, ok := g[k]
		if !ok {
			t.Errorf("no %s claim", k)
			continue
		}
		slices.Sort(have)
		slices.Sort(ids)
		if !slices.Equal(have, ids) {
			t.Errorf("%s claim refers to %v, want %v", k, have, ids)
		}
	}
	for k := range g {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected %s claim", k)
		}
	}
}

func TestClaudeStreamJSON(t *testing.T) {
	tr, m := parseFixture(t, "claude/stream-json.jsonl", Options{})
	if tr.Format != FormatClaudeStream || tr.SessionID != "5e55a0c1-1111-4222-8333-944455556666" || tr.Cwd != "/work/app" || tr.Version != "2.0.37" {
		t.Errorf("transcript = %s %s %s %s", tr.Format, tr.SessionID, tr.Cwd, tr.Version)
	}
	checkCalls(t, m, map[string]callWant{
		"toolu_01Atest": {kind: KindShell, command: "pytest -q", exit: intPtr(1), isError: true, cwd: "/work/app"},
		"toolu_01Task":  {kind: KindTask},
		"toolu_01Read":  {kind: KindRead, parent: "toolu_01Task", path: "/work/app/calc.py"},
		"toolu_01Edit":  {kind: KindEdit, parent: "toolu_01Task", path: "/work/app/calc.py"},
		"toolu_01Again": {kind: KindShell, exit: intPtr(0)},
	})
	checkClaims(t, tr.Claims, map[ClaimKind][]string{
		ClaimEdited:      {"toolu_01Edit", "toolu_01Edit"}, // the subagent's "Fixed `sub` in calc.py" and "I've updated calc.py"
		ClaimTestsRan:    {"toolu_01Atest", "toolu_01Again"},
		ClaimTestsPassed: {"toolu_01Atest", "toolu_01Again"},
	})
	// Seven API messages; msg_01A's usage is repeated on both of its blocks
	// and counted once.
	if want := int64(100 * 7); tr.Usage.InputTokens != want {
		t.Errorf("input tokens = %d, want %d", tr.Usage.InputTokens, want)
	}
	_, own := parseFixture(t, "claude/stream-json.jsonl", Options{NoSubagents: true})
	if len(own) != 3 || own["toolu_01Edit"] != nil {
		t.Errorf("--no-subagents kept %d calls", len(own))
	}
}

func TestClaude20Layout(t *testing.T) {
	tr, m := parseFixture(t, "claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", Options{})
	checkCalls(t, m, map[string]callWant{
		"toolu_srv":        {kind: KindShell, command: "npm run dev", background: true, exit: intPtr(0)}, // BashOutput saw it exit 0
		"toolu_poll":       {kind: KindOther, polls: "toolu_srv"},
		"toolu_kill":       {kind: KindOther, polls: "toolu_srv"},
		"toolu_pip":        {kind: KindShell, isError: true, rejected: true},
		"toolu_task":       {kind: KindTask},
		"toolu_sub_pytest": {kind: KindShell, exit: intPtr(1), isError: true, parent: "toolu_task"}, // sibling agent-5d1e9a0f.jsonl, linked by prompt
		"toolu_mk":         {kind: KindShell, exit: intPtr(2), isError: true},
	})
	if m["toolu_sub_pytest"].AgentID != "5d1e9a0f" {
		t.Errorf("agent id = %q", m["toolu_sub_pytest"].AgentID)
	}
	if tr.Compactions != 1 {
		t.Errorf("compactions = %d, want 1", tr.Compactions)
	}
	if len(tr.Subagents) != 1 || filepath.Base(tr.Subagents[0]) != "agent-5d1e9a0f.jsonl" {
		t.Errorf("subagent files = %v (the other session's agent file must be left out)", tr.Subagents)
	}
	// The compaction summary's "all 12 tests passed" is not the assistant's claim.
	checkClaims(t, tr.Claims, map[ClaimKind][]string{ClaimTestsRan: {"toolu_sub_pytest"}})
	if len(tr.Warnings) != 0 {
		t.Errorf("warnings: %v", tr.Warnings)
	}
}

func TestGeminiJSONL(t *testing.T) {
	tr, m := parseFixture(t, "gemini/session-2026-03-01T10-00-abcd1234.jsonl", Options{})
	if tr.Format != FormatGeminiJSONL || tr.SessionID != "abcd1234-0000-4000-8000-000000000001" {
		t.Errorf("transcript = %s %s", tr.Format, tr.SessionID)
	}
	checkCalls(t, m, map[string]callWant{
		// The second copy of message m2 (with the result) wins over the first.
		"run_shell_command-1772358003000-a1": {kind: KindShell, command: "pytest -q", exit: intPtr(1), isError: true},
		"replace-1772358010000-b2":           {kind: KindEdit, path: "/work/app/calc.py"},
		"run_shell_command-1772358015000-c3": {kind: KindShell, exit: intPtr(0), cwd: "/work/app"},
		// $rewindTo m6 drops m6 and m7, but the cancelled call is still reported.
		"run_shell_command-1772358030000-d4": {kind: KindShell, isError: true, rejected: true, rewound: true},
		"write_file-1772358040000-e5":        {kind: KindWrite, path: "/work/app/README.md"},
		"run_shell_command-1772358050000-f6": {kind: KindShell, background: true},
		"delegate_to_agent-1772358060000-g7": {kind: KindTask},
		// chats/<session id>/inv-0001.jsonl, linked through the call's agentId.
		"glob-1772358065000-h8": {kind: KindSearch, parent: "delegate_to_agent-1772358060000-g7"},
	})
	checkClaims(t, tr.Claims, map[ClaimKind][]string{
		ClaimEdited:      {"replace-1772358010000-b2"},
		ClaimTestsPassed: {"run_shell_command-1772358003000-a1", "run_shell_command-1772358015000-c3"},
		ClaimCreated:     {"write_file-1772358040000-e5"},
	})
	// The last line was cut off mid-write.
	if len(tr.Warnings) != 1 || tr.Warnings[0].Source != filepath.Join("testdata", "gemini", "session-2026-03-01T10-00-abcd1234.jsonl")+":18" {
		t.Errorf("warnings = %v, want one for line 18", tr.Warnings)
	}
}

func TestGeminiSetMessages(t *testing.T) {
	_, m := parseFixture(t, "gemini/session-2026-03-02T08-00-feed0002.jsonl", Options{})
	checkCalls(t, m, map[string]callWant{
		"list_directory-1": {kind: KindSearch, rewound: true}, // gone from the replaced history
		"read_file-2":      {kind: KindRead},
	})
	if r := m["read_file-2"].Result; r != "<tool_output_masked>" {
		t.Errorf("result = %q, want the last copy's", r)
	}
}

func TestCodexShellGenerations(t *testing.T) {
	tr, m := parseFixture(t, "codex/rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl", Options{})
	checkCalls(t, m, map[string]callWant{
		"call_shell_1": {kind: KindShell, tool: "shell", command: "pytest -q", exit: intPtr(1), isError: true, cwd: "/work/app"},
		"call_patch_1": {kind: KindEdit, path: "/work/app/calc.py"}, // apply_patch through the shell tool: applied in-process
		"call_local_1": {kind: KindShell, tool: "local_shell", command: "ls -la", exit: intPtr(0)},
		"call_cmd_1":   {kind: KindShell, tool: "shell_command", command: "npm test", exit: intPtr(0), cwd: "/work/app/web"},
		"call_cmd_2":   {kind: KindShell, isError: true, rejected: true},
		"call_shell_2": {kind: KindShell, exit: intPtr(0)},
		"user_shell_1": {kind: KindShell, tool: "user_shell", exit: intPtr(0)},
	})
	if argv := m["call_shell_1"].Argv; !slices.Equal(argv, []string{"bash", "-lc", "pytest -q"}) {
		t.Errorf("argv = %q", argv)
	}
	checkClaims(t, tr.Claims, map[ClaimKind][]string{
		ClaimEdited:      {"call_patch_1"},
		ClaimTestsRan:    {"call_shell_1", "call_cmd_1", "call_shell_2"},
		ClaimTestsPassed: {"call_shell_1", "call_cmd_1", "call_shell_2", "call_shell_1", "call_cmd_1", "call_shell_2"},
		ClaimRan:         {"call_shell_1", "call_shell_2"},
	})
	if tr.Compactions != 1 || tr.Usage.InputTokens != 5000 || tr.Usage.OutputTokens != 300 {
		t.Errorf("compactions %d, usage %+v", tr.Compactions, tr.Usage)
	}
	if len(tr.Warnings) != 0 {
		t.Errorf("unknown record types must not warn: %v", tr.Warnings)
	}
}

func TestCodexLegacy(t *testing.T) {
	tr, m := parseFixture(t, "codex/rollout-2025-05-01T10-00-00-legacy.jsonl", Options{})
	if tr.Format != FormatCodex || tr.SessionID != "6f1e0000-0000-4000-8000-00000000legc" {
		t.Errorf("transcript = %s %s", tr.Format, tr.SessionID)
	}
	checkCalls(t, m, map[string]callWant{"call_legacy_1": {kind: KindShell, command: "pytest", exit: intPtr(0), cwd: "/work/app"}})
	checkClaims(t, tr.Claims, map[ClaimKind][]string{ClaimTestsPassed: {"call_legacy_1"}})
}

func TestOTel(t *testing.T) {
	for _, name := range []string{"otel/traces.jsonl", "otel/traces.json"} {
		t.Run(name, func(t *testing.T) {
			tr, m := parseFixture(t, name, Options{})
			if tr.Format != FormatOTel || tr.SessionID != "conv-42" || tr.Agent != "fixer" {
				t.Errorf("transcript = %s %s %s", tr.Format, tr.SessionID, tr.Agent)
			}
			checkCalls(t, m, map[string]callWant{
				"call_bash_1":     {kind: KindShell, command: "pytest -q", exit: intPtr(0), cwd: "/work/app"},
				"call_read_1":     {kind: KindRead, path: "/work/app/calc.py"},
				"call_fetch_1":    {kind: KindFetch, isError: true},
				"call_delegate_1": {kind: KindTask},
				"call_write_1":    {kind: KindWrite, parent: "call_delegate_1", path: "/work/app/notes.md"},
			})
			if m["call_write_1"].Agent != "writer" {
				t.Errorf("subagent call's agent = %q", m["call_write_1"].Agent)
			}
			checkClaims(t, tr.Claims, map[ClaimKind][]string{
				ClaimTestsRan:    {"call_bash_1"},
				ClaimTestsPassed: {"call_bash_1"},
				ClaimCreated:     {"call_write_1"},
			})
		})
	}
	t.Run("console exporter", func(t *testing.T) {
		tr, m := parseFixture(t, "otel/console.txt", Options{})
		checkCalls(t, m, map[string]callWant{"call_c1": {kind: KindShell, command: "pip install requests"}})
		checkClaims(t, tr.Claims, map[ClaimKind][]string{ClaimInstalled: {"call_c1"}})
	})
}

func TestPlainJSONL(t *testing.T) {
	tr, m := parseFixture(t, "jsonl/agent.jsonl", Options{})
	if tr.Format != FormatJSONL || tr.Agent != "my-agent" || tr.SessionID != "plain-1" {
		t.Errorf("transcript = %s %s %s", tr.Format, tr.Agent, tr.SessionID)
	}
	checkCalls(t, m, map[string]callWant{
		"c1": {kind: KindWrite, path: "/work/app/health.py"},
		"c2": {kind: KindShell, command: "python -m pytest -q", exit: intPtr(0), cwd: "/work/app"},
		"c3": {kind: KindFetch, isError: true},
	})
	checkClaims(t, tr.Claims, map[ClaimKind][]string{ClaimCreated: {"c1"}, ClaimTestsPassed: {"c2"}})
	if len(tr.Warnings) != 1 {
		t.Errorf("warnings = %v, want one for the orphan result", tr.Warnings)
	}
}

// TestResponses counts the model responses (the agent loop's iterations)
// each format records: the sessions in internal/correlate/testdata played
// test/e2e's attribution scenario, whose script has 11 model turns.
func TestResponses(t *testing.T) {
	for _, tc := range []struct {
		path string
		want int
	}{
		{"../correlate/testdata/claude/transcript.jsonl.gz", 11},
		{"../correlate/testdata/codex/transcript.jsonl.gz", 11},
		{"../correlate/testdata/gemini/transcript.jsonl.gz", 11},
		{"testdata/claude/stream-json.jsonl", 7},                                                     // distinct message ids
		{"testdata/mini/last_mini_run.traj.json", 3},                                                 // assistant messages
		{"testdata/codex/rollout-2025-05-01T10-00-00-legacy.jsonl", 0},                               // no token counts
		{"testdata/codex/rollout-2025-10-02T09-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001.jsonl", 1}, // one token count
		{"testdata/gemini/session-2026-03-01T10-00-abcd1234.jsonl", 10},                              // distinct gemini messages
		{"testdata/jsonl/agent.jsonl", 0},
	} {
		tr := parseMaybeGzip(t, tc.path)
		if len(tr.Responses) != tc.want {
			t.Errorf("%s: %d responses, want %d", tc.path, len(tr.Responses), tc.want)
		}
		if !slices.IsSortedFunc(tr.Responses, func(a, b time.Time) int { return a.Compare(b) }) {
			t.Errorf("%s: responses out of order", tc.path)
		}
	}
}

// parseMaybeGzip parses the transcript at path, gunzipped when it ends
// in .gz.
func parseMaybeGzip(t *testing.T, path string) *Transcript {
	t.Helper()
	if !strings.HasSuffix(path, ".gz") {
		tr, err := ParseFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := Parse(z, strings.TrimSuffix(path, ".gz"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/transcript"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// inUTC makes the report's clock columns print UTC for one test.
func inUTC(t *testing.T) {
	loc := time.Local
	time.Local = time.UTC
	t.Cleanup(func() { time.Local = loc })
}

func exec(id string, argv ...string) *event.Event {
	return &event.Event{Kind: event.KindExec, ExecID: id, Process: &event.Process{Argv: argv}}
}

// unattributed is one event of each shape eventWhat describes, then
// opens enough to pass the text report's limit of 20.
func unattributed() []*event.Event {
	evs := []*event.Event{
		{Kind: event.KindExec, PID: 10, Comm: "git", Process: &event.Process{Argv: []string{"git", "status"}}},
		{Kind: event.KindConnect, PID: 11, Comm: "curl", Network: &event.Network{Family: "ipv4", Addr: "10.1.2.3", Port: 8443}},
		{Kind: event.KindDNS, PID: 11, Comm: "curl", Network: &event.Network{QName: "evil.test"}},
		{Kind: event.KindRename, PID: 12, Comm: "mv", Path: "/p/a", Path2: "/p/b"},
		{Kind: event.KindFork, PID: 12, Comm: "sh", Process: &event.Process{ChildPID: 13}},
		{Kind: event.KindExit, PID: 13, Comm: "sh", Process: &event.Process{ExitCode: event.Ptr(1)}},
		{Kind: event.KindExit, PID: 14, Comm: "sleep", Process: &event.Process{Signal: 15}},
	}
	for i := len(evs); i < 22; i++ {
		evs = append(evs, &event.Event{Kind: event.KindOpen, PID: 20, Comm: "cat", Path: fmt.Sprintf("/p/f%02d", i), Access: "read"})
	}
	for i, e := range evs {
		e.Seq, e.TS = uint64(100+i), t0
	}
	return evs
}

// fullReport has every part a report can have: notes, a summary, a
// transcript, findings with and without a tool call, calls that ran,
// failed, were rejected or left no trace, unattributed events and claims.
func fullReport() *Report {
	calls := []*transcript.ToolCall{
		{ID: "c1", Tool: "Bash", Kind: transcript.KindShell, Command: "make test", StartedAt: t0, ExitCode: event.Ptr(0), Result: "ok\n"},
		{ID: "c2", Tool: "Write", Kind: transcript.KindWrite, Paths: []string{"/p/new.go"}, StartedAt: t0.Add(time.Second), IsError: true},
		{ID: "c3", Tool: "WebFetch", Kind: transcript.KindFetch, URLs: []string{"https://x.test/"}, StartedAt: t0.Add(2 * time.Second), Rejected: true},
		{ID: "c4", Tool: "Bash", Kind: transcript.KindShell, Command: "echo <b>hi</b>", StartedAt: t0.Add(3 * time.Second)},
	}
	tr := &transcript.Transcript{Path: "t.jsonl", Format: "claude-jsonl", Agent: "claude-code", SessionID: "abc", ToolCalls: calls,
		Warnings: make([]transcript.Warning, 2),
		Claims: []*transcript.Claim{
			{Kind: transcript.ClaimTestsPassed, Text: "All tests pass", At: t0.Add(4 * time.Second), ToolCallIDs: []string{"c1"}},
			{Kind: transcript.ClaimRan, Text: "I ran it"},
		}}
	attr := &correlate.Result{
		// The session's events in seq order: c1's exits give its resources.
		Events: []*event.Event{
			{Seq: 2, Kind: event.KindExit, Process: &event.Process{CPUNS: 200e6, MaxRSSKB: 4096}},
			{Seq: 4, Kind: event.KindExit, Process: &event.Process{CPUNS: 50e6, MaxRSSKB: 12288}},
		},
		ByCall: map[string]*correlate.CallActivity{
			"c1": {Call: calls[0], RootExit: &event.Event{Kind: event.KindExit, Process: &event.Process{ExitCode: event.Ptr(2), DurationNS: 1500e6}},
				Execs:  []*event.Event{exec("1-1", "make", "test"), exec("2-1", "go", "test"), exec("2-1", "go", "vet"), exec("2-1", "go", "build")},
				Writes: []string{"/p/out.txt"}, Reads: []string{"/p/a", "/p/b"},
				Connects: []*event.Event{
					{Kind: event.KindConnect, Network: &event.Network{Family: "ipv4", Addr: "1.2.3.4", Port: 443, Host: "api.example.com"}},
					{Kind: event.KindConnect, Network: &event.Network{Family: "ipv6", Addr: "::1", Port: 8080}},
				},
				DNS: []string{"api.example.com"}, Events: []uint64{1, 2, 3, 4, 5}, Late: []uint64{5}},
			"c3": {Call: calls[2], RootExit: &event.Event{Kind: event.KindExit, Process: &event.Process{Signal: 9}},
				Execs: []*event.Event{exec("3-1", "curl", "x")}, Events: []uint64{6}},
		},
		Counts:       map[correlate.Reason]int{correlate.ReasonLineage: 3, "agent-api": 2, "in-process": 0, "unattributed": 22},
		Unattributed: unattributed(),
	}
	findings := []detect.Finding{
		{ID: "F1", Rule: "sensitive-read", Severity: detect.SeverityHigh, Title: "Credential file read", Detail: "line one\nline two\n",
			Evidence: []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Frameworks: detect.Frameworks{ATTACK: []string{"T1552.001"}, OWASPLLM: []string{"LLM06"}}},
		{ID: "F2", Rule: "claim-tests", Severity: detect.SeverityMedium, Title: "Tests claimed, not passed", ToolCallID: "c1",
			Claim: "All tests pass", Evidence: []uint64{3}},
	}
	meta := &manifest.Meta{ID: "s1", Command: []string{"claude", "-p", "go"}, Cwd: "/p", StartedAt: t0, Lost: map[string]uint64{"ringbuf": 4}}
	sum := NewSummary(0)
	sum.Finish(*meta, nil, event.Ptr(0))
	return Build(meta, sum, tr, attr, findings)
}

// TestWriteText: the terminal report of a full session, part by part.
func TestWriteText(t *testing.T) {
	inUTC(t)
	var b bytes.Buffer
	if err := fullReport().WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"note: the session was not closed cleanly (polygraph was killed): events after the last flush are missing\n" +
			"note: 4 events were lost while recording: what the kernel saw is incomplete\n" +
			"polygraph: session s1\n",
		"  transcript t.jsonl (claude-code, 4 tool calls, 2 claims, 2 unreadable lines)\n" +
			"  attributed lineage 3, agent-api 2, unattributed 22\n",
		"\nFINDINGS (2)\n" +
			"  F1  HIGH     sensitive-read         Credential file read\n" +
			"               line one\\nline two\n" + // one line: a newline in a detail came from a name in the record
			"               tool call: unattributed; evidence: event 1, 2, 3, 4, 5, 6, 7, 8, … 2 more\n" +
			"               ATT&CK T1552.001 · OWASP LLM06\n" +
			"  F2  MEDIUM   claim-tests            Tests claimed, not passed\n" +
			"               claim: \"All tests pass\"\n" +
			"               tool call: c1; evidence: event 3\n",
		"\nTOOL CALLS (4)\n" +
			"! 03:04:05.000  shell Bash make test  [c1]\n" +
			"      agent said:  exit 0; result \"ok\"\n" +
			"      kernel saw:  2 processes, exit 2 after 1.5s: make test, go test, go vet, … 1 more; cpu 250ms, peak rss 12.0 MiB; wrote /p/out.txt; read /p/a, /p/b; " +
			"connected to api.example.com (1.2.3.4:443), [::1]:8080; looked up api.example.com; 1 event after the call returned\n" +
			"      findings:    F2 (medium claim-tests)\n" +
			"  03:04:06.000  write Write /p/new.go  [c2]\n" +
			"      agent said:  error\n" +
			"      kernel saw:  nothing\n" +
			"  03:04:07.000  fetch WebFetch https://x.test/  [c3]\n" +
			"      agent said:  rejected: nothing ran\n" +
			"      kernel saw:  1 process, killed by signal 9: curl x\n" +
			"  03:04:08.000  shell Bash echo <b>hi</b>  [c4]\n" +
			"      kernel saw:  nothing\n",
		"\nUNATTRIBUTED (22 events; 6 processes)\n" +
			"  03:04:05.000  pid 10      git status  (1 exec)\n" +
			"  03:04:05.000  pid 11      curl  (1 connect, 1 dns)\n" +
			"               connected to 10.1.2.3:8443; looked up evil.test\n",
		"  03:04:05.000  pid 20      cat  (15 open)\n" +
			"               read /p/f07, /p/f08, /p/f09, … 12 more\n",
		"\nCLAIMS (2)\n" +
			"  03:04:09.000  tests-passed  \"All tests pass\" → contradicted by F2 (claim-tests) on c1\n" +
			"                ran           \"I ran it\" → no tool call\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text report lacks\n%s\n--- report:\n%s", want, got)
		}
	}
	if strings.Contains(got, "/p/f20") {
		t.Error("the text report lists every file a process read")
	}
}

// TestWriteTextPartial: a session without a transcript, and a transcript
// without a session, each say what is missing.
func TestWriteTextPartial(t *testing.T) {
	inUTC(t)
	meta := &manifest.Meta{ID: "s2", CleanClose: true}
	attr := &correlate.Result{Counts: map[correlate.Reason]int{"unattributed": 3}, Unattributed: unattributed()[:3]}
	tr := &transcript.Transcript{Path: "t.jsonl", Agent: "codex", ToolCalls: []*transcript.ToolCall{{ID: "x", Tool: "shell", Kind: transcript.KindShell, Command: "ls"}}}
	for _, c := range []struct {
		name      string
		rep       *Report
		wants     []string
		notWanted []string
	}{
		{"no transcript", Build(meta, nil, nil, attr, nil), []string{
			"note: no transcript found for this session: every event of the tree below the agent is unattributed (pass --transcript FILE)\n",
			"\nFINDINGS (0)\n  none\n",
			"\nTOOL CALLS (0)\n",
			"\nUNATTRIBUTED: 3 events, with no transcript to attribute them to (polygraph events s2 lists them)\n",
			"\nCLAIMS (0)\n",
		}, []string{"not closed cleanly", "transcript t.jsonl", "UNATTRIBUTED ("}},
		{"an unknown agent", Build(&manifest.Meta{ID: "s3", CleanClose: true, Command: []string{"/usr/bin/env", "-i", "HOME=/h", "/opt/k/kestrel", "--task", "x"}}, nil, nil, attr, nil), []string{
			"note: unknown agent: no profile matches `kestrel`, so polygraph knows neither where it keeps its transcript nor its format;",
		}, []string{"no transcript found", "known by what it did"}},
		{"an unknown agent found by behaviour", Build(&manifest.Meta{ID: "s3", CleanClose: true, Command: []string{"/opt/k/kestrel", "--task", "x"}}, nil, nil,
			&correlate.Result{AgentBy: correlate.AgentByBehaviour, AgentNote: "`kestrel-engine` (pid 7) holds the model connection (127.0.0.1:9) and starts the tools"}, nil), []string{
			"note: unknown agent: no profile matches `kestrel`",
			"note: the agent is known by what it did: `kestrel-engine` (pid 7) holds the model connection (127.0.0.1:9) and starts the tools\n",
		}, []string{"no transcript found"}},
		{"a known agent without its transcript", Build(&manifest.Meta{ID: "s4", CleanClose: true, Command: []string{"sudo", "-n", "env", "A=1", "claude", "-p", "x"}}, nil, nil, attr, nil), []string{
			"note: no transcript found for this session",
		}, []string{"unknown agent"}},
		{"no session", Build(nil, nil, tr, nil, nil), []string{
			"note: " + NoKernelNote + "\n",
			"  transcript t.jsonl (codex, 1 tool call, 0 claims)\n",
			"\nFINDINGS (0)\n  none that the transcript alone can show\n",
			"            shell shell ls  [x]\n",
		}, []string{"UNATTRIBUTED", "kernel saw", "attributed", "polygraph: session"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := c.rep.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.wants {
				if !strings.Contains(b.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, b.String())
				}
			}
			for _, w := range c.notWanted {
				if strings.Contains(b.String(), w) {
					t.Errorf("text has %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestWriteJSON: the JSON document carries the session, the kernel's view
// of each call and every unattributed event, and leaves what the agent
// wrote unescaped.
func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := fullReport().WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"command": "echo <b>hi</b>"`) || !strings.HasPrefix(b.String(), "{\n  \"schema_version\": 1,\n  \"session\": {\n    \"id\": \"s1\",") {
		t.Errorf("JSON is not indented, ordered or unescaped as expected:\n%.300s", b.String())
	}
	var doc struct {
		Session struct {
			ID string `json:"id"`
		} `json:"session"`
		Transcript     TranscriptInfo      `json:"transcript"`
		KernelEvidence bool                `json:"kernel_evidence"`
		Notes          []string            `json:"notes"`
		Summary        map[string]any      `json:"summary"`
		ToolCalls      []ToolCallView      `json:"tool_calls"`
		Attributed     map[string]int      `json:"attributed"`
		Unattributed   []map[string]any    `json:"unattributed"`
		Count          int                 `json:"unattributed_count"`
		Findings       []detect.Finding    `json:"findings"`
		Claims         []*transcript.Claim `json:"claims"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	k := doc.ToolCalls[0].Kernel
	switch {
	case doc.Session.ID != "s1" || !doc.KernelEvidence || len(doc.Notes) != 2:
		t.Errorf("session %q, kernel evidence %v, notes %q", doc.Session.ID, doc.KernelEvidence, doc.Notes)
	case doc.Transcript.Warnings != 2 || doc.Transcript.SessionID != "abc":
		t.Errorf("transcript %+v", doc.Transcript)
	case len(doc.ToolCalls) != 4 || k == nil || k.Processes != 2 || *k.ExitCode != 2 || k.DurationNS != 1500e6 || k.Late != 1 ||
		!slices.Equal(k.Connects, []string{"api.example.com (1.2.3.4:443)", "[::1]:8080"}) || !slices.Equal(doc.ToolCalls[0].Findings, []string{"F2"}):
		t.Errorf("first tool call %+v, kernel %+v", doc.ToolCalls[0], k)
	case doc.ToolCalls[1].Kernel == nil || doc.ToolCalls[1].Kernel.Events != 0:
		t.Errorf("a call with no activity has kernel %+v, want an empty view", doc.ToolCalls[1].Kernel)
	case len(doc.Unattributed) != 22 || doc.Count != 22 || doc.Attributed["lineage"] != 3:
		t.Errorf("%d unattributed (count %d), attributed %v", len(doc.Unattributed), doc.Count, doc.Attributed)
	case len(doc.Findings) != 2 || doc.Findings[0].ID != "F1" || len(doc.Claims) != 2 || doc.Summary["session"] != "s1":
		t.Errorf("findings %v, claims %d, summary %v", doc.Findings, len(doc.Claims), doc.Summary)
	}

	// Without a session: no session, no summary, empty lists (not null).
	b.Reset()
	Build(nil, nil, nil, nil, nil).WriteJSON(&b)
	for _, w := range []string{`"kernel_evidence": false`, `"tool_calls": []`, `"claims": []`, `"unattributed": []`, `"findings": []`} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("empty report JSON lacks %s:\n%s", w, b.String())
		}
	}
	if strings.Contains(b.String(), `"session"`) || strings.Contains(b.String(), `"summary"`) {
		t.Errorf("a report without a session shows one:\n%s", b.String())
	}
}

// TestWriteHTML: the page is the session's timeline: the call rows with
// the three accounts, the divergence marked, the finding pinned on its
// call and listed with its framework ids, the claim linked to the finding
// that contradicts it; everything the agent wrote escaped, and nothing
// loaded from anywhere: the inline style and script are allowed by their
// hashes and nothing else.
func TestWriteHTML(t *testing.T) {
	inUTC(t)
	var b bytes.Buffer
	if err := fullReport().WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"<title>polygraph report s1</title>",
		`<h1>Session s1 <span class="badge done" id="status">not closed cleanly</span>`,
		`<p class="note">4 events were lost while recording: what the kernel saw is incomplete</p>`,
		"<dt>command</dt><dd><code>claude -p go</code></dd><dt>in</dt><dd><code>/p</code></dd>",
		`<section class="row call divergent" id="call-c1" data-f="row" data-kind="shell" data-call="c1" data-rules="claim-tests">`,
		`<div class="said"><span class="badge kind">Bash</span> <code>make test</code><div class="div-mark">≠ the agent reported exit 0; the kernel saw exit 2</div>`,
		`<a class="pin badge sev-medium" href="#finding-F2" data-f="finding" data-finding="F2" data-sev="medium" data-rule="claim-tests" data-call="c1" data-kind="shell">F2 claim-tests</a>`,
		"2 processes, exit 2 after 1.5s · read /p/a, /p/b · wrote /p/out.txt · connected to api.example.com (1.2.3.4:443), [::1]:8080",
		`<span class="failed-rep">rejected: nothing ran</span>`,
		`<code>echo &lt;b&gt;hi&lt;/b&gt;</code>`,
		`<article class="finding sev-high" id="finding-F1" data-f="finding" data-finding="F1" data-sev="high" data-rule="sensitive-read" data-call="" data-kind="">`,
		"ATT&amp;CK T1552.001 · OWASP LLM06",
		`≠ contradicted by <a href="#finding-F2">F2 claim-tests</a> on <a href="#call-c1">call #1</a>`,
		`<b>pid 11</b> <code>curl</code><div class="sum">1 connect, 1 dns · connected to 10.1.2.3:8443; looked up evil.test</div>`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("HTML lacks %s", want)
		}
	}
	if strings.Contains(got, "<b>hi</b>") {
		t.Error("HTML does not escape the agent's command")
	}
	page := strings.Replace(got, `<link rel="icon" href="data:,">`, "", 1) // no icon to ask for
	for _, bad := range []string{"src=", "http://", "https://x.test/\"", "<link", "@import", "url("} {
		if strings.Contains(page, bad) {
			t.Errorf("the page could load something: it holds %q", bad)
		}
	}
	style := got[strings.Index(got, "<style>")+len("<style>") : strings.Index(got, "</style>")]
	script := got[strings.Index(got, "<script>")+len("<script>") : strings.Index(got, "</script>")]
	csp := fmt.Sprintf(`content="default-src 'none'; style-src '%s'; script-src '%s'; img-src data:; base-uri 'none'; form-action 'none'"`, hashSource(style), hashSource(script))
	if !strings.Contains(html.UnescapeString(got), csp) {
		t.Errorf("the CSP does not allow exactly the inline style and script: want %s", csp)
	}

	b.Reset()
	if err := Build(nil, nil, &transcript.Transcript{Path: "t.jsonl"}, nil, nil).WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "<title>polygraph report</title>") || !strings.Contains(b.String(), "<h1>Transcript") ||
		strings.Contains(b.String(), "What no tool call explains") || !strings.Contains(b.String(), "transcript only: no kernel evidence") {
		t.Errorf("transcript-only HTML:\n%s", b.String())
	}
}

// TestWrite: Write renders each of Formats as its own writer does, and
// refuses any other.
func TestWrite(t *testing.T) {
	inUTC(t)
	if got := Formats(); !slices.Equal(got, []string{"text", "json", "html"}) {
		t.Errorf("Formats() = %q", got)
	}
	rep := fullReport()
	for _, c := range []struct {
		format string
		write  func(*Report, *bytes.Buffer) error
	}{
		{"text", func(r *Report, b *bytes.Buffer) error { return r.WriteText(b) }},
		{"json", func(r *Report, b *bytes.Buffer) error { return r.WriteJSON(b) }},
		{"html", func(r *Report, b *bytes.Buffer) error { return r.WriteHTML(b) }},
	} {
		var got, want bytes.Buffer
		if err := rep.Write(&got, c.format); err != nil {
			t.Fatal(err)
		}
		c.write(rep, &want)
		if got.Len() == 0 || !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Errorf("Write(%s) differs from its writer (%d bytes, want %d)", c.format, got.Len(), want.Len())
		}
	}
	var b bytes.Buffer
	if err := rep.Write(&b, "pdf"); err == nil || !strings.Contains(err.Error(), `unknown report format "pdf" (text, json, html)`) || b.Len() != 0 {
		t.Errorf("Write(pdf): %v, %d bytes", err, b.Len())
	}
}

// TestEventWhat: each kind of event is described by its object.
func TestEventWhat(t *testing.T) {
	for _, c := range []struct {
		e    *event.Event
		want string
	}{
		{&event.Event{Kind: event.KindExec, Process: &event.Process{Argv: []string{"sh", "-c", "a\nb"}}}, `sh -c a\nb`},
		{&event.Event{Kind: event.KindBind, Network: &event.Network{Addr: "0.0.0.0", Port: 80}}, "0.0.0.0 port 80"},
		{&event.Event{Kind: event.KindAccept, Network: &event.Network{Addr: "::1", Port: 9}}, "::1 port 9"},
		{&event.Event{Kind: event.KindNet, Network: &event.Network{Addr: "1.1.1.1", Port: 53}}, "1.1.1.1 port 53"},
		{&event.Event{Kind: event.KindDNS, Network: &event.Network{QName: "a.test"}}, "a.test"},
		{&event.Event{Kind: event.KindLink, Path: "/a", Path2: "/b"}, "/a → /b"},
		{&event.Event{Kind: event.KindFork, Process: &event.Process{ChildPID: 42}}, "child 42"},
		{&event.Event{Kind: event.KindExit, Process: &event.Process{ExitCode: event.Ptr(0)}}, "exit 0"},
		{&event.Event{Kind: event.KindExit, Process: &event.Process{Signal: 9}}, "signal 9"},
		{&event.Event{Kind: event.KindOpen, Path: "/etc/hosts", Access: "read"}, "/etc/hosts read"},
		{&event.Event{Kind: event.KindUnlink, Path: "/tmp/x"}, "/tmp/x"},
	} {
		if got := eventWhat(c.e); got != c.want {
			t.Errorf("eventWhat(%s) = %q, want %q", c.e.Kind, got, c.want)
		}
	}
}

// TestWriteTextNoise: an info finding is one line, a claim names the call
// that backs it, a command an agent's wrapper carried is shown as the
// agent wrote it, and the agent's own stray activity comes last, as one
// line.
func TestWriteTextNoise(t *testing.T) {
	inUTC(t)
	call := &transcript.ToolCall{ID: "c1", Tool: "Bash", Kind: transcript.KindShell, Command: "make test", StartedAt: t0}
	wrapper := exec("2-1", "/bin/bash", "-c", "source /h/.claude/shell-snapshots/snapshot-bash-1.sh 2>/dev/null || true && eval 'make test' < /dev/null && pwd -P >| /tmp/claude-1-cwd")
	tr := &transcript.Transcript{Path: "t.jsonl", Agent: "claude-code", ToolCalls: []*transcript.ToolCall{call},
		Claims: []*transcript.Claim{{Kind: transcript.ClaimTestsPassed, Text: "Tests pass", At: t0, ToolCallIDs: []string{"c1"}}}}
	var own []*event.Event
	for i := range 30 {
		own = append(own, &event.Event{Seq: uint64(10 + i), TS: t0, Kind: event.KindOpen, PID: 1, Comm: "claude", ExecID: "1-1", Path: fmt.Sprintf("/h/.cache/f%d", i), Access: "read"})
	}
	attr := &correlate.Result{AgentExecIDs: []string{"1-1"},
		ByCall: map[string]*correlate.CallActivity{"c1": {Call: call, Execs: []*event.Event{wrapper, exec("3-1", "make", "test")},
			Reads: []string{"/lib/x86_64-linux-gnu/libc.so.6", "/p/Makefile", "/etc/ld.so.cache"}, Events: []uint64{1, 2}}},
		Unattributed: append([]*event.Event{{Seq: 5, TS: t0, Kind: event.KindOpen, PID: 7, Comm: "cat", ExecID: "7-1", Path: "/h/.netrc", Access: "read"}}, own...)}
	findings := []detect.Finding{{ID: "F1", Rule: "untrusted-binary", Severity: detect.SeverityInfo, Title: "ran a workspace script", Detail: "long detail",
		ToolCallID: "c1", Frameworks: detect.Frameworks{ATTACK: []string{"T1204"}}}}
	var b bytes.Buffer
	if err := Build(&manifest.Meta{ID: "s1", StartedAt: t0}, nil, tr, attr, findings).WriteText(&b); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, want := range []string{
		"  F1 INFO: untrusted-binary ×1 (1 note, not alarms; --format json or html has each)\n\nTOOL CALLS",
		"kernel saw:  2 processes: [Claude Code's snapshot-eval wrapper] make test, make test; read /p/Makefile, 2 system files\n",
		"\"Tests pass\" → backed by c1\n",
		"UNATTRIBUTED (31 events; 2 processes)\n  03:04:05.000  pid 7       cat  (1 open)\n               read /h/.netrc\n" +
			"  03:04:05.000  pid 1       claude  (30 open)\n               the agent's own activity no tool call explains; read /h/.cache/f0, /h/.cache/f1, /h/.cache/f2, … 27 more\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text report lacks\n%s\n--- report:\n%s", want, got)
		}
	}
	if strings.Contains(got, "long detail") || strings.Contains(got, "snapshot-bash-1.sh") {
		t.Errorf("an info finding's detail, or the wrapper's script, is in the text:\n%s", got)
	}
}

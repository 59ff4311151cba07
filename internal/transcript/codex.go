package transcript

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Codex CLI writes a rollout per session to
// ~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl: one
// {timestamp, type, payload} object per line, type being session_meta,
// turn_context, response_item (what went to and came from the model),
// event_msg (what the harness did: exec_command_end with argv, cwd and exit
// code, patch_apply_end, token counts, turn boundaries) or compacted.
// Rollouts before 0.3 had no envelope: a bare session line first, then bare
// response items and {"record_type":"state"} lines; both are read.
//
// Three generations of shell tool appear: `shell` (argv list, structured JSON
// output with metadata.exit_code), `shell_command` (a command string, text
// output starting "Exit code: N") and unified exec's `exec_command`, whose
// long-running processes the model polls with `write_stdin` ("Process running
// with session ID N" … "Process exited with code N"). apply_patch arrives as a
// custom tool call, a function call, or argv through the shell tool; Codex
// applies patches itself, so those are edits, not processes.

type codexLine struct {
	Timestamp  string          `json:"timestamp"`
	Type       string          `json:"type"`
	Payload    json.RawMessage `json:"payload"`
	RecordType string          `json:"record_type"`
	ID         string          `json:"id"`
}

type codexItem struct {
	Type      string          `json:"type"`
	ID        flexString      `json:"id"`
	CallID    flexString      `json:"call_id"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Output    json.RawMessage `json:"output"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Status    string          `json:"status"`
	Action    json.RawMessage `json:"action"`
}

type codexEvent struct {
	Type      string                     `json:"type"`
	CallID    flexString                 `json:"call_id"`
	Command   json.RawMessage            `json:"command"`
	Cwd       string                     `json:"cwd"`
	ExitCode  *int                       `json:"exit_code"`
	ProcessID json.RawMessage            `json:"process_id"`
	Status    string                     `json:"status"`
	Source    string                     `json:"source"`
	Success   *bool                      `json:"success"`
	Changes   map[string]json.RawMessage `json:"changes"`
	Query     string                     `json:"query"`
	Info      *struct {
		Total *struct {
			Input  int64 `json:"input_tokens"`
			Cached int64 `json:"cached_input_tokens"`
			Output int64 `json:"output_tokens"`
		} `json:"total_token_usage"`
	} `json:"info"`
}

type codexMeta struct {
	ID         string `json:"id"`
	Timestamp  string `json:"timestamp"`
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version"`
	Originator string `json:"originator"`
}

type codexParser struct {
	cwd       string
	procCall  map[string]string // unified exec session/process id -> exec_command call id
	wsEnded   map[string]string // web_search_end query -> call id, awaiting its item
	wsPending map[string]string // web_search_call query -> call id, awaiting its end event
	// A model response is a token_usage_record (by response id), or in
	// files without them (before 0.17x) a token_count event that changes
	// the last total (tokens; one that repeats it follows no response):
	// finish takes the first list that is not empty.
	responded map[string]bool
	byRecord  []time.Time
	byCount   []time.Time
	tokens    [3]int64
}

func newCodexParser() *codexParser {
	return &codexParser{procCall: map[string]string{}, wsEnded: map[string]string{}, wsPending: map[string]string{}, responded: map[string]bool{}}
}

func (p *codexParser) record(b *builder, n int, raw []byte) {
	var l codexLine
	if err := json.Unmarshal(raw, &l); err != nil {
		b.warn(n, "unreadable record: "+shortErr(err))
		return
	}
	ts := parseTime(l.Timestamp)
	b.seen(ts)
	switch l.Type {
	case "session_meta":
		var m codexMeta
		if err := json.Unmarshal(l.Payload, &m); err != nil {
			b.warn(n, "unreadable session_meta: "+shortErr(err))
			return
		}
		p.meta(b, m)
	case "turn_context":
		var c struct {
			Cwd string `json:"cwd"`
		}
		if json.Unmarshal(l.Payload, &c) == nil && c.Cwd != "" {
			p.cwd = c.Cwd
		}
	case "response_item":
		var it codexItem
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			b.warn(n, "unreadable response_item: "+shortErr(err))
			return
		}
		p.item(b, n, ts, &it)
	case "event_msg":
		var ev codexEvent
		if err := json.Unmarshal(l.Payload, &ev); err != nil {
			b.warn(n, "unreadable event_msg: "+shortErr(err))
			return
		}
		p.event(b, n, ts, &ev)
	case "compacted":
		b.t.Compactions++
	case "token_usage_record": // one per model response (0.17x)
		var u struct {
			ResponseID string `json:"response_id"`
		}
		if json.Unmarshal(l.Payload, &u) == nil && !p.responded[u.ResponseID] {
			if u.ResponseID != "" {
				p.responded[u.ResponseID] = true
			}
			p.byRecord = append(p.byRecord, ts)
		}
	case "":
		switch {
		case l.RecordType != "":
			// pre-0.3 state snapshot
		case l.ID != "":
			var m codexMeta
			if json.Unmarshal(raw, &m) == nil {
				p.meta(b, m)
			}
		}
	default:
		// pre-0.3: the line is the response item itself
		var it codexItem
		if json.Unmarshal(raw, &it) == nil {
			p.item(b, n, ts, &it)
		}
	}
}

func (p *codexParser) meta(b *builder, m codexMeta) {
	if b.t.SessionID == "" {
		b.t.SessionID = m.ID
	}
	if m.Cwd != "" {
		p.cwd = m.Cwd
		if b.t.Cwd == "" {
			b.t.Cwd = m.Cwd
		}
	}
	if b.t.Version == "" {
		b.t.Version = m.CLIVersion
	}
	b.seen(parseTime(m.Timestamp))
}

func (p *codexParser) item(b *builder, n int, ts time.Time, it *codexItem) {
	switch it.Type {
	case "message":
		if it.Role == "assistant" {
			b.say(n, ts, codexText(it.Content), "")
		}
	case "function_call", "custom_tool_call", "local_shell_call":
		p.call(b, n, ts, it)
	case "function_call_output", "custom_tool_call_output":
		p.output(b, ts, it)
	case "web_search_call":
		var act struct {
			Type  string `json:"type"`
			Query string `json:"query"`
			URL   string `json:"url"`
		}
		_ = json.Unmarshal(it.Action, &act)
		key := firstNonEmpty(act.Query, act.URL)
		id := string(it.ID)
		if id == "" {
			id = p.wsEnded[key]
		}
		delete(p.wsEnded, key)
		if id == "" {
			id = b.syntheticID(n)
			p.wsPending[key] = id
		}
		tc := &ToolCall{ID: id, Tool: "web_search", Kind: KindFetch, StartedAt: ts, EndedAt: ts, Source: b.where(n)}
		if act.URL != "" {
			tc.URLs = []string{act.URL}
		}
		b.addNew(tc)
	}
	// reasoning, ghost_snapshot, compaction and newer items carry no calls.
}

func (p *codexParser) call(b *builder, n int, ts time.Time, it *codexItem) {
	id := firstNonEmpty(string(it.CallID), string(it.ID))
	if id == "" {
		id = b.syntheticID(n)
		b.warn(n, it.Type+" without a call_id; gave it "+id)
	}
	tc := &ToolCall{ID: id, Tool: it.Name, StartedAt: ts, Cwd: p.cwd, Source: b.where(n)}
	var a args
	switch it.Type {
	case "local_shell_call":
		tc.Tool = "local_shell"
		var act struct {
			Command []string `json:"command"`
			Workdir string   `json:"working_directory"`
		}
		_ = json.Unmarshal(it.Action, &act)
		p.argvCall(tc, act.Command, act.Workdir)
		b.addNew(tc)
		return
	case "custom_tool_call":
		var s string
		if json.Unmarshal(it.Input, &s) != nil {
			s = string(it.Input)
		}
		a = args{"input": s}
	default:
		a = decodeArgs(it.Arguments)
	}
	if it.Namespace != "" || strings.HasPrefix(it.Name, "mcp__") {
		tc.Kind = KindOther // an MCP tool: runs in its server, not as a shell command
		if it.Namespace != "" {
			tc.Tool = it.Namespace + it.Name
		}
		b.addNew(tc)
		return
	}
	switch it.Name {
	case "shell", "container.exec", "local_shell":
		p.argvCall(tc, a.strs("command"), a.str("workdir"))
	case "shell_command":
		cmd := a.str("command")
		if isApplyPatch(cmd) {
			patchCall(tc, cmd)
		} else {
			tc.Kind, tc.Command = KindShell, cmd
		}
		if wd := a.str("workdir"); wd != "" {
			tc.Cwd = wd
		}
	case "exec_command":
		tc.Kind, tc.Command = KindShell, a.str("cmd", "command")
		if wd := a.str("workdir"); wd != "" {
			tc.Cwd = wd
		}
	case "write_stdin":
		tc.Kind = KindOther
		if sid, ok := jsonNumber(a["session_id"]); ok {
			tc.Polls = p.procCall[strconv.FormatInt(sid, 10)]
		}
	case "apply_patch":
		patchCall(tc, a.str("input", "patch"))
	case "view_image", "read_file":
		tc.Kind = KindRead
		tc.Paths = a.strs("path", "file_path")
	case "list_dir", "grep_files":
		tc.Kind = KindSearch
		tc.Paths = a.strs("path", "dir_path")
	case "web_search":
		tc.Kind = KindFetch
	case "spawn_agent":
		tc.Kind = KindTask
	default:
		tc.Kind = KindOther // update_plan, and tools newer than this parser
	}
	if tc.Kind != KindShell {
		tc.Cwd = ""
	}
	b.addNew(tc)
}

// argvCall fills a call made through an argv-taking shell tool.
func (p *codexParser) argvCall(tc *ToolCall, argv []string, workdir string) {
	if workdir != "" {
		tc.Cwd = workdir
	}
	if len(argv) > 0 && (argv[0] == "apply_patch" || argv[0] == "applypatch") {
		patchCall(tc, strings.Join(argv[1:], "\n"))
		tc.Cwd = ""
		return
	}
	if cmd := commandFromArgv(argv); len(argv) == 3 && isShell(argv[0]) && isApplyPatch(cmd) {
		patchCall(tc, cmd)
		tc.Cwd = ""
		return
	}
	tc.Kind = KindShell
	tc.Argv = argv
	tc.Command = commandFromArgv(argv)
}

func isApplyPatch(cmd string) bool {
	cmd = strings.TrimSpace(cmd)
	return strings.HasPrefix(cmd, "apply_patch") || strings.HasPrefix(cmd, "applypatch")
}

var rePatchFile = regexp.MustCompile(`(?m)^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$`)

// patchCall makes tc an edit from an apply_patch body.
func patchCall(tc *ToolCall, patch string) {
	tc.Kind = KindEdit
	onlyAdds := true
	for _, m := range rePatchFile.FindAllStringSubmatch(patch, -1) {
		path := strings.TrimSpace(m[2] + m[3])
		tc.Paths = appendUnique(tc.Paths, path)
		if m[1] != "Add" {
			onlyAdds = false
		}
	}
	if onlyAdds && len(tc.Paths) > 0 {
		tc.Kind = KindWrite
	}
}

func (p *codexParser) output(b *builder, ts time.Time, it *codexItem) {
	tc := b.resultCall(string(it.CallID))
	if tc == nil {
		return
	}
	text, success := codexOutput(it.Output)
	var code *int
	// Structured output: {"output": "...", "metadata": {"exit_code": N}}.
	if strings.HasPrefix(strings.TrimSpace(text), "{") {
		var s struct {
			Output   *string `json:"output"`
			Metadata struct {
				ExitCode *int `json:"exit_code"`
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(text), &s) == nil && s.Output != nil {
			text, code = *s.Output, s.Metadata.ExitCode
		}
	}
	tc.EndedAt = ts
	b.result(tc, text)
	if success != nil && !*success {
		tc.IsError = true
	}
	if strings.Contains(text, "rejected by user") || strings.HasPrefix(text, "exec command rejected") {
		tc.Rejected, tc.IsError = true, true
		return
	}
	if m := reProcessRuns.FindStringSubmatch(text); m != nil && tc.Kind == KindShell {
		p.procCall[m[1]] = tc.ID
		tc.Background = true // still running when the call returned; polled later
	}
	if code == nil {
		code = firstInt(matchInt(reProcessExited, text), matchInt(reExitCode, text))
	}
	if strings.HasPrefix(text, "write_stdin failed") {
		tc.IsError = true
	}
	if code == nil {
		return
	}
	switch {
	case tc.Kind == KindShell:
		tc.ExitCode = code
		tc.IsError = tc.IsError || *code != 0
	case tc.Polls != "":
		tc.ExitCode = code
		if target := b.call(tc.Polls); target != nil && target.ExitCode == nil {
			target.ExitCode = code
			target.IsError = target.IsError || *code != 0
		}
	case tc.Kind == KindEdit || tc.Kind == KindWrite:
		tc.IsError = tc.IsError || *code != 0
	}
}

func (p *codexParser) event(b *builder, n int, ts time.Time, ev *codexEvent) {
	switch ev.Type {
	case "task_started", "turn_started", "task_complete", "turn_complete", "turn_aborted", "user_message":
		b.endTurn()
	case "exec_command_begin", "exec_command_end":
		tc := b.call(string(ev.CallID))
		if tc == nil {
			if ev.Type != "exec_command_end" || ev.Source != "user_shell" || ev.CallID == "" {
				return
			}
			// A command the user ran with `!` in the TUI: no model call,
			// but a real process the kernel will have seen.
			tc = b.add(&ToolCall{ID: string(ev.CallID), Tool: "user_shell", Kind: KindShell, StartedAt: ts, Source: b.where(n)})
			if tc == nil {
				return
			}
		}
		if tc.Kind != KindShell {
			return // apply_patch through the shell tool
		}
		if argv := codexArgv(ev.Command); len(argv) > 0 {
			tc.Argv = argv
			if tc.Command == "" {
				tc.Command = commandFromArgv(argv)
			}
		}
		if ev.Cwd != "" {
			tc.Cwd = ev.Cwd
		}
		if pid := rawID(ev.ProcessID); pid != "" {
			p.procCall[pid] = tc.ID
		}
		if ev.Type == "exec_command_end" {
			if ev.Status == "declined" {
				tc.Rejected, tc.IsError = true, true
			}
			if ev.ExitCode != nil {
				tc.ExitCode = ev.ExitCode
				tc.IsError = tc.IsError || *ev.ExitCode != 0
			}
			if tc.EndedAt.IsZero() {
				tc.EndedAt = ts
			}
		}
	case "patch_apply_begin", "patch_apply_end":
		tc := b.call(string(ev.CallID))
		if tc == nil {
			return
		}
		for path := range ev.Changes {
			tc.Paths = appendUnique(tc.Paths, path)
		}
		if ev.Type == "patch_apply_end" && ev.Success != nil && !*ev.Success {
			tc.IsError = true
		}
	case "web_search_end":
		if id := p.wsPending[ev.Query]; id != "" {
			delete(p.wsPending, ev.Query)
			return
		}
		if b.call(string(ev.CallID)) == nil && ev.CallID != "" {
			p.wsEnded[ev.Query] = string(ev.CallID)
		}
	case "token_count":
		if ev.Info != nil && ev.Info.Total != nil {
			t := ev.Info.Total
			b.t.Usage = Usage{InputTokens: t.Input, OutputTokens: t.Output, CacheReadTokens: t.Cached}
			if tokens := [3]int64{t.Input, t.Cached, t.Output}; tokens != p.tokens {
				p.tokens = tokens
				p.byCount = append(p.byCount, ts)
			}
		}
	case "context_compacted":
		b.t.Compactions++
	}
}

func (p *codexParser) finish(b *builder) {
	answers := p.byRecord
	if len(answers) == 0 {
		answers = p.byCount
	}
	for _, ts := range answers {
		b.response(ts)
	}
}

// codexOutput reads a function call output: a string, an object
// {content, success}, or a list of content items.
func codexOutput(raw json.RawMessage) (string, *bool) {
	if len(raw) == 0 {
		return "", nil
	}
	switch raw[0] {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return s, nil
	case '{':
		var o struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		_ = json.Unmarshal(raw, &o)
		text, _ := codexOutput(o.Content)
		return text, o.Success
	case '[':
		return codexText(raw), nil
	}
	s, _ := scalarText(raw)
	return s, nil
}

// codexText joins the text of content items.
func codexText(raw json.RawMessage) string {
	var items []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &items) != nil {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var parts []string
	for _, it := range items {
		if it.Text != "" {
			parts = append(parts, it.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// codexArgv reads an event's command: an argv list or one string.
func codexArgv(raw json.RawMessage) []string {
	var argv []string
	if json.Unmarshal(raw, &argv) == nil {
		return argv
	}
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return []string{s}
	}
	return nil
}

// rawID reads an id written as a JSON string or number.
func rawID(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

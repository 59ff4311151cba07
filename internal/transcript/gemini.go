package transcript

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Gemini CLI keeps a session in ~/.gemini/tmp/<project>/chats/. Older
// releases rewrite one JSON document, session-<time>-<id>.json
// ({sessionId, projectHash, startTime, lastUpdated, messages: [...]});
// current ones append to session-<time>-<id>.jsonl: a metadata line, then
// message records (a message is appended again each time it changes, and the
// last copy wins), {"$set": {...}} metadata patches (which may replace the
// whole message list) and {"$rewindTo": id} records that drop that message
// and everything after it. Tool calls live inside "gemini" messages as
// toolCalls[] with their results. Subagents write
// chats/<parent session id>/<id>.jsonl. logs.json beside chats/ holds only the
// user's prompts.

type geminiMsg struct {
	ID        string           `json:"id"`
	Timestamp string           `json:"timestamp"`
	Type      string           `json:"type"`
	Content   json.RawMessage  `json:"content"`
	ToolCalls []geminiToolCall `json:"toolCalls"`
}

type geminiToolCall struct {
	ID        flexString      `json:"id"`
	Name      string          `json:"name"`
	Args      json.RawMessage `json:"args"`
	Result    json.RawMessage `json:"result"`
	Status    string          `json:"status"`
	Timestamp string          `json:"timestamp"`
	AgentID   string          `json:"agentId"`
}

// geminiLinks is what ParseFile needs to attach subagent files.
type geminiLinks struct {
	agentCall map[string]string // agentId -> the call that started it
	kind      string            // main or subagent
}

type geminiMeta struct {
	SessionID   string          `json:"sessionId"`
	StartTime   string          `json:"startTime"`
	LastUpdated string          `json:"lastUpdated"`
	Directories []string        `json:"directories"`
	Kind        string          `json:"kind"`
	Messages    json.RawMessage `json:"messages"`
}

func (m *geminiMeta) apply(b *builder) {
	if m.SessionID != "" && b.t.SessionID == "" {
		b.t.SessionID = m.SessionID
	}
	if len(m.Directories) > 0 && b.t.Cwd == "" {
		b.t.Cwd = m.Directories[0]
	}
	if m.Kind != "" {
		b.gemini().kind = m.Kind
	}
	b.seen(parseTime(m.StartTime))
	b.seen(parseTime(m.LastUpdated))
}

func (b *builder) gemini() *geminiLinks {
	if b.t.gemini == nil {
		b.t.gemini = &geminiLinks{agentCall: map[string]string{}}
	}
	return b.t.gemini
}

// geminiMessage turns one message into calls and claims. rewound marks a
// message the user rewound away: its calls still ran, its words no longer
// stand.
func geminiMessage(b *builder, line int, m *geminiMsg, rewound bool) {
	ts := parseTime(m.Timestamp)
	b.seen(ts)
	switch m.Type {
	case "user":
		b.endTurn()
		return
	case "gemini":
		b.response(ts)
	default:
		return // info, error, warning
	}
	for i := range m.ToolCalls {
		geminiCall(b, line, ts, &m.ToolCalls[i], rewound)
	}
	if !rewound {
		b.say(line, ts, geminiText(m.Content), "")
	}
}

var reURL = regexp.MustCompile(`https?://[^\s"'<>)\]]+`)

func geminiCall(b *builder, line int, msgTS time.Time, g *geminiToolCall, rewound bool) {
	id := string(g.ID)
	if id == "" {
		id = b.syntheticID(line)
		b.warn(line, "tool call without an id; gave it "+id)
	}
	a := decodeArgs(g.Args)
	end := parseTime(g.Timestamp)
	start := msgTS
	if start.IsZero() || (!end.IsZero() && end.Before(start)) {
		start = end
	}
	b.seen(end)
	tc := &ToolCall{ID: id, Tool: g.Name, StartedAt: start, EndedAt: end, Rewound: rewound, AgentID: g.AgentID, Source: b.where(line)}
	switch g.Name {
	case "run_shell_command", "shell":
		tc.Kind = KindShell
		tc.Command = a.str("command")
		tc.Background = a.boolean("is_background")
		dir := a.str("dir_path", "directory")
		switch {
		case filepath.IsAbs(dir):
			tc.Cwd = dir
		case b.t.Cwd != "":
			tc.Cwd = filepath.Join(b.t.Cwd, dir)
		}
	case "read_file", "read_many_files":
		tc.Kind = KindRead
		tc.Paths = a.strs("absolute_path", "file_path", "path", "paths")
	case "write_file":
		tc.Kind = KindWrite
		tc.Paths = a.strs("file_path", "absolute_path", "path")
	case "replace", "edit", "smart_edit":
		tc.Kind = KindEdit
		tc.Paths = a.strs("file_path", "absolute_path", "path")
	case "list_directory", "ls", "glob", "search_file_content", "grep", "grep_search", "ripgrep":
		tc.Kind = KindSearch
		tc.Paths = a.strs("dir_path", "path", "directory")
	case "web_fetch":
		tc.Kind = KindFetch
		tc.URLs = appendUnique(a.strs("url"), reURL.FindAllString(a.str("prompt"), -1)...)
	case "google_web_search", "web_search":
		tc.Kind = KindFetch
	case "delegate_to_agent", "codebase_investigator":
		tc.Kind = KindTask
	default:
		tc.Kind = KindOther // save_memory, write_todos, MCP tools, ...
		if strings.HasSuffix(g.Name, "_agent") {
			tc.Kind = KindTask
		}
	}
	if tc.Kind == KindTask && g.AgentID != "" {
		b.gemini().agentCall[g.AgentID] = id
	}
	text := geminiResult(g.Result)
	b.result(tc, text)
	switch g.Status {
	case "error":
		tc.IsError = true
	case "cancelled":
		tc.IsError = true
		tc.Rejected = !strings.Contains(text, "before it could complete")
	}
	if tc.Kind == KindShell && !tc.Rejected {
		switch {
		case strings.Contains(text, "Command moved to background"):
			tc.Background = true
		case matchInt(reGeminiExit, text) != nil:
			tc.ExitCode = matchInt(reGeminiExit, text)
			tc.IsError = tc.IsError || *tc.ExitCode != 0
		case g.Status == "success" && strings.HasPrefix(unwrapUntrusted(text), "Output:") && !reGeminiTrouble.MatchString(text):
			// Current releases leave out "Exit Code: 0".
			tc.ExitCode = intPtr(0)
		}
	}
	b.add(tc)
}

var reGeminiTrouble = regexp.MustCompile(`(?m)^(Error|Signal): `)

// unwrapUntrusted unwraps the <untrusted_context> envelope Gemini CLI 0.6x puts
// around tool output.
func unwrapUntrusted(text string) string {
	text = strings.TrimSpace(text)
	if t, ok := strings.CutPrefix(text, "<untrusted_context>"); ok {
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(t), "</untrusted_context>"))
	}
	return text
}

// geminiText is message content as text: a string, a part, or parts.
func geminiText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Text    string `json:"text"`
		Thought bool   `json:"thought"`
	}
	if raw[0] == '{' {
		raw = append(append([]byte{'['}, raw...), ']')
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		if p.Text != "" && !p.Thought {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// geminiResult is a tool call's result as text: the functionResponse output
// (or error) of each part, or plain text parts.
func geminiResult(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	if s, ok := scalarText(raw); ok {
		return s
	}
	if raw[0] == '{' {
		raw = append(append([]byte{'['}, raw...), ']')
	}
	var parts []struct {
		Text             string `json:"text"`
		FunctionResponse *struct {
			Response map[string]any `json:"response"`
		} `json:"functionResponse"`
	}
	_ = json.Unmarshal(raw, &parts)
	var out []string
	for _, p := range parts {
		switch {
		case p.FunctionResponse != nil:
			r := p.FunctionResponse.Response
			if v, ok := r["output"].(string); ok {
				out = append(out, v)
			} else if v, ok := r["error"].(string); ok {
				out = append(out, v)
			} else if len(r) > 0 {
				enc, _ := json.Marshal(r)
				out = append(out, string(enc))
			}
		case p.Text != "":
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n")
}

// geminiJSONParser reads the whole-document format, one message at a time.
type geminiJSONParser struct{}

func (geminiJSONParser) parse(b *builder, lc *lineCounter) error {
	dec := json.NewDecoder(lc)
	bad := func(what string, err error) error {
		b.warn(lc.lineAt(dec.InputOffset()), fmt.Sprintf("%s: %s; the rest of the file is skipped", what, shortErr(err)))
		return nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return bad("not a Gemini session document", fmt.Errorf("expected an object"))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return bad("unreadable document", err)
		}
		key, _ := tok.(string)
		if key != "messages" {
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return bad("unreadable "+key, err)
			}
			var m geminiMeta
			if json.Unmarshal(append(append([]byte(`{"`+jsonKey(key)+`":`), v...), '}'), &m) == nil {
				m.apply(b)
			}
			continue
		}
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			return bad("messages is not a list", fmt.Errorf("unexpected %v", tok))
		}
		for dec.More() {
			line := lc.lineAt(dec.InputOffset() + 1)
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return bad("unreadable message", err)
			}
			var m geminiMsg
			if err := json.Unmarshal(raw, &m); err != nil {
				b.warn(line, "unreadable message: "+shortErr(err))
				continue
			}
			geminiMessage(b, line, &m, false)
		}
		if _, err := dec.Token(); err != nil {
			return bad("unterminated messages", err)
		}
	}
	return nil
}

func jsonKey(k string) string {
	enc, _ := json.Marshal(k)
	return string(enc[1 : len(enc)-1])
}

// geminiJSONLParser reads the append-only format. Because later records can
// replace or rewind earlier ones, calls come out at the end of the file.
type geminiJSONLParser struct {
	order []string                 // message ids in first-seen order
	msgs  map[string]*geminiRecord // last copy of each
	live  map[string]bool          // messages still in the conversation
	liveO []string                 // live ids in conversation order
}

type geminiRecord struct {
	line int
	msg  geminiMsg
}

func newGeminiJSONLParser() *geminiJSONLParser {
	return &geminiJSONLParser{msgs: map[string]*geminiRecord{}, live: map[string]bool{}}
}

func (p *geminiJSONLParser) record(b *builder, n int, raw []byte) {
	var r struct {
		Set      *geminiMeta `json:"$set"`
		RewindTo *string     `json:"$rewindTo"`
		ID       *string     `json:"id"`
		geminiMeta
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.warn(n, "unreadable record: "+shortErr(err))
		return
	}
	switch {
	case r.RewindTo != nil:
		p.rewind(*r.RewindTo)
	case r.ID != nil:
		var m geminiMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			b.warn(n, "unreadable message: "+shortErr(err))
			return
		}
		p.put(n, &m)
	case r.Set != nil:
		r.Set.apply(b)
		if len(r.Set.Messages) > 0 && string(r.Set.Messages) != "null" {
			var msgs []geminiMsg
			if err := json.Unmarshal(r.Set.Messages, &msgs); err != nil {
				b.warn(n, "unreadable $set.messages: "+shortErr(err))
				return
			}
			// The whole conversation, replaced (history compression, masking).
			p.live, p.liveO = map[string]bool{}, nil
			for i := range msgs {
				p.put(n, &msgs[i])
			}
		}
	default:
		r.geminiMeta.apply(b)
	}
}

func (p *geminiJSONLParser) put(n int, m *geminiMsg) {
	if m.ID == "" {
		return
	}
	if _, ok := p.msgs[m.ID]; !ok {
		p.order = append(p.order, m.ID)
	}
	p.msgs[m.ID] = &geminiRecord{line: n, msg: *m}
	if !p.live[m.ID] {
		p.live[m.ID] = true
		p.liveO = append(p.liveO, m.ID)
	}
}

// rewind drops id and every live message after it; an unknown id drops all,
// as Gemini CLI itself does.
func (p *geminiJSONLParser) rewind(id string) {
	cut := len(p.liveO)
	for i, v := range p.liveO {
		if v == id {
			cut = i
			break
		}
	}
	if cut == len(p.liveO) {
		cut = 0
	}
	for _, v := range p.liveO[cut:] {
		delete(p.live, v)
	}
	p.liveO = p.liveO[:cut]
}

func (p *geminiJSONLParser) finish(b *builder) {
	for _, id := range p.order {
		r := p.msgs[id]
		geminiMessage(b, r.line, &r.msg, !p.live[id])
	}
}

// geminiLogsParser reads logs.json: user prompts only, so no calls, but the
// session id and times.
type geminiLogsParser struct{}

func (geminiLogsParser) parse(b *builder, lc *lineCounter) error {
	dec := json.NewDecoder(lc)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		b.warn(lc.lineAt(dec.InputOffset()), "not a Gemini prompt log")
		return nil
	}
	for dec.More() {
		var e struct {
			SessionID string `json:"sessionId"`
			Timestamp string `json:"timestamp"`
		}
		if err := dec.Decode(&e); err != nil {
			b.warn(lc.lineAt(dec.InputOffset()), "unreadable entry: "+shortErr(err)+"; the rest of the file is skipped")
			return nil
		}
		if b.t.SessionID == "" {
			b.t.SessionID = e.SessionID
		}
		b.seen(parseTime(e.Timestamp))
	}
	return nil
}

// linkGeminiSubagents reads chats/<session id>/*.jsonl beside path, the
// files Gemini CLI writes for subagents of that session.
func linkGeminiSubagents(ctx context.Context, t *Transcript, path string, opts Options) error {
	if t.SessionID == "" || (t.gemini != nil && t.gemini.kind == "subagent") {
		return nil
	}
	dir := filepath.Join(filepath.Dir(path), t.SessionID)
	entries, err := readDir(dir)
	if err != nil {
		return nil // no subagents
	}
	sub := opts
	sub.NoSubagents = true
	for _, e := range entries {
		if e.IsDir() || !(strings.HasSuffix(e.Name(), ".jsonl") || strings.HasSuffix(e.Name(), ".json")) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := ParseFileContext(ctx, p, sub)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			t.Warnings = append(t.Warnings, Warning{Source: p, Message: "subagent file skipped: " + subagentErr(p, err)})
			continue
		}
		parent := ""
		if t.gemini != nil {
			parent = t.gemini.agentCall[st.SessionID]
		}
		mergeSubagent(t, st, parent, st.SessionID)
		t.Subagents = append(t.Subagents, p)
	}
	if len(t.Subagents) > 0 {
		sortByStart(t)
	}
	return nil
}

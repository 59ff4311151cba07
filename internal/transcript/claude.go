package transcript

import (
	"encoding/json"
	"strings"
)

// Claude Code writes one JSON object per line to
// ~/.claude/projects/<encoded cwd>/<session>.jsonl. Assistant lines carry one
// content block each (text, thinking or tool_use), sharing the API message id
// and repeating its usage; user lines carry the tool_result for a tool_use id
// plus a per-tool toolUseResult object. Subagents (Task, later Agent) are
// written inline with isSidechain in 1.0.x, to sibling agent-<id>.jsonl files
// in 2.0.x and to <session>/subagents/agent-<id>.jsonl in 2.1.x, and 2.1.x
// also mirrors them into the parent as progress/agent_progress records.
//
// `claude -p --output-format stream-json --verbose` prints the same messages
// with snake_case envelope fields (session_id, parent_tool_use_id,
// tool_use_result), a system/init record first and a result record per turn;
// the same parser reads it.

type claudeLine struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	ParentUUID       *string         `json:"parentUuid"`
	SessionID        string          `json:"sessionId"`
	SessionIDSnake   string          `json:"session_id"`
	Timestamp        string          `json:"timestamp"`
	Cwd              string          `json:"cwd"`
	Version          string          `json:"version"`
	CodeVersion      string          `json:"claude_code_version"`
	IsSidechain      bool            `json:"isSidechain"`
	AgentID          string          `json:"agentId"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	IsAPIError       bool            `json:"isApiErrorMessage"`
	Message          json.RawMessage `json:"message"`
	ToolUseResult    json.RawMessage `json:"toolUseResult"`
	ToolUseResultSn  json.RawMessage `json:"tool_use_result"`
	ParentToolUseID  *string         `json:"parent_tool_use_id"`
	ParentToolUseID2 string          `json:"parentToolUseID"`
	Data             json.RawMessage `json:"data"`
}

type claudeMessage struct {
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Usage   *struct {
		InputTokens         int64 `json:"input_tokens"`
		OutputTokens        int64 `json:"output_tokens"`
		CacheReadTokens     int64 `json:"cache_read_input_tokens"`
		CacheCreationTokens int64 `json:"cache_creation_input_tokens"`
	} `json:"usage"`
}

type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        flexString      `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID flexString      `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// claudeToolResult is the part of toolUseResult polygraph uses; the object's
// shape differs per tool and grows with every release.
type claudeToolResult struct {
	Interrupted      bool   `json:"interrupted"`
	BackgroundTaskID string `json:"backgroundTaskId"`
	ShellID          string `json:"shellId"`
	Status           string `json:"status"`
	ExitCode         *int   `json:"exitCode"`
	AgentID          string `json:"agentId"`
	FilePath         string `json:"filePath"`
}

// claudeProgress is a progress record's data; agent_progress mirrors one
// subagent message.
type claudeProgress struct {
	Type    string `json:"type"`
	AgentID string `json:"agentId"`
	Message *struct {
		Type          string          `json:"type"`
		UUID          string          `json:"uuid"`
		Timestamp     string          `json:"timestamp"`
		Message       json.RawMessage `json:"message"`
		ToolUseResult json.RawMessage `json:"toolUseResult"`
	} `json:"message"`
}

// claudeLinks is what ParseFile needs to attach subagent files to the calls
// that started them.
type claudeLinks struct {
	agentTask   map[string]string // agentId -> Task/Agent call id
	taskPrompt  map[string]string // Task prompt -> call id
	firstPrompt string            // this file's first user prompt (a subagent's task)
	ownAgentID  string
}

type claudeParser struct {
	format Format
	noSub  bool

	ownKnown   bool
	ownSide    bool
	ownAgentID string

	mirrored   map[string]bool   // agent_progress message uuids already read
	usageSeen  map[string]bool   // API message ids whose usage was counted
	answers    map[string]bool   // API message ids taken as model responses
	sideParent map[string]string // inline sidechain message uuid -> Task call id
	bgCall     map[string]string // background shell/task id -> call id
	links      *claudeLinks

	compactPending bool // a compact_boundary not yet followed by its summary
}

func newClaudeParser(format Format, opts Options) *claudeParser {
	return &claudeParser{
		format:     format,
		noSub:      opts.NoSubagents,
		mirrored:   map[string]bool{},
		usageSeen:  map[string]bool{},
		answers:    map[string]bool{},
		sideParent: map[string]string{},
		bgCall:     map[string]string{},
		links:      &claudeLinks{agentTask: map[string]string{}, taskPrompt: map[string]string{}},
	}
}

// claudeCtx is where one message sits: which thread, which subagent.
type claudeCtx struct {
	line     int
	ts       string
	cwd      string
	side     bool   // a subagent's message
	agentID  string // the subagent's id, where recorded
	parent   string // the Task/Agent call the subagent runs for
	mirror   bool   // from an agent_progress record
	own      bool   // the file's own thread
	compact  bool   // a compaction summary or the compaction helper's text
	apiError bool
}

func (p *claudeParser) record(b *builder, n int, raw []byte) {
	var l claudeLine
	if err := json.Unmarshal(raw, &l); err != nil {
		b.warn(n, "unreadable record: "+shortErr(err))
		return
	}
	if b.t.claude == nil {
		b.t.claude = p.links
	}
	sid := l.SessionID
	if sid == "" {
		sid = l.SessionIDSnake
	}
	if b.t.SessionID == "" && sid != "" {
		b.t.SessionID = sid
	}
	if b.t.Cwd == "" && l.Cwd != "" {
		b.t.Cwd = l.Cwd
	}
	if b.t.Version == "" {
		b.t.Version = firstNonEmpty(l.Version, l.CodeVersion)
	}
	b.seen(parseTime(l.Timestamp))

	switch l.Type {
	case "user", "assistant":
		p.message(b, n, &l)
	case "system":
		switch l.Subtype {
		case "compact_boundary":
			b.t.Compactions++
			p.compactPending = true
		case "turn_duration":
			b.endTurn()
		}
	case "result": // stream-json: one per turn
		b.endTurn()
	case "progress":
		if p.noSub {
			return
		}
		var d claudeProgress
		if json.Unmarshal(l.Data, &d) != nil || d.Type != "agent_progress" || d.Message == nil {
			return
		}
		m := d.Message
		if m.UUID != "" {
			if p.mirrored[m.UUID] {
				return
			}
			p.mirrored[m.UUID] = true
		}
		ts := firstNonEmpty(m.Timestamp, l.Timestamp)
		ctx := claudeCtx{line: n, ts: ts, cwd: l.Cwd, side: true, agentID: d.AgentID, parent: l.ParentToolUseID2, mirror: true}
		if ctx.parent == "" && d.AgentID != "" {
			ctx.parent = p.links.agentTask[d.AgentID]
		}
		if d.AgentID != "" && ctx.parent != "" {
			p.links.agentTask[d.AgentID] = ctx.parent
		}
		var msg claudeMessage
		if json.Unmarshal(m.Message, &msg) != nil {
			return
		}
		p.handle(b, ctx, m.Type, &msg, m.ToolUseResult, nil)
	}
	// summary, file-history-snapshot, queue-operation, attachment and
	// record types newer than this parser carry no tool calls.
}

func (p *claudeParser) message(b *builder, n int, l *claudeLine) {
	// Which thread is this? The file's own thread is the one its first
	// message belongs to: the main agent, or the subagent of an agent-*.jsonl.
	side := l.IsSidechain
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		side = true // stream-json subagent message
	}
	if !p.ownKnown {
		p.ownKnown, p.ownSide, p.ownAgentID = true, side, l.AgentID
		p.links.ownAgentID = l.AgentID
	}
	own := side == p.ownSide && (l.AgentID == p.ownAgentID || !side)
	if !own && p.noSub {
		return
	}
	var msg claudeMessage
	if len(l.Message) > 0 {
		if err := json.Unmarshal(l.Message, &msg); err != nil {
			b.warn(n, "unreadable message: "+shortErr(err))
			return
		}
	}
	ctx := claudeCtx{line: n, ts: l.Timestamp, cwd: l.Cwd, side: side, agentID: l.AgentID, own: own,
		compact: l.IsCompactSummary || strings.HasPrefix(p.ownAgentID, "acompact"), apiError: l.IsAPIError}
	if !own {
		ctx.parent = p.sidechainParent(l, &msg)
	}
	tur := l.ToolUseResult
	if len(tur) == 0 {
		tur = l.ToolUseResultSn
	}
	if l.IsCompactSummary {
		if !p.compactPending {
			b.t.Compactions++
		}
		p.compactPending = false
	}
	p.handle(b, ctx, l.Type, &msg, tur, l)
}

// sidechainParent finds the Task call a subagent message belongs to.
func (p *claudeParser) sidechainParent(l *claudeLine, msg *claudeMessage) string {
	if l.ParentToolUseID != nil && *l.ParentToolUseID != "" {
		return *l.ParentToolUseID
	}
	if l.AgentID != "" {
		if id := p.links.agentTask[l.AgentID]; id != "" {
			return id
		}
	}
	// 1.0.x inline sidechains: a chain of parentUuid links whose root is a
	// user message holding the Task's prompt.
	if l.ParentUUID != nil && *l.ParentUUID != "" {
		if id := p.sideParent[*l.ParentUUID]; id != "" {
			if l.UUID != "" {
				p.sideParent[l.UUID] = id
			}
			return id
		}
	}
	if l.Type == "user" {
		if prompt := messageText(msg.Content); prompt != "" {
			if id := p.links.taskPrompt[prompt]; id != "" {
				if l.UUID != "" {
					p.sideParent[l.UUID] = id
				}
				return id
			}
		}
	}
	return ""
}

// handle applies one user or assistant message.
func (p *claudeParser) handle(b *builder, ctx claudeCtx, typ string, msg *claudeMessage, tur json.RawMessage, l *claudeLine) {
	blocks, text := contentBlocks(msg.Content)
	switch typ {
	case "assistant":
		if msg.Usage != nil && msg.ID != "" && !ctx.mirror && !p.usageSeen[msg.ID] {
			p.usageSeen[msg.ID] = true
			u := &b.t.Usage
			u.InputTokens += msg.Usage.InputTokens
			u.OutputTokens += msg.Usage.OutputTokens
			u.CacheReadTokens += msg.Usage.CacheReadTokens
			u.CacheCreationTokens += msg.Usage.CacheCreationTokens
		}
		// One API message is written as a record per content block; an
		// API error is Claude Code's own message, not the model's.
		if msg.ID != "" && !ctx.mirror && !ctx.apiError && !p.answers[msg.ID] {
			p.answers[msg.ID] = true
			b.response(parseTime(ctx.ts))
		}
		for i := range blocks {
			blk := &blocks[i]
			switch blk.Type {
			case "text":
				if !ctx.compact && !ctx.apiError {
					b.say(ctx.line, parseTime(ctx.ts), blk.Text, ctx.parent)
				}
			case "tool_use", "server_tool_use":
				p.toolUse(b, ctx, blk)
			}
		}
		if text != "" && !ctx.compact && !ctx.apiError {
			b.say(ctx.line, parseTime(ctx.ts), text, ctx.parent)
		}
	case "user":
		hasResult := false
		for i := range blocks {
			if blocks[i].Type == "tool_result" {
				hasResult = true
				p.toolResult(b, ctx, &blocks[i], tur)
				tur = nil // a line's toolUseResult belongs to its (first) result
			}
		}
		if l != nil && hasResult && ctx.own && !ctx.side {
			return
		}
		// A prompt in the file's own main thread starts a new turn.
		if !hasResult && ctx.own && !ctx.side && l != nil && !l.IsMeta && !l.IsCompactSummary {
			b.endTurn()
		}
		if ctx.own && ctx.side && !hasResult && p.links.firstPrompt == "" {
			p.links.firstPrompt = firstNonEmpty(text, joinedText(blocks))
		}
	}
}

func (p *claudeParser) toolUse(b *builder, ctx claudeCtx, blk *claudeBlock) {
	id := string(blk.ID)
	if id == "" {
		id = b.syntheticID(ctx.line)
		b.warn(ctx.line, "tool_use without an id; gave it "+id)
	}
	a := decodeArgs(blk.Input)
	tc := &ToolCall{ID: id, Tool: blk.Name, StartedAt: parseTime(ctx.ts), Cwd: ctx.cwd, ParentID: ctx.parent, AgentID: ctx.agentID, Source: b.where(ctx.line)}
	switch blk.Name {
	case "Bash":
		tc.Kind = KindShell
		tc.Command = a.str("command")
		tc.Background = a.boolean("run_in_background")
	case "BashOutput", "TaskOutput", "KillBash", "KillShell", "TaskStop":
		tc.Kind = KindOther
		tc.Polls = p.bgCall[a.str("bash_id", "shell_id", "task_id")]
	case "Read", "NotebookRead":
		tc.Kind = KindRead
	case "Write":
		tc.Kind = KindWrite
	case "Edit", "MultiEdit", "NotebookEdit":
		tc.Kind = KindEdit
	case "Glob", "Grep", "LS":
		tc.Kind = KindSearch
	case "WebFetch", "WebSearch", "web_search", "web_fetch":
		tc.Kind = KindFetch
	case "Task", "Agent":
		tc.Kind = KindTask
		if prompt := a.str("prompt"); prompt != "" {
			p.links.taskPrompt[prompt] = id
		}
	default:
		tc.Kind = KindOther // TodoWrite, ExitPlanMode, AskUserQuestion, Skill, mcp__*, ...
	}
	if tc.Kind != KindShell {
		tc.Cwd = ""
	}
	if a != nil && tc.Kind != KindOther && tc.Kind != KindTask {
		tc.Paths = appendUnique(tc.Paths, a.strs("file_path", "notebook_path", "path")...)
		tc.URLs = appendUnique(tc.URLs, a.strs("url")...)
	}
	if ctx.mirror {
		b.add(tc) // the subagent's own file has it too
	} else {
		b.addNew(tc)
	}
}

func (p *claudeParser) toolResult(b *builder, ctx claudeCtx, blk *claudeBlock, tur json.RawMessage) {
	tc := b.resultCall(string(blk.ToolUseID))
	if tc == nil {
		return // its tool_use was handed out already, or is in a file not read
	}
	text := resultText(blk.Content)
	if !parseTime(ctx.ts).IsZero() {
		tc.EndedAt = parseTime(ctx.ts)
	}
	b.result(tc, text)
	tc.IsError = tc.IsError || blk.IsError

	var turText string
	var r claudeToolResult
	if len(tur) > 0 {
		if tur[0] == '"' {
			_ = json.Unmarshal(tur, &turText)
		} else if tur[0] == '{' {
			_ = json.Unmarshal(tur, &r)
		}
	}
	if strings.Contains(text, "<tool_use_error>") ||
		strings.HasPrefix(turText, "User rejected tool use") ||
		strings.HasPrefix(text, "The user doesn't want to proceed with this tool use") ||
		strings.HasPrefix(text, "The user doesn't want to take this action right now") ||
		strings.HasPrefix(text, "Permission to use ") {
		tc.Rejected = true
		tc.IsError = true
	}
	if r.BackgroundTaskID != "" {
		tc.Background = true
		p.bgCall[r.BackgroundTaskID] = tc.ID
	} else if m := reBackgroundID.FindStringSubmatch(text); m != nil && tc.Kind == KindShell {
		tc.Background = true
		p.bgCall[m[1]] = tc.ID
	}
	if r.AgentID != "" && tc.Kind == KindTask {
		p.links.agentTask[r.AgentID] = tc.ID
		p.bgCall[r.AgentID] = tc.ID
	}
	switch {
	case tc.Kind == KindShell && !tc.Rejected:
		if code := firstInt(matchInt(reExitCode, text), matchInt(reExitCode, turText)); code != nil {
			tc.ExitCode = code
		} else if !tc.IsError && !tc.Background && !r.Interrupted {
			// Claude Code turns every non-zero status into an error result
			// ("Exit code N"), so a plain result means the command exited 0.
			tc.ExitCode = intPtr(0)
		}
	case tc.Polls != "" || r.ShellID != "":
		if tc.Polls == "" {
			tc.Polls = p.bgCall[r.ShellID]
		}
		if r.ExitCode != nil {
			tc.ExitCode = r.ExitCode
			if target := b.call(tc.Polls); target != nil && target.ExitCode == nil {
				target.ExitCode = r.ExitCode
			}
		}
	}
}

// contentBlocks decodes message content, which is a string or a list of
// blocks; a string comes back as text.
func contentBlocks(raw json.RawMessage) ([]claudeBlock, string) {
	if len(raw) == 0 {
		return nil, ""
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return nil, s
	}
	var blocks []claudeBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks, ""
}

// messageText is the text of message content (string or text blocks).
func messageText(raw json.RawMessage) string {
	blocks, text := contentBlocks(raw)
	if text != "" {
		return text
	}
	return joinedText(blocks)
}

func joinedText(blocks []claudeBlock) string {
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// resultText is a tool_result's content as text: a string, text blocks,
// or a bare number.
func resultText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	if s, ok := scalarText(raw); ok {
		return s
	}
	if raw[0] == '"' {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	var blocks []claudeBlock
	if json.Unmarshal(raw, &blocks) == nil {
		return joinedText(blocks)
	}
	return ""
}

func (p *claudeParser) finish(b *builder) {}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

func firstInt(vals ...*int) *int {
	for _, v := range vals {
		if v != nil {
			return v
		}
	}
	return nil
}

// shortErr keeps a decode error's message to one short line.
func shortErr(err error) string {
	return excerpt(strings.ReplaceAll(err.Error(), "\n", " "), 160)
}

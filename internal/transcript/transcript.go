// Package transcript reads an AI coding agent's own account of its work (its
// transcript) and turns it into one model: the tool calls the agent says it
// made and the checkable claims it made in its own words.
//
// One parser per format, chosen by sniffing the content, never the file name:
// Claude Code session JSONL, `claude -p --output-format stream-json`, Codex
// CLI rollout JSONL, Gemini CLI session files (whole JSON and append-only
// JSONL), mini-swe-agent trajectories (one JSON document), OpenTelemetry
// GenAI spans as OTLP JSON, and polygraph's own plain JSONL
// (docs/transcript-jsonl.md). Input is streamed line by line, so memory
// follows the number of tool calls, not the size of the file; a line that
// does not parse becomes one Warning naming file:line and the rest still
// counts. No call is dropped without a warning: a record of another format
// spliced in, or a second call under an id already used (kept as "<id>#2"),
// is named with file:line too.
//
// The package is portable: correlation against kernel events happens
// elsewhere (internal/correlate), so nothing here depends on Linux.
package transcript

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Format names a transcript format. The values appear in JSON output and in
// the error for a file in no known format.
type Format string

// The formats polygraph reads.
const (
	FormatClaudeCode   Format = "claude-code"        // ~/.claude/projects/<cwd>/<session>.jsonl
	FormatClaudeStream Format = "claude-stream-json" // claude -p --output-format stream-json --verbose
	FormatCodex        Format = "codex"              // ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl
	FormatGeminiJSON   Format = "gemini-json"        // ~/.gemini/tmp/<project>/chats/session-*.json (whole document)
	FormatGeminiJSONL  Format = "gemini-jsonl"       // ~/.gemini/tmp/<project>/chats/session-*.jsonl (append-only)
	FormatGeminiLogs   Format = "gemini-logs"        // ~/.gemini/tmp/<project>/logs.json (user prompts only)
	FormatOTel         Format = "otel"               // OTLP JSON with GenAI execute_tool spans
	FormatJSONL        Format = "jsonl"              // polygraph's plain JSONL, docs/transcript-jsonl.md
	FormatMini         Format = "mini-swe-agent"     // ~/.config/mini-swe-agent/last_mini_run.traj.json (whole document, rewritten per step)
)

// Formats lists every format in the order the sniffer tries them.
var Formats = []Format{FormatClaudeCode, FormatClaudeStream, FormatCodex, FormatGeminiJSON, FormatGeminiJSONL, FormatGeminiLogs, FormatOTel, FormatJSONL, FormatMini}

// Kind is what a tool call does, as far as the kernel is concerned.
type Kind string

// Tool call kinds. Shell calls start processes; read, write, edit and search
// usually run inside the agent's own process; fetch talks to the network (or
// to the model vendor's servers, for web search); task starts a subagent.
const (
	KindShell  Kind = "shell"
	KindRead   Kind = "read"
	KindWrite  Kind = "write"
	KindEdit   Kind = "edit"
	KindSearch Kind = "search"
	KindFetch  Kind = "fetch"
	KindTask   Kind = "task"
	KindOther  Kind = "other"
)

// ToolCall is one tool call as the agent reports it. Field names follow
// DESIGN.md; the ones after ExitCode are what correlation needs beyond it.
type ToolCall struct {
	ID        string    `json:"id"`    // the agent's own tool-use id
	Agent     string    `json:"agent"` // claude-code, codex, gemini, or the OTel/JSONL agent name
	Tool      string    `json:"tool"`  // the agent's name for the tool
	Kind      Kind      `json:"kind"`
	Command   string    `json:"command,omitempty"` // for shell calls: the command text the model asked for
	Argv      []string  `json:"argv,omitempty"`    // the exact argv, where the agent records it (Codex)
	Paths     []string  `json:"paths,omitempty"`
	URLs      []string  `json:"urls,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at,omitzero"` // when its result arrived
	Result    string    `json:"result,omitempty"`  // an excerpt, Options.ResultLimit bytes at most
	IsError   bool      `json:"is_error,omitempty"`
	ExitCode  *int      `json:"exit_code,omitempty"` // where the agent reports (or unambiguously implies) one

	Cwd        string `json:"cwd,omitempty"`        // where the call ran, where known
	ParentID   string `json:"parent_id,omitempty"`  // the Task/Agent call a subagent's call belongs to
	AgentID    string `json:"agent_id,omitempty"`   // the subagent's own id (Claude agentId), where known
	Polls      string `json:"polls,omitempty"`      // for a polling call (BashOutput, write_stdin): the call it polls
	Rejected   bool   `json:"rejected,omitempty"`   // the call exists but started nothing (user said no, validation failed)
	Background bool   `json:"background,omitempty"` // the process outlives the call (run_in_background, unified exec)
	Rewound    bool   `json:"rewound,omitempty"`    // Gemini: its message was rewound or dropped from the history; it still ran
	SessionID  string `json:"session_id,omitempty"`
	Source     string `json:"source,omitempty"` // file:line of the record that introduced the call
	// NotExecuted: the agent's framework logs the call as never run
	// (mini-swe-agent's "action was not executed"). Unlike Rejected it is
	// the framework's word only: mini's submitting command does run, so
	// correlation still looks for its process.
	NotExecuted bool `json:"not_executed,omitempty"`
}

// Claim is a statement in the assistant's own text that polygraph can check
// against what the kernel saw.
type Claim struct {
	Kind        ClaimKind `json:"kind"`
	Text        string    `json:"text"` // the sentence, trimmed of markdown
	At          time.Time `json:"at,omitzero"`
	ToolCallIDs []string  `json:"tool_call_ids"`     // the calls it refers to; empty when none matches
	Subject     string    `json:"subject,omitempty"` // what it names: a path, a package, a command, a count
	ParentID    string    `json:"parent_id,omitempty"`
	SessionID   string    `json:"session_id,omitempty"`
	Source      string    `json:"source,omitempty"`
}

// Usage sums the model token usage a transcript reports, counting each model
// message once even where the agent repeats it on every content block.
type Usage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens,omitempty"`
	CacheCreationTokens int64 `json:"cache_creation_tokens,omitempty"`
}

// Warning is one record that could not be used, with where it is.
type Warning struct {
	Source  string `json:"source"` // file:line
	Message string `json:"message"`
}

// String gives the warning as "file:line: message".
func (w Warning) String() string { return w.Source + ": " + w.Message }

// Transcript is one parsed session.
type Transcript struct {
	Path        string      `json:"path"`
	Format      Format      `json:"format"`
	Agent       string      `json:"agent"`
	Version     string      `json:"version,omitempty"` // the agent's own version, where recorded
	SessionID   string      `json:"session_id,omitempty"`
	Cwd         string      `json:"cwd,omitempty"`
	StartedAt   time.Time   `json:"started_at,omitzero"`
	EndedAt     time.Time   `json:"ended_at,omitzero"`
	ToolCalls   []*ToolCall `json:"tool_calls"`
	Claims      []*Claim    `json:"claims"`
	Usage       Usage       `json:"usage"`
	Compactions int         `json:"compactions,omitempty"` // context compactions the agent recorded
	// Responses are when the model's answers were recorded, one per model
	// request answered (a subagent's included), in order: the iterations
	// of the agent's loop. Empty where the format does not record them
	// (polygraph's JSONL, OTel spans, Gemini CLI's logs); a zero time where
	// the format records the answer but not when (stream-json).
	Responses []time.Time `json:"responses,omitempty"`
	Subagents []string    `json:"subagents,omitempty"` // linked subagent files read beside Path
	// ExitStatus and Submission are how the agent's framework says the run
	// ended (mini-swe-agent: "Submitted" and the final output), where recorded.
	ExitStatus string    `json:"exit_status,omitempty"`
	Submission string    `json:"submission,omitempty"`
	Warnings   []Warning `json:"warnings,omitempty"`
	// Limits are the read limits reading hit (a sparse file's holes
	// skipped, reading stopped at Options.MaxBytes), one line each: the
	// report shows them as notes.
	Limits []Warning `json:"limits,omitempty"`

	// incomplete: a whole-document transcript ended early (the agent was
	// rewriting it); a warning says so, and ParseFile reads it again.
	incomplete bool

	claude *claudeLinks // for attaching Claude Code subagent files
	gemini *geminiLinks // for attaching Gemini CLI subagent files
}

// Options tune parsing. The zero value reads the whole session.
type Options struct {
	// NoSubagents limits the result to the file's own agent: no inline
	// sidechains, no agent_progress mirrors, no linked subagent files.
	NoSubagents bool
	// ResultLimit caps ToolCall.Result in bytes; 0 means DefaultResultLimit,
	// a negative value keeps no result text at all.
	ResultLimit int
	// MaxLine is the longest line read; longer lines are skipped with a
	// warning. 0 means DefaultMaxLine.
	MaxLine int
	// Format skips sniffing when set.
	Format Format
	// MaxBytes bounds the bytes ParseFile reads, its subagents' files
	// included (the holes of a sparse file are skipped, not counted); 0
	// means DefaultMaxBytes. A transcript is what the traced agent wrote,
	// where it or anything it ran can plant a file of any size: past the
	// bound, reading stops with a warning saying so.
	MaxBytes int64

	// budget is what is left of MaxBytes, shared by a file and its
	// subagents' files.
	budget *budget
}

// budget is the bytes one ParseFile may still read.
type budget struct{ left int64 }

// Defaults for Options.
const (
	DefaultResultLimit = 1024
	DefaultMaxLine     = 64 << 20
	// DefaultMaxBytes is far above any real session's transcript (the
	// largest seen are tens of MiB), and reads in about a second.
	DefaultMaxBytes = 1 << 30
)

// Sentinel errors callers test with errors.Is.
var (
	// ErrUnknownFormat: the content matches none of Formats.
	ErrUnknownFormat = errors.New("not a known transcript format")
	// ErrEmpty: the file holds no records at all.
	ErrEmpty = errors.New("empty transcript")
)

func (o Options) resultLimit() int {
	switch {
	case o.ResultLimit == 0:
		return DefaultResultLimit
	case o.ResultLimit < 0:
		return 0
	}
	return o.ResultLimit
}

func (o Options) maxBytes() int64 {
	if o.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return o.MaxBytes
}

func (o Options) maxLine() int {
	if o.MaxLine <= 0 {
		return DefaultMaxLine
	}
	return o.MaxLine
}

func unknownFormatError(name string) error {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = string(f)
	}
	return fmt.Errorf("%s: %w (tried %s)", name, ErrUnknownFormat, strings.Join(names, ", "))
}

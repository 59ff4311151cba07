package transcript

import (
	"encoding/json"
)

// polygraph's plain JSONL transcript, for agents that write none of the
// other formats; docs/transcript-jsonl.md is its specification. Records:
//
//	{"type":"session", "session_id", "agent", "cwd", "started_at"}
//	{"type":"tool_call", <ToolCall fields>, "arguments": {...}}
//	{"type":"tool_result", "id", "ended_at", "result", "is_error", "exit_code"}
//	{"type":"message", "role":"assistant", "text", "at"}
//	{"type":"turn"}
//	{"type":"claim", <Claim fields>}
//
// The output of `polygraph transcript --json` is valid input.

// jsonlRecord is any record of the format; which fields count depends on Type.
type jsonlRecord struct {
	Type string `json:"type"`
	ToolCall
	ID        flexString      `json:"id"`     // shadows ToolCall.ID: numbers are taken too
	Result    flexString      `json:"result"` // shadows ToolCall.Result
	Arguments json.RawMessage `json:"arguments"`
	Agent     string          `json:"agent"`
	Role      string          `json:"role"`
	Text      string          `json:"text"`
	At        string          `json:"at"`
}

type jsonlParser struct{}

func (jsonlParser) record(b *builder, n int, raw []byte) {
	var r jsonlRecord
	if err := json.Unmarshal(raw, &r); err != nil {
		b.warn(n, "unreadable record: "+shortErr(err))
		return
	}
	r.ToolCall.ID, r.ToolCall.Result = string(r.ID), string(r.Result)
	switch r.Type {
	case "session":
		jsonlSession(b, raw)
	case "tool_call":
		jsonlCall(b, n, &r)
	case "tool_result":
		jsonlResult(b, n, &r)
	case "message":
		at := parseTime(r.At)
		b.seen(at)
		switch r.Role {
		case "assistant", "":
			b.say(n, at, r.Text, r.ParentID)
		case "user":
			b.endTurn()
		}
	case "turn":
		b.endTurn()
	case "claim":
		var c Claim
		if err := json.Unmarshal(raw, &c); err != nil {
			b.warn(n, "unreadable claim: "+shortErr(err))
			return
		}
		if c.ToolCallIDs == nil {
			c.ToolCallIDs = []string{}
		}
		b.pend = append(b.pend, Entry{Claim: &c})
	}
	// Other record types are left for later versions of the format.
}

func (jsonlParser) finish(b *builder) {}

// jsonlSession applies a session record: who wrote the file, where, when.
func jsonlSession(b *builder, raw []byte) {
	var s struct {
		SessionID string `json:"session_id"`
		Agent     string `json:"agent"`
		Cwd       string `json:"cwd"`
		StartedAt string `json:"started_at"`
		EndedAt   string `json:"ended_at"`
		Version   string `json:"version"`
	}
	_ = json.Unmarshal(raw, &s)
	b.t.SessionID = firstNonEmpty(b.t.SessionID, s.SessionID)
	b.t.Agent = firstNonEmpty(b.t.Agent, s.Agent)
	b.t.Cwd = firstNonEmpty(b.t.Cwd, s.Cwd)
	b.t.Version = firstNonEmpty(b.t.Version, s.Version)
	b.seen(parseTime(s.StartedAt))
	b.seen(parseTime(s.EndedAt))
}

// jsonlCall adds a tool_call record's call.
func jsonlCall(b *builder, n int, r *jsonlRecord) {
	tc := r.ToolCall
	if tc.ID == "" {
		tc.ID = b.syntheticID(n)
		b.warn(n, "tool_call without an id; gave it "+tc.ID)
	}
	tc.Agent = firstNonEmpty(tc.Agent, r.Agent)
	if tc.Source == "" {
		tc.Source = b.where(n)
	}
	if tc.Kind == "" || tc.Command == "" && tc.Kind == KindShell {
		genericCall(&tc, decodeArgs(r.Arguments))
	}
	if tc.Result != "" {
		tc.Result = excerpt(tc.Result, b.opts.resultLimit())
	}
	b.seen(tc.StartedAt)
	b.seen(tc.EndedAt)
	b.addNew(&tc)
}

// jsonlResult applies a tool_result record to its call.
func jsonlResult(b *builder, n int, r *jsonlRecord) {
	tc := b.resultCall(r.ToolCall.ID)
	if tc == nil {
		b.warn(n, "tool_result for an unknown call "+r.ToolCall.ID)
		return
	}
	if !r.EndedAt.IsZero() {
		tc.EndedAt = r.EndedAt
		b.seen(r.EndedAt)
	}
	if r.ToolCall.Result != "" {
		b.result(tc, r.ToolCall.Result)
	}
	tc.IsError = tc.IsError || r.IsError
	tc.Rejected = tc.Rejected || r.Rejected
	if r.ExitCode != nil {
		tc.ExitCode = r.ExitCode
	}
}

package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// mini-swe-agent keeps its account of a run in one JSON document,
// ~/.config/mini-swe-agent/last_mini_run.traj.json unless `-o` names
// another, format "mini-swe-agent-1.1":
//
//	{"info": {"mini_version", "exit_status", "submission", "config": {...}, ...},
//	 "messages": [...], "trajectory_format": "mini-swe-agent-1.1"}
//
// Messages are OpenAI chat messages with an "extra" object. An assistant
// message lists the commands it asked for in extra.actions ({command,
// tool_call_id}) and carries extra.timestamp (when the reply arrived); each
// command's observation is a "tool" message (a "user" one for text-based
// models) with extra.raw_output, extra.returncode, extra.exception_info and
// extra.timestamp. A final "exit" message holds the exit status and the
// submission. Timestamps are Unix seconds as floats.
//
// The agent rewrites the whole file after every step (truncating it first),
// so a reader may catch it half written: that is never parsed silently, it
// becomes a warning saying the document is incomplete.

// miniNotExecuted is the exception_info mini-swe-agent gives the actions it
// did not run: those after the submitting one, and the submitting command
// itself, which did run (its output is what ended the run).
const miniNotExecuted = "action was not executed"

type miniMsg struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	Extra      miniExtra       `json:"extra"`
}

type miniExtra struct {
	Actions []struct {
		Command    string `json:"command"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"actions"`
	Timestamp     *float64 `json:"timestamp"`
	RawOutput     *string  `json:"raw_output"`
	Returncode    *int     `json:"returncode"`
	ExceptionInfo string   `json:"exception_info"`
	InterruptType string   `json:"interrupt_type"`
	ExitStatus    string   `json:"exit_status"`
	Submission    *string  `json:"submission"`
	Response      *struct {
		Usage struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		} `json:"usage"`
	} `json:"response"`
}

type miniInfo struct {
	MiniVersion string `json:"mini_version"`
	ExitStatus  string `json:"exit_status"`
	Submission  string `json:"submission"`
	Config      struct {
		Environment struct {
			Cwd string `json:"cwd"`
		} `json:"environment"`
	} `json:"config"`
}

// miniParser reads the document one message at a time.
type miniParser struct {
	pending []*ToolCall // calls still waiting for their observation, in order
	msgs    int
}

// miniTime converts mini's float Unix seconds.
func miniTime(ts *float64) time.Time {
	if ts == nil || *ts <= 0 || math.IsNaN(*ts) || math.IsInf(*ts, 0) {
		return time.Time{}
	}
	sec, frac := math.Modf(*ts)
	return time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC()
}

func (p *miniParser) parse(b *builder, lc *lineCounter) error {
	dec := json.NewDecoder(lc)
	incomplete := func(what string, err error) error {
		b.t.incomplete = true
		b.warn(lc.lineAt(dec.InputOffset()), fmt.Sprintf("incomplete mini-swe-agent trajectory (%s: %s) after %d messages: "+
			"the agent rewrites the file after every step, so it was probably read mid-write; what follows is missing", what, shortErr(err), p.msgs))
		return nil
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return incomplete("no document", fmt.Errorf("expected an object"))
	}
	format := ""
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return incomplete("unreadable key", err)
		}
		switch key, _ := tok.(string); key {
		case "info":
			var info miniInfo
			if err := dec.Decode(&info); err != nil {
				return incomplete("unreadable info", err)
			}
			b.t.Version = firstNonEmpty(b.t.Version, info.MiniVersion)
			b.t.Cwd = firstNonEmpty(b.t.Cwd, info.Config.Environment.Cwd)
			b.t.ExitStatus = firstNonEmpty(b.t.ExitStatus, info.ExitStatus)
			b.t.Submission = firstNonEmpty(b.t.Submission, info.Submission)
		case "messages":
			if err := p.messages(b, lc, dec); err != nil {
				return incomplete("messages", err)
			}
		case "trajectory_format":
			if err := dec.Decode(&format); err != nil {
				return incomplete("unreadable trajectory_format", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return incomplete("unreadable "+key, err)
			}
		}
	}
	if _, err := dec.Token(); err != nil {
		return incomplete("unterminated document", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return incomplete("data after the document", fmt.Errorf("the file holds more than one document"))
	}
	if !strings.HasPrefix(format, "mini-swe-agent") {
		return incomplete("no trajectory_format", fmt.Errorf("got %q", format))
	}
	return nil
}

// messages streams the message list.
func (p *miniParser) messages(b *builder, lc *lineCounter, dec *json.Decoder) error {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		if err == nil {
			err = fmt.Errorf("not a list")
		}
		return err
	}
	for dec.More() {
		line := lc.lineAt(dec.InputOffset() + 1)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return err
		}
		p.msgs++
		var m miniMsg
		if err := json.Unmarshal(raw, &m); err != nil {
			b.warn(line, "unreadable message: "+shortErr(err))
			continue
		}
		p.message(b, line, &m)
	}
	_, err := dec.Token()
	return err
}

func (p *miniParser) message(b *builder, line int, m *miniMsg) {
	ts := miniTime(m.Extra.Timestamp)
	b.seen(ts)
	switch m.Role {
	case "assistant":
		b.response(ts)
		for _, a := range m.Extra.Actions {
			id := a.ToolCallID
			if id == "" {
				id = b.syntheticID(line)
			}
			tc := b.add(&ToolCall{ID: id, Tool: "bash", Kind: KindShell, Command: a.Command, StartedAt: ts, Source: b.where(line)})
			if tc != nil {
				p.pending = append(p.pending, tc)
			}
		}
		if r := m.Extra.Response; r != nil {
			b.t.Usage.InputTokens += r.Usage.PromptTokens
			b.t.Usage.OutputTokens += r.Usage.CompletionTokens
		}
		b.say(line, ts, geminiText(m.Content), "")
	case "tool", "user":
		if m.Extra.Returncode != nil || m.Extra.RawOutput != nil {
			p.observe(b, m, ts)
			return
		}
		if m.Role == "user" && m.Extra.InterruptType == "" {
			b.endTurn() // the task, or a new one
		}
	case "exit":
		b.t.ExitStatus = firstNonEmpty(m.Extra.ExitStatus, b.t.ExitStatus)
		if m.Extra.Submission != nil {
			b.t.Submission = *m.Extra.Submission
		}
		b.say(line, b.t.EndedAt, b.t.Submission, "")
	}
}

// observe applies an observation to its call: by tool_call_id, else (a
// text-based model's observation) to the oldest call still waiting.
func (p *miniParser) observe(b *builder, m *miniMsg, ts time.Time) {
	i := -1
	for j, tc := range p.pending {
		if m.ToolCallID != "" && tc.ID == m.ToolCallID || m.ToolCallID == "" && i < 0 {
			i = j
			if m.ToolCallID != "" {
				break
			}
		}
	}
	if i < 0 {
		return
	}
	tc := p.pending[i]
	p.pending = append(p.pending[:i], p.pending[i+1:]...)
	tc.EndedAt = ts
	out := ""
	if m.Extra.RawOutput != nil {
		out = *m.Extra.RawOutput
	} else {
		out = miniContentOutput(m.Content)
	}
	b.result(tc, out)
	switch info := m.Extra.ExceptionInfo; {
	case info == miniNotExecuted:
		tc.NotExecuted = true
		tc.IsError = true
	case info != "":
		tc.IsError = true // a timeout or an error starting the command
		if tc.Result == "" {
			b.result(tc, info)
		}
	case m.Extra.Returncode != nil:
		tc.ExitCode = intPtr(*m.Extra.Returncode)
		tc.IsError = *m.Extra.Returncode != 0
	}
}

// miniContentOutput reads the output from an observation's content, the
// JSON text {"returncode", "output"} the default template renders.
func miniContentOutput(raw json.RawMessage) string {
	s := geminiText(raw)
	var v struct {
		Output string `json:"output"`
	}
	if json.Unmarshal([]byte(s), &v) == nil {
		return v.Output
	}
	return s
}

// sniffMini reports whether a whole document is a mini-swe-agent
// trajectory, even one cut short: its first key is "info", which only
// mini-swe-agent's format opens with, holding model_stats or mini_version.
func sniffMini(doc keys, prefix []byte) bool {
	if strings.HasPrefix(doc.str("trajectory_format"), "mini-swe-agent") {
		return true
	}
	if !doc.has("info") {
		return false
	}
	return bytes.Contains(prefix, []byte(`"mini_version"`)) || bytes.Contains(prefix, []byte(`"model_stats"`))
}

package fakellm

import (
	"encoding/json"
	"strings"
)

// ToolResult is one tool result an agent sent back to the model.
type ToolResult struct {
	// ID is the tool call id the result answers: the id the server gave the
	// call (Claude, Codex) or the one Gemini CLI made up for it.
	ID string
	// Name is the tool's name where the wire carries it (Gemini), else "".
	Name string
	// Output is the result's text, or its JSON where it is structured.
	Output string
}

// ToolResults lists the tool results in the conversation r carries, oldest
// first: Anthropic tool_result blocks, OpenAI *_call_output items, Gemini
// functionResponse parts, Chat Completions tool messages.
func (r Request) ToolResults() []ToolResult {
	var out []ToolResult
	switch r.API {
	case APIAnthropic:
		var req struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &req)
		for _, m := range req.Messages {
			var blocks []struct {
				Type      string          `json:"type"`
				ToolUseID string          `json:"tool_use_id"`
				Content   json.RawMessage `json:"content"`
			}
			if json.Unmarshal(m.Content, &blocks) != nil {
				continue // a plain string message
			}
			for _, b := range blocks {
				if b.Type == "tool_result" {
					out = append(out, ToolResult{ID: b.ToolUseID, Output: text(b.Content)})
				}
			}
		}
	case APIOpenAI:
		var req struct {
			Input []struct {
				Type   string          `json:"type"`
				CallID string          `json:"call_id"`
				Output json.RawMessage `json:"output"`
			} `json:"input"`
		}
		_ = json.Unmarshal(r.Body, &req)
		for _, it := range req.Input {
			if strings.HasSuffix(it.Type, "_output") {
				out = append(out, ToolResult{ID: it.CallID, Output: text(it.Output)})
			}
		}
	case APIChat:
		var req struct {
			Messages []struct {
				Role       string          `json:"role"`
				ToolCallID string          `json:"tool_call_id"`
				Content    json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &req)
		for _, m := range req.Messages {
			if m.Role == "tool" {
				out = append(out, ToolResult{ID: m.ToolCallID, Output: text(m.Content)})
			}
		}
	case APIGemini:
		var req struct {
			Contents []struct {
				Parts []struct {
					FunctionResponse *struct {
						ID       string          `json:"id"`
						Name     string          `json:"name"`
						Response json.RawMessage `json:"response"`
					} `json:"functionResponse"`
				} `json:"parts"`
			} `json:"contents"`
		}
		_ = json.Unmarshal(r.Body, &req)
		for _, c := range req.Contents {
			for _, p := range c.Parts {
				if f := p.FunctionResponse; f != nil {
					out = append(out, ToolResult{ID: f.ID, Name: f.Name, Output: text(f.Response)})
				}
			}
		}
	}
	return out
}

// text flattens a result's content: a JSON string, a list of text blocks, or
// anything else as its JSON.
func text(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		var b strings.Builder
		for _, bl := range blocks {
			b.WriteString(bl.Text)
		}
		return b.String()
	}
	return string(raw)
}

// CallID is the id the server gives call i of turn n: Claude's tool_use id
// Codex's call_id and the Chat Completions tool call id, which come back
// with the results.
func CallID(api API, turn, i int) string {
	switch api {
	case APIAnthropic:
		return "toolu_fake" + twoDigits(turn) + twoDigits(i)
	case APIOpenAI, APIChat:
		return "call_fake" + twoDigits(turn) + twoDigits(i)
	}
	return ""
}

func twoDigits(n int) string {
	return string([]byte{byte('0' + n/10%10), byte('0' + n%10)})
}

package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// SubmitCommand is the command that ends a mini-swe-agent run: its output's
// first line tells the agent the task is done. The server sends it for
// every turn without calls, which in the Chat Completions dialect mini
// speaks would otherwise be a format error.
const SubmitCommand = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"

// chatRequest is the part of a Chat Completions request the server reads.
type chatRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

// chat answers POST /v1/chat/completions (mini-swe-agent: one function
// tool, bash {command}, plain JSON) and returns the turn it played.
func (s *Server) chat(w http.ResponseWriter, body []byte) int {
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "fakellm: chat completions body: "+err.Error())
		return -1
	}
	if req.Stream {
		httpError(w, http.StatusBadRequest, "fakellm: streaming chat completions are not supported")
		return -1
	}
	msg := map[string]any{"role": "assistant", "content": "OK"}
	finish := "stop"
	turnNo := -1
	if len(req.Tools) > 0 {
		assistant := make([]bool, len(req.Messages))
		for i, m := range req.Messages {
			assistant[i] = m.Role == "assistant"
		}
		turnNo = countRuns(assistant)
		shell := ""
		for _, t := range req.Tools {
			if t.Type == "function" && (shell == "" || t.Function.Name == "bash") {
				shell = t.Function.Name
			}
		}
		props := map[string]bool{}
		for _, t := range req.Tools {
			if t.Function.Name == shell {
				props = schemaProps(t.Function.Parameters)
			}
		}
		arg := pick(props, "command", "cmd")
		turn := s.sc.turn(turnNo)
		calls := turn.Calls
		if len(calls) == 0 {
			calls = []Call{Shell{Command: SubmitCommand}}
		}
		var tcs []map[string]any
		for i, c := range calls {
			js, _ := marshal(map[string]any{arg: s.chatCommand(c)})
			tcs = append(tcs, map[string]any{
				"id": fmt.Sprintf("call_fake%02d%02d", turnNo, i), "type": "function",
				"function": map[string]any{"name": shell, "arguments": string(js)},
			})
		}
		msg = map[string]any{"role": "assistant", "content": turn.Text, "tool_calls": tcs}
		finish = "tool_calls"
	}
	model := req.Model
	if model == "" {
		model = "gpt-fake"
	}
	writeJSON(w, map[string]any{
		"id":      fmt.Sprintf("chatcmpl-fake%d", turnNo+1),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": tokens(body), "completion_tokens": 10, "total_tokens": tokens(body) + 10},
	})
	return turnNo
}

// chatCommand is c as one shell command: a bash-only agent writes, reads
// and edits files with the shell.
func (s *Server) chatCommand(c Call) string {
	switch c := c.(type) {
	case Shell:
		return c.Command
	case WriteFile:
		return "printf '%s' " + shellQuote(c.Content) + " > " + shellQuote(c.Path)
	case ReadFile:
		return "cat " + shellQuote(c.Path)
	case EditFile:
		return `python3 -c 'import sys; p, o, n = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(o, n, 1))' ` +
			shellQuote(c.Path) + " " + shellQuote(c.Old) + " " + shellQuote(c.New)
	}
	return fmt.Sprintf("false # fakellm: unknown call %T", c)
}

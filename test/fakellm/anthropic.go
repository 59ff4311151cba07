package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropicRequest is the part of a Messages API request the server reads.
type anthropicRequest struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Name        string          `json:"name"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
}

// anthropic answers POST /v1/messages and returns the turn it played.
func (s *Server) anthropic(w http.ResponseWriter, body []byte) int {
	var req anthropicRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "fakellm: messages body: "+err.Error())
		return -1
	}
	var blocks []map[string]any
	stop := "end_turn"
	turnNo := -1
	if len(req.Tools) == 0 {
		blocks = append(blocks, map[string]any{"type": "text", "text": "OK"})
	} else {
		roles := make([]bool, len(req.Messages))
		for i, m := range req.Messages {
			roles[i] = m.Role == "assistant"
		}
		turnNo = countRuns(roles)
		tools := make(map[string]map[string]bool, len(req.Tools))
		for _, t := range req.Tools {
			tools[t.Name] = schemaProps(t.InputSchema)
		}
		turn := s.sc.turn(turnNo)
		if turn.Text != "" {
			blocks = append(blocks, map[string]any{"type": "text", "text": turn.Text})
		}
		for i, c := range turn.Calls {
			name, input, err := s.claudeCall(tools, c)
			if err != nil {
				httpError(w, http.StatusBadRequest, err.Error())
				return turnNo
			}
			blocks = append(blocks, map[string]any{
				"type":  "tool_use",
				"id":    CallID(APIAnthropic, turnNo, i),
				"name":  name,
				"input": input,
			})
			stop = "tool_use"
		}
		if len(blocks) == 0 {
			blocks = append(blocks, map[string]any{"type": "text", "text": "Done."})
		}
	}

	model := req.Model
	if model == "" {
		model = "claude-fake"
	}
	id := fmt.Sprintf("msg_fake%d", turnNo+1)
	usage := map[string]any{
		"input_tokens":                tokens(body),
		"output_tokens":               1,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
	}
	if !req.Stream {
		writeJSON(w, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model,
			"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return turnNo
	}

	ev := newSSE(w)
	ev.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": usage,
	}})
	for i, b := range blocks {
		switch b["type"] {
		case "text":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			ev.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": b["text"]}})
		case "tool_use":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			js, _ := marshal(b["input"])
			ev.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": string(js)}})
		}
		ev.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": 10}})
	ev.event("message_stop", map[string]any{"type": "message_stop"})
	return turnNo
}

// claudeCall maps c onto Claude Code's tools (Bash, Write, Read, Edit),
// naming arguments after the schema the request offered.
func (s *Server) claudeCall(tools map[string]map[string]bool, c Call) (string, map[string]any, error) {
	need := func(name string) (map[string]bool, error) {
		p, ok := tools[name]
		if !ok {
			return nil, fmt.Errorf("fakellm: the agent offered no %s tool for %T", name, c)
		}
		return p, nil
	}
	switch c := c.(type) {
	case Shell:
		p, err := need("Bash")
		if err != nil {
			return "", nil, err
		}
		return "Bash", map[string]any{pick(p, "command"): c.Command}, nil
	case WriteFile:
		p, err := need("Write")
		if err != nil {
			return "", nil, err
		}
		return "Write", map[string]any{pick(p, "file_path", "path"): s.sc.abs(c.Path), pick(p, "content"): c.Content}, nil
	case ReadFile:
		p, err := need("Read")
		if err != nil {
			return "", nil, err
		}
		return "Read", map[string]any{pick(p, "file_path", "path"): s.sc.abs(c.Path)}, nil
	case EditFile:
		p, err := need("Edit")
		if err != nil {
			return "", nil, err
		}
		return "Edit", map[string]any{
			pick(p, "file_path", "path"): s.sc.abs(c.Path),
			pick(p, "old_string"):        c.Old,
			pick(p, "new_string"):        c.New,
		}, nil
	}
	return "", nil, fmt.Errorf("fakellm: unknown call %T", c)
}

package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// openaiRequest is the part of a Responses API request the server reads.
type openaiRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
	Input  []struct {
		Type string `json:"type"`
		Role string `json:"role"`
	} `json:"input"`
	Tools []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

// openaiTool is one offered tool: its type ("function", "custom", ...) and
// argument names.
type openaiTool struct {
	typ   string
	props map[string]bool
}

// openai answers POST /v1/responses and returns the turn it played.
func (s *Server) openai(w http.ResponseWriter, body []byte) int {
	var req openaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "fakellm: responses body: "+err.Error())
		return -1
	}
	var items []map[string]any
	turnNo := -1
	if len(req.Tools) == 0 {
		items = append(items, outputMessage("msg_fake_side", "OK"))
	} else {
		assistant := make([]bool, len(req.Input))
		for i, it := range req.Input {
			switch it.Type {
			case "function_call", "custom_tool_call", "local_shell_call", "reasoning", "web_search_call":
				assistant[i] = true
			case "message", "":
				assistant[i] = it.Role == "assistant"
			}
		}
		turnNo = countRuns(assistant)
		tools := make(map[string]openaiTool, len(req.Tools))
		for _, t := range req.Tools {
			name := t.Name
			if name == "" {
				name = t.Type // local_shell, web_search: named by type
			}
			tools[name] = openaiTool{typ: t.Type, props: schemaProps(t.Parameters)}
		}
		turn := s.sc.turn(turnNo)
		if turn.Text != "" {
			items = append(items, outputMessage(fmt.Sprintf("msg_fake%02d", turnNo), turn.Text))
		}
		for i, c := range turn.Calls {
			it, err := s.codexCall(tools, c, fmt.Sprintf("%02d%02d", turnNo, i))
			if err != nil {
				httpError(w, http.StatusBadRequest, err.Error())
				return turnNo
			}
			items = append(items, it)
		}
		if len(items) == 0 {
			items = append(items, outputMessage(fmt.Sprintf("msg_fake%02d", turnNo), "Done."))
		}
	}

	model := req.Model
	if model == "" {
		model = "gpt-fake"
	}
	resp := map[string]any{
		"id":         fmt.Sprintf("resp_fake%d", turnNo+1),
		"object":     "response",
		"created_at": time.Now().Unix(),
		"model":      model,
		"status":     "in_progress",
		"output":     []any{},
	}
	usage := map[string]any{
		"input_tokens":          tokens(body),
		"input_tokens_details":  map[string]any{"cached_tokens": 0},
		"output_tokens":         10,
		"output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens":          tokens(body) + 10,
	}
	if !req.Stream {
		resp["status"] = "completed"
		resp["output"] = items
		resp["usage"] = usage
		writeJSON(w, resp)
		return turnNo
	}

	ev := newSSE(w)
	seq := 0
	send := func(typ string, data map[string]any) {
		data["type"] = typ
		data["sequence_number"] = seq
		seq++
		ev.event(typ, data)
	}
	send("response.created", map[string]any{"response": resp})
	send("response.in_progress", map[string]any{"response": resp})
	for i, it := range items {
		send("response.output_item.added", map[string]any{"output_index": i, "item": it})
		if it["type"] == "message" {
			text := it["content"].([]map[string]any)[0]["text"]
			send("response.content_part.added", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			send("response.output_text.delta", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "delta": text})
			send("response.output_text.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0, "text": text})
			send("response.content_part.done", map[string]any{"item_id": it["id"], "output_index": i, "content_index": 0,
				"part": map[string]any{"type": "output_text", "text": text, "annotations": []any{}}})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	done := make(map[string]any, len(resp)+1)
	for k, v := range resp {
		done[k] = v
	}
	done["status"] = "completed"
	done["output"] = items
	done["usage"] = usage
	send("response.completed", map[string]any{"response": done})
	return turnNo
}

func outputMessage(id, text string) map[string]any {
	return map[string]any{
		"type":   "message",
		"id":     id,
		"role":   "assistant",
		"status": "completed",
		"content": []map[string]any{
			{"type": "output_text", "text": text, "annotations": []any{}},
		},
	}
}

// codexCall maps c onto the tools Codex offered: a shell tool (exec_command,
// shell_command or shell), apply_patch for writes and edits, read_file where
// offered and a shell "cat" otherwise.
func (s *Server) codexCall(tools map[string]openaiTool, c Call, id string) (map[string]any, error) {
	switch c := c.(type) {
	case Shell:
		return s.codexShell(tools, c.Command, id)
	case ReadFile:
		if t, ok := tools["read_file"]; ok && t.typ == "function" {
			return functionCall(id, "read_file", map[string]any{pick(t.props, "file_path", "path"): s.sc.abs(c.Path)}), nil
		}
		return s.codexShell(tools, "cat "+shellQuote(c.Path), id)
	case WriteFile:
		return codexPatch(tools, patchAdd(c.Path, c.Content), id)
	case EditFile:
		return codexPatch(tools, patchUpdate(c.Path, c.Old, c.New), id)
	}
	return nil, fmt.Errorf("fakellm: unknown call %T", c)
}

func (s *Server) codexShell(tools map[string]openaiTool, cmd, id string) (map[string]any, error) {
	if t, ok := tools["exec_command"]; ok {
		args := map[string]any{pick(t.props, "cmd", "command"): cmd}
		if s.sc.Dir != "" && t.props["workdir"] {
			args["workdir"] = s.sc.Dir
		}
		return functionCall(id, "exec_command", args), nil
	}
	if t, ok := tools["shell_command"]; ok {
		args := map[string]any{pick(t.props, "command"): cmd}
		if s.sc.Dir != "" && t.props["workdir"] {
			args["workdir"] = s.sc.Dir
		}
		return functionCall(id, "shell_command", args), nil
	}
	if t, ok := tools["shell"]; ok {
		args := map[string]any{pick(t.props, "command"): []string{"bash", "-lc", cmd}}
		if s.sc.Dir != "" && t.props["workdir"] {
			args["workdir"] = s.sc.Dir
		}
		return functionCall(id, "shell", args), nil
	}
	if _, ok := tools["local_shell"]; ok {
		return map[string]any{
			"type": "local_shell_call", "id": "lsh_fake" + id, "call_id": "call_fake" + id, "status": "completed",
			"action": map[string]any{"type": "exec", "command": []string{"bash", "-lc", cmd}},
		}, nil
	}
	return nil, fmt.Errorf("fakellm: the agent offered no shell tool")
}

func codexPatch(tools map[string]openaiTool, patch, id string) (map[string]any, error) {
	t, ok := tools["apply_patch"]
	switch {
	case !ok:
		return nil, fmt.Errorf("fakellm: the agent offered no apply_patch tool")
	case t.typ == "custom":
		return map[string]any{
			"type": "custom_tool_call", "id": "ctc_fake" + id, "call_id": "call_fake" + id,
			"name": "apply_patch", "input": patch, "status": "completed",
		}, nil
	default:
		return functionCall(id, "apply_patch", map[string]any{pick(t.props, "input", "patch"): patch}), nil
	}
}

func functionCall(id, name string, args map[string]any) map[string]any {
	js, _ := marshal(args)
	return map[string]any{
		"type": "function_call", "id": "fc_fake" + id, "call_id": "call_fake" + id,
		"name": name, "arguments": string(js), "status": "completed",
	}
}

// patchAdd is an apply_patch envelope that creates path with content.
func patchAdd(path, content string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Add File: " + path + "\n")
	for _, l := range lines(content) {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// patchUpdate is an apply_patch envelope that replaces the lines old with
// the lines new in path.
func patchUpdate(path, old, new string) string {
	var b strings.Builder
	b.WriteString("*** Begin Patch\n*** Update File: " + path + "\n@@\n")
	for _, l := range lines(old) {
		b.WriteString("-" + l + "\n")
	}
	for _, l := range lines(new) {
		b.WriteString("+" + l + "\n")
	}
	b.WriteString("*** End Patch\n")
	return b.String()
}

// lines splits s into lines, without a final empty one.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

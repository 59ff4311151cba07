package fakellm

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// geminiRequest is the part of a generateContent request the server reads.
type geminiRequest struct {
	Contents []struct {
		Role string `json:"role"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

// gemini answers generateContent and streamGenerateContent (SSE) and returns
// the turn it played.
func (s *Server) gemini(w http.ResponseWriter, body []byte, stream bool) int {
	var req geminiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		httpError(w, http.StatusBadRequest, "fakellm: generateContent body: "+err.Error())
		return -1
	}
	tools := map[string]map[string]bool{}
	for _, t := range req.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if len(schema) == 0 {
				schema = f.Parameters
			}
			tools[f.Name] = schemaProps(schema)
		}
	}

	var parts []map[string]any
	turnNo := -1
	switch {
	case req.GenerationConfig.ResponseMimeType == "application/json":
		// A side request that wants JSON (routing, next-speaker, loop checks).
		schema := req.GenerationConfig.ResponseJSONSchema
		if len(schema) == 0 {
			schema = req.GenerationConfig.ResponseSchema
		}
		js, _ := marshal(fromSchema(schema))
		parts = append(parts, map[string]any{"text": string(js)})
	case len(tools) == 0:
		parts = append(parts, map[string]any{"text": "OK"})
	default:
		model := make([]bool, len(req.Contents))
		for i, c := range req.Contents {
			model[i] = c.Role == "model"
		}
		turnNo = countRuns(model)
		turn := s.sc.turn(turnNo)
		if turn.Text != "" {
			parts = append(parts, map[string]any{"text": turn.Text})
		}
		for _, c := range turn.Calls {
			name, args, err := s.geminiCall(tools, c)
			if err != nil {
				httpError(w, http.StatusBadRequest, err.Error())
				return turnNo
			}
			parts = append(parts, map[string]any{"functionCall": map[string]any{"name": name, "args": args}})
		}
		if len(parts) == 0 {
			parts = append(parts, map[string]any{"text": "Done."})
		}
	}

	resp := map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{
			"promptTokenCount":     tokens(body),
			"candidatesTokenCount": 10,
			"totalTokenCount":      tokens(body) + 10,
		},
		"modelVersion": "gemini-fake",
	}
	if !stream {
		writeJSON(w, resp)
		return turnNo
	}
	newSSE(w).event("", resp)
	return turnNo
}

// geminiCall maps c onto Gemini CLI's tools (run_shell_command, write_file,
// read_file, replace), naming arguments after the offered schema.
func (s *Server) geminiCall(tools map[string]map[string]bool, c Call) (string, map[string]any, error) {
	need := func(name string) (map[string]bool, error) {
		p, ok := tools[name]
		if !ok {
			return nil, fmt.Errorf("fakellm: the agent offered no %s tool for %T", name, c)
		}
		return p, nil
	}
	switch c := c.(type) {
	case Shell:
		p, err := need("run_shell_command")
		if err != nil {
			return "", nil, err
		}
		return "run_shell_command", map[string]any{pick(p, "command"): c.Command}, nil
	case WriteFile:
		p, err := need("write_file")
		if err != nil {
			return "", nil, err
		}
		return "write_file", map[string]any{pick(p, "file_path", "absolute_path", "path"): s.sc.abs(c.Path), pick(p, "content"): c.Content}, nil
	case ReadFile:
		p, err := need("read_file")
		if err != nil {
			return "", nil, err
		}
		return "read_file", map[string]any{pick(p, "file_path", "absolute_path", "path"): s.sc.abs(c.Path)}, nil
	case EditFile:
		p, err := need("replace")
		if err != nil {
			return "", nil, err
		}
		args := map[string]any{
			pick(p, "file_path", "absolute_path", "path"): s.sc.abs(c.Path),
			pick(p, "old_string"):                         c.Old,
			pick(p, "new_string"):                         c.New,
		}
		if p["instruction"] { // required by Gemini CLI 0.61
			args["instruction"] = "Replace the given text."
		}
		return "replace", args, nil
	}
	return "", nil, fmt.Errorf("fakellm: unknown call %T", c)
}

// fromSchema builds a minimal value that satisfies a JSON schema: objects
// with every property, the first enum value (preferring "user", so a
// next-speaker check hands the turn back), zero numbers, empty strings.
func fromSchema(raw json.RawMessage) any {
	var s struct {
		Type       any                        `json:"type"`
		Enum       []any                      `json:"enum"`
		Properties map[string]json.RawMessage `json:"properties"`
		Items      json.RawMessage            `json:"items"`
	}
	if json.Unmarshal(raw, &s) != nil {
		return map[string]any{}
	}
	if len(s.Enum) > 0 {
		for _, e := range s.Enum {
			if e == "user" {
				return e
			}
		}
		return s.Enum[0]
	}
	typ, _ := s.Type.(string)
	switch typ {
	case "string", "STRING":
		return ""
	case "number", "integer", "NUMBER", "INTEGER":
		return 0
	case "boolean", "BOOLEAN":
		return false
	case "array", "ARRAY":
		return []any{}
	}
	out := map[string]any{}
	for k, v := range s.Properties {
		out[k] = fromSchema(v)
	}
	return out
}

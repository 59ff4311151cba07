package fakellm

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

var testScenario = Scenario{
	Dir: "/proj",
	Turns: []Turn{
		{Text: "Running.", Calls: []Call{Shell{Command: "echo hi > marker.txt"}}},
		{Calls: []Call{WriteFile{Path: "a.txt", Content: "one\ntwo\n"}, ReadFile{Path: "b.txt"}}},
		{Calls: []Call{EditFile{Path: "a.txt", Old: "one", New: "uno"}}},
		{Text: "All good."},
	},
}

func start(t *testing.T) *Server {
	t.Helper()
	s, err := Start(testScenario)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// post sends body and returns the SSE data payloads (or the whole body as
// one payload when the answer is plain JSON), with their event names.
func post(t *testing.T, s *Server, path, body string) (events []string, data []map[string]any) {
	t.Helper()
	resp, err := http.Post(s.URL()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s: %s", path, resp.Status, b)
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return []string{""}, []map[string]any{m}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var m map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &m); err != nil {
				t.Fatalf("bad SSE data %q: %v", line, err)
			}
			events, data = append(events, name), append(data, m)
			name = ""
		}
	}
	return events, data
}

func TestAnthropic(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"name":"Bash","input_schema":{"properties":{"command":{}}}},
		{"name":"Write","input_schema":{"properties":{"file_path":{},"content":{}}}},
		{"name":"Read","input_schema":{"properties":{"file_path":{}}}}]`
	// One assistant turn so far, split over two messages: turn 1 is next.
	body := `{"model":"m","stream":true,` + tools + `,"messages":[
		{"role":"user","content":"go"},
		{"role":"assistant","content":[{"type":"text","text":"Running."}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"toolu_fake0000","name":"Bash","input":{}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_fake0000","content":[{"type":"text","text":"ok"}]}]}]}`
	events, data := post(t, s, "/v1/messages?beta=true", body)
	want := []string{"message_start",
		"content_block_start", "content_block_delta", "content_block_stop",
		"content_block_start", "content_block_delta", "content_block_stop",
		"message_delta", "message_stop"}
	if strings.Join(events, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", events, want)
	}
	var in map[string]any
	if err := json.Unmarshal([]byte(data[2]["delta"].(map[string]any)["partial_json"].(string)), &in); err != nil {
		t.Fatal(err)
	}
	if block := data[1]["content_block"].(map[string]any); block["name"] != "Write" || block["id"] != CallID(APIAnthropic, 1, 0) {
		t.Errorf("first block %v", block)
	}
	if in["file_path"] != "/proj/a.txt" || in["content"] != "one\ntwo\n" {
		t.Errorf("Write input %v", in)
	}
	if stop := data[7]["delta"].(map[string]any)["stop_reason"]; stop != "tool_use" {
		t.Errorf("stop_reason %v", stop)
	}

	// No tools: a side request, answered with text.
	_, data = post(t, s, "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"title?"}]}`)
	if c := data[0]["content"].([]any)[0].(map[string]any); c["text"] != "OK" || data[0]["stop_reason"] != "end_turn" {
		t.Errorf("side answer %v", data[0])
	}

	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Turn != 1 || reqs[1].Turn != -1 || reqs[0].Query != "beta=true" {
		t.Fatalf("log %+v", reqs)
	}
	if res := reqs[0].ToolResults(); len(res) != 1 || res[0].ID != "toolu_fake0000" || res[0].Output != "ok" {
		t.Errorf("tool results %+v", res)
	}
}

func TestOpenAI(t *testing.T) {
	s := start(t)
	for _, tc := range []struct {
		name, tools string
		wantName    string
		wantArgs    string
	}{
		{"exec_command", `[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{},"workdir":{}}}}]`,
			"exec_command", `{"cmd":"echo hi > marker.txt","workdir":"/proj"}`},
		{"shell", `[{"type":"function","name":"shell","parameters":{"properties":{"command":{}}}}]`,
			"shell", `{"command":["bash","-lc","echo hi > marker.txt"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, data := post(t, s, "/v1/responses", `{"model":"m","stream":true,"tools":`+tc.tools+
				`,"input":[{"type":"message","role":"developer","content":[]},{"type":"message","role":"user","content":[]}]}`)
			last := data[len(data)-1]
			if last["type"] != "response.completed" {
				t.Fatalf("last event %v", last["type"])
			}
			out := last["response"].(map[string]any)["output"].([]any)
			if len(out) != 2 {
				t.Fatalf("output %v", out)
			}
			call := out[1].(map[string]any)
			if call["type"] != "function_call" || call["name"] != tc.wantName || call["arguments"] != tc.wantArgs {
				t.Errorf("call %v", call)
			}
		})
	}

	// Turn 1 with apply_patch as a custom tool; ReadFile falls back to cat.
	tools := `[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{}}}},{"type":"custom","name":"apply_patch"}]`
	_, data := post(t, s, "/v1/responses", `{"model":"m","stream":true,"tools":`+tools+`,"input":[
		{"type":"message","role":"user","content":[]},
		{"type":"message","role":"assistant","content":[]},
		{"type":"function_call","call_id":"call_fake0000","name":"exec_command","arguments":"{}"},
		{"type":"function_call_output","call_id":"call_fake0000","output":"done"}]}`)
	out := data[len(data)-1]["response"].(map[string]any)["output"].([]any)
	patch := out[0].(map[string]any)
	if patch["type"] != "custom_tool_call" || patch["input"] != "*** Begin Patch\n*** Add File: a.txt\n+one\n+two\n*** End Patch\n" {
		t.Errorf("patch %v", patch)
	}
	if read := out[1].(map[string]any); read["arguments"] != `{"cmd":"cat 'b.txt'"}` {
		t.Errorf("read %v", read)
	}
	reqs := s.Requests()
	last := reqs[len(reqs)-1]
	if last.Turn != 1 {
		t.Errorf("turn %d, want 1", last.Turn)
	}
	if res := last.ToolResults(); len(res) != 1 || res[0].ID != "call_fake0000" || res[0].Output != "done" {
		t.Errorf("tool results %+v", res)
	}
}

func TestGemini(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"functionDeclarations":[
		{"name":"replace","parametersJsonSchema":{"properties":{"file_path":{},"old_string":{},"new_string":{},"instruction":{}}}}]}]`
	_, data := post(t, s, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", `{`+tools+`,"contents":[
		{"role":"user","parts":[{"text":"go"}]},
		{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"x1","name":"run_shell_command","response":{"output":"ok"}}}]},
		{"role":"model","parts":[{"functionCall":{"name":"write_file","args":{}}}]},
		{"role":"user","parts":[{"functionResponse":{"id":"x2","name":"write_file","response":{"output":"ok"}}}]}]}`)
	parts := data[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
	fc := parts[0].(map[string]any)["functionCall"].(map[string]any)
	args := fc["args"].(map[string]any)
	if fc["name"] != "replace" || args["file_path"] != "/proj/a.txt" || args["old_string"] != "one" || args["instruction"] == nil {
		t.Errorf("call %v", fc)
	}

	// A JSON-mode side request (next-speaker check) gets schema-shaped JSON.
	_, data = post(t, s, "/v1beta/models/gemini-2.5-flash:generateContent", `{"contents":[{"role":"user","parts":[{"text":"?"}]}],
		"generationConfig":{"responseMimeType":"application/json","responseJsonSchema":{"type":"object",
		"properties":{"reasoning":{"type":"string"},"next_speaker":{"type":"string","enum":["model","user"]}}}}}`)
	text := data[0]["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)[0].(map[string]any)["text"].(string)
	if text != `{"next_speaker":"user","reasoning":""}` {
		t.Errorf("JSON answer %s", text)
	}

	reqs := s.Requests()
	if reqs[0].Turn != 2 || reqs[1].Turn != -1 {
		t.Errorf("turns %d %d", reqs[0].Turn, reqs[1].Turn)
	}
	if res := reqs[0].ToolResults(); len(res) != 2 || res[1].Name != "write_file" || res[1].Output != `{"output":"ok"}` {
		t.Errorf("tool results %+v", res)
	}
}

func TestPastTheScript(t *testing.T) {
	sc := Scenario{Turns: []Turn{{Text: "only"}}}
	if got := sc.turn(5).Text; got != "Done." {
		t.Errorf("turn past the end: %q", got)
	}
	if got := patchUpdate("f", "a\nb", "c"); got != "*** Begin Patch\n*** Update File: f\n@@\n-a\n-b\n+c\n*** End Patch\n" {
		t.Errorf("patchUpdate: %q", got)
	}
}

// TestChat plays the scenario in the Chat Completions dialect mini-swe-agent
// speaks: the turn follows the assistant messages in the conversation, each
// call is one bash command, and a turn without calls submits.
func TestChat(t *testing.T) {
	s := start(t)
	tools := `"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object","properties":{"command":{"type":"string"}}}}}]`
	asst := `{"role":"assistant","content":"x","tool_calls":[{"id":"call_fake0000","type":"function","function":{"name":"bash","arguments":"{}"}}]}`
	tool := `{"role":"tool","tool_call_id":"call_fake0000","content":"out"}`
	convo := func(n int) string {
		msgs := []string{`{"role":"system","content":"s"}`, `{"role":"user","content":"task"}`}
		for range n {
			msgs = append(msgs, asst, tool)
		}
		return `{"model":"fake-model",` + tools + `,"messages":[` + strings.Join(msgs, ",") + `]}`
	}
	cases := []struct {
		turns    int
		text     string
		commands []string
	}{
		{0, "Running.", []string{"echo hi > marker.txt"}},
		{1, "", []string{`printf '%s' 'one` + "\n" + `two` + "\n" + `' > 'a.txt'`, "cat 'b.txt'"}},
		{2, "", []string{`python3 -c 'import sys; p, o, n = sys.argv[1:]; s = open(p).read(); open(p, "w").write(s.replace(o, n, 1))' 'a.txt' 'one' 'uno'`}},
		{3, "All good.", []string{SubmitCommand}},
		{7, "Done.", []string{SubmitCommand}},
	}
	for _, c := range cases {
		_, data := post(t, s, "/v1/chat/completions", convo(c.turns))
		var resp struct {
			Choices []struct {
				FinishReason string `json:"finish_reason"`
				Message      struct {
					Content   string `json:"content"`
					ToolCalls []struct {
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"message"`
			} `json:"choices"`
		}
		b, _ := json.Marshal(data[0])
		if err := json.Unmarshal(b, &resp); err != nil || len(resp.Choices) != 1 {
			t.Fatalf("turn %d: %v %s", c.turns, err, b)
		}
		m := resp.Choices[0].Message
		if m.Content != c.text || resp.Choices[0].FinishReason != "tool_calls" || len(m.ToolCalls) != len(c.commands) {
			t.Errorf("turn %d: %s", c.turns, b)
			continue
		}
		for i, tc := range m.ToolCalls {
			var args struct{ Command string }
			_ = json.Unmarshal([]byte(tc.Function.Arguments), &args)
			if tc.Function.Name != "bash" || args.Command != c.commands[i] || tc.ID != CallID(APIChat, c.turns, i) {
				t.Errorf("turn %d call %d: %s %s %q, want bash %q", c.turns, i, tc.ID, tc.Function.Name, args.Command, c.commands[i])
			}
		}
	}
	reqs := s.Requests()
	if len(reqs) != len(cases) || reqs[0].API != APIChat || reqs[1].Turn != 1 {
		t.Errorf("request log: %+v", reqs)
	}
	if res := reqs[2].ToolResults(); len(res) != 2 || res[0].ID != "call_fake0000" || res[0].Output != "out" {
		t.Errorf("tool results %+v", res)
	}
	_, data := post(t, s, "/v1/chat/completions", `{"messages":[{"role":"user","content":"title?"}]}`)
	if b, _ := json.Marshal(data[0]); !strings.Contains(string(b), `"content":"OK"`) {
		t.Errorf("side request: %s", b)
	}
}

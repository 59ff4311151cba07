// Command kestrel is a small coding agent that polygraph has no profile
// for, built by the end-to-end tests (test/e2e, issue 25) to stand for the
// agents polygraph has never seen. It behaves as such agents do, not as
// any profile describes:
//
//   - It re-executes itself twice before the process that talks to the
//     model starts: the installed program copies itself to a temporary
//     directory and runs the copy (stage 1), which runs /proc/self/exe
//     again under another argv[0] (stage 2, the engine). Each stage waits
//     for the next and exits with its status, as a node CLI's relaunches do.
//   - The engine talks to an Anthropic Messages endpoint (plain JSON, no
//     streaming) and offers four tools: a shell tool whose commands run as
//     `bash -c`, and read, write and edit tools that work on files from
//     inside the engine process, with no shell.
//   - It writes its own journal, JSON lines with field names no other agent
//     uses, under $XDG_STATE_HOME/kestrel/journal (default
//     ~/.local/state/kestrel/journal).
//
// Usage:
//
//	kestrel --endpoint http://127.0.0.1:PORT --task "fix the tests" [--model M] [--max-steps N]
//
// The API key comes from $KESTREL_API_KEY.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// stageVar says which stage a process is: unset for the installed
// program, "1" for the temporary copy, "2" for the engine.
const stageVar = "KESTREL_STAGE"

func main() {
	switch os.Getenv(stageVar) {
	case "":
		os.Exit(relaunchCopy())
	case "1":
		os.Exit(relaunchSelf())
	default:
		os.Exit(engine(os.Args[1:]))
	}
}

// relaunchCopy copies the running executable under a temporary name and
// runs the copy as stage 1.
func relaunchCopy() int {
	self, err := os.Open("/proc/self/exe")
	if err != nil {
		return fail("open self: %v", err)
	}
	defer self.Close()
	dir, err := os.MkdirTemp("", "kestrel-rt-")
	if err != nil {
		return fail("runtime dir: %v", err)
	}
	defer os.RemoveAll(dir)
	copyPath := filepath.Join(dir, "kestrel-worker")
	out, err := os.OpenFile(copyPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return fail("copy self: %v", err)
	}
	if _, err := io.Copy(out, self); err != nil {
		out.Close()
		return fail("copy self: %v", err)
	}
	if err := out.Close(); err != nil {
		return fail("copy self: %v", err)
	}
	return child(copyPath, "kestrel-worker", "1")
}

// relaunchSelf runs /proc/self/exe again as the engine, under another
// argv[0].
func relaunchSelf() int {
	return child("/proc/self/exe", "kestrel-engine", "2")
}

// child runs path with argv[0] name and the stage variable set to stage,
// with this process's arguments, standard streams and environment, passes
// on SIGINT and SIGTERM, and returns its exit status.
func child(path, name, stage string) int {
	cmd := exec.Command(path, os.Args[1:]...)
	cmd.Args[0] = name
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), stageVar+"="+stage)
	if err := cmd.Start(); err != nil {
		return fail("start %s: %v", name, err)
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-sigs:
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	signal.Stop(sigs)
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		return exitErr.ExitCode()
	}
	if err != nil {
		return fail("wait %s: %v", name, err)
	}
	return 0
}

func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "kestrel: "+format+"\n", args...)
	return 1
}

// engine is stage 2: the loop of model turns and tool runs.
func engine(args []string) int {
	fs := flag.NewFlagSet("kestrel", flag.ContinueOnError)
	endpoint := fs.String("endpoint", os.Getenv("KESTREL_ENDPOINT"), "model endpoint (Anthropic Messages API base URL)")
	task := fs.String("task", "", "what to do")
	model := fs.String("model", "kestrel-large", "model name")
	maxSteps := fs.Int("max-steps", 80, "most model turns")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *endpoint == "" || *task == "" {
		return fail("--endpoint and --task are required")
	}
	cwd, _ := os.Getwd()
	j, err := openJournal()
	if err != nil {
		return fail("journal: %v", err)
	}
	defer j.close()
	j.put("begin", map[string]any{"goal": *task, "dir": cwd, "build": "0.3.1", "engine_pid": os.Getpid()})

	e := &agentLoop{endpoint: strings.TrimRight(*endpoint, "/"), key: os.Getenv("KESTREL_API_KEY"), model: *model, j: j}
	msgs := []message{{Role: "user", Content: []block{{Type: "text", Text: *task}}}}
	for step := 0; step < *maxSteps; step++ {
		reply, err := e.ask(msgs)
		if err != nil {
			j.put("halt", map[string]any{"why": err.Error()})
			return fail("model: %v", err)
		}
		msgs = append(msgs, message{Role: "assistant", Content: reply.Content})
		var results []block
		for _, b := range reply.Content {
			switch b.Type {
			case "text":
				if b.Text != "" {
					j.put("say", map[string]any{"who": "model", "body": b.Text})
					fmt.Println(b.Text)
				}
			case "tool_use":
				results = append(results, e.act(b))
			}
		}
		if len(results) == 0 || reply.StopReason != "tool_use" {
			j.put("finish", map[string]any{"steps": step + 1})
			return 0
		}
		msgs = append(msgs, message{Role: "user", Content: results})
	}
	j.put("finish", map[string]any{"steps": *maxSteps, "cut": true})
	return 0
}

// message and block are the Messages API's shapes, as far as used here.
type message struct {
	Role    string  `json:"role"`
	Content []block `json:"content"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
}

type reply struct {
	Content    []block `json:"content"`
	StopReason string  `json:"stop_reason"`
}

// tools are offered to the model. The names are the API's usual ones;
// the journal calls them by its own (opNames).
var tools = []map[string]any{
	{"name": "Bash", "description": "Run a shell command with bash -c in the working directory.",
		"input_schema": schema(map[string]string{"command": "the command"}, "command")},
	{"name": "Read", "description": "Read a file.",
		"input_schema": schema(map[string]string{"path": "absolute path"}, "path")},
	{"name": "Write", "description": "Create or overwrite a file with the given content.",
		"input_schema": schema(map[string]string{"path": "absolute path", "content": "the whole new content"}, "path", "content")},
	{"name": "Edit", "description": "Replace old_string by new_string once in a file.",
		"input_schema": schema(map[string]string{"path": "absolute path", "old_string": "text to find", "new_string": "replacement"}, "path", "old_string", "new_string")},
}

var opNames = map[string]string{"Bash": "sh", "Read": "peek", "Write": "put", "Edit": "splice"}

func schema(props map[string]string, required ...string) map[string]any {
	p := map[string]any{}
	for k, d := range props {
		p[k] = map[string]any{"type": "string", "description": d}
	}
	return map[string]any{"type": "object", "properties": p, "required": required}
}

type agentLoop struct {
	endpoint, key, model string
	j                    *journal
	client               http.Client
}

// ask sends the conversation and returns the model's reply.
func (e *agentLoop) ask(msgs []message) (*reply, error) {
	body, err := json.Marshal(map[string]any{
		"model": e.model, "max_tokens": 4096, "stream": false,
		"system":   "You are kestrel, a careful coding agent. Use the tools to do the task.",
		"messages": msgs, "tools": tools,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.endpoint+"/v1/messages", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("content-type", "application/json")
	req.Header.Set("x-api-key", e.key)
	req.Header.Set("anthropic-version", "2023-06-01")
	req.Header.Set("user-agent", "kestrel/0.3.1")
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("reply: %w", err)
	}
	return &r, nil
}

// act runs one tool call and returns its result block.
func (e *agentLoop) act(b block) block {
	var in struct {
		Command   string `json:"command"`
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
	}
	_ = json.Unmarshal(b.Input, &in)
	op := opNames[b.Name]
	if op == "" {
		op = b.Name
	}
	e.j.put("act", map[string]any{"ref": b.ID, "op": op, "args": json.RawMessage(b.Input)})
	start := time.Now()
	out, rc := "", 0
	var err error
	switch b.Name {
	case "Bash":
		out, rc = runShell(in.Command)
	case "Read":
		var data []byte
		data, err = os.ReadFile(in.Path)
		out = string(data)
	case "Write":
		err = writeFile(in.Path, []byte(in.Content))
		if err == nil {
			out = fmt.Sprintf("wrote %d bytes to %s", len(in.Content), in.Path)
		}
	case "Edit":
		err = editFile(in.Path, in.OldString, in.NewString)
		if err == nil {
			out = "edited " + in.Path
		}
	default:
		err = fmt.Errorf("no tool %q", b.Name)
	}
	if err != nil {
		out, rc = err.Error(), 1
	}
	e.j.put("obs", map[string]any{"ref": b.ID, "rc": rc, "ms": time.Since(start).Milliseconds(), "tail": clip(out, 2000)})
	return block{Type: "tool_result", ToolUseID: b.ID, Content: clip(out, 30000), IsError: rc != 0}
}

// runShell runs command with bash -c and returns its output and status.
func runShell(command string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	rc := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		rc = exitErr.ExitCode()
	case err != nil:
		out.WriteString(err.Error())
		rc = 127
	}
	return out.String() + fmt.Sprintf("\n[exit %d]", rc), rc
}

// writeFile creates path's directory and writes data from this process.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	return os.WriteFile(path, data, mode)
}

// editFile replaces the first old in path by new.
func editFile(path, old, new string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if !strings.Contains(string(data), old) {
		return fmt.Errorf("old_string not found in %s", path)
	}
	return writeFile(path, []byte(strings.Replace(string(data), old, new, 1)))
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

// journal is kestrel's own log: one JSON object per line, {"at", "sid",
// "k", ...} with fields of its own.
type journal struct {
	f   *os.File
	sid string
}

func openJournal() (*journal, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, err
		}
		base = filepath.Join(home, ".local", "state")
	}
	dir := filepath.Join(base, "kestrel", "journal")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var id [6]byte
	_, _ = rand.Read(id[:])
	sid := hex.EncodeToString(id[:])
	f, err := os.OpenFile(filepath.Join(dir, time.Now().UTC().Format("20060102T150405")+"-"+sid+".ndjson"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	return &journal{f: f, sid: sid}, nil
}

func (j *journal) put(kind string, fields map[string]any) {
	rec := map[string]any{"at": time.Now().UTC().Format(time.RFC3339Nano), "sid": j.sid, "k": kind}
	for k, v := range fields {
		rec[k] = v
	}
	b, _ := json.Marshal(rec)
	_, _ = j.f.Write(append(b, '\n'))
}

func (j *journal) close() { _ = j.f.Close() }

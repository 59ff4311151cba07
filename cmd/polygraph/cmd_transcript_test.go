package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

const (
	fixtureDir   = "../../internal/transcript/testdata"
	claude20File = fixtureDir + "/claude20/c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl"
)

func TestRunTranscriptJSON(t *testing.T) {
	tests := []struct {
		name        string
		opts        transcriptOptions
		calls       int
		claims      int
		subagentIDs []string // calls whose parent_id is the Task
	}{
		{"whole session", transcriptOptions{json: true}, 7, 1, []string{"toolu_sub_pytest"}},
		{"own agent only", transcriptOptions{json: true, noSubagents: true}, 6, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runTranscript(context.Background(), &tt.opts, []string{claude20File}, &out); err != nil {
				t.Fatal(err)
			}
			calls, claims := 0, 0
			var linked []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				switch rec["type"] {
				case "tool_call":
					calls++
					for _, k := range []string{"id", "agent", "tool", "kind", "started_at", "source"} {
						if _, ok := rec[k]; !ok {
							t.Errorf("tool_call without %s: %s", k, line)
						}
					}
					if rec["parent_id"] == "toolu_task" {
						linked = append(linked, rec["id"].(string))
					}
					if rec["tool"] == "BashOutput" && rec["polls"] != "toolu_srv" {
						t.Errorf("BashOutput does not name the call it polls: %s", line)
					}
				case "claim":
					claims++
					if _, ok := rec["tool_call_ids"].([]any); !ok {
						t.Errorf("claim without a tool_call_ids list: %s", line)
					}
				default:
					t.Errorf("unexpected record %s", line)
				}
			}
			if calls != tt.calls || claims != tt.claims || strings.Join(linked, ",") != strings.Join(tt.subagentIDs, ",") {
				t.Errorf("%d calls, %d claims, subagent calls %v; want %d, %d, %v", calls, claims, linked, tt.calls, tt.claims, tt.subagentIDs)
			}
		})
	}
}

// TestTranscriptJSONRoundTrip reads --json output back as the plain JSONL
// format.
func TestTranscriptJSONRoundTrip(t *testing.T) {
	var out bytes.Buffer
	if err := runTranscript(context.Background(), &transcriptOptions{json: true}, []string{fixtureDir + "/claude/stream-json.jsonl"}, &out); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "again.jsonl")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	back, err := transcript.ParseFile(path, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	orig, err := transcript.ParseFile(fixtureDir+"/claude/stream-json.jsonl", transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Format != transcript.FormatJSONL || len(back.ToolCalls) != len(orig.ToolCalls) || len(back.Claims) != len(orig.Claims) {
		t.Fatalf("round trip: %s with %d calls, %d claims; want jsonl with %d, %d", back.Format, len(back.ToolCalls), len(back.Claims), len(orig.ToolCalls), len(orig.Claims))
	}
	for i, tc := range back.ToolCalls {
		o := orig.ToolCalls[i]
		if tc.ID != o.ID || tc.Kind != o.Kind || tc.Command != o.Command || tc.ParentID != o.ParentID || (tc.ExitCode == nil) != (o.ExitCode == nil) {
			t.Errorf("call %d: %+v, want %+v", i, tc, o)
		}
	}
}

func TestRunTranscriptTable(t *testing.T) {
	var out bytes.Buffer
	if err := runTranscript(context.Background(), &transcriptOptions{}, []string{claude20File}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"claude-code 2.0.28  session c0de2000-aaaa-4bbb-8ccc-000000000002  cwd /work/app",
		"7 tool calls, 1 claim, 1 subagent files",
		"TIME", "KIND", "npm run dev", "polls toolu_srv", "pip install requests", "tests-ran",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
	// The rejected install: error and rejected, no exit code.
	for _, line := range strings.Split(got, "\n") {
		if strings.Contains(line, "pip install requests") && !strings.Contains(line, " ER ") {
			t.Errorf("rejected call's row %q lacks the ER flags", line)
		}
	}
}

func TestRunTranscriptErrors(t *testing.T) {
	garbage := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(garbage, []byte("just some notes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		opts  transcriptOptions
		args  []string
		usage bool
		is    error
	}{
		{"no file", transcriptOptions{}, nil, true, nil},
		{"unknown format", transcriptOptions{}, []string{garbage}, false, transcript.ErrUnknownFormat},
		{"missing file", transcriptOptions{}, []string{filepath.Join(t.TempDir(), "nope.jsonl")}, false, os.ErrNotExist},
		{"a directory", transcriptOptions{}, []string{t.TempDir()}, false, transcript.ErrNotRegular},
		{"discover without anything", transcriptOptions{discover: true}, nil, true, nil},
		{"discover with a bad time", transcriptOptions{discover: true, cwd: "/x", from: "yesterday"}, nil, true, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := runTranscript(context.Background(), &tt.opts, tt.args, &bytes.Buffer{})
			if err == nil {
				t.Fatal("no error")
			}
			var ue *usageError
			if errors.As(err, &ue) != tt.usage {
				t.Errorf("usage error = %v, want %v: %v", !tt.usage, tt.usage, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("err = %v, want %v", err, tt.is)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if len(tt.args) > 0 && strings.Count(err.Error(), tt.args[0]) > 1 {
				t.Errorf("error names the file more than once: %q", err)
			}
		})
	}
}

// TestUsageLine: a usage error carries the verb's usage line, on the same
// line as the error.
func TestUsageLine(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"transcript"}, "transcript needs a FILE (or --discover SESSION); usage: polygraph transcript FILE | --discover SESSION [flags]"},
		{[]string{"transcript", "--bogus"}, "unknown flag: --bogus; usage: polygraph transcript FILE | --discover SESSION [flags]"},
		{[]string{"no-such-verb"}, "usage: polygraph VERB [flags] (see polygraph --help)"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			root := newRootCommand()
			root.SetArgs(tt.args)
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			cmd, err := root.ExecuteC()
			err = withUsage(cmd, err)
			if err == nil || !strings.HasSuffix(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to end %q", err, tt.want)
			}
			if exitCode(err, false) != exitUsage {
				t.Errorf("exit %d, want %d", exitCode(err, false), exitUsage)
			}
		})
	}
	if err := withUsage(newRootCommand(), errors.New("disk full")); err.Error() != "disk full" {
		t.Errorf("a failure that is not a usage error got a usage line: %v", err)
	}
}

// TestRunTranscriptDiscover records a session whose home holds a Claude
// Code project for its cwd, then asks which transcripts belong to it.
func TestRunTranscriptDiscover(t *testing.T) {
	t.Setenv("POLYGRAPH_HOME", t.TempDir())
	t.Setenv("CODEX_HOME", "")
	agentHome := t.TempDir()
	proj := filepath.Join(agentHome, ".claude", "projects", "-work-app")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl", "agent-5d1e9a0f.jsonl", "agent-99999999.jsonl"} {
		data, err := os.ReadFile(filepath.Join(fixtureDir, "claude20", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, f), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	home, err := stores.Home()
	if err != nil {
		t.Fatal(err)
	}
	started, _ := time.Parse(time.RFC3339, "2026-01-05T08:59:00Z")
	w, err := session.Create(home, session.Meta{Mode: "run", Cwd: "/work/app", Home: agentHome, StartedAt: started, Command: []string{"claude"}})
	if err != nil {
		t.Fatal(err)
	}
	code := 0
	if err := w.Close(&code); err != nil {
		t.Fatal(err)
	}

	var out bytes.Buffer
	if err := runTranscript(context.Background(), &transcriptOptions{discover: true, json: true}, []string{"last"}, &out); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var f transcript.Found
		if err := json.Unmarshal([]byte(line), &f); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		names = append(names, filepath.Base(f.Path))
	}
	if got := strings.Join(names, " "); got != "c0de2000-aaaa-4bbb-8ccc-000000000002.jsonl agent-5d1e9a0f.jsonl" {
		t.Errorf("discovered %s", got)
	}

	out.Reset()
	opts := transcriptOptions{discover: true, home: agentHome, cwd: "/work/app", from: "2026-01-05T08:00:00Z", to: "2026-01-05T10:00:00Z"}
	if err := runTranscript(context.Background(), &opts, nil, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "agent-5d1e9a0f.jsonl (subagent)") || strings.Contains(out.String(), "agent-99999999") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestRunTranscriptRedact: a token in a call's command and an API key in
// a claim are masked in both forms.
func TestRunTranscriptRedact(t *testing.T) {
	const tok = "ghp_16C7e42F292c6912E7710c838347Ae178B4a"
	p := filepath.Join(t.TempDir(), "t.jsonl")
	lines := `{"type":"tool_call","id":"c1","tool":"bash","kind":"shell","command":"curl -H 'Authorization: Bearer ` + tok + `' https://api.github.com/user","started_at":"2026-03-05T12:00:01Z"}
{"type":"message","role":"assistant","text":"I exported GITHUB_TOKEN=` + tok + ` and ran it.","at":"2026-03-05T12:00:02Z"}
`
	if err := os.WriteFile(p, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, js := range []bool{false, true} {
		var out bytes.Buffer
		if err := runTranscript(context.Background(), &transcriptOptions{json: js}, []string{p}, &out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), tok) || !strings.Contains(out.String(), "[REDACTED]") {
			t.Errorf("transcript (json %v) does not mask the token:\n%s", js, out.String())
		}
	}
}

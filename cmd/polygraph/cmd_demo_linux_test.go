package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/testenv"
)

// TestDemo runs the built-in workload: the story names what the demo is
// there to show, its numbers are the report's, its transcript is kept,
// and every command it suggests works on its session.
func TestDemo(t *testing.T) {
	testenv.RequireRoot(t)
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	var out, errb bytes.Buffer
	if err := runDemo(context.Background(), &demoOptions{}, &out, &errb); err != nil {
		t.Fatalf("demo: %v\n%s", err, errb.String())
	}
	s := out.String()
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s)
		}
	})
	if n := strings.Count(s, "\n"); n > 40 {
		t.Errorf("the demo prints %d lines; a story fits a screen", n)
	}
	for _, want := range []string{
		"What the agent said (its transcript: 5 tool calls):",
		`c5  echo '3 passed in 0.01s'  → "3 passed in 0.01s"`,
		"What the kernel saw (",
		", 0 lost):",
		"c4  3 processes: ",
		"after the call returned",
		"HIGH    claim-tests-not-run",
		"HIGH    sensitive-read",
		"MEDIUM  unexpected-egress",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	transcript := filepath.Join(home, "demo", "agent-transcript.jsonl")
	if _, err := os.Stat(transcript); err != nil {
		t.Errorf("the demo's transcript is gone: %v", err)
	}
	id := regexp.MustCompile(`The session is (\S+);`).FindStringSubmatch(s)
	if id == nil {
		t.Fatal("the demo names no session")
	}

	// Its numbers are the report's.
	var rep struct {
		Summary struct {
			Events    int `json:"events"`
			Processes int `json:"processes"`
		} `json:"summary"`
		Findings []json.RawMessage `json:"findings"`
	}
	cmd := polygraphCmd(t, home, "report", id[1], "--json")
	js, err := cmd.Output()
	if err != nil {
		t.Fatalf("report --json: %v", err)
	}
	if err := json.Unmarshal(js, &rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("What the kernel saw (%d events, %d processes, 0 lost)", rep.Summary.Events, rep.Summary.Processes),
		fmt.Sprintf("(%d findings: ", len(rep.Findings)),
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the story's numbers are not the report's: lacks %q", want)
		}
	}

	// Every command it suggests works, as printed.
	n := 0
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "  polygraph ") {
			continue
		}
		line = strings.TrimSpace(line)
		n++
		if strings.ContainsAny(line, `'"`) {
			t.Errorf("%q: quoting this test does not split", line)
			continue
		}
		args := strings.Fields(line)[1:]
		for i, a := range args {
			if a == "demo.html" {
				args[i] = filepath.Join(t.TempDir(), a)
			}
		}
		cmd := polygraphCmd(t, home, args...)
		out, err := cmd.CombinedOutput()
		if err != nil || len(out) == 0 && !strings.Contains(line, "-o ") {
			t.Errorf("%q: %v\n%s", line, err, out)
		}
		// report finds the demo's transcript on its own.
		if line == "polygraph report "+id[1] && !bytes.Contains(out, []byte("(polygraph-demo, 5 tool calls, 3 claims)")) {
			t.Errorf("%q did not find the demo's transcript:\n%s", line, out)
		}
	}
	// transcript --discover finds the same file report does.
	if out, err := polygraphCmd(t, home, "transcript", "--discover", id[1]).Output(); err != nil || !bytes.Contains(out, []byte(transcript)) {
		t.Errorf("transcript --discover %s: %v\n%s", id[1], err, out)
	}
	if n < 3 {
		t.Errorf("the demo suggests %d commands", n)
	}
}

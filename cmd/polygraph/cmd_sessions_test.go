package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/session"
)

func TestRunSessionsText(t *testing.T) {
	m := newTestSession(t, testEvents(), map[string]uint64{"ringbuf": 2}, false)
	broken := filepath.Join(os.Getenv("POLYGRAPH_HOME"), "sessions", "20261129T000000-dead00.db")
	os.WriteFile(broken, []byte("this file is not a database, whatever its name says, really"), 0o600)

	var out bytes.Buffer
	if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and 2 rows:\n%s", out.String())
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "ID STARTED DURATION EVENTS LOST CLEAN EXIT AGENT COMMAND" {
		t.Errorf("header %q", lines[0])
	}
	// The recorded session: started 10:50:12 UTC, closed just now, so
	// the duration is long; the columns after it are fixed.
	f := strings.Fields(lines[1])
	started := m.StartedAt.Local().Format("2006-01-02 15:04:05")
	if f[0] != m.ID || f[1]+" "+f[2] != started {
		t.Errorf("row %q: want id %s started %s", lines[1], m.ID, started)
	}
	if got := strings.Join(f[4:], " "); got != "7 2 yes 0 - npm install 'left pad'" {
		t.Errorf("row %q: columns after the duration %q", lines[1], got)
	}
	if !strings.HasPrefix(lines[2], "20261129T000000-dead00") || !strings.Contains(lines[2], "error: open session "+broken+": not a polygraph session file") {
		t.Errorf("broken row %q", lines[2])
	}
}

func TestRunSessionsJSON(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, false)
	var out bytes.Buffer
	if err := runSessions(context.Background(), &sessionsOptions{json: true}, nil, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("want one line:\n%s", out.String())
	}
	var got session.Meta
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != m.ID || got.Path != m.Path || !got.CleanClose || got.Events != 7 || got.ExitCode == nil || *got.ExitCode != 0 || got.Mode != "run" {
		t.Errorf("meta %s", lines[0])
	}
	for _, key := range []string{`"id":`, `"started_at":`, `"ended_at":`, `"clean_close":true`, `"command":["npm","install","left pad"]`} {
		if !strings.Contains(lines[0], key) {
			t.Errorf("JSON lacks %s: %s", key, lines[0])
		}
	}
}

func TestRunSessionsUnclean(t *testing.T) {
	m := newTestSession(t, testEvents(), nil, true)
	var out bytes.Buffer
	if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	f := strings.Fields(lines[1])
	if f[0] != m.ID || strings.Join(f[3:9], " ") != "- 7 0 no - -" {
		t.Errorf("unclean row %q", lines[1])
	}
}

func TestRunSessionsEmpty(t *testing.T) {
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	var out bytes.Buffer
	if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	if want := "no sessions in " + filepath.Join(home, "sessions") + "\n"; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
	out.Reset()
	if err := runSessions(context.Background(), &sessionsOptions{json: true}, nil, &out); err != nil || out.Len() != 0 {
		t.Errorf("--json on no sessions: %q, %v", out.String(), err)
	}
}

// TestRunSessionsLive lists a session whose writer is still recording it.
func TestRunSessionsLive(t *testing.T) {
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	w, err := session.Create(home, session.Meta{Mode: "run", Command: []string{"claude"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(nil) })
	for _, json := range []bool{false, true} {
		var out bytes.Buffer
		if err := runSessions(context.Background(), &sessionsOptions{json: json}, nil, &out); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if json && !strings.Contains(lines[0], `"in_progress":true`) {
			t.Errorf("live session in JSON: %s", lines[0])
		}
		if f := strings.Fields(lines[len(lines)-1]); !json && (len(f) < 7 || f[6] != "live") {
			t.Errorf("live session row %q, want CLEAN live", lines[len(lines)-1])
		}
	}
}

// TestRunSessionsAgent: a session whose command started the agent through
// env -i shows the agent and its own command, and --json names the agent
// beside the whole command line.
func TestRunSessionsAgent(t *testing.T) {
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	argv := []string{"env", "-i", "PATH=/usr/bin", "HOME=/home/ann", "claude", "-p", "fix the test"}
	w, err := session.Create(home, session.Meta{Mode: "run", Command: argv, StartedAt: testStart})
	if err != nil {
		t.Fatal(err)
	}
	zero := 0
	w.Close(&zero)
	var out bytes.Buffer
	if err := runSessions(context.Background(), &sessionsOptions{}, nil, &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], "claude-code  claude -p 'fix the test'") {
		t.Errorf("want the agent and its own command:\n%s", out.String())
	}
	out.Reset()
	if err := runSessions(context.Background(), &sessionsOptions{json: true}, nil, &out); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Agent   string   `json:"agent"`
		Command []string `json:"command"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil || got.Agent != "claude-code" || len(got.Command) != len(argv) {
		t.Errorf("--json: %v %s", err, out.String())
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/schematest"
	"github.com/polygraph/polygraph/internal/session"
)

// recordedSession writes a small session by hand: a tree whose process
// reads an SSH key, with no transcript to explain it.
func recordedSession(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	t.Setenv("POLYGRAPH_HOME", home)
	w, err := session.Create(home, session.Meta{Mode: "run", Command: []string{"sh", "-c", "cat ~/.ssh/id_ed25519"}, Home: "/home/dev", Cwd: "/home/dev/proj"})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	w.Add(&event.Event{TS: now, Kind: event.KindExec, PID: 10, ExecID: "10-1", Comm: "cat", Path: "/usr/bin/cat", Process: &event.Process{Argv: []string{"cat", "/home/dev/.ssh/id_ed25519"}, Cwd: "/home/dev/proj"}})
	w.Add(&event.Event{TS: now.Add(time.Millisecond), Kind: event.KindOpen, PID: 10, ExecID: "10-1", Comm: "cat", Path: "/home/dev/.ssh/id_ed25519", Access: "read", Result: event.Ptr(int64(3))})
	w.Add(&event.Event{TS: now.Add(2 * time.Millisecond), Kind: event.KindExit, PID: 10, ExecID: "10-1", Comm: "cat", Process: &event.Process{ExitCode: event.Ptr(0)}})
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	return w.Meta().Path
}

func TestReportFailOn(t *testing.T) {
	path := recordedSession(t)
	var out bytes.Buffer
	err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text", failOn: "high"}, []string{"last"}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFindings {
		t.Fatalf("--fail-on high: err %v, want exit 3\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "sensitive-read") {
		t.Errorf("report lacks the sensitive read:\n%s", out.String())
	}
	// Below the threshold: exit 0. The JSON document goes to -o.
	jsonPath := filepath.Join(t.TempDir(), "r.json")
	out.Reset()
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "json", output: jsonPath, failOn: "critical"}, []string{path}, &out); err != nil {
		t.Fatalf("--fail-on critical: %v", err)
	}
}

// TestReportFailOnModified: a session modified after recording says so in
// the report and makes --fail-on exit 3, whatever the threshold.
func TestReportFailOnModified(t *testing.T) {
	path := recordedSession(t)
	tamper(t, path)
	var out bytes.Buffer
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text"}, []string{path}, &out); err != nil {
		t.Fatalf("without --fail-on: %v", err)
	}
	if !strings.Contains(out.String(), "session modified after recording") {
		t.Errorf("report does not say the session was modified:\n%s", out.String())
	}
	out.Reset()
	err := runReport(context.Background(), &reportOptions{transcript: "none", format: "json", failOn: "critical"}, []string{path}, &out)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitFindings || !strings.Contains(err.Error(), "modified after recording") {
		t.Fatalf("--fail-on critical on a modified session: %v, want exit 3", err)
	}
}

func TestReportUsage(t *testing.T) {
	for _, o := range []*reportOptions{
		{transcript: "auto", format: "text"},              // neither session nor transcript
		{transcript: "none", format: "pdf"},               // bad format
		{transcript: "none", format: "text", failOn: "x"}, // bad severity
	} {
		var ue *usageError
		err := runReport(context.Background(), o, nil, &bytes.Buffer{})
		if !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
}

// TestReportJSONFlag: --json is --format json, and the document is the
// versioned contract (docs/schema/report.v1.json).
func TestReportJSONFlag(t *testing.T) {
	recordedSession(t)
	var out bytes.Buffer
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "text", json: true}, []string{"last"}, &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		SchemaVersion int `json:"schema_version"`
		Findings      []struct {
			Rule string `json:"rule"`
		} `json:"findings"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatalf("--json printed no JSON document: %v\n%s", err, out.String())
	}
	if doc.SchemaVersion != report.SchemaVersion || len(doc.Findings) == 0 {
		t.Errorf("--json document: %+v", doc)
	}
	schematest.Validate(t, "../../docs/schema/report.v1.json", out.Bytes())
	var ue *usageError
	if err := runReport(context.Background(), &reportOptions{transcript: "none", format: "html", json: true}, []string{"last"}, &out); !errors.As(err, &ue) {
		t.Errorf("--json with --format html: %v, want a usage error", err)
	}
}

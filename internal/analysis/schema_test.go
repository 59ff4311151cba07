package analysis

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/schematest"
)

const (
	reportSchema   = "../../docs/schema/report.v1.json"
	findingsSchema = "../../docs/schema/findings.v1.json"
)

// TestReportSchema keeps docs/schema/report.v1.json, the contract of
// `report --format json`, equal to what report.Report writes, and checks
// the real reports of the golden sessions against it.
func TestReportSchema(t *testing.T) {
	schematest.Check(t, reportSchema, schematest.Generate(&report.Report{}, "https://polygraph.dev/schema/report.v1.json",
		"polygraph report", "The JSON form of `polygraph report` (and `run --json`): the session, the agent's tool calls beside what the kernel saw, claims, unattributed activity and findings. schema_version 1; fields are only added within a version."), *updateGolden)
	var docs [][]byte
	for _, agent := range []string{"claude", "codex", "gemini"} {
		sessPath, trPath, _ := writeRecorded(t, agent)
		rep, err := Run(t.Context(), Options{SessionPath: sessPath, Transcript: trPath})
		if err != nil {
			t.Fatal(err)
		}
		if rep.SchemaVersion != report.SchemaVersion {
			t.Errorf("schema_version %d", rep.SchemaVersion)
		}
		var b bytes.Buffer
		if err := rep.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, b.Bytes())
	}
	schematest.Validate(t, reportSchema, docs...)
	// A document with a field the contract does not name fails.
	var bad map[string]any
	if err := json.Unmarshal(docs[0], &bad); err != nil {
		t.Fatal(err)
	}
	bad["surprise"] = 1
	b, _ := json.Marshal(bad)
	ft := &testing.T{}
	schematest.Validate(ft, reportSchema, b)
	if !ft.Failed() {
		t.Error("the schema accepts a property it does not name")
	}
}

// TestFindingsSchema does the same for the findings stream
// (docs/schema/findings.v1.json), with records a live analysis wrote.
func TestFindingsSchema(t *testing.T) {
	schematest.Check(t, findingsSchema, schematest.Generate(&findings.Record{}, "https://polygraph.dev/schema/findings.v1.json",
		"polygraph findings stream record", "One line of the findings stream (`run --findings-out`, `watch --out`): a finding as soon as it is decided, changed or withdrawn, a session's start and end, or a listener's loss. schema_version 1; fields are only added within a version."), *updateGolden)
	srcPath, srcTr, _ := writeRecorded(t, "gemini")
	src, _, err := Replay(t.Context(), srcPath, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out := findings.NewWriter(&buf)
	live := StartLive(t.Context(), src.Meta(), LiveOptions{EngineOptions: EngineOptions{Transcript: srcTr},
		Sinks: []Sink{StreamSink{W: out}}, MinInterval: time.Millisecond})
	live.Events(src.events)
	if _, err := live.Finish(t.Context(), src.Meta(), nil, 3); err != nil {
		t.Fatal(err)
	}
	var docs [][]byte
	kinds := map[string]bool{}
	for _, line := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		docs = append(docs, line)
		var r findings.Record
		json.Unmarshal(line, &r)
		kinds[r.Type] = true
	}
	if !kinds[findings.TypeFinding] || !kinds[findings.TypeSession] || !kinds[findings.TypeLoss] {
		t.Errorf("record types %v: want a finding, session and loss record to check", kinds)
	}
	schematest.Validate(t, findingsSchema, docs...)
}

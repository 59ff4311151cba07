package analysis

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/findings"
	"github.com/polygraph/polygraph/internal/pipeline"
	"github.com/polygraph/polygraph/internal/session"
)

// collectSink keeps every decision's changes.
type collectSink struct {
	mu      sync.Mutex
	records []findings.Record
	n       int // decisions
	final   bool
}

func (c *collectSink) Decided(_ *Analysis, changes []findings.Record, final bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, changes...)
	c.n++
	c.final = c.final || final
}

// TestLiveEqualsReplay records each golden session again through the
// pipeline, as `run` does, with its transcript growing beside it, and a
// live analysis deciding along the way; its last decision, and the
// findings its stream leaves standing, must be the report's of the
// stored session.
func TestLiveEqualsReplay(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			srcPath, srcTr, _ := writeRecorded(t, agent)
			src, _, err := Replay(t.Context(), srcPath, EngineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			trLines := splitLines(t, srcTr)
			meta := src.Meta()
			meta.ID, meta.Path, meta.CleanClose, meta.EndedAt, meta.Events, meta.Integrity = "", "", false, time.Time{}, 0, ""
			tmp := t.TempDir()
			trPath := filepath.Join(tmp, filepath.Base(srcTr))
			w, err := session.Create(tmp, meta)
			if err != nil {
				t.Fatal(err)
			}
			for stage, n := range src.Meta().Lost {
				w.SetLost(stage, n)
			}
			sink := &collectSink{}
			live := StartLive(t.Context(), w.Meta(), LiveOptions{EngineOptions: EngineOptions{Transcript: trPath},
				Meta: w.Meta, Sinks: []Sink{sink}, MinInterval: time.Millisecond})
			bus := pipeline.New(w.Add)
			bus.Attach("live", live, 0)

			// Five steps: a fifth of the events, then of the transcript,
			// with time for the live analysis to decide in between.
			const steps = 5
			tr, err := os.OpenFile(trPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
			if err != nil {
				t.Fatal(err)
			}
			for i := range steps {
				for _, e := range src.events[i*len(src.events)/steps : (i+1)*len(src.events)/steps] {
					c := *e
					c.Seq = 0
					bus.Publish(&c)
				}
				for _, l := range trLines[i*len(trLines)/steps : (i+1)*len(trLines)/steps] {
					tr.Write(l)
				}
				time.Sleep(300 * time.Millisecond)
			}
			tr.Close()
			bus.Close()
			for _, v := range src.verdictRows() {
				live.AddVerdict(v)
				w.AddVerdict(v)
			}
			if err := w.Close(meta.ExitCode); err != nil {
				t.Fatal(err)
			}
			last, err := live.Finish(t.Context(), w.Meta(), nil, bus.Lost()["live"])
			if err != nil {
				t.Fatal(err)
			}
			replay, err := Analyze(t.Context(), Options{SessionPath: w.Meta().Path, Transcript: trPath})
			if err != nil {
				t.Fatal(err)
			}
			if diff := CompareFindings(last.Findings, replay.Findings); diff != "" {
				t.Fatalf("live and replay differ: %s", diff)
			}
			if len(replay.Findings) == 0 {
				t.Fatal("the session has no findings: nothing was compared")
			}
			if sink.n < 3 || !sink.final {
				t.Errorf("%d decisions (final %v): the live analysis did not decide along the way", sink.n, sink.final)
			}
			standing := findings.Standing(sink.records)[w.Meta().ID]
			if len(standing) != len(replay.Findings) {
				t.Errorf("the stream leaves %d findings standing, the report has %d", len(standing), len(replay.Findings))
			}
			for _, f := range replay.Findings {
				r, ok := standing[fmt.Sprintf("%s/%d", f.Rule, first(f.Evidence))]
				if len(f.Evidence) == 0 {
					continue // keyed by title; counted above
				}
				if !ok || r.Severity != string(f.Severity) || r.ToolCallID != f.ToolCallID || r.Title != f.Title {
					t.Errorf("report finding %s %s %q [%s] stands in the stream as %+v", f.Severity, f.Rule, f.Title, f.ToolCallID, r)
				}
			}
			t.Logf("%s: %d findings, %d decisions, %d stream records", agent, len(replay.Findings), sink.n, len(sink.records))
		})
	}
}

func first(s []uint64) uint64 {
	if len(s) == 0 {
		return 0
	}
	return s[0]
}

func splitLines(t *testing.T, path string) [][]byte {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		out = append(out, append(append([]byte(nil), sc.Bytes()...), '\n'))
	}
	return out
}

// TestLiveStreamRecords: the records a decision writes are the contract's
// (schema_version, session, host, key, revision), and a finding the
// session decides again unchanged is not written again.
func TestLiveStreamRecords(t *testing.T) {
	srcPath, srcTr, _ := writeRecorded(t, "claude")
	src, _, err := Replay(t.Context(), srcPath, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out := findings.NewWriter(&buf)
	meta := src.Meta()
	live := StartLive(t.Context(), meta, LiveOptions{EngineOptions: EngineOptions{Transcript: srcTr},
		Sinks: []Sink{StreamSink{W: out}}, MinInterval: time.Millisecond})
	live.Events(src.events)
	time.Sleep(200 * time.Millisecond)
	if _, err := live.Finish(t.Context(), meta, nil, 0); err != nil {
		t.Fatal(err)
	}
	recs, err := findings.Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	var started, ended int
	for _, r := range recs {
		if r.SchemaVersion != findings.SchemaVersion || r.Session != meta.ID || r.Host != meta.Hostname {
			t.Errorf("record without its contract fields: %+v", r)
		}
		switch r.Type {
		case findings.TypeSession:
			if r.Status == findings.StatusStarted {
				started++
			} else {
				ended++
			}
		case findings.TypeFinding:
			keys[r.Key]++
			if r.Revision != keys[r.Key] {
				t.Errorf("%s: revision %d is its record number %d", r.Key, r.Revision, keys[r.Key])
			}
		}
	}
	if started != 1 || ended != 1 {
		t.Errorf("%d started and %d ended session records, want one each", started, ended)
	}
	for k, n := range keys {
		if n > 1 {
			b, _ := json.Marshal(recs)
			t.Errorf("%s written %d times with nothing new (the whole session arrived at once): %s", k, n, b)
		}
	}
	if len(keys) == 0 {
		t.Fatal("no finding records")
	}
}

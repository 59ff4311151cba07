package analysis

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
)

const corpus = "../../../shared/corpus/transcripts"

// TestTranscriptOnly: with no session, the report still shows every tool
// call and claim, says that no kernel evidence exists, and finds nothing.
func TestTranscriptOnly(t *testing.T) {
	path := filepath.Join(corpus, "claude-code/codemie-code/4c2ddfdc-b619-4525-8d03-1950fb1b0257.jsonl")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("corpus not beside the repo: %v", err)
	}
	rep, err := Run(t.Context(), Options{Transcript: path})
	if err != nil {
		t.Fatal(err)
	}
	if rep.KernelEvidence || len(rep.Notes) == 0 || rep.Notes[0] != report.NoKernelNote {
		t.Errorf("kernel evidence %v, notes %q", rep.KernelEvidence, rep.Notes)
	}
	if len(rep.ToolCalls) != 6 || len(rep.Claims) == 0 || len(rep.Findings) != 0 {
		t.Errorf("%d calls (want 6), %d claims, %d findings (want 0)", len(rep.ToolCalls), len(rep.Claims), len(rep.Findings))
	}
	var text, js bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"no kernel evidence", "TOOL CALLS (6)", "Bash rm hello.js", "CLAIMS ("} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q", want)
		}
	}
	if strings.Contains(text.String(), "UNATTRIBUTED") {
		t.Error("a transcript-only report has no unattributed section")
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(js.Bytes(), &doc); err != nil || doc["kernel_evidence"] != false {
		t.Fatalf("json: %v %v", err, doc["kernel_evidence"])
	}
	if _, err := Run(t.Context(), Options{}); err != ErrNothing {
		t.Errorf("no input: %v", err)
	}
}

// TestRunStopsWhenCancelled: a cancelled context stops the pipeline with
// its error, whether the session is being read or only a transcript is.
func TestRunStopsWhenCancelled(t *testing.T) {
	sessPath, trPath, _ := writeRecorded(t, "claude")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for _, o := range []Options{
		{SessionPath: sessPath, Transcript: trPath},
		{SessionPath: sessPath, Transcript: TranscriptNone},
		{Transcript: trPath},
	} {
		rep, err := Run(ctx, o)
		if !errors.Is(err, context.Canceled) || rep != nil {
			t.Errorf("%+v: report %v, error %v; want context.Canceled", o, rep != nil, err)
		}
	}
	// The read loop itself looks at the context, not only the stages.
	if _, _, err := Replay(ctx, sessPath, EngineOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Replay with a cancelled context: %v, want context.Canceled", err)
	}
	if eng, _, err := Replay(t.Context(), sessPath, EngineOptions{}); err != nil || eng.Len() == 0 {
		t.Errorf("Replay: %v, error %v", eng, err)
	}
}

// TestRunNotes: an unclean close and lost events are said in the notes,
// and a session without a transcript says so too.
func TestRunNotes(t *testing.T) {
	sessPath, _, _ := writeRecorded(t, "gemini")
	rep, err := Run(t.Context(), Options{SessionPath: sessPath, Transcript: TranscriptNone})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.KernelEvidence || rep.Transcript != nil || rep.Summary == nil || rep.Session == nil {
		t.Fatalf("kernel evidence %v, transcript %v, summary %v", rep.KernelEvidence, rep.Transcript, rep.Summary)
	}
	if len(rep.Notes) == 0 || !strings.HasPrefix(rep.Notes[0], "no transcript found for this session") {
		t.Errorf("notes %q: want the missing transcript first", rep.Notes)
	}
	if rep.Summary.Events != rep.Session.Events || rep.Summary.Events == 0 {
		t.Errorf("summary counted %d events, the session holds %d", rep.Summary.Events, rep.Session.Events)
	}
}

// TestRunIntegrityNotes: what reading the session found wrong with the
// file is in the report: the verdict in the session's metadata, a note per
// problem, and a note saying a session was modified after recording.
func TestRunIntegrityNotes(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      string // SQL run on the closed session; ? is a chunk's data with a byte flipped
		integrity string
		notes     []string
	}{
		{name: "intact", integrity: session.IntegrityIntact},
		{
			name:      "exit code edited",
			edit:      `UPDATE meta SET value = replace(value, '"exit_code":0', '"exit_code":1') WHERE key = 'meta'`,
			integrity: session.IntegrityModified,
			notes:     []string{"session modified after recording", "session file: session modified after recording: the metadata"},
		},
		{
			name:      "chunk flipped",
			edit:      `UPDATE chunks SET data = ? WHERE first_seq = 1`,
			integrity: session.IntegrityDamaged,
			notes:     []string{"the session file is damaged", "session file: event"}, // "event 1:" or "events 1-N (N):", as the writer flushed
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sessPath, _, _ := writeRecorded(t, "gemini")
			if tc.edit != "" {
				editSession(t, sessPath, tc.edit)
			}
			rep, err := Run(t.Context(), Options{SessionPath: sessPath, Transcript: TranscriptNone})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Session.Integrity != tc.integrity {
				t.Errorf("integrity %q, want %q", rep.Session.Integrity, tc.integrity)
			}
			for _, want := range tc.notes {
				if !slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, want) }) {
					t.Errorf("notes %q: none starts with %q", rep.Notes, want)
				}
			}
			if tc.notes == nil && slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.HasPrefix(n, "session") }) {
				t.Errorf("an intact session has integrity notes: %q", rep.Notes)
			}
		})
	}
}

// editSession runs q on the session file at path, as someone editing it
// after recording would; a ? in q is the first chunk's data with a byte
// flipped.
func editSession(t *testing.T, path, q string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var args []any
	if strings.Contains(q, "?") {
		var data []byte
		if err := db.QueryRow("SELECT data FROM chunks WHERE first_seq = 1").Scan(&data); err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0x40
		args = append(args, data)
	}
	if res, err := db.Exec(q, args...); err != nil {
		t.Fatal(err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%s: %d rows changed, want 1", q, n)
	}
}

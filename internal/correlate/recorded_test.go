package correlate

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// The sessions in testdata/<agent> were recorded by `polygraph run` around
// the real agent CLIs playing test/e2e's attribution scenario (see
// test/e2e/attribution_test.go), with the run's temporary directory renamed
// /tmp/e2e-run. Every path and command of tool call N carries the marker
// pgcallNN; pgrogue marks what the agent's start-up hook did.

var reMarker = regexp.MustCompile(`pgcall\d\d|pgrogue`)

type recorded struct {
	events []*event.Event
	meta   session.Meta
	tr     *transcript.Transcript
}

func loadRecorded(t *testing.T, agent string) recorded {
	t.Helper()
	dir := filepath.Join("testdata", agent)
	var sess struct {
		session.Meta
		Transcript string `json:"transcript"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "session.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sess); err != nil {
		t.Fatal(err)
	}
	r := recorded{meta: sess.Meta}
	f := gunzip(t, filepath.Join(dir, "events.jsonl.gz"))
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		r.events = append(r.events, &e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	// Recorded before the sensor resolved descriptor paths: resolved here
	// as the session reader resolves them.
	fdpath.Resolve(r.events)
	r.tr, err = transcript.Parse(gunzip(t, filepath.Join(dir, "transcript.jsonl.gz")), sess.Transcript, transcript.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func gunzip(t *testing.T, path string) *gzip.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	return z
}

func markers(s string) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range reMarker.FindAllString(s, -1) {
		if !seen[m] {
			seen[m] = true
			out = append(out, m)
		}
	}
	return out
}

// TestRecordedSessions attributes the recorded sessions and holds them to
// what the end-to-end test measures: every marker-carrying event goes to
// the call its marker names (the hook's to none), the leftover process's
// late write is after the return, the model server is the API, and
// nothing else is left unattributed.
func TestRecordedSessions(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			r := loadRecorded(t, agent)
			res := Attribute(r.events, r.tr, r.meta, Options{})
			consistent(t, r.events, res)

			calls := map[string]string{}
			for _, tc := range r.tr.ToolCalls {
				for _, m := range markers(tc.Command + " " + strings.Join(tc.Argv, " ") + " " + strings.Join(tc.Paths, " ")) {
					calls[m] = tc.ID
				}
			}
			if len(calls) != 13 {
				t.Fatalf("%d marked calls, want 13", len(calls))
			}
			n, wrong := 0, 0
			for _, e := range r.events {
				at := res.Of(e.Seq)
				ms := markers(e.Path + " " + e.Path2 + " " + strings.Join(e.Args(), " "))
				if len(ms) != 1 {
					continue
				}
				n++
				if want := calls[ms[0]]; at.ToolCallID != want {
					wrong++
					t.Errorf("seq %d %s %s %v: call %q (%s %s), want %q", e.Seq, e.Kind, e.Path, e.Argv(), at.ToolCallID, at.Reason, at.Detail, want)
				}
			}
			t.Logf("%s: %d marked events, %d misattributed", agent, n, wrong)

			late := 0
			for _, e := range res.Unattributed {
				at := res.Of(e.Seq)
				switch {
				case at.AfterReturn:
					late++
					if at.ToolCallID != calls["pgcall06"] {
						t.Errorf("after-return event seq %d of call %q, want the leftover of call 06", e.Seq, at.ToolCallID)
					}
				case at.Detail == "no-call":
					// The hook's process (Claude Code, Gemini CLI).
				default:
					t.Errorf("unattributed seq %d %s pid %d %s %s %s:%d (%s)", e.Seq, e.Kind, e.PID, e.Comm, e.Path, e.Addr(), e.Port(), at.Detail)
				}
			}
			if late == 0 {
				t.Error("no after-return event")
			}
			for _, e := range r.events {
				if e.Kind == event.KindConnect && e.Addr() == "127.0.0.1" && e.Family() == "ipv4" {
					if at := res.Of(e.Seq); at.Reason != ReasonAgentAPI {
						t.Errorf("connect seq %d to %s:%d: %s", e.Seq, e.Addr(), e.Port(), at.Reason)
					}
				}
			}
		})
	}
}

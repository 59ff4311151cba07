package analysis

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// updateGolden rewrites testdata/golden/*.json from the current code:
// `go test ./internal/analysis -run Golden -update`. A change to a golden
// file is a change of behaviour and belongs in its own commit.
var updateGolden = flag.Bool("update", false, "rewrite the golden reports")

// reElapsed finds the session's wall time in the text summary, which runs
// to the moment the test closed the session file.
var reElapsed = regexp.MustCompile(`(\(exit -?\d+, )[0-9hmsµn.]+\)`)

// recordedDir holds the sessions recorded around the real agent CLIs
// (see internal/correlate/recorded_test.go).
const recordedDir = "../correlate/testdata"

// TestGoldenReports pins the whole JSON and text report of each recorded
// session: the events are written into a real session file, the
// transcript into a real file, and the report is made as `polygraph
// report SESSION --transcript FILE --format json` makes it. Any change of
// attribution, findings or rendering shows up as a diff here.
func TestGoldenReports(t *testing.T) {
	for _, agent := range []string{"claude", "codex", "gemini"} {
		t.Run(agent, func(t *testing.T) {
			sessPath, trPath, tmp := writeRecorded(t, agent)
			rep, err := Run(t.Context(), Options{SessionPath: sessPath, Transcript: trPath})
			if err != nil {
				t.Fatal(err)
			}
			var js, text bytes.Buffer
			if err := rep.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			loc := time.Local
			time.Local = time.UTC
			err = rep.WriteText(&text)
			time.Local = loc
			if err != nil {
				t.Fatal(err)
			}
			got := normalizeGolden(t, js.Bytes(), tmp)
			gotText := reElapsed.ReplaceAll([]byte(strings.ReplaceAll(text.String(), tmp, "TMP")), []byte("${1}ELAPSED)"))
			checkGolden(t, filepath.Join("testdata", "golden", agent+".json.gz"), got)
			checkGolden(t, filepath.Join("testdata", "golden", agent+".txt.gz"), gotText)
		})
	}
}

func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		zw.Write(got)
		zw.Close()
		if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	want, err := io.ReadAll(gunzipFile(t, path))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := 0; i < max(len(gl), len(wl)); i++ {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Fatalf("%s differs from the report at line %d:\n got: %s\nwant: %s", path, i+1, g, w)
			}
		}
	}
}

// normalizeGolden replaces what differs between runs (the temporary
// directory, the time the session file was closed) with fixed values.
func normalizeGolden(t *testing.T, js []byte, tmp string) []byte {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(bytes.ReplaceAll(js, []byte(tmp), []byte("TMP")), &doc); err != nil {
		t.Fatal(err)
	}
	if s, ok := doc["session"].(map[string]any); ok {
		s["ended_at"] = "ENDED"
	}
	if s, ok := doc["summary"].(map[string]any); ok {
		if _, ok := s["duration"]; ok {
			s["duration"] = "ELAPSED"
		}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// writeRecorded writes testdata/<agent> as a session file and a transcript
// file under a temporary directory, and returns their paths and the
// directory.
func writeRecorded(t *testing.T, agent string) (sessPath, trPath, tmp string) {
	t.Helper()
	dir := filepath.Join(recordedDir, agent)
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
	tmp = t.TempDir()
	w, err := session.Create(tmp, sess.Meta)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(gunzipFile(t, filepath.Join(dir, "events.jsonl.gz")))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		e := &event.Event{}
		if err := json.Unmarshal(sc.Bytes(), e); err != nil {
			t.Fatal(err)
		}
		e.Complete()
		w.Add(e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for stage, n := range sess.Lost {
		w.SetLost(stage, n)
	}
	if err := w.Close(sess.ExitCode); err != nil {
		t.Fatal(err)
	}
	trPath = filepath.Join(tmp, filepath.Base(sess.Transcript))
	tb, err := io.ReadAll(gunzipFile(t, filepath.Join(dir, "transcript.jsonl.gz")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trPath, tb, 0o600); err != nil {
		t.Fatal(err)
	}
	return w.Meta().Path, trPath, tmp
}

func gunzipFile(t *testing.T, path string) io.Reader {
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

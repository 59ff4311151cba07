// Package recorded gives tests and benchmarks the sessions recorded
// around the real agent CLIs (internal/correlate/testdata: Claude Code,
// Codex CLI and Gemini CLI playing test/e2e's attribution scenario under
// `polygraph run`) as they are on a host: a session file and the agent's
// transcript, analysed as `polygraph report` analyses them. Cut at a
// moment, they are the snapshots a live pipeline makes while the agent
// runs.
package recorded

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/session"
)

// Agents are the agents with a recorded session.
var Agents = []string{"claude", "codex", "gemini"}

// Session is one recorded session, read.
type Session struct {
	Meta session.Meta
	// Events are the recorded events in seq order.
	Events []*event.Event
	// TranscriptName is the transcript's file name; Transcript its bytes;
	// TranscriptPath where the agent wrote it.
	TranscriptName string
	TranscriptPath string
	Transcript     []byte
}

// dir is internal/correlate/testdata, found from this file.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "internal", "correlate", "testdata")
}

// Load reads the recorded session of agent.
func Load(agent string) (*Session, error) { return LoadAt(agent, "") }

// recordedRoot is the directory the recordings ran in: the agent's HOME
// and project were below it.
const recordedRoot = "/tmp/e2e-run"

// LoadAt reads the recorded session of agent as if it had run under root
// instead of recordedRoot ("" keeps it there): every path in its events,
// metadata and transcript moved, so its transcript can be put where
// discovery finds it (Store).
func LoadAt(agent, root string) (*Session, error) {
	move := func(b []byte) []byte { return b }
	if root != "" {
		move = func(b []byte) []byte {
			b = bytes.ReplaceAll(b, []byte(recordedRoot), []byte(root))
			// Claude Code's project directory is the cwd with every
			// character but letters and digits made a dash.
			return bytes.ReplaceAll(b, []byte(mangle(recordedRoot)), []byte(mangle(root)))
		}
	}
	d := filepath.Join(dir(), agent)
	var meta struct {
		session.Meta
		Transcript string `json:"transcript"`
	}
	b, err := os.ReadFile(filepath.Join(d, "session.json"))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(move(b), &meta); err != nil {
		return nil, fmt.Errorf("%s: %w", agent, err)
	}
	s := &Session{Meta: meta.Meta, TranscriptName: filepath.Base(meta.Transcript), TranscriptPath: meta.Transcript}
	evs, err := gunzip(filepath.Join(d, "events.jsonl.gz"))
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(move(evs)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		e := &event.Event{}
		if err := json.Unmarshal(sc.Bytes(), e); err != nil {
			return nil, fmt.Errorf("%s events: %w", agent, err)
		}
		e.Complete()
		s.Events = append(s.Events, e)
	}
	if s.Transcript, err = gunzip(filepath.Join(d, "transcript.jsonl.gz")); err != nil {
		return nil, err
	}
	s.Transcript = move(s.Transcript)
	return s, sc.Err()
}

// mangle is a path as Claude Code names its project directory after it.
func mangle(p string) string {
	b := []byte(p)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// Store writes the whole session into the polygraph home (home/sessions)
// and its transcript where the agent wrote it (TranscriptPath), as on the
// host that recorded it, so `report`, `ui` and discovery find both; it
// returns the session file. Load it with LoadAt a directory of the test's
// own first: TranscriptPath is below it.
func (s *Session) Store(home string) (string, error) {
	w, err := session.Create(home, s.Meta)
	if err != nil {
		return "", err
	}
	for _, e := range s.Events {
		c := *e
		w.Add(&c)
	}
	for stage, n := range s.Meta.Lost {
		w.SetLost(stage, n)
	}
	if err := w.Close(s.Meta.ExitCode); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(s.TranscriptPath), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(s.TranscriptPath, s.Transcript, 0o600); err != nil {
		return "", err
	}
	if chats := filepath.Dir(s.TranscriptPath); strings.Contains(chats, "/.gemini/tmp/") {
		// Gemini CLI names the project a directory is for in it.
		if err := os.WriteFile(filepath.Join(filepath.Dir(chats), ".project_root"), []byte(s.Meta.Cwd+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	return w.Meta().Path, nil
}

func gunzip(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return io.ReadAll(z)
}

// Start and End are when the recording began and ended.
func (s *Session) Start() time.Time { return s.Meta.StartedAt }
func (s *Session) End() time.Time   { return s.Meta.EndedAt }

// Analyze writes the session as it stood at until (zero: all of it)
// under dir, a session file and a transcript file, and analyses it. The
// events are those recorded by then, the transcript its lines written by
// then (a line is as old as the latest time stamp in it). The analysis's
// end time is the recording's, or, cut, unset: still running.
func (s *Session) Analyze(ctx context.Context, dir string, until time.Time) (*analysis.Analysis, error) {
	meta := s.Meta
	meta.Path = ""
	w, err := session.Create(dir, meta)
	if err != nil {
		return nil, err
	}
	for _, e := range s.Events {
		if !until.IsZero() && e.TS.After(until) {
			break
		}
		c := *e
		w.Add(&c)
	}
	for stage, n := range s.Meta.Lost {
		w.SetLost(stage, n)
	}
	if err := w.Close(s.Meta.ExitCode); err != nil {
		return nil, err
	}
	tr := filepath.Join(dir, s.TranscriptName)
	lines := transcriptUntil(s.Transcript, until)
	if err := os.WriteFile(tr, lines, 0o600); err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		tr = analysis.TranscriptNone // the agent has not written it yet
	}
	a, err := analysis.Analyze(ctx, analysis.Options{SessionPath: w.Meta().Path, Transcript: tr})
	if err != nil {
		return nil, err
	}
	// The file was closed now; the recording ended when it did.
	a.Meta.EndedAt = s.Meta.EndedAt
	if !until.IsZero() {
		a.Meta.EndedAt, a.Meta.CleanClose, a.Meta.ExitCode = time.Time{}, false, nil
	}
	return a, nil
}

// stamp finds the time stamps of a transcript line.
var stamp = regexp.MustCompile(`"(?:timestamp|startTime|lastUpdated)":"([0-9T:.\-]+Z)"`)

// transcriptUntil returns the lines of a JSONL transcript written by
// until: those before the first line with a time stamp after it.
func transcriptUntil(b []byte, until time.Time) []byte {
	if until.IsZero() {
		return b
	}
	var out []byte
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		for _, m := range stamp.FindAllSubmatch(line, -1) {
			if t, err := time.Parse(time.RFC3339Nano, string(m[1])); err == nil && t.After(until) {
				return out
			}
		}
		out = append(out, line...)
	}
	return out
}

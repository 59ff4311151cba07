// Package findings is polygraph's findings stream: one JSON object a line
// for every finding as soon as the live analysis decides it (and again
// when it changes or is withdrawn), with the session's start and end and
// any loss, for log pipelines, SIEMs and alerting. Its records are a
// contract (docs/schema/findings.v1.json, SchemaVersion): fields are
// added, never renamed or given another meaning within a version.
package findings

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// SchemaVersion is the version of the record format: the
// schema_version of every record and the version in the schema's name.
const SchemaVersion = 1

// The record types.
const (
	TypeFinding = "finding"
	TypeSession = "session"
	TypeLoss    = "loss"
)

// The statuses of a finding record: a finding first decided, changed
// since its last record (severity, tool call, evidence...), or no longer
// raised (what the agent's transcript later said explained it).
const (
	StatusNew       = "new"
	StatusUpdated   = "updated"
	StatusWithdrawn = "withdrawn"
	// StatusStarted and StatusEnded are a session record's.
	StatusStarted = "started"
	StatusEnded   = "ended"
)

// Record is one line of the stream.
type Record struct {
	SchemaVersion int    `json:"schema_version"`
	Type          string `json:"type"`
	Status        string `json:"status,omitempty"`
	// Time is when polygraph decided what the record says.
	Time    time.Time `json:"time"`
	Host    string    `json:"host"`
	Session string    `json:"session"`
	Agent   string    `json:"agent,omitempty"`

	// Finding records. Key names the finding for its whole life in the
	// stream (its rule and first evidence event), Revision counts its
	// records from 1.
	Key        string      `json:"key,omitempty"`
	Revision   int         `json:"revision,omitempty"`
	Rule       string      `json:"rule,omitempty"`
	Severity   string      `json:"severity,omitempty"`
	Title      string      `json:"title,omitempty"`
	Detail     string      `json:"detail,omitempty"`
	ToolCallID string      `json:"tool_call_id,omitempty"`
	Claim      string      `json:"claim,omitempty"`
	Evidence   []uint64    `json:"evidence,omitempty"`
	EventTime  *time.Time  `json:"event_time,omitempty"` // the first evidence event's
	Frameworks *Frameworks `json:"frameworks,omitempty"`
	Blocked    bool        `json:"blocked,omitempty"`
	// Process is the process of the first evidence event.
	Process *Process `json:"process,omitempty"`

	// Session records: the findings standing when it ended, by severity.
	Findings map[string]int `json:"findings,omitempty"`
	// Loss records: the live analysis's listener dropped Events events
	// (the session's record keeps them; the final findings were decided
	// from the stored session).
	Listener string `json:"listener,omitempty"`
	Events   uint64 `json:"events,omitempty"`
}

// Process names a process: its pid, its image (exec_id, as the session's
// events carry it), and what that image ran (the exec's binary and
// command line; absent when its exec was not recorded).
type Process struct {
	PID    uint32   `json:"pid"`
	ExecID string   `json:"exec_id"`
	Comm   string   `json:"comm,omitempty"`
	Exe    string   `json:"exe,omitempty"`
	Argv   []string `json:"argv,omitempty"`
}

// Frameworks are the external ids a finding maps to.
type Frameworks struct {
	ATTACK   []string `json:"attack,omitempty"`
	ATLAS    []string `json:"atlas,omitempty"`
	OWASPLLM []string `json:"owasp_llm,omitempty"`
	SAIF     []string `json:"saif,omitempty"`
}

// Writer writes records as JSON lines, each flushed as it is written so
// a reader tailing the file sees it at once. It is safe for concurrent
// use.
type Writer struct {
	mu    sync.Mutex
	w     *bufio.Writer
	c     io.Closer // nil for a writer the caller owns
	err   error
	count int
}

// NewWriter writes to w, which the caller closes.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Create opens the stream at path, "-" for standard output: a file is
// created, or appended to (a pipeline tails it across sessions).
func Create(path string, stdout io.Writer) (*Writer, error) {
	if path == "-" {
		return NewWriter(stdout), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, fmt.Errorf("findings stream: %w", err)
	}
	w := NewWriter(f)
	w.c = f
	return w, nil
}

// Write writes records; the first error is kept (Err) and later writes
// are skipped, so a full disk costs one message, not one per record.
func (w *Writer) Write(recs ...Record) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range recs {
		if w.err != nil {
			return
		}
		r.SchemaVersion = SchemaVersion
		b, err := json.Marshal(r)
		if err != nil {
			w.err = err
			return
		}
		b = append(b, '\n')
		if _, err := w.w.Write(b); err != nil {
			w.err = err
			return
		}
		if err := w.w.Flush(); err != nil {
			w.err = err
			return
		}
		w.count++
	}
}

// Err is the first write error, if any.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Close closes the file the writer opened and returns the first error.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c != nil {
		if err := w.c.Close(); err != nil && w.err == nil {
			w.err = err
		}
		w.c = nil
	}
	return w.err
}

// Read reads a stream back, one record a line (blank lines skipped).
func Read(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("findings stream line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}

// Standing folds a stream into the findings standing at its end, by
// session and key: each key's latest record, withdrawn ones left out.
func Standing(recs []Record) map[string]map[string]Record {
	out := map[string]map[string]Record{}
	for _, r := range recs {
		if r.Type != TypeFinding {
			continue
		}
		m := out[r.Session]
		if m == nil {
			m = map[string]Record{}
			out[r.Session] = m
		}
		if r.Status == StatusWithdrawn {
			delete(m, r.Key)
			continue
		}
		m[r.Key] = r
	}
	return out
}

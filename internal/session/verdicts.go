package session

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"github.com/polygraph/polygraph/internal/manifest"
	"io"
	"slices"
)

// Verdict is one integrity verdict row (see manifest.Verdict). Verdicts
// are part of the seal: Close digests them with the final metadata
// (stateHash), so a verdict edited, added or removed after recording makes
// the session read as modified.
type Verdict = manifest.Verdict

// verdicts is the Writer's share of the verdicts, under Writer.mu: those
// not yet committed. The committed ones are only in the file; the seal
// digests them from there, so a week of execs costs no memory.
type verdicts struct {
	unsaved []Verdict
	writing int // len(unsaved) handed to the open transaction
}

// AddVerdict stores v with the next commit. It never blocks on the disk,
// so the integrity pool may call it from its workers. A second verdict
// for the same exec and role replaces the first.
func (w *Writer) AddVerdict(v Verdict) {
	v.Data = slices.Clone(v.Data)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.verdicts.unsaved = append(w.verdicts.unsaved, v)
}

// writeVerdicts inserts the uncommitted verdicts inside the caller's
// transaction and, when st is not nil (the final state), digests every
// row of the table into it, read back the way the reader reads them.
// INSERT OR REPLACE makes writing a verdict again after a failed commit
// harmless.
func (w *Writer) writeVerdicts(st *stateHash) error {
	w.mu.Lock()
	rows := slices.Clone(w.verdicts.unsaved)
	w.verdicts.writing = len(rows)
	w.mu.Unlock()
	for _, v := range rows {
		if err := w.exec(`INSERT OR REPLACE INTO exec_verdicts (exec_id, role, path, sha256, status, data) VALUES (?, ?, ?, ?, ?, ?)`,
			v.ExecID, v.Role, v.Path, v.SHA256, v.Status, string(v.Data)); err != nil {
			return fmt.Errorf("write exec verdicts: %w", err)
		}
	}
	if st == nil {
		return nil
	}
	if err := hashVerdicts(w.conn, st); err != nil {
		return fmt.Errorf("digest exec verdicts: %w", err)
	}
	return nil
}

// verdictsCommitted drops the verdicts the committed transaction wrote
// from the unsaved list.
func (w *Writer) verdictsCommitted() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.verdicts.unsaved = w.verdicts.unsaved[w.verdicts.writing:]
	w.verdicts.writing = 0
}

func (s *stateHash) verdict(execID, role, path, sha, status, data string) {
	s.str("verdict")
	for _, v := range [...]string{execID, role, path, sha, status, data} {
		s.str(v)
	}
}

// verdictsQuery reads the verdicts in the order the seal digests them.
const verdictsQuery = "SELECT exec_id, role, path, sha256, status, data FROM exec_verdicts ORDER BY exec_id, role"

// hashVerdicts feeds the exec_verdicts rows, as stored, to st.
func hashVerdicts(c driverConn, st *stateHash) error {
	return scanVerdicts(c, func(v Verdict) { st.verdict(v.ExecID, v.Role, v.Path, v.SHA256, v.Status, string(v.Data)) })
}

func scanVerdicts(c driverConn, fn func(Verdict)) error {
	rows, err := query(c, verdictsQuery, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, 6)
	for {
		if err := rows.Next(row); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		fn(Verdict{ExecID: textCol(row[0]), Role: textCol(row[1]), Path: textCol(row[2]), SHA256: textCol(row[3]),
			Status: textCol(row[4]), Data: []byte(textCol(row[5]))})
	}
}

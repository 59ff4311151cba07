package session

import (
	"database/sql/driver"
	"fmt"
	"io"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
)

// v1EventCols are the columns readEventsV1 reads.
const (
	v1EventCols  = "seq, ts, kind, pid, tid, ppid, comm, exec_id, parent_exec_id, path, path2, data"
	nV1EventCols = 12
)

// readEventsV1 is readChunks for a version 1 file: a row per event.
func readEventsV1(c driverConn, paths *pathTable, in *interner, f Filter, fn func(*event.Event) error) error {
	// Every event goes through the resolver, the opens f may leave out
	// too: f is applied here rather than in the query.
	keep, fds := f.matcher(), fdpath.New()
	q := "SELECT " + v1EventCols + " FROM events ORDER BY seq"
	rows, err := query(c, q, nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, nV1EventCols)
	for {
		if err := rows.Next(row); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		ev, err := scanEventV1(row, paths, in)
		if err != nil {
			return err
		}
		fds.Event(ev)
		if keep != nil && !keep(ev) {
			continue
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
}

// scanEventV1 decodes one row of the version 1 events query (v1EventCols).
func scanEventV1(row []driver.Value, paths *pathTable, in *interner) (*event.Event, error) {
	var ints [5]int64 // seq, ts, pid, tid, ppid
	for i, col := range [...]int{0, 1, 3, 4, 5} {
		v, err := intCol(row[col])
		if err != nil {
			return nil, fmt.Errorf("%w: event %v: %s: %v", ErrCorrupt, row[0], strings.Split(v1EventCols, ", ")[col], err)
		}
		ints[i] = v
	}
	seq := ints[0]
	// Field by field: a composite literal would copy all 224 bytes of
	// the event, with write barriers, into memory that is already zero.
	ev := in.event()
	ev.Seq, ev.TS, ev.Kind = uint64(seq), timeOf(ints[1]), in.kind(textCol(row[2]))
	ev.PID, ev.TID, ev.PPID = uint32(ints[2]), uint32(ints[3]), uint32(ints[4])
	ev.Comm, ev.ExecID, ev.ParentExecID = in.str(textCol(row[6])), in.str(textCol(row[7])), in.str(textCol(row[8]))
	ev.Path, ev.Path2 = paths.get(row[9]), paths.get(row[10])
	var data []byte
	switch v := row[11].(type) {
	case []byte: // the writer stored its JSON as a BLOB
		data = v
	case string:
		data = []byte(v)
	}
	if len(data) > 0 {
		if err := decodeData(data, ev); err != nil {
			return nil, fmt.Errorf("%w: event %d: %v", ErrCorrupt, seq, err)
		}
	}
	ev.Complete()
	return ev, nil
}

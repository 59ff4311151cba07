package session

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"

	"github.com/polygraph/polygraph/internal/event"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrNotSession is wrapped by Open's error for a file that is not a
// polygraph session: not SQLite at all, or SQLite without our schema.
var ErrNotSession = errors.New("not a polygraph session file")

// ErrCorrupt is wrapped by errors for a session file whose content is
// damaged or cut short.
var ErrCorrupt = errors.New("session file is damaged")

// Reader reads one session file. It never writes to it.
type Reader struct {
	path string
	db   *sql.DB
	meta Meta
}

// Filter selects events. Empty fields select everything; within a field
// any value matches, and the fields combine with AND.
type Filter struct {
	Kinds []event.Kind
	PIDs  []uint32
}

// Open opens the session file at path read-only. It works on a file left
// behind by a killed writer (WAL present, never closed): Meta().CleanClose
// is then false and the events are those of every committed batch. A file
// that is not a session, or is damaged, gives a one-line error naming it.
func Open(path string) (*Reader, error) {
	r, err := open(path)
	if err != nil {
		return nil, fmt.Errorf("open session %s: %w", path, err)
	}
	return r, nil
}

func open(path string) (*Reader, error) {
	if err := checkFile(path); err != nil {
		return nil, err
	}
	// mode=ro: SQLite opens the database read-only. For a file a killed
	// writer left in WAL mode it still needs the -shm index; when that
	// file exists SQLite uses it read-only if it cannot write it (3.22+).
	db, err := sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}, "_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		return nil, explain(err)
	}
	r := &Reader{path: path, db: db}
	if err := r.load(); err != nil {
		db.Close()
		return nil, err
	}
	return r, nil
}

// checkFile looks at the raw file before SQLite does, to turn the common
// kinds of damage into clear messages: an empty or foreign file, or one
// cut short. A file with a non-empty -wal is left to SQLite, since the
// newest pages of a killed writer's session live only in the WAL.
func checkFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return pe.Err // the caller names the file
		}
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w (not a regular file)", ErrNotSession)
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return nil
	}
	if st.Size() == 0 {
		return fmt.Errorf("%w (empty file)", ErrNotSession)
	}
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if !bytes.HasPrefix(hdr[:n], []byte("SQLite format 3\x00")) {
		return fmt.Errorf("%w (file is not a database)", ErrNotSession)
	}
	if err != nil {
		return fmt.Errorf("%w: truncated to %d bytes", ErrCorrupt, st.Size())
	}
	pageSize := int64(binary.BigEndian.Uint16(hdr[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(hdr[28:32]))
	// The in-header size is valid only when the change counter matches
	// the version-valid-for number; older writers left it stale.
	valid := binary.BigEndian.Uint32(hdr[24:28]) == binary.BigEndian.Uint32(hdr[92:96])
	if valid && pageSize >= 512 && st.Size() < pages*pageSize {
		return fmt.Errorf("%w: truncated (%d bytes, the header says %d)", ErrCorrupt, st.Size(), pages*pageSize)
	}
	return nil
}

// load reads and checks the metadata.
func (r *Reader) load() error {
	ctx := context.Background()
	var appID, version int64
	if err := r.db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return explain(err)
	}
	if err := r.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return explain(err)
	}
	if appID != applicationID {
		return fmt.Errorf("%w (a SQLite database of another application)", ErrNotSession)
	}
	if version > schemaVersion {
		return fmt.Errorf("session file format %d is newer than this polygraph reads (%d); upgrade polygraph", version, schemaVersion)
	}
	var raw string
	err := r.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = 'meta'").Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w (no session metadata)", ErrNotSession)
	}
	if err != nil {
		return explain(err)
	}
	if err := json.Unmarshal([]byte(raw), &r.meta); err != nil {
		return fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	r.meta.Path = r.path
	r.meta.Lost = nil
	rows, err := r.db.QueryContext(ctx, "SELECT stage, count FROM lost ORDER BY stage")
	if err != nil {
		return explain(err)
	}
	defer rows.Close()
	for rows.Next() {
		var stage string
		var n int64
		if err := rows.Scan(&stage, &n); err != nil {
			return explain(err)
		}
		if r.meta.Lost == nil {
			r.meta.Lost = map[string]uint64{}
		}
		r.meta.Lost[stage] = uint64(n)
	}
	if err := rows.Err(); err != nil {
		return explain(err)
	}
	if !r.meta.CleanClose {
		// Never closed: the count in the metadata is stale, but seqs are
		// gap-free, so the largest one is the count.
		var n sql.NullInt64
		if err := r.db.QueryRowContext(ctx, "SELECT max(seq) FROM events").Scan(&n); err != nil {
			return explain(err)
		}
		r.meta.Events = uint64(n.Int64)
	}
	return nil
}

// explain turns SQLite's errors about unreadable files into ours.
func explain(err error) error {
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_NOTADB:
			return fmt.Errorf("%w (file is not a database)", ErrNotSession)
		case sqlite3.SQLITE_CORRUPT:
			return fmt.Errorf("%w (database disk image is malformed)", ErrCorrupt)
		}
	}
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("%w (%v)", ErrNotSession, err)
	}
	return err
}

// Meta returns the session's metadata. CleanClose is false when the
// writer never closed the session; Events is then the events present.
func (r *Reader) Meta() Meta { return r.meta }

// Path returns the file the Reader reads.
func (r *Reader) Path() string { return r.path }

// Events calls fn for every event f selects, in seq order, streaming. An
// error from fn stops the walk and is returned as is.
func (r *Reader) Events(f Filter, fn func(*event.Event) error) error {
	var where []string
	var args []any
	if len(f.Kinds) > 0 {
		where = append(where, "e.kind IN ("+placeholders(len(f.Kinds))+")")
		for _, k := range f.Kinds {
			args = append(args, string(k))
		}
	}
	if len(f.PIDs) > 0 {
		where = append(where, "e.pid IN ("+placeholders(len(f.PIDs))+")")
		for _, p := range f.PIDs {
			args = append(args, int64(p))
		}
	}
	q := `SELECT e.seq, e.ts, e.kind, e.pid, e.tid, e.ppid, e.comm, e.exec_id, e.parent_exec_id,
		p.s, p2.s, e.data
		FROM events e
		LEFT JOIN strings p ON p.id = e.path
		LEFT JOIN strings p2 ON p2.id = e.path2`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY e.seq"
	rows, err := r.db.QueryContext(context.Background(), q, args...)
	if err != nil {
		return fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return fmt.Errorf("read session %s: %w", r.path, explain(err))
		}
		if err := fn(ev); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	return nil
}

// scanEvent decodes the current row of the Events query.
func scanEvent(rows *sql.Rows) (*event.Event, error) {
	var (
		seq, ts, pid, tid, ppid int64
		kind, comm, execID      string
		parent, path, path2     sql.NullString
		data                    []byte
	)
	if err := rows.Scan(&seq, &ts, &kind, &pid, &tid, &ppid, &comm, &execID, &parent, &path, &path2, &data); err != nil {
		return nil, err
	}
	ev := &event.Event{
		Seq: uint64(seq), TS: timeOf(ts), Kind: event.Kind(kind),
		PID: uint32(pid), TID: uint32(tid), PPID: uint32(ppid),
		Comm: comm, ExecID: execID, ParentExecID: parent.String,
		Path: path.String, Path2: path2.String,
	}
	if len(data) > 0 {
		if err := decodeData(data, ev); err != nil {
			return nil, fmt.Errorf("%w: event %d: %v", ErrCorrupt, seq, err)
		}
	}
	return ev, nil
}

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// Leftovers returns the processes still running when tracing stopped.
func (r *Reader) Leftovers() ([]Leftover, error) {
	rows, err := r.db.QueryContext(context.Background(), "SELECT pid, exec_id, comm, argv FROM leftovers ORDER BY rowid")
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	defer rows.Close()
	var out []Leftover
	for rows.Next() {
		var l Leftover
		var pid int64
		var argv string
		if err := rows.Scan(&pid, &l.ExecID, &l.Comm, &argv); err != nil {
			return nil, fmt.Errorf("read session %s: %w", r.path, explain(err))
		}
		l.PID = uint32(pid)
		if err := json.Unmarshal([]byte(argv), &l.Argv); err != nil {
			return nil, fmt.Errorf("read session %s: %w: leftover %d: %v", r.path, ErrCorrupt, pid, err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	return out, nil
}

// Close releases the file.
func (r *Reader) Close() error { return r.db.Close() }

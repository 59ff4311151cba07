package session

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

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

// ErrLocked is wrapped by errors for a session file another process kept
// locked past the reader's busy timeout (5 s). It is not damage: reading
// around it would wait that long at every step.
var ErrLocked = errors.New("session file is locked by another process")

// Reader reads one session file. It never writes to it. A damaged file
// is read as far as it can be: Damage says what could not be.
type Reader struct {
	path       string
	db         *sql.DB
	meta       Meta
	version    int64  // the file's schemaVersion
	rawMeta    string // the meta row as stored, for the seal
	rawWriter  string // the writer row as stored
	seal       *seal  // nil when the writer never closed the session (or before version 3)
	unsealable bool   // what the seal covers is partly unreadable: it cannot be checked

	mu        sync.Mutex
	fileNote  []Damage // found before reading (a truncated file, damaged metadata)
	damage    []Damage // found by the last full read of the events
	checked   bool     // the events were read once
	integrity string
	warned    map[string]bool
	aux       *aux // the auxiliary tables, read once (aux.go)
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
	note, err := checkFile(path)
	if err != nil {
		return nil, err
	}
	// mode=ro: SQLite opens the database read-only. For a file a killed
	// writer left in WAL mode it still needs the -shm index; when that
	// file exists SQLite uses it read-only if it cannot write it (3.22+).
	pragmas := []string{"busy_timeout(5000)"}
	if note != "" {
		// SQLite refuses a file shorter than its header says unless the
		// schema is "writable"; the connection is read-only all the same.
		pragmas = append(pragmas, "writable_schema(1)")
	}
	db, err := sql.Open("sqlite", dsn(path, url.Values{"mode": {"ro"}, "_pragma": pragmas}))
	if err != nil {
		return nil, explain(err)
	}
	r := &Reader{path: path, db: db}
	if note != "" {
		r.fileNote = []Damage{{Problem: note + ": what follows the cut is lost"}}
	}
	if err := r.load(); err != nil {
		db.Close()
		if note != "" {
			// Whatever SQLite made of the cut, the cause is the cut.
			return nil, fmt.Errorf("%w: %s, too short to hold its metadata", ErrCorrupt, note)
		}
		return nil, err
	}
	return r, nil
}

// checkFile looks at the raw file before SQLite does, to turn the common
// kinds of damage into clear messages: an empty or foreign file, or one
// cut short in its header. A file cut short after its header is read for
// what it still holds; note then says how short it is. A file with a
// non-empty -wal is left to SQLite, since the newest pages of a killed
// writer's session live only in the WAL.
//
// Only regular files are read: a FIFO named *.db (or *.db-wal) in a
// sessions directory, which anything the user runs can make, blocked
// Open for ever. The file is opened non-blocking and checked on the
// descriptor, so a FIFO swapped in after a look at its name still cannot
// block; its companions, which SQLite opens itself, are checked by name.
func checkFile(path string) (note string, err error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if c, err := os.Lstat(path + suffix); err == nil && !c.Mode().IsRegular() {
			return "", fmt.Errorf("%w (its %s file is %s)", ErrNotSession, suffix, fileKind(c.Mode()))
		}
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		return "", nil
	}
	if st.Size() == 0 {
		return "", fmt.Errorf("%w (empty file)", ErrNotSession)
	}
	var hdr [100]byte
	n, err := io.ReadFull(f, hdr[:])
	if !bytes.HasPrefix(hdr[:n], []byte("SQLite format 3\x00")) {
		return "", fmt.Errorf("%w (file is not a database)", ErrNotSession)
	}
	if err != nil {
		return "", fmt.Errorf("%w: truncated to %d bytes", ErrCorrupt, st.Size())
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
		return fmt.Sprintf("file truncated (%d bytes, the header says %d)", st.Size(), pages*pageSize), nil
	}
	return "", nil
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
	if version < 1 {
		return fmt.Errorf("%w (format version %d)", ErrNotSession, version)
	}
	r.version = version
	rows, err := r.metaRows(ctx)
	if err != nil {
		return err
	}
	raw, ok := rows.vals["meta"]
	switch {
	case !ok && rows.damaged != nil:
		return fmt.Errorf("%w: its metadata is unreadable (%v)", ErrCorrupt, explain(rows.damaged))
	case !ok:
		return fmt.Errorf("%w (no session metadata)", ErrNotSession)
	}
	if err := json.Unmarshal([]byte(raw), &r.meta); err != nil {
		return fmt.Errorf("%w: metadata: %v", ErrCorrupt, err)
	}
	r.rawMeta = raw
	r.meta.Path = r.path
	// Computed here, never taken from the file.
	r.meta.InProgress, r.meta.Integrity = false, ""
	if r.version >= 3 {
		r.loadSeal(rows)
	}
	r.loadLost(ctx)
	if !r.meta.CleanClose {
		// Never closed: the count in the metadata is stale, but seqs are
		// gap-free, so the largest one is the count.
		// Only the last row is read, so a damaged page elsewhere does
		// not stop Open; Events then counts what it can read.
		q := "SELECT first_seq + count - 1 FROM chunks ORDER BY first_seq DESC LIMIT 1"
		if r.version == 1 {
			q = "SELECT max(seq) FROM events"
		}
		var n sql.NullInt64
		if err := r.db.QueryRowContext(ctx, q).Scan(&n); err == nil || errors.Is(err, sql.ErrNoRows) {
			r.meta.Events = uint64(n.Int64)
		}
		var id writerID
		if json.Unmarshal([]byte(r.rawWriter), &id) == nil {
			r.meta.InProgress = id.running()
		}
	}
	return nil
}

// loadSeal takes the rows a version 3 file adds to meta: the writer's
// identity and, once closed, the seal. When the meta table is damaged and
// either is missing, the seal cannot be checked: that is noted as damage,
// not taken for a session whose seal was removed.
func (r *Reader) loadSeal(rows metaRows) {
	r.rawWriter = rows.vals["writer"]
	raw, sealed := rows.vals["seal"]
	_, hasWriter := rows.vals["writer"]
	if rows.damaged != nil && (!sealed || !hasWriter) {
		r.unsealable = true
		r.fileNote = append(r.fileNote, Damage{Problem: fmt.Sprintf("its metadata is partly unreadable (%v): the seal cannot be checked", explain(rows.damaged))})
		return
	}
	if sealed {
		r.seal = new(seal)
		if err := json.Unmarshal([]byte(raw), r.seal); err != nil {
			r.seal = &seal{Digest: "malformed"}
		}
	}
}

// metaRows are the rows of the meta table that could be read, by key;
// damaged is why some could not (nil when all could).
type metaRows struct {
	vals    map[string]string
	damaged error
}

// maxMetaBytes bounds a meta row the reader takes (the metadata, the
// writer, the seal): the largest real one holds a command line and the
// machine's homes, far less. A larger row is damage or a forger's, and is
// not decoded.
const maxMetaBytes = 16 << 20

// metaRows reads the meta table by rowid, around damage: a damaged key
// index must not hide the metadata (or the seal, which would then read as
// removed). Only a table that is not there at all is an error.
func (r *Reader) metaRows(ctx context.Context) (metaRows, error) {
	m := metaRows{vals: map[string]string{}}
	err := r.raw(ctx, func(c driverConn) error {
		return tableScan{table: "meta", key: "rowid", cols: fmt.Sprintf("key, CASE WHEN length(value) <= %d THEN value END", maxMetaBytes), ncols: 2,
			row: func(_ int64, v []driver.Value) bool {
				if v[1] == nil {
					m.damaged = fmt.Errorf("%w: its %s row is larger than %d MiB", ErrCorrupt, textCol(v[0]), maxMetaBytes>>20)
					return true
				}
				m.vals[textCol(v[0])] = textCol(v[1])
				return true
			},
			bad: func(_ int64, err error) bool {
				if m.damaged == nil {
					m.damaged = err
				}
				return true
			},
		}.scan(ctx, c)
	})
	if err != nil {
		return m, explain(err)
	}
	return m, nil
}

// loadLost reads the lost-event counters by rowid, around damage; what
// cannot be read is noted: the session may have lost more than it says.
func (r *Reader) loadLost(ctx context.Context) {
	r.meta.Lost = nil
	var bad error
	err := r.raw(ctx, func(c driverConn) error {
		return tableScan{table: "lost", key: "rowid", cols: "stage, count", ncols: 2,
			row: func(_ int64, v []driver.Value) bool {
				n, err := intCol(v[1])
				if err != nil {
					bad = fmt.Errorf("%w: a count is not an integer", ErrCorrupt)
					return true
				}
				if r.meta.Lost == nil {
					r.meta.Lost = map[string]uint64{}
				}
				r.meta.Lost[textCol(v[0])] = uint64(n)
				return true
			},
			bad: func(_ int64, err error) bool {
				if bad == nil {
					bad = err
				}
				return true
			},
		}.scan(ctx, c)
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		r.unsealable = true
		r.fileNote = append(r.fileNote, Damage{Problem: fmt.Sprintf("its lost-event counters are unreadable (%v): events lost while recording may be more than it says", explain(err))})
	}
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
		case sqlite3.SQLITE_IOERR:
			return fmt.Errorf("%w (read error: %v)", ErrCorrupt, err)
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
			return fmt.Errorf("%w (%v)", ErrLocked, err)
		}
	}
	if err != nil && strings.Contains(err.Error(), "no such table") {
		return fmt.Errorf("%w (%v)", ErrNotSession, err)
	}
	return err
}

// Meta returns the session's metadata. CleanClose is false when the
// writer never closed the session; Events is then the events present,
// and InProgress tells whether the writer is still at it. Integrity is
// set once the events were read (Events without a filter, or Verify).
func (r *Reader) Meta() Meta {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.meta
	m.Integrity = r.integrity
	return m
}

// Digest returns the session's final digest as its seal records it, ""
// when it has none (never closed, or a format before version 3). It
// proves nothing by itself: compare it with a copy kept elsewhere
// (docs/integrity-of-record.md). Verify checks it against the file.
func (r *Reader) Digest() string {
	if r.seal == nil {
		return ""
	}
	return r.seal.Digest
}

// Path returns the file the Reader reads.
func (r *Reader) Path() string { return r.path }

// Events calls fn for every event f selects, in seq order, streaming, with
// descriptor-relative paths resolved (fdpath: an old session reads as one
// recorded now). An error from fn stops the walk and is returned as is.
// fn may keep the events; those of one call share their repeated strings
// (paths, comm, exec ids), so a million cost little more than the events.
//
// A damaged file is not an error: chunks that fail their checksum or
// cannot be read are skipped, each with a slog warning, and everything
// else is read. Damage and Meta().Integrity then say what was wrong.
func (r *Reader) Events(f Filter, fn func(*event.Event) error) error {
	return r.EventsContext(context.Background(), f, fn)
}

// EventsContext is Events, stopping with ctx's error once ctx is done:
// between events, and inside the scans that read around damage.
func (r *Reader) EventsContext(ctx context.Context, f Filter, fn func(*event.Event) error) error {
	var fnErr error
	var damage []Damage
	x, err := r.loadAux(ctx)
	if err != nil {
		return err
	}
	sums := x.hashes()
	err = r.raw(ctx, func(c driverConn) error {
		keep := func(ev *event.Event) error {
			sums.fill(ev)
			fnErr = fn(ev)
			return fnErr
		}
		return readTx(ctx, c, func(c driverConn, strs *pathTable, in *interner) error {
			if r.version == 1 {
				return readEventsV1(c, strs, in, f, keep)
			}
			var err error
			damage, err = r.readChunks(ctx, c, strs, f, keep)
			return err
		})
	})
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("read session %s: %w", r.path, ctx.Err())
		}
		return fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	r.settle(append(slices.Clone(x.damage), damage...))
	return nil
}

// raw runs f on one of the pool's connections, at the driver level:
// database/sql's locking, Scan conversions and copies cost about a second
// per million rows.
func (r *Reader) raw(ctx context.Context, f func(driverConn) error) error {
	conn, err := r.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(driverConn)
		if !ok {
			return fmt.Errorf("sqlite driver connection %T lacks ExecContext or PrepareContext", dc)
		}
		return f(c)
	})
}

// readTx runs read on c in one read transaction, with the strings table
// loaded inside it first, so that the table has every string the events
// refer to, even on a session a writer is still appending to.
func readTx(ctx context.Context, c driverConn, read func(c driverConn, strs *pathTable, in *interner) error) (err error) {
	if _, err := c.ExecContext(ctx, "BEGIN", nil); err != nil {
		return err
	}
	defer func() {
		// Not ctx: the transaction ends even when ctx is done.
		if _, rerr := c.ExecContext(context.Background(), "ROLLBACK", nil); err == nil {
			err = rerr
		}
	}()
	strs, err := loadStrings(ctx, c)
	if err != nil {
		return err
	}
	return read(c, strs, newInterner())
}

// matcher returns the test f makes of an event, nil when f selects all.
func (f Filter) matcher() func(*event.Event) bool {
	if len(f.Kinds) == 0 && len(f.PIDs) == 0 {
		return nil
	}
	return func(ev *event.Event) bool {
		return (len(f.Kinds) == 0 || slices.Contains(f.Kinds, ev.Kind)) &&
			(len(f.PIDs) == 0 || slices.Contains(f.PIDs, ev.PID))
	}
}

// query runs q on c.
func query(c driverConn, q string, args []driver.NamedValue) (driver.Rows, error) {
	return queryContext(context.Background(), c, q, args)
}

// queryContext runs q on c; SQLite stops it once ctx is done.
func queryContext(ctx context.Context, c driverConn, q string, args []driver.NamedValue) (driver.Rows, error) {
	st, err := c.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	qc, ok := st.(driver.StmtQueryContext)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("sqlite driver statement %T lacks QueryContext", st)
	}
	rows, err := qc.QueryContext(ctx, args)
	if err != nil {
		st.Close()
		return nil, err
	}
	return stmtRows{rows, st}, nil
}

// stmtRows closes its statement with the rows.
type stmtRows struct {
	driver.Rows
	st driver.Stmt
}

func (r stmtRows) Close() error { return errors.Join(r.Rows.Close(), r.st.Close()) }

// loadStrings reads the strings table: the strings events refer to by
// id. Rows SQLite cannot read are left out; the chunks whose strings
// they were then fail their checksum. The rows are not interned: the
// writer numbers a string again only once its cache (maxInterned) started
// over, so a map of every string (a few MiB of a million-event read)
// would share next to nothing.
func loadStrings(ctx context.Context, c driverConn) (*pathTable, error) {
	t := &pathTable{dense: []string{""}}
	err := tableScan{table: "strings", key: "id", cols: "s", ncols: 1,
		row: func(id int64, vals []driver.Value) bool {
			t.add(id, textCol(vals[0]))
			return true
		},
		bad: func(int64, error) bool { return true },
	}.scan(ctx, c)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// pathTable maps strings ids to strings. The writer numbers them 1, 2, 3,
// ...: they index a slice; any other id (a hand-edited file) goes to a map.
type pathTable struct {
	dense  []string
	sparse map[int64]string
}

func (t *pathTable) add(id int64, s string) {
	if id == int64(len(t.dense)) {
		t.dense = append(t.dense, s)
		return
	}
	if t.sparse == nil {
		t.sparse = map[int64]string{}
	}
	t.sparse[id] = s
}

// lookup returns the string with id.
func (t *pathTable) lookup(id int64) (string, bool) {
	if id >= 0 && id < int64(len(t.dense)) {
		return t.dense[id], id > 0
	}
	s, ok := t.sparse[id]
	return s, ok
}

// get returns the path of a version 1 path column's value: "" for NULL and, as the
// LEFT JOIN of events_view gives it, for an id not in the table.
func (t *pathTable) get(v driver.Value) string {
	id, ok := v.(int64)
	if !ok {
		return ""
	}
	if id >= 0 && id < int64(len(t.dense)) {
		return t.dense[id]
	}
	return t.sparse[id]
}

// intCol is an INTEGER column's value.
func intCol(v driver.Value) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	case []byte:
		return strconv.ParseInt(string(v), 10, 64)
	}
	return 0, fmt.Errorf("not an integer: %T", v)
}

// textCol is a TEXT column's value ("" for NULL).
func textCol(v driver.Value) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// Leftovers returns the processes still running when tracing stopped. A
// damaged table is read as far as it can be (loadAux); Damage says what
// was not.
func (r *Reader) Leftovers() ([]Leftover, error) {
	x, err := r.loadAux(context.Background())
	if err != nil {
		return nil, err
	}
	return x.leftovers, nil
}

// Close releases the file.
func (r *Reader) Close() error { return r.db.Close() }

// settle records what a full read found, and warns once about each
// problem.
func (r *Reader) settle(found []Damage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.damage = append(slices.Clone(r.fileNote), found...)
	r.checked = true
	r.integrity = integrityOf(r.version, r.seal != nil, r.damage)
	for _, d := range r.damage {
		msg := d.String()
		if r.warned[msg] {
			continue
		}
		if r.warned == nil {
			r.warned = map[string]bool{}
		}
		r.warned[msg] = true
		slog.Warn("session "+r.meta.ID+": "+msg, "path", r.path)
	}
}

// integrityOf sums up a check.
func integrityOf(version int64, sealed bool, damage []Damage) string {
	if slices.ContainsFunc(damage, func(d Damage) bool { return d.Modified }) {
		return IntegrityModified
	}
	switch {
	case len(damage) > 0:
		return IntegrityDamaged
	case version < 3:
		return IntegrityUnverifiable
	case !sealed:
		return IntegrityUnsealed
	}
	return IntegrityIntact
}

// Damage lists what the last Events call found wrong with the file, in
// seq order, each a one-line problem: events it could not read (and how
// many), chunks that failed their checksum, and evidence of changes after
// recording. Before the events are read it lists only what Open saw (a
// truncated file). The report shows these as notes.
func (r *Reader) Damage() []Damage {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.checked {
		out := slices.Clone(r.fileNote)
		if r.aux != nil {
			out = append(out, r.aux.damage...)
		}
		return out
	}
	return slices.Clone(r.damage)
}

// Verify reads every event, checking each chunk's checksum, the hash
// chain and the seal, and returns the verdict (an Integrity constant)
// with what was wrong. Meta().Integrity has the verdict from then on.
func (r *Reader) Verify() (string, []Damage, error) {
	if err := r.Events(Filter{}, func(*event.Event) error { return nil }); err != nil {
		return "", nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.integrity, slices.Clone(r.damage), nil
}

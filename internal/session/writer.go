package session

import (
	"context"
	"crypto/rand"
	"database/sql/driver"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/polygraph/polygraph/internal/event"

	"modernc.org/sqlite"
)

// Batching: the store goroutine commits after batchSize events or every
// flushInterval, whichever comes first, so a SIGKILL of polygraph loses at
// most about flushInterval plus what is still queued.
const (
	batchSize     = 1000
	flushInterval = 200 * time.Millisecond
	// queueSize bounds the events in flight between Add and the
	// pipeline: about 0.1 s at the sensor's peak rate, so a slow disk
	// shows up as back-pressure on Add rather than as unbounded memory.
	queueSize = 16384
	// maxInterned bounds the path cache; past it the cache starts over
	// and a path seen again gets a second strings row, which costs a few
	// bytes but keeps memory flat on a week-long `watch`.
	maxInterned = 1 << 17
)

// ErrClosed is returned by Close and Abort on a Writer that was already
// closed or aborted.
var ErrClosed = errors.New("session writer already closed")

// Writer appends events to one session file. Add, SetLost, SetLeftovers,
// SetUnavailable and Meta may be called from any goroutine. Behind Add is
// a two-stage pipeline owned by the Writer until Close or Abort: encode
// turns events into rows, store writes them to SQLite.
type Writer struct {
	path string
	conn driverConn // used by store, and by Create and Close around it

	// addMu orders seq assignment with the queue send, so the queue holds
	// events in seq order however many goroutines call Add.
	addMu   sync.Mutex
	closed  bool // guarded by addMu
	seq     atomic.Uint64
	queue   chan *event.Event
	batches chan *batch
	free    chan *batch   // written batches, for encode to reuse
	done    chan struct{} // closed when store has returned

	mu        sync.Mutex // guards the fields below
	meta      Meta
	lost      map[string]uint64
	leftovers []Leftover
	dirty     bool   // meta, lost or leftovers changed since the last commit
	err       error  // the first storage error; later events are dropped
	dropped   uint64 // events not stored because of err

	// Owned by encode.
	interned map[string]int64
	recent   [256]recentString // see id
	nextStr  int64
	cur      *batch // the batch being filled, whose rows new strings join

	// Owned by store (and by Close once store has returned).
	insChunk   *bulkInsert
	insStrings *bulkInsert
	inTx       bool
	pending    int
	inserted   uint64 // events inserted, committed or not
	committed  uint64 // events in committed transactions
}

// Create starts a new session file <home>/sessions/<id>.db and returns a
// Writer for it. It fills meta.ID (UTC start time plus 6 random hex
// digits), meta.Path and meta.StartedAt when they are zero. Under sudo the
// file, its -wal and -shm companions and any directory Create made belong
// to the invoking user.
func Create(home string, meta Meta) (*Writer, error) {
	if meta.StartedAt.IsZero() {
		meta.StartedAt = time.Now()
	}
	dir := filepath.Join(home, "sessions")
	if err := mkdirOwned(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create session: %w", err)
	}
	var path string
	for attempt := 0; ; attempt++ {
		id := meta.ID
		if id == "" {
			id = newID(meta.StartedAt)
		}
		path = filepath.Join(dir, id+".db")
		// O_EXCL: never append to someone else's session, and 0600
		// because argv and paths can hold secrets. SQLite gives the -wal
		// and -shm files the main file's mode and, as root, its owner.
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) && meta.ID == "" && attempt < 10 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
		f.Close()
		meta.ID = id
		break
	}
	meta.Path = path
	meta.CleanClose = false
	meta.Events = 0
	meta.Error = ""
	if err := chownToInvoker(path); err != nil {
		removeFiles(path)
		return nil, fmt.Errorf("create session: %w", err)
	}
	w, err := newWriter(path, meta)
	if err != nil {
		removeFiles(path)
		return nil, fmt.Errorf("create session %s: %w", path, err)
	}
	return w, nil
}

// newID makes a session id: the start time in UTC to the second, so ids
// sort by start time, and 24 random bits so two sessions started in the
// same second do not collide.
func newID(t time.Time) string {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return t.UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b[:])
}

// newWriter opens the freshly created empty file, lays down the schema and
// the initial metadata, and starts the pipeline.
func newWriter(path string, meta Meta) (w *Writer, err error) {
	// The writer talks to the driver directly rather than through
	// database/sql: it is the connection's only user, and skipping the
	// pool's locking and argument conversion is a third of the cost of an
	// insert.
	params := url.Values{"_pragma": {"synchronous(NORMAL)", "busy_timeout(5000)", "temp_store(MEMORY)", "page_size(16384)", "cache_size(-32768)"}}
	dc, err := new(sqlite.Driver).Open(dsn(path, params))
	if err != nil {
		return nil, err
	}
	conn, ok := dc.(driverConn)
	if !ok {
		dc.Close()
		return nil, fmt.Errorf("sqlite driver connection %T lacks ExecContext or PrepareContext", dc)
	}
	w = &Writer{
		path:     path,
		conn:     conn,
		queue:    make(chan *event.Event, queueSize),
		batches:  make(chan *batch, 4),
		free:     make(chan *batch, 8),
		done:     make(chan struct{}),
		meta:     meta,
		lost:     map[string]uint64{},
		interned: map[string]int64{},
	}
	defer func() {
		if err != nil {
			w.closeConn()
		}
	}()
	for k, v := range meta.Lost {
		w.lost[k] = v
	}
	// WAL: readers (the UI, `events` on a live session) never block the
	// writer, and a killed writer leaves every committed batch readable.
	// synchronous=NORMAL only risks the last commits on power loss.
	if err := w.exec("PRAGMA journal_mode=WAL"); err != nil {
		return nil, err
	}
	if err := w.exec("BEGIN"); err != nil {
		return nil, err
	}
	setup := []string{
		schema,
		fmt.Sprintf("PRAGMA application_id=%d", applicationID),
		fmt.Sprintf("PRAGMA user_version=%d", schemaVersion),
	}
	for _, q := range setup {
		if err := w.exec(q); err != nil {
			w.exec("ROLLBACK")
			return nil, err
		}
	}
	if err := w.writeState(); err != nil {
		w.exec("ROLLBACK")
		return nil, err
	}
	if err := w.exec("COMMIT"); err != nil {
		return nil, err
	}
	// The first commit created the -wal and -shm files; SQLite already
	// gave them the main file's owner when we are root, this makes sure.
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := chownToInvoker(p); err != nil {
			return nil, err
		}
	}
	if err := w.prepareInserts(); err != nil {
		return nil, err
	}
	go w.encode()
	go w.store()
	return w, nil
}

// driverConn is what the writer needs of a modernc.org/sqlite connection.
type driverConn interface {
	driver.Conn
	driver.ExecerContext
	driver.ConnPrepareContext
}

// exec runs one statement on the writer's connection.
func (w *Writer) exec(q string, args ...driver.Value) error {
	_, err := w.conn.ExecContext(context.Background(), q, named(args))
	return err
}

// named numbers args for the driver.
func named(args []driver.Value) []driver.NamedValue {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	return nv
}

// Strings are inserted with multi-row statements: bulkSizes rows at a
// time, largest first, so a batch of any length takes a handful of
// statements.
var bulkSizes = []int{64, 16, 4, 1}

// Column lists of the two tables the pipeline fills.
const (
	chunkCols  = "first_seq, count, first_ts, min_ts, max_ts, data"
	nChunkCols = 6
	stringCols = "id, s"
	nStrCols   = 2
)

// bulkInsert is a table's prepared multi-row inserts, one per bulkSizes.
type bulkInsert struct {
	cols  int
	sizes []int               // rows per statement, largest first
	stmts []driver.Stmt       // parallel to sizes
	args  []driver.NamedValue // reused for every statement
}

// prepareInserts prepares the chunk and string inserts.
func (w *Writer) prepareInserts() error {
	prep := func(table, cols string, n int, sizes []int) (*bulkInsert, error) {
		b := &bulkInsert{cols: n, sizes: sizes, args: make([]driver.NamedValue, sizes[0]*n)}
		row := "(" + placeholders(n) + ")"
		for _, size := range sizes {
			q := "INSERT INTO " + table + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", size), ", ")
			st, err := w.conn.PrepareContext(context.Background(), q)
			if err != nil {
				return nil, err
			}
			b.stmts = append(b.stmts, st)
		}
		return b, nil
	}
	var err error
	if w.insChunk, err = prep("chunks", chunkCols, nChunkCols, []int{1}); err != nil {
		return err
	}
	w.insStrings, err = prep("strings", stringCols, nStrCols, bulkSizes)
	return err
}

// insert writes vals, a whole number of rows, with as few statements as
// the prepared sizes allow.
func (b *bulkInsert) insert(vals []driver.Value) error {
	ctx := context.Background()
	for i, st := range b.stmts {
		n := b.sizes[i] * b.cols
		for len(vals) >= n {
			a := b.args[:n]
			for j := range a {
				a[j] = driver.NamedValue{Ordinal: j + 1, Value: vals[j]}
			}
			if _, err := st.(driver.StmtExecContext).ExecContext(ctx, a); err != nil {
				return err
			}
			vals = vals[n:]
		}
	}
	clear(b.args) // drop the references to the batch's strings
	return nil
}

// close releases the prepared statements.
func (b *bulkInsert) close() error {
	if b == nil {
		return nil
	}
	var errs []error
	for _, st := range b.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// closeConn releases the statements and the connection.
func (w *Writer) closeConn() error {
	return errors.Join(w.insChunk.close(), w.insStrings.close(), w.conn.Close())
}

// Meta returns the session's metadata as it stands: Events counts the
// events added so far, Lost the counters set so far.
func (w *Writer) Meta() Meta {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := w.meta
	m.Lost = maps.Clone(w.lost)
	if len(m.Lost) == 0 {
		m.Lost = nil
	}
	m.Unavailable = slices.Clone(w.meta.Unavailable)
	if !m.CleanClose {
		m.Events = w.seq.Load()
	}
	return m
}

// Add assigns ev the next seq (1, 2, 3, ... without gaps) and queues it
// for the writer goroutine. It blocks only while the bounded queue is
// full. The Writer keeps ev: the caller may go on reading it but must not
// change it. Events added after Close or Abort are dropped.
func (w *Writer) Add(ev *event.Event) {
	w.addMu.Lock()
	defer w.addMu.Unlock()
	if w.closed {
		return
	}
	ev.Seq = w.seq.Add(1)
	w.queue <- ev
}

// SetLost records that n events were lost at stage (a ring buffer or a
// pipeline stage). n is the running total, not an increment; the stored
// value is replaced at the next commit.
func (w *Writer) SetLost(stage string, n uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lost[stage] = n
	w.dirty = true
}

// SetLeftovers records the processes of the traced tree still running
// when tracing stopped, replacing any list set before.
func (w *Writer) SetLeftovers(l []Leftover) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.leftovers = slices.Clone(l)
	w.dirty = true
}

// SetRootPID records the pid of the traced tree's root once it is known
// (run starts the command after the session exists).
func (w *Writer) SetRootPID(pid int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.RootPID = pid
	w.dirty = true
}

// SetUnavailable records the sensor features the kernel refused.
func (w *Writer) SetUnavailable(features []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.Unavailable = slices.Clone(features)
	w.dirty = true
}

// batch is a run of consecutive events encoded as one chunk, with the
// strings rows they introduce, passed from the encoder to the store
// goroutine and back for reuse.
type batch struct {
	firstSeq uint64
	n        int   // events
	firstTS  int64 // tsOf the first event's time
	minTS    int64
	maxTS    int64
	data     []byte         // the events' records (chunk.go)
	strings  []driver.Value // nStrCols per new string
	row      []driver.Value // the chunk's row, built by write
}

// maxBatch bounds the events the encoder packs into one chunk.
const maxBatch = 256

// encode is the first pipeline goroutine: it encodes queued events into
// chunks (ids for interned strings) on one core while store spends the
// other on SQLite.
func (w *Writer) encode() {
	defer close(w.batches)
	for ev := range w.queue {
		var b *batch
		select {
		case b = <-w.free:
		default:
			b = &batch{data: make([]byte, 0, 32<<10), row: make([]driver.Value, nChunkCols)}
		}
		w.cur = b
		w.encodeInto(b, ev)
	fill:
		for b.n < maxBatch {
			select {
			case ev, ok := <-w.queue:
				if !ok {
					break fill
				}
				w.encodeInto(b, ev)
			default:
				break fill
			}
		}
		w.cur = nil
		w.batches <- b
	}
}

// recycle hands a written batch back to encode.
func (w *Writer) recycle(b *batch) {
	clear(b.strings) // drop the references to this batch's strings
	clear(b.row)
	b.n, b.data, b.strings = 0, b.data[:0], b.strings[:0]
	select {
	case w.free <- b:
	default:
	}
}

// encodeInto appends ev's record to b.
func (w *Writer) encodeInto(b *batch, ev *event.Event) {
	ts := tsOf(ev.TS)
	if b.n == 0 {
		b.firstSeq, b.firstTS, b.minTS, b.maxTS = ev.Seq, ts, ts, ts
	}
	b.minTS, b.maxTS = min(b.minTS, ts), max(b.maxTS, ts)
	b.data = appendEvent(b.data, ev, b.firstTS, w)
	b.n++
}

// id returns the strings id for s, assigning a new one and adding its
// row to the batch being filled the first time s is seen. Ids are
// assigned here, not by SQLite, so encoding needs no round trip to the
// database.
func (w *Writer) id(s string) int64 {
	// The sensor's decoder hands out one copy of each comm, exec id,
	// access mode and repeated path, so the same string usually comes
	// back as the same pointer: a small cache by address answers most
	// lookups without hashing the text. An entry holds its string, so
	// its address cannot be reused for another while it is there.
	p := unsafe.StringData(s)
	r := &w.recent[(uintptr(unsafe.Pointer(p))>>3^uintptr(len(s)))%uintptr(len(w.recent))]
	if unsafe.StringData(r.s) == p && len(r.s) == len(s) && p != nil {
		return r.id
	}
	id, ok := w.interned[s]
	if !ok {
		if len(w.interned) >= maxInterned {
			clear(w.interned)
		}
		w.nextStr++
		id = w.nextStr
		w.interned[s] = id
		w.cur.strings = append(w.cur.strings, id, s)
	}
	r.s, r.id = s, id
	return id
}

// recentString is an entry of Writer.recent.
type recentString struct {
	s  string
	id int64
}

// store is the second pipeline goroutine: it inserts batches inside a
// transaction and commits every batchSize events or flushInterval.
func (w *Writer) store() {
	defer close(w.done)
	tick := time.NewTicker(flushInterval)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-w.batches:
			if !ok {
				w.commit()
				return
			}
			w.write(b)
			w.recycle(b)
			if w.pending >= batchSize {
				w.commit()
			}
		case <-tick.C:
			w.commit()
		}
	}
}

// write inserts one batch into the open transaction, opening one if needed.
func (w *Writer) write(b *batch) {
	n := b.n
	err := w.insertBatch(b)
	if err != nil {
		w.fail(err)
		w.mu.Lock()
		w.dropped += uint64(n)
		w.mu.Unlock()
		return
	}
	w.pending += n
	w.inserted += uint64(n)
}

// insertBatch inserts b's strings and events, opening a transaction if
// none is open.
func (w *Writer) insertBatch(b *batch) error {
	if err := w.storeErr(); err != nil {
		return err
	}
	if !w.inTx {
		if err := w.exec("BEGIN"); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		w.inTx = true
	}
	if err := w.insStrings.insert(b.strings); err != nil {
		return fmt.Errorf("insert paths: %w", err)
	}
	b.row[0], b.row[1], b.row[2], b.row[3], b.row[4], b.row[5] =
		int64(b.firstSeq), int64(b.n), b.firstTS, b.minTS, b.maxTS, b.data
	if err := w.insChunk.insert(b.row); err != nil {
		return fmt.Errorf("insert events %d-%d: %w", b.firstSeq, b.firstSeq+uint64(b.n)-1, err)
	}
	return nil
}

// commit writes changed metadata and commits the open transaction.
func (w *Writer) commit() {
	if w.storeErr() != nil {
		return
	}
	w.mu.Lock()
	dirty := w.dirty
	w.mu.Unlock()
	if !w.inTx && !dirty {
		return
	}
	if !w.inTx {
		if err := w.exec("BEGIN"); err != nil {
			w.fail(fmt.Errorf("begin: %w", err))
			return
		}
		w.inTx = true
	}
	if dirty {
		if err := w.writeState(); err != nil {
			w.fail(err)
			return
		}
	}
	if err := w.exec("COMMIT"); err != nil {
		w.fail(fmt.Errorf("commit: %w", err))
		return
	}
	w.inTx = false
	w.pending = 0
	w.committed = w.inserted
}

// writeState stores the metadata, the lost counters and the leftovers
// inside the caller's transaction and clears the dirty flag.
func (w *Writer) writeState() error {
	w.mu.Lock()
	m := w.meta
	lost := maps.Clone(w.lost)
	left := slices.Clone(w.leftovers)
	w.dirty = false
	w.mu.Unlock()

	m.Lost = nil // the lost table is the record
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode meta: %w", err)
	}
	if err := w.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('meta', ?)`, string(b)); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	for _, stage := range slices.Sorted(maps.Keys(lost)) {
		if err := w.exec(`INSERT INTO lost (stage, count) VALUES (?, ?)
			ON CONFLICT (stage) DO UPDATE SET count = excluded.count`, stage, int64(lost[stage])); err != nil {
			return fmt.Errorf("write lost counters: %w", err)
		}
	}
	if err := w.exec(`DELETE FROM leftovers`); err != nil {
		return fmt.Errorf("write leftovers: %w", err)
	}
	for _, l := range left {
		argv, err := json.Marshal(l.Argv)
		if err != nil {
			return fmt.Errorf("encode leftover %d: %w", l.PID, err)
		}
		if err := w.exec(`INSERT INTO leftovers (pid, exec_id, comm, argv) VALUES (?, ?, ?, ?)`,
			int64(l.PID), l.ExecID, l.Comm, string(argv)); err != nil {
			return fmt.Errorf("write leftovers: %w", err)
		}
	}
	return nil
}

// fail records the first storage error and abandons the open
// transaction; from then on events are counted as dropped.
func (w *Writer) fail(err error) {
	w.mu.Lock()
	if w.err == nil {
		w.err = err
	}
	w.mu.Unlock()
	if w.inTx {
		w.exec("ROLLBACK")
		w.inTx = false
		w.mu.Lock()
		w.dropped += w.inserted - w.committed
		w.mu.Unlock()
		w.inserted = w.committed
	}
}

// storeErr returns the storage error that stopped the writer, if any.
func (w *Writer) storeErr() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// stop closes the queue and waits for the writer goroutine to finish what
// was queued. It returns ErrClosed when the Writer was already stopped.
func (w *Writer) stop() error {
	w.addMu.Lock()
	if w.closed {
		w.addMu.Unlock()
		return ErrClosed
	}
	w.closed = true
	close(w.queue)
	w.addMu.Unlock()
	<-w.done
	return nil
}

// Close flushes every queued event and completes the metadata: ended_at,
// the exit code of the traced command (nil when there was none), the
// event count and clean_close. The file is then switched out of WAL mode,
// so it is one self-contained file that a reader without write access to
// the directory can open.
func (w *Writer) Close(exitCode *int) error {
	if err := w.stop(); err != nil {
		return err
	}
	w.mu.Lock()
	storeErr := w.err
	if w.dropped > 0 {
		w.lost["store"] += w.dropped
	}
	w.meta.EndedAt = time.Now()
	w.meta.ExitCode = exitCode
	w.meta.CleanClose = storeErr == nil
	w.meta.Events = w.committed
	w.dirty = true
	w.mu.Unlock()

	var errs []error
	if storeErr != nil {
		errs = append(errs, storeErr)
	} else {
		errs = append(errs, w.finish())
	}
	errs = append(errs, w.closeConn())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close session %s: %w", w.path, err)
	}
	return nil
}

// finish writes the final metadata and makes the file self-contained.
func (w *Writer) finish() error {
	if err := w.exec("BEGIN"); err != nil {
		return err
	}
	if err := w.writeState(); err != nil {
		w.exec("ROLLBACK")
		return err
	}
	if err := w.exec("COMMIT"); err != nil {
		return err
	}
	if err := w.exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	// Leaving WAL mode needs the file to itself; a reader still open on
	// the live session (the UI, say) keeps it in WAL mode, which is fine:
	// everything is committed and checkpointed either way.
	if err := w.exec("PRAGMA busy_timeout=200"); err != nil {
		return err
	}
	if err := w.exec("PRAGMA journal_mode=DELETE"); err != nil {
		slog.Debug("session: staying in WAL mode", "path", w.path, "error", err)
	}
	return nil
}

// Abort stops the writer and removes the session file and its companions,
// for when setup failed before anything worth keeping was recorded.
func (w *Writer) Abort() error {
	if err := w.stop(); err != nil {
		return err
	}
	errs := []error{w.closeConn(), removeFiles(w.path)}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("abort session %s: %w", w.path, err)
	}
	return nil
}

// removeFiles deletes a session file and whatever SQLite left beside it.
func removeFiles(path string) error {
	var errs []error
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

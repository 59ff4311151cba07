package session

import (
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
	"sync"
	"sync/atomic"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"

	"modernc.org/sqlite"
)

// Batching: the store goroutine commits after batchSize events or every
// flushInterval, whichever comes first, so a SIGKILL of polygraph loses at
// most about flushInterval plus what is still queued. A commit costs
// ~0.4 ms of the store goroutine (the WAL frames and their index), so
// batchSize is large enough that the interval decides below ~40,000
// events/s: an agent's tree at full speed commits five times a second,
// not thirty.
const (
	batchSize     = 8192
	flushInterval = 200 * time.Millisecond
	// queueSize bounds the events in flight between Add and the
	// pipeline: about 0.1 s at the sensor's peak rate, so a slow disk
	// shows up as back-pressure on Add rather than as unbounded memory.
	queueSize = 16384
	// freeBatches is how many written batches wait for encode to reuse
	// them: as many as a commit holds at the agent burst's rate (a batch
	// is what was queued when encode took it, often a few dozen events),
	// so their 32 KiB buffers are reused, not allocated anew.
	freeBatches = 64
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
	verdicts  verdicts    // see AddVerdict
	dirty     bool        // meta, lost or leftovers changed since the last commit
	onFault   func(Fault) // see OnFault
	faultErr  error       // the fault being ridden out, for Err
	digest    string      // the seal's digest, once Close wrote it
	writerRow string      // the meta row 'writer' (writerID)

	// Owned by encode.
	interned map[string]int64
	recent   [256]recentString // see id
	nextStr  int64
	cur      *batch // the batch being filled, whose rows new strings join

	// Owned by store (and by Close once store has returned).
	insChunk   *bulkInsert
	insStrings *bulkInsert
	inTx       bool
	pending    int      // events in the open transaction
	tx         []*batch // the batches in the open transaction
	stored     uint64   // events in committed transactions
	// The hash chain (integrity.go): chain and strsEnd advance as
	// batches are accepted, the stored ones as they are committed.
	chain        [32]byte
	strsEnd      int64
	storedChain  [32]byte
	storedChunks int64
	// Fault handling (fault.go).
	fault     error          // the write error being ridden out; nil when healthy
	cause     string         // its Lost stage
	lastTry   time.Time      // of the disk, while faulted
	backlog   []*batch       // accepted batches waiting for the disk
	heldBytes int            // their size
	carry     []driver.Value // strings of dropped batches, for the next kept one
	dropping  bool           // the budget ran out during this fault
}

// Create starts a new session file <home>/sessions/<id>.db and returns a
// Writer for it. It fills meta.ID (UTC start time plus 6 random hex
// digits), meta.Path and meta.StartedAt when they are zero. Under sudo,
// recording into the invoking user's default home, the file goes to the
// sudo store instead (<sudo store>/users/<uid>/sessions, see Dirs) and it,
// its -wal and -shm companions and its directory belong to root, readable
// by that user only: the traced tree runs as that user and must not be
// able to rewrite its own record. With any other home under sudo they
// belong to the invoking user, as before.
func Create(home string, meta Meta) (*Writer, error) {
	if meta.StartedAt.IsZero() {
		meta.StartedAt = time.Now()
	}
	dir, g, err := stores.CreateDir(home)
	if err != nil {
		return nil, fmt.Errorf("create session in %s: %w", dir, describe(err))
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
			return nil, fmt.Errorf("create session %s: %w", path, describe(err))
		}
		f.Close()
		meta.ID = id
		break
	}
	meta.Path = path
	meta.CleanClose = false
	meta.Events = 0
	meta.Error, meta.InProgress, meta.Integrity = "", false, ""
	fail := func(err error) (*Writer, error) {
		removeFiles(path)
		return nil, fmt.Errorf("create session %s: %w", path, describe(err))
	}
	if err := g.Own(path); err != nil {
		return fail(err)
	}
	if err := writeReserve(reservePath(path)); err != nil {
		return fail(err)
	}
	// Under a guard the reserve stays root's 0600: nobody else needs it.
	if g == nil {
		if err := stores.ChownToInvoker(reservePath(path)); err != nil {
			return fail(err)
		}
	}
	w, err := newWriter(path, meta, g)
	if err != nil {
		return fail(err)
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
// the initial metadata, and starts the pipeline. Its results are not
// named: a deferred cleanup that read a named w would find it already
// set to nil by the failing return.
func newWriter(path string, meta Meta, g *stores.Guard) (*Writer, error) {
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
	w := &Writer{
		path:     path,
		conn:     conn,
		queue:    make(chan *event.Event, queueSize),
		batches:  make(chan *batch, 4),
		free:     make(chan *batch, freeBatches),
		done:     make(chan struct{}),
		meta:     meta,
		lost:     map[string]uint64{},
		interned: map[string]int64{},
	}
	ok = false
	defer func() {
		if !ok {
			w.closeConn()
		}
	}()
	id, err := json.Marshal(selfIdentity())
	if err != nil {
		return nil, err
	}
	w.writerRow = string(id)
	w.chain = chainSeed(meta.ID)
	w.storedChain = w.chain
	for k, v := range meta.Lost {
		w.lost[k] = v
	}
	// WAL: readers (the UI, `events` on a live session) never block the
	// writer, and a killed writer leaves every committed batch readable.
	// synchronous=NORMAL only risks the last commits on power loss.
	if err := w.exec("PRAGMA journal_mode=WAL"); err != nil {
		return nil, err
	}
	if err := w.setup(); err != nil {
		return nil, err
	}
	// The first commit created the -wal and -shm files; SQLite already
	// gave them the main file's owner and mode when we are root, this
	// makes sure (and sets a guard's ACL). A reader without write access
	// uses the -shm read-only (SQLite 3.22+), so a live session reads.
	for _, p := range []string{path + "-wal", path + "-shm"} {
		if err := g.Own(p); err != nil {
			return nil, err
		}
	}
	if err := w.prepareInserts(); err != nil {
		return nil, err
	}
	ok = true
	go w.encode()
	go w.store()
	return w, nil
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

// Digest returns the session's final digest once Close has written the
// seal ("" before): keep a copy elsewhere (another host) to prove later
// that the file was not changed (docs/integrity-of-record.md).
func (w *Writer) Digest() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.digest
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

// SetIsolation records what an isolated session enforced and refused.
func (w *Writer) SetIsolation(iso *manifest.Isolation) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.Isolation = iso
	w.dirty = true
}

// SetUnavailable records the sensor features the kernel refused.
func (w *Writer) SetUnavailable(features []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.Unavailable = slices.Clone(features)
	w.dirty = true
}

// SetTrustFiles records the files the session's exec verdicts rest on
// (manifest.Meta.TrustFiles).
func (w *Writer) SetTrustFiles(files []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.TrustFiles = slices.Clone(files)
	w.dirty = true
}

// SetRepeats records the sensor's count of repeated guarded opens per
// file (manifest.Meta.Repeats).
func (w *Writer) SetRepeats(r []manifest.Repeat) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.meta.Repeats = slices.Clone(r)
	w.dirty = true
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
// event count, clean_close and the seal (integrity.go). The file is then
// switched out of WAL mode, so it is one self-contained file that a
// reader without write access to the directory can open. When the disk
// still refuses writes, the events held in memory are counted lost and
// the reserve Create set aside is given back so that the final metadata
// fits; Close fails only when even that cannot be written.
func (w *Writer) Close(exitCode *int) error {
	if err := w.stop(); err != nil {
		return err
	}
	if w.fault != nil {
		w.retry()
	}
	if w.fault != nil {
		w.dropBacklog()
		os.Remove(reservePath(w.path))
	}
	w.mu.Lock()
	w.meta.EndedAt = time.Now()
	w.meta.ExitCode = exitCode
	w.meta.CleanClose = true
	w.meta.Events = w.stored
	w.dirty = true
	w.mu.Unlock()

	err := w.finish()
	if err != nil && isFull(err) {
		os.Remove(reservePath(w.path))
		err = w.finish()
	}
	if err != nil {
		w.mu.Lock()
		w.meta.CleanClose = false
		w.mu.Unlock()
	}
	err = errors.Join(describe(err), w.closeConn())
	if rerr := os.Remove(reservePath(w.path)); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("close session %s: %w", w.path, err)
	}
	return nil
}

// finish writes the final metadata and the seal and makes the file
// self-contained.
func (w *Writer) finish() error {
	if w.inTx {
		w.exec("ROLLBACK")
		w.inTx = false
	}
	if err := w.commitTx(true, true); err != nil {
		if w.inTx {
			w.exec("ROLLBACK")
			w.inTx = false
		}
		return err
	}
	// A failed checkpoint (no room to grow the main file) leaves the
	// committed pages in the WAL, where readers find them.
	if err := w.exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		slog.Debug("session: checkpoint failed; staying in WAL mode", "path", w.path, "error", err)
		return nil
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
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal", reservePath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// setup lays down the schema, the initial metadata and the writer row in
// one transaction.
func (w *Writer) setup() error {
	if err := w.exec("BEGIN"); err != nil {
		return err
	}
	setup := []string{
		schema,
		fmt.Sprintf("PRAGMA application_id=%d", applicationID),
		fmt.Sprintf("PRAGMA user_version=%d", schemaVersion),
	}
	for _, q := range setup {
		if err := w.exec(q); err != nil {
			w.exec("ROLLBACK")
			return err
		}
	}
	if err := w.writeState(false); err != nil {
		w.exec("ROLLBACK")
		return err
	}
	if err := w.exec(`INSERT INTO meta (key, value) VALUES ('writer', ?)`, w.writerRow); err != nil {
		w.exec("ROLLBACK")
		return fmt.Errorf("write meta: %w", err)
	}
	if err := w.exec("COMMIT"); err != nil {
		return err
	}
	return nil
}

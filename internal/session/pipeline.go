package session

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unsafe"

	"github.com/polygraph/polygraph/internal/event"
)

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
	chunkCols  = "first_seq, count, first_ts, min_ts, max_ts, strs_from, strs_end, sum, chain, data"
	nChunkCols = 10
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

// placeholders returns "?, ?, ..." with n marks.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}

// prepareInserts prepares the chunk and string inserts.
func (w *Writer) prepareInserts() error {
	prep := func(table, cols string, n int, sizes []int) (*bulkInsert, error) {
		b := &bulkInsert{cols: n, sizes: sizes, args: make([]driver.NamedValue, sizes[0]*n)}
		row := "(" + placeholders(n) + ")"
		for _, size := range sizes {
			q := "INSERT OR REPLACE INTO " + table + " (" + cols + ") VALUES " + strings.TrimSuffix(strings.Repeat(row+", ", size), ", ")
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

	// Set by accept, when the batch takes its place in the session.
	strsFrom int64    // the strings ids the chunk introduces are strsFrom+1 .. strsEnd
	strsEnd  int64    //
	sum      [32]byte // sumChunk of the chunk
	chain    [32]byte // link of the previous chunk's chain and sum
}

// size is what b holds in memory, for the backlog budget.
func (b *batch) size() int {
	n := cap(b.data) + 64
	for _, v := range b.strings {
		if s, ok := v.(string); ok {
			n += len(s) + 16
		}
	}
	return n
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
	b.strsFrom, b.strsEnd, b.sum, b.chain = 0, 0, [32]byte{}, [32]byte{}
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
// transaction and commits every batchSize events or flushInterval. While
// the disk refuses writes it holds batches in memory instead (fault.go).
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
			w.take(b)
		case <-tick.C:
			w.commit()
		}
	}
}

// take places b in the session: into the open transaction, or into the
// backlog while the disk refuses writes.
func (w *Writer) take(b *batch) {
	if w.fault != nil {
		w.hold(b)
		return
	}
	w.accept(b)
	w.tx = append(w.tx, b)
	if err := w.insertBatch(b); err != nil {
		w.failTx(err)
		return
	}
	w.pending += b.n
	if w.pending >= batchSize {
		w.commit()
	}
}

// insertBatch inserts b's strings and chunk, opening a transaction if
// none is open.
func (w *Writer) insertBatch(b *batch) error {
	if !w.inTx {
		if err := w.exec("BEGIN"); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		w.inTx = true
	}
	if err := w.insStrings.insert(b.strings); err != nil {
		return fmt.Errorf("insert strings: %w", err)
	}
	r := b.row
	r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9] =
		int64(b.firstSeq), int64(b.n), b.firstTS, b.minTS, b.maxTS, b.strsFrom, b.strsEnd, b.sum[:], b.chain[:], b.data
	if err := w.insChunk.insert(b.row); err != nil {
		return fmt.Errorf("insert events %d-%d: %w", b.firstSeq, b.firstSeq+uint64(b.n)-1, err)
	}
	return nil
}

// commit writes changed metadata and commits the open transaction. While
// the disk refuses writes it retries the backlog instead, every
// retryInterval.
func (w *Writer) commit() {
	if w.fault != nil {
		if time.Since(w.lastTry) >= retryInterval {
			w.retry()
		}
		return
	}
	w.mu.Lock()
	dirty := w.dirty
	verdicts := len(w.verdicts.unsaved) > 0
	w.mu.Unlock()
	if !w.inTx && !dirty && !verdicts {
		return
	}
	if err := w.commitTx(dirty, false); err != nil {
		w.failTx(err)
		return
	}
	w.settle(w.tx)
	w.tx = w.tx[:0]
}

// commitTx writes the state (when dirty) and commits, opening a
// transaction if none is open. final adds the seal (integrity.go). On
// failure the state is marked dirty again, for the next attempt.
func (w *Writer) commitTx(dirty, final bool) (err error) {
	defer func() {
		if err != nil {
			w.mu.Lock()
			w.dirty = true
			w.mu.Unlock()
		}
	}()
	if !w.inTx {
		if err := w.exec("BEGIN"); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		w.inTx = true
	}
	// The state (meta, lost counters, leftovers) is written when it
	// changed; the verdicts integrity checking adds as a tree execs new
	// programs are rows of their own and do not rewrite it.
	if dirty || final {
		if err := w.writeState(final); err != nil {
			return err
		}
	} else if err := w.writeVerdicts(nil); err != nil {
		return err
	}
	if err := w.exec("COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	w.inTx = false
	w.pending = 0
	w.verdictsCommitted()
	return nil
}

// settle records bs as committed and hands them back to encode.
func (w *Writer) settle(bs []*batch) {
	for _, b := range bs {
		w.stored += uint64(b.n)
		w.storedChunks++
		w.storedChain = b.chain
		w.recycle(b)
	}
}

// writeState stores the metadata, the lost counters and the leftovers
// inside the caller's transaction and clears the dirty flag; final also
// stores the seal, the digest of the whole session.
func (w *Writer) writeState(final bool) error {
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
	st := newStateHash(string(b), w.writerRow)
	if err := w.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('meta', ?)`, string(b)); err != nil {
		return fmt.Errorf("write meta: %w", err)
	}
	for _, stage := range slices.Sorted(maps.Keys(lost)) {
		st.lost(stage, int64(lost[stage]))
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
		st.leftover(int64(l.PID), l.ExecID, l.Comm, string(argv))
		if err := w.exec(`INSERT INTO leftovers (pid, exec_id, comm, argv) VALUES (?, ?, ?, ?)`,
			int64(l.PID), l.ExecID, l.Comm, string(argv)); err != nil {
			return fmt.Errorf("write leftovers: %w", err)
		}
	}
	var vst *stateHash
	if final {
		vst = st
	}
	if err := w.writeVerdicts(vst); err != nil {
		return err
	}
	if !final {
		return nil
	}
	s := newSeal(w.storedChunks, w.stored, w.storedChain, st.sum())
	raw, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode seal: %w", err)
	}
	if err := w.exec(`INSERT OR REPLACE INTO meta (key, value) VALUES ('seal', ?)`, string(raw)); err != nil {
		return fmt.Errorf("write seal: %w", err)
	}
	w.mu.Lock()
	w.digest = s.Digest
	w.mu.Unlock()
	return nil
}

package session

import (
	"bytes"
	"context"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"runtime"
	"slices"
	"sync"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
)

// maxDecoders bounds the goroutines decoding chunks.
const maxDecoders = 4

// maxChunkEvents bounds the events a chunk row may claim, far above what
// the writer puts in one (maxBatch), so a damaged count cannot make the
// reader allocate without limit.
const maxChunkEvents = 1 << 16

// chunkJob is one chunk on its way from the rows to fn, or (data nil)
// only the damage found before the next one.
type chunkJob struct {
	data   []byte
	row    chunkRow
	sum    [32]byte // as stored
	verify bool     // check sum (version 3)
	pre    []Damage // found before this chunk
	evs    []*event.Event
	bad    *Damage // the chunk itself is unusable
	done   chan struct{}
}

// chainWalk follows the chunks in seq order, checking that they follow
// each other and that the chain links, and collects what is wrong.
type chainWalk struct {
	v3         bool
	next       uint64   // the seq the next chunk should start at
	prev       [32]byte // the last chunk's chain
	known      bool     // prev is the chain of the chunk right before next
	unreadable bool     // rows before the next one could not be read
	cause      error    // why
	chunks     int64    // rows read
	pending    []Damage
}

// bad notes rows SQLite could not read.
func (w *chainWalk) bad(err error) {
	w.unreadable, w.known = true, false
	if w.cause == nil {
		w.cause = err
	}
}

// step takes one chunk row (chunkSelect's columns after first_seq) and
// returns its job, or nil when the row is unusable (its damage noted).
func (w *chainWalk) step(first int64, vals []driver.Value) *chunkJob {
	var ints [6]int64 // count, first_ts, min_ts, max_ts, strs_from, strs_end
	cols, data := []int{0, 1, 2, 3}, 4
	if w.v3 {
		cols, data = append(cols, 4, 5), 8
	}
	for i, col := range cols {
		var err error
		if ints[i], err = intCol(vals[col]); err != nil {
			w.bad(fmt.Errorf("%w: a column is not an integer", ErrCorrupt))
			return nil
		}
	}
	count := ints[0]
	if first < 1 || count < 1 || count > maxChunkEvents || uint64(first) < w.next {
		w.bad(fmt.Errorf("%w: chunk at event %d claims %d events", ErrCorrupt, first, count))
		return nil
	}
	j := &chunkJob{row: chunkRow{first, count, ints[1], ints[2], ints[3], ints[4], ints[5]}, verify: w.v3, done: make(chan struct{})}
	j.data, _ = vals[data].([]byte) // the driver's own copy
	if j.data == nil {
		// NULL: chunkSelect leaves out a record larger than
		// maxChunkBytes, which only damage or a forger makes.
		j.bad = &Damage{FirstSeq: uint64(first), Count: uint64(count),
			Problem: fmt.Sprintf("chunk larger than %d MiB or without records; skipped", maxChunkBytes>>20)}
	}
	var chain [32]byte
	linked := true
	if w.v3 {
		sum, _ := vals[6].([]byte)
		ch, _ := vals[7].([]byte)
		if len(sum) != 32 || len(ch) != 32 {
			w.bad(fmt.Errorf("%w: chunk at event %d has no digests", ErrCorrupt, first))
			return nil
		}
		copy(j.sum[:], sum)
		copy(chain[:], ch)
		linked = w.known && link(w.prev, j.sum) == chain
	}
	if gap := uint64(first) - w.next; gap > 0 {
		d := Damage{FirstSeq: w.next, Count: gap}
		switch {
		case w.unreadable:
			d.Problem = fmt.Sprintf("unreadable (%v)", explain(w.cause))
		case w.v3 && linked:
			d = Damage{} // dropped while recording: the lost counters say why
		case w.v3:
			d.Problem, d.Modified = "missing: chunks removed after recording", true
		default:
			d.Problem = "missing from the file"
		}
		if d.Problem != "" {
			w.pending = append(w.pending, d)
		}
	} else if w.v3 && w.known && !linked {
		w.pending = append(w.pending, Damage{FirstSeq: uint64(first), Count: uint64(count), Modified: true,
			Problem: "out of the hash chain: chunks replaced, reordered or edited after recording"})
	}
	w.prev, w.known, w.unreadable, w.cause = chain, w.v3, false, nil
	w.next = uint64(first + count)
	w.chunks++
	j.pre, w.pending = w.pending, nil
	return j
}

// end notes what is missing after the last chunk read, when the session
// says how many events it holds (expected > 0).
func (w *chainWalk) end(expected uint64) {
	if !w.unreadable && (expected == 0 || w.next > expected) {
		return
	}
	d := Damage{FirstSeq: w.next}
	if expected >= w.next {
		d.Count = expected - w.next + 1
	}
	switch {
	case w.unreadable:
		d.Problem = fmt.Sprintf("unreadable (%v)", explain(w.cause))
	case w.v3:
		d.Problem, d.Modified = "missing: chunks removed after recording", true
	default:
		d.Problem = "missing from the file"
	}
	w.pending = append(w.pending, d)
}

// chunkSelect is the column list readChunks reads, first_seq first.
func chunkSelect(v3 bool) (cols string, n int) {
	data := fmt.Sprintf("CASE WHEN length(data) <= %d THEN data END", maxChunkBytes)
	if v3 {
		return "count, first_ts, min_ts, max_ts, strs_from, strs_end, sum, chain, " + data, 9
	}
	return "count, first_ts, min_ts, max_ts, " + data, 5
}

// maxChunkBytes bounds the records of one chunk row the reader loads:
// 256 events of the largest kind (an exec with a 64 KiB argv and its
// paths) take under 20 MiB, so a larger one is damage, and is not read
// into memory.
const maxChunkBytes = 64 << 20

// readChunks reads the events f selects from a version 2 or 3 file,
// inside readTx, and returns what it found wrong with the file. Chunks
// decode independently once the strings are loaded, so decoders run on
// every core while this goroutine hands their events to fn in order: one
// goroutine reads the rows, the decoders take the chunks from work, and
// order carries them, oldest first, to the loop below, which waits for
// each to be decoded. A chunk that fails its sum or does not decode is
// skipped, and the rest still read.
func (r *Reader) readChunks(ctx context.Context, c driverConn, strs *pathTable, f Filter, fn func(*event.Event) error) ([]Damage, error) {
	keep, fds := f.matcher(), fdpath.New()
	walk := &chainWalk{v3: r.version >= 3, next: 1, prev: chainSeed(r.meta.ID), known: true}
	workers := min(runtime.GOMAXPROCS(0), maxDecoders)
	work := make(chan *chunkJob)
	order := make(chan *chunkJob, 4*workers)
	// spare holds the event lists of the chunks handed on, for the
	// decoders to fill again: a million events' lists, never collected
	// while the report reads (the command turns the collector off), were
	// 8 MiB.
	spare := make(chan []*event.Event, cap(order)+2*workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			d := &chunkDecoder{strs: strs, in: newInterner()}
			for j := range work {
				select {
				case j.evs = <-spare:
				default:
				}
				j.decode(d, strs)
				close(j.done)
			}
		})
	}
	var scanErr error
	wg.Go(func() {
		defer close(work)
		defer close(order)
		send := func(ch chan *chunkJob, j *chunkJob) bool {
			select {
			case ch <- j:
				return true
			case <-quit:
				return false
			}
		}
		cols, n := chunkSelect(walk.v3)
		scanErr = tableScan{table: "chunks", key: "first_seq", cols: cols, ncols: n,
			row: func(first int64, vals []driver.Value) bool {
				j := walk.step(first, vals)
				return j == nil || (send(order, j) && send(work, j))
			},
			bad: func(_ int64, err error) bool { walk.bad(err); return true },
		}.scan(ctx, c)
		walk.end(r.expectedEvents())
		j := &chunkJob{pre: walk.pending, done: make(chan struct{})}
		close(j.done)
		send(order, j)
	})
	defer func() {
		close(quit)
		for range order { // let the reader finish
		}
		wg.Wait()
	}()
	var damage []Damage
	for j := range order {
		<-j.done
		damage = append(damage, j.pre...)
		if j.bad != nil {
			damage = append(damage, *j.bad)
			continue
		}
		for _, ev := range j.evs {
			fds.Event(ev)
			if keep != nil && !keep(ev) {
				continue
			}
			if err := fn(ev); err != nil {
				return nil, err
			}
		}
		select {
		case spare <- j.evs[:0]:
		default:
		}
		j.evs = nil
	}
	wg.Wait()
	if scanErr != nil {
		return nil, scanErr
	}
	if walk.v3 {
		damage = append(damage, r.checkSeal(c, walk)...)
	}
	return damage, nil
}

// decode checks j's sum and decodes its events; a chunk that fails
// either is marked bad, with none of its events.
func (j *chunkJob) decode(d *chunkDecoder, strs *pathTable) {
	defer func() { j.data = nil }()
	if j.data == nil {
		return
	}
	first, count := uint64(j.row.firstSeq), uint64(j.row.count)
	if j.verify && sumChunk(j.row, j.data, strs.lookup) != j.sum {
		j.bad = &Damage{FirstSeq: first, Count: count, Problem: "chunk fails its checksum (damaged or edited after recording); skipped"}
		return
	}
	if cap(j.evs) < int(count) {
		j.evs = make([]*event.Event, 0, count)
	}
	err := d.decode(j.data, first, int(count), j.row.firstTS, func(ev *event.Event) error {
		j.evs = append(j.evs, ev)
		return nil
	})
	if err != nil {
		j.evs = nil
		j.bad = &Damage{FirstSeq: first, Count: count, Problem: fmt.Sprintf("chunk does not decode (%v); skipped", err)}
	}
}

// expectedEvents is how many events the session says it holds, 0 when
// it cannot say (never closed).
func (r *Reader) expectedEvents() uint64 {
	if r.seal != nil {
		return r.seal.Events
	}
	if r.meta.CleanClose {
		return r.meta.Events
	}
	return 0
}

// checkSeal compares the end of the chain and the final metadata with
// the seal Close wrote.
func (r *Reader) checkSeal(c driverConn, walk *chainWalk) []Damage {
	modified := func(why string) []Damage {
		return []Damage{{Problem: "session modified after recording: " + why, Modified: true}}
	}
	if r.unsealable {
		return nil // said when the file was opened
	}
	if r.seal == nil {
		if r.meta.CleanClose {
			return modified("closed cleanly but without a seal")
		}
		return nil
	}
	st := newStateHash(r.rawMeta, r.rawWriter)
	for _, stage := range slices.Sorted(maps.Keys(r.meta.Lost)) {
		st.lost(stage, int64(r.meta.Lost[stage]))
	}
	if err := hashLeftovers(c, st); err != nil {
		return []Damage{{Problem: fmt.Sprintf("the seal cannot be checked: the processes left running are unreadable (%v)", explain(err))}}
	}
	if r.version >= 4 {
		if err := hashVerdicts(c, st); err != nil {
			return []Damage{{Problem: fmt.Sprintf("the seal cannot be checked: the exec verdicts are unreadable (%v)", explain(err))}}
		}
	}
	state := st.sum()
	chain, err := hex.DecodeString(r.seal.Chain)
	if err != nil || len(chain) != 32 {
		return modified("the seal is malformed")
	}
	if r.seal.State != hex.EncodeToString(state[:]) || r.seal.Digest != sealDigest([32]byte(chain), state) {
		return modified("the metadata, lost counters, leftovers or exec verdicts changed")
	}
	if walk.known && (walk.chunks != r.seal.Chunks || !bytes.Equal(walk.prev[:], chain)) {
		return modified(fmt.Sprintf("the chunks do not end where the seal says (%d chunks read, %d sealed)", walk.chunks, r.seal.Chunks))
	}
	return nil
}

// hashLeftovers feeds the leftovers rows, as stored, to st.
func hashLeftovers(c driverConn, st *stateHash) error {
	rows, err := query(c, "SELECT pid, exec_id, comm, argv FROM leftovers ORDER BY rowid", nil)
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, 4)
	for {
		if err := rows.Next(row); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		pid, err := intCol(row[0])
		if err != nil {
			return err
		}
		st.leftover(pid, textCol(row[1]), textCol(row[2]), textCol(row[3]))
	}
}

package session

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// When the disk refuses a write (full, or an I/O error) the writer does
// not stop: it rolls the open transaction back, keeps that transaction's
// batches and every later one in memory, up to MemoryBudget bytes, and
// retries every retryInterval. Once a retry succeeds everything held is
// written and recording goes on as before. Batches that arrive while the
// budget is spent are dropped and counted lost under the fault's cause
// (CauseDiskFull, CauseWriteError), which the session's lost counters
// keep, so the report says what is missing and why. The strings a
// dropped batch introduced are still kept: later events refer to them.
const (
	// MemoryBudget bounds the bytes of encoded events the writer holds in
	// memory while the disk refuses writes: at the sensor's usual rates
	// minutes of recording, at a storm's peak some seconds.
	MemoryBudget = 64 << 20
	// retryInterval is how often a faulted writer tries the disk again.
	retryInterval = time.Second
	// reserveSize is the file Create sets aside next to the session and
	// Close gives back when the disk is full, so that the final metadata
	// (clean close, lost counters, seal: a few 16 KiB pages in the WAL)
	// still fits. Small, since a killed writer leaves it behind.
	reserveSize = 256 << 10
)

// memoryBudget is MemoryBudget, a variable for tests.
var memoryBudget = MemoryBudget

// Causes of lost events the writer itself counts, as Lost stage names.
const (
	CauseDiskFull   = "disk full"
	CauseWriteError = "write error"
)

// ErrDiskFull is wrapped by errors for writes the disk refused for lack
// of space.
var ErrDiskFull = errors.New("disk full")

// Fault tells the OnFault hook that the writer's storage changed state.
type Fault struct {
	Err       error  // what the disk said; nil when Recovered
	Cause     string // CauseDiskFull or CauseWriteError
	Recovered bool   // the disk takes writes again; what was held is written
	Dropping  bool   // the memory budget is spent: events are being dropped
	Closing   bool   // Close gave up on the Held events: the disk never recovered
	Held      int    // events held in memory
	Lost      uint64 // events dropped so far under Cause
}

// String is the one-line warning for f.
func (f Fault) String() string {
	switch {
	case f.Closing:
		return fmt.Sprintf("session storage still failing at close (%v): %d events held in memory are lost (%s)", f.Err, f.Held, f.Cause)
	case f.Recovered:
		return fmt.Sprintf("session storage recovered: %d events held in memory were written, %d lost (%s)", f.Held, f.Lost, f.Cause)
	case f.Dropping:
		return fmt.Sprintf("session storage still failing (%v): memory budget spent, events are being dropped (%s)", f.Err, f.Cause)
	}
	budget := fmt.Sprintf("%d KiB", memoryBudget>>10)
	if memoryBudget >= 1<<20 {
		budget = fmt.Sprintf("%d MiB", memoryBudget>>20)
	}
	return fmt.Sprintf("session storage failing (%v): recording into memory (up to %s) until it recovers", f.Err, budget)
}

// OnFault sets fn to be called, from the writer's goroutine, each time
// the disk starts refusing writes, the memory budget runs out, or the
// disk recovers. fn must not block or call back into the Writer. Without
// a hook the writer logs each change with slog.Warn (on stderr in the
// polygraph command). Set it before the first Add.
func (w *Writer) OnFault(fn func(Fault)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.onFault = fn
}

// Err returns the storage error the writer is riding out, nil while the
// disk takes its writes.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.faultErr
}

// report passes f to the hook, or logs it.
func (w *Writer) report(f Fault) {
	w.mu.Lock()
	fn := w.onFault
	f.Lost = w.lost[f.Cause]
	w.mu.Unlock()
	if fn != nil {
		fn(f)
		return
	}
	slog.Warn(f.String(), "path", w.path)
}

// failTx abandons the open transaction after err, keeping its batches.
func (w *Writer) failTx(err error) {
	if w.inTx {
		w.exec("ROLLBACK")
		w.inTx = false
	}
	w.pending = 0
	held := append([]*batch(nil), w.tx...)
	for _, b := range w.tx {
		b.data = slices.Clip(bytes.Clone(b.data)) // see hold
		w.heldBytes += b.size()
	}
	w.backlog = append(held, w.backlog...)
	w.tx = w.tx[:0]
	w.mu.Lock()
	w.dirty = true
	w.mu.Unlock()
	if w.fault == nil {
		w.fault, w.cause, w.lastTry, w.dropping = err, causeOf(err), time.Now(), false
		w.mu.Lock()
		w.faultErr = describe(err)
		w.mu.Unlock()
		w.report(Fault{Err: describe(err), Cause: w.cause, Held: w.heldEvents()})
	}
}

// hold keeps b in memory while the disk refuses writes, or drops it when
// the budget is spent.
func (w *Writer) hold(b *batch) {
	if w.heldBytes+len(b.data)+64 > memoryBudget {
		w.drop(b)
		return
	}
	// The batch's buffer is sized for a full chunk; held, it keeps only
	// its records, so the budget counts what memory really holds.
	b.data = slices.Clip(bytes.Clone(b.data))
	w.accept(b)
	w.backlog = append(w.backlog, b)
	w.heldBytes += b.size()
}

// drop counts b's events lost under the fault's cause, keeping its
// strings for the next chunk that is kept.
func (w *Writer) drop(b *batch) {
	w.carry = append(w.carry, b.strings...)
	w.mu.Lock()
	w.lost[w.cause] += uint64(b.n)
	w.dirty = true
	w.mu.Unlock()
	w.recycle(b)
	if !w.dropping {
		w.dropping = true
		w.report(Fault{Err: describe(w.fault), Cause: w.cause, Dropping: true, Held: w.heldEvents()})
	}
}

// retry tries to write what is held, retryTxEvents at a time so that a
// disk with a little room again takes what fits; once all of it is
// written the writer is healthy again.
func (w *Writer) retry() {
	w.lastTry = time.Now()
	held := w.heldEvents()
	for len(w.backlog) > 0 {
		n, events := 0, 0
		for n < len(w.backlog) && (n == 0 || events+w.backlog[n].n <= retryTxEvents) {
			events += w.backlog[n].n
			n++
		}
		err := func() error {
			for _, b := range w.backlog[:n] {
				if err := w.insertBatch(b); err != nil {
					return err
				}
			}
			return w.commitTx(true, false)
		}()
		if err != nil {
			if w.inTx {
				w.exec("ROLLBACK")
				w.inTx = false
			}
			return
		}
		for _, b := range w.backlog[:n] {
			w.heldBytes -= b.size()
		}
		w.settle(w.backlog[:n])
		w.backlog = w.backlog[n:]
	}
	w.backlog, w.heldBytes, w.fault, w.dropping = nil, 0, nil, false
	w.mu.Lock()
	w.faultErr = nil
	w.mu.Unlock()
	w.report(Fault{Cause: w.cause, Recovered: true, Held: held})
}

// retryTxEvents bounds the events of one transaction of a retry.
const retryTxEvents = 4096

// dropBacklog gives up on what is held, counting it lost, for a Close
// whose disk still refuses writes.
func (w *Writer) dropBacklog() {
	n := w.heldEvents()
	if n > 0 {
		w.report(Fault{Err: describe(w.fault), Cause: w.cause, Dropping: true, Closing: true, Held: n})
	}
	for _, b := range w.backlog {
		w.recycle(b)
	}
	w.backlog, w.heldBytes = nil, 0
	w.mu.Lock()
	w.lost[w.cause] += uint64(n)
	w.dirty = true
	w.mu.Unlock()
}

// heldEvents counts the events in the backlog.
func (w *Writer) heldEvents() int {
	n := 0
	for _, b := range w.backlog {
		n += b.n
	}
	return n
}

// causeOf names the cause events lost to err are counted under.
func causeOf(err error) string {
	if isFull(err) {
		return CauseDiskFull
	}
	return CauseWriteError
}

// isFull tells whether err is the disk (or a quota) being full.
func isFull(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_FULL {
		return true
	}
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, ErrDiskFull)
}

// describe makes a storage error one short line: "disk full" first when
// that is what it is, since SQLite's own words ("database or disk is
// full (13)") leave the reader to guess which.
func describe(err error) error {
	if err == nil || errors.Is(err, ErrDiskFull) || !isFull(err) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: %s %s: %w", ErrDiskFull, pe.Op, filepath.Base(pe.Path), pe.Err)
	}
	return fmt.Errorf("%w (%w)", ErrDiskFull, err)
}

// writeReserve sets reserveSize bytes aside at path. Zeros are written,
// not a hole punched, so the blocks are really taken, on tmpfs too.
func writeReserve(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, reserveSize))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

// reservePath is the reserve file of a session.
func reservePath(path string) string { return path + "-reserve" }

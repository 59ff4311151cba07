package session

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
)

// A damaged file (a page overwritten, the file cut short) makes SQLite
// fail a query at the first row it cannot read, even though most of the
// table is fine: SQLite reads a missing page as zeros and calls it
// corrupt. scanTable reads around the damage: it restarts the query at
// the row after the one that failed, and when the b-tree page holding the
// next keys is itself unreadable it probes further keys, doubling the
// step and then halving back, for the first key it can read again. Only
// what SQLite cannot reach at all (a table whose interior pages are gone)
// is lost.
//
// A damaged b-tree can also answer out of order: a probe for the first
// key at or after k lands on a smaller key, and a scan hands out keys that
// go backwards. Resuming at such a key read the same region again and
// again, for ever (one changed byte in the chunks b-tree's root did
// that). So the scan keeps one cursor, the first key not yet read, that
// only ever moves forward: every key below it is refused as damage, every
// restart moves it past at least one key, and the restarts are bounded
// (maxRestarts) and stop when the context is done.

// tableScan describes the scan of one table by its INTEGER PRIMARY KEY.
type tableScan struct {
	table, key, cols string
	ncols            int
	// row is called for each row read, in strictly increasing key order,
	// with the row's key; false stops the scan.
	row func(key int64, vals []driver.Value) bool
	// bad is called where rows could not be read: from is the first key
	// not read (a lower bound); the next row passed to row, if any, is
	// where reading resumed. false stops the scan.
	bad func(from int64, err error) bool
	// start, when set, is the key the scan begins after (a Tail reading
	// what was appended since); unset, it reads every row.
	start *int64
}

// maxProbeStep bounds the key distance scanTable probes across
// unreadable pages.
const maxProbeStep = int64(1) << 40

// maxRestarts bounds how often one scan resumes after damage. Every
// restart is past at least one more key, so a scan ends anyway; the bound
// keeps a file damaged all over from costing minutes. Far more than any
// real damage needs: each restart skips one unreadable row or region.
const maxRestarts = 1 << 14

// errDisorder is the error of a row whose key is not after the last one
// read: the b-tree page that gave it is damaged.
var errDisorder = fmt.Errorf("%w: keys out of order", ErrCorrupt)

// errGaveUp is the damage the scan notes when it stops at maxRestarts.
var errGaveUp = fmt.Errorf("%w: damaged in more than %d places; the rest of the table is not read", ErrCorrupt, maxRestarts)

// scan runs t on c. It returns an error for a failure that is not about
// the file's pages (a table missing altogether, a file another process
// keeps locked) and ctx's error once ctx is done.
func (t tableScan) scan(ctx context.Context, c driverConn) error {
	next := int64(math.MinInt64) // the first key not yet read
	if t.start != nil {
		if *t.start == math.MaxInt64 {
			return nil
		}
		next = *t.start + 1
	}
	for restarts := 0; ; restarts++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if restarts == maxRestarts {
			t.bad(next, errGaveUp)
			return nil
		}
		done := false
		err := t.from(ctx, c, next, func(key int64) {
			if key == math.MaxInt64 {
				done = true // nothing can come after it
			}
			next = key + 1
		})
		if err == nil || errors.Is(err, errStop) || done {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ex := explain(err); errors.Is(ex, ErrNotSession) || errors.Is(ex, ErrLocked) {
			return ex
		}
		// The row at or after next could not be read. Is its key readable?
		k, found, perr := t.probe(ctx, c, next)
		if perr == nil && found {
			if !t.bad(k, err) || k == math.MaxInt64 {
				return nil
			}
			next = k + 1 // skip the row whose payload is unreadable
			continue
		}
		if perr == nil {
			t.bad(next, err)
			return nil // the error was past the last row
		}
		// The page holding the next keys is unreadable: find the first
		// key past it that can be read.
		lo, hi := next, int64(0)
		var hiKey int64
		var hiFound, ok bool
		for d := int64(1); d <= maxProbeStep; d *= 2 {
			if k, f, e := t.probe(ctx, c, satAdd(next, d)); e == nil {
				hi, hiKey, hiFound, ok = satAdd(next, d), k, f, true
				break
			}
			lo = satAdd(next, d)
		}
		if !t.bad(next, err) || !ok {
			return nil
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if k, f, e := t.probe(ctx, c, mid); e == nil {
				hi, hiKey, hiFound = mid, k, f
			} else {
				lo = mid
			}
		}
		if !hiFound {
			return nil
		}
		next = hiKey // > next: probe refuses keys below what it asked for
	}
}

// errStop ends a scan early on the row callback's word.
var errStop = errors.New("stop")

// satAdd is a+b, saturating at the int64 bounds.
func satAdd(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// from reads the rows with keys at or after next in order, calling seen
// with each row's key before passing the row on. A key below the one
// expected is damage (errDisorder), never passed on.
func (t tableScan) from(ctx context.Context, c driverConn, next int64, seen func(int64)) error {
	rows, err := queryContext(ctx, c, "SELECT "+t.key+", "+t.cols+" FROM "+t.table+" WHERE "+t.key+" >= ? ORDER BY "+t.key,
		[]driver.NamedValue{{Ordinal: 1, Value: next}})
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, t.ncols+1)
	for n := 0; ; n++ {
		if n%checkEvery == checkEvery-1 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err := rows.Next(row); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		key, err := intCol(row[0])
		if err != nil {
			return err
		}
		if key < next {
			return errDisorder
		}
		seen(key)
		next = satAdd(key, 1)
		if !t.row(key, row[1:]) {
			return errStop
		}
		if key == math.MaxInt64 {
			return nil
		}
	}
}

// checkEvery is how many rows a scan reads between looks at the context.
const checkEvery = 256

// probe looks for the first key at or after k, reading only the key,
// which lives in the b-tree cell and not in overflow pages. A key below k
// (a damaged page answered) is an error: the region is unreadable.
func (t tableScan) probe(ctx context.Context, c driverConn, k int64) (key int64, found bool, err error) {
	rows, err := queryContext(ctx, c, "SELECT "+t.key+" FROM "+t.table+" WHERE "+t.key+" >= ? ORDER BY "+t.key+" LIMIT 1",
		[]driver.NamedValue{{Ordinal: 1, Value: k}})
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	row := make([]driver.Value, 1)
	if err := rows.Next(row); err == io.EOF {
		return 0, false, nil
	} else if err != nil {
		return 0, false, err
	}
	if key, err = intCol(row[0]); err != nil {
		return 0, false, err
	}
	if key < k {
		return 0, false, errDisorder
	}
	return key, true, nil
}

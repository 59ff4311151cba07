package session

import (
	"database/sql/driver"
	"errors"
	"io"
	"math"
)

// A damaged file (a page overwritten, the file cut short) makes SQLite
// fail a query at the first row it cannot read, even though most of the
// table is fine: SQLite reads a missing page as zeros and calls it
// corrupt. scanTable reads around the damage: it restarts the query
// after the row that failed, and when the b-tree page holding the next
// keys is itself unreadable it probes further keys, doubling the step
// and then halving back, for the first key it can read again. Only what
// SQLite cannot reach at all (a table whose interior pages are gone) is
// lost.

// tableScan describes the scan of one table by its INTEGER PRIMARY KEY.
type tableScan struct {
	table, key, cols string
	ncols            int
	// row is called for each row read, in key order, with the row's
	// key; false stops the scan.
	row func(key int64, vals []driver.Value) bool
	// bad is called where rows could not be read: from is the first key
	// not read (a lower bound); the next row passed to row, if any, is
	// where reading resumed. false stops the scan.
	bad func(from int64, err error) bool
}

// maxProbeStep bounds the key distance scanTable probes across
// unreadable pages.
const maxProbeStep = int64(1) << 40

// scan runs t on c. It returns an error only for a failure that is not
// about the file's pages (a table missing altogether, say).
func (t tableScan) scan(c driverConn) error {
	after := int64(math.MinInt64)
	for {
		err := t.from(c, after, func(key int64) { after = key })
		if err == nil || errors.Is(err, errStop) {
			return nil
		}
		if ex := explain(err); errors.Is(ex, ErrNotSession) {
			return ex
		}
		// The row after `after` could not be read. Is its key readable?
		k, found, perr := t.probe(c, after, false)
		if perr == nil && found {
			if !t.bad(k, err) {
				return nil
			}
			after = k // skip the row whose payload is unreadable
			continue
		}
		if perr == nil {
			t.bad(satAdd(after, 1), err)
			return nil // the error was past the last row
		}
		// The page holding the next keys is unreadable: find the first
		// key past it that can be read.
		lo, hi := after, int64(0)
		var hiKey int64
		var hiFound, ok bool
		for d := int64(1); d <= maxProbeStep; d *= 2 {
			if k, f, e := t.probe(c, satAdd(after, d), true); e == nil {
				hi, hiKey, hiFound, ok = satAdd(after, d), k, f, true
				break
			}
			lo = satAdd(after, d)
		}
		if !t.bad(satAdd(after, 1), err) || !ok {
			return nil
		}
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if k, f, e := t.probe(c, mid, true); e == nil {
				hi, hiKey, hiFound = mid, k, f
			} else {
				lo = mid
			}
		}
		if !hiFound {
			return nil
		}
		after = hiKey - 1
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

// from reads the rows with keys after `after` in order, calling seen with
// each row's key before passing the row on.
func (t tableScan) from(c driverConn, after int64, seen func(int64)) error {
	rows, err := query(c, "SELECT "+t.key+", "+t.cols+" FROM "+t.table+" WHERE "+t.key+" > ? ORDER BY "+t.key,
		[]driver.NamedValue{{Ordinal: 1, Value: after}})
	if err != nil {
		return err
	}
	defer rows.Close()
	row := make([]driver.Value, t.ncols+1)
	for {
		if err := rows.Next(row); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		key, err := intCol(row[0])
		if err != nil {
			return err
		}
		seen(key)
		if !t.row(key, row[1:]) {
			return errStop
		}
	}
}

// probe looks for the first key after k (at or after k when incl), reading
// only the key, which lives in the b-tree cell and not in overflow pages.
func (t tableScan) probe(c driverConn, k int64, incl bool) (key int64, found bool, err error) {
	op := ">"
	if incl {
		op = ">="
	}
	rows, err := query(c, "SELECT "+t.key+" FROM "+t.table+" WHERE "+t.key+" "+op+" ? ORDER BY "+t.key+" LIMIT 1",
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
	key, err = intCol(row[0])
	return key, err == nil, err
}

package session

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
)

// ErrNoTail is returned by Reader.Tail for a session file of version 1
// (a row per event, from before chunks), which cannot be followed.
var ErrNoTail = errors.New("session file too old to follow")

// Tail follows a session while its writer appends to it: each Next hands
// over the events committed since the last, in seq order, resolved as
// Events resolves them (one fdpath.Resolver across calls, so a path named
// through a descriptor opened in an earlier batch resolves the same). It
// reads only what is new: the strings added and the chunks after the last
// one read. It is how a page follows a session being recorded without
// reading it again from the start.
//
// A chunk that fails its checksum or does not decode is skipped, as
// Events skips it; a full read (Events, Verify) says what was wrong. A
// Tail is not safe for concurrent use.
type Tail struct {
	r    *Reader
	fds  *fdpath.Resolver
	in   *interner
	strs *pathTable
	dec  *chunkDecoder
	walk *chainWalk
	// strAfter and chunkAfter are the keys last read of the strings and
	// chunks tables.
	strAfter, chunkAfter int64
}

// Tail starts following the session from its first event.
func (r *Reader) Tail() (*Tail, error) {
	if r.version == 1 {
		return nil, fmt.Errorf("%w: %s (version 1)", ErrNoTail, r.path)
	}
	in := newInterner()
	strs := &pathTable{dense: []string{""}}
	return &Tail{r: r, fds: fdpath.New(), in: in, strs: strs, dec: &chunkDecoder{strs: strs, in: in},
		walk: &chainWalk{v3: r.version >= 3, next: 1, prev: chainSeed(r.meta.ID), known: true}}, nil
}

// Next calls fn for every event committed since the last call, in seq
// order, and returns how many there were. An error from fn stops it and
// is returned as is; the events after it are handed over by the next
// call only if their chunk was not read yet, so a caller that fails
// should start a new Tail.
func (t *Tail) Next(fn func(*event.Event) error) (int, error) {
	n := 0
	var fnErr error
	ctx := context.Background()
	err := t.r.raw(ctx, func(c driverConn) (err error) {
		if _, err := c.ExecContext(ctx, "BEGIN", nil); err != nil {
			return err
		}
		defer func() {
			if _, rerr := c.ExecContext(ctx, "ROLLBACK", nil); err == nil {
				err = rerr
			}
		}()
		// The strings first, in the same transaction as the chunks: a
		// writer commits a chunk's strings with it.
		from := t.strAfter
		err = tableScan{table: "strings", key: "id", cols: "s", ncols: 1, start: &from,
			row: func(id int64, vals []driver.Value) bool {
				t.strs.add(id, t.in.str(textCol(vals[0])))
				t.strAfter = id
				return true
			},
			bad: func(int64, error) bool { return true },
		}.scan(ctx, c)
		if err != nil {
			return err
		}
		var jobs []*chunkJob
		cols, ncols := chunkSelect(t.walk.v3)
		from = t.chunkAfter
		err = tableScan{table: "chunks", key: "first_seq", cols: cols, ncols: ncols, start: &from,
			row: func(first int64, vals []driver.Value) bool {
				t.chunkAfter = first
				if j := t.walk.step(first, vals); j != nil {
					jobs = append(jobs, j)
				}
				return true
			},
			bad: func(_ int64, err error) bool { t.walk.bad(err); return true },
		}.scan(ctx, c)
		if err != nil {
			return err
		}
		t.walk.pending = nil // Events and Verify say what was wrong
		for _, j := range jobs {
			j.decode(t.dec, t.strs)
			for _, ev := range j.evs {
				t.fds.Event(ev)
				if fnErr = fn(ev); fnErr != nil {
					return fnErr
				}
				n++
			}
		}
		return nil
	})
	if fnErr != nil {
		return n, fnErr
	}
	if err != nil {
		return n, fmt.Errorf("follow session %s: %w", t.r.path, explain(err))
	}
	return n, nil
}

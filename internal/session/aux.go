package session

import (
	"cmp"
	"context"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
)

// The auxiliary tables (exec_verdicts, leftovers) are read once, around
// damage as the chunks are: a flipped bit in one of them once stopped the
// whole report, though every event still read. A row SQLite cannot read
// is left out, and one note per table says so (Damage, and so the
// report's notes); what is intact is used.

// aux is what the auxiliary tables hold, as far as they could be read.
type aux struct {
	verdicts  []Verdict
	leftovers []Leftover
	damage    []Damage
}

// loadAux reads the auxiliary tables, once.
func (r *Reader) loadAux(ctx context.Context) (*aux, error) {
	r.mu.Lock()
	x := r.aux
	r.mu.Unlock()
	if x != nil {
		return x, nil
	}
	x = &aux{}
	err := r.raw(ctx, func(c driverConn) error {
		if r.version >= 4 {
			if err := x.readVerdicts(ctx, c); err != nil {
				return err
			}
		}
		return x.readLeftovers(ctx, c)
	})
	if err != nil {
		return nil, fmt.Errorf("read session %s: %w", r.path, explain(err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.aux == nil {
		r.aux = x
	}
	return r.aux, nil
}

// tableDamage collects the problems of one auxiliary table into one note.
type tableDamage struct {
	what  string // "exec verdicts"
	n     int
	cause error
}

func (d *tableDamage) bad(_ int64, err error) bool {
	d.n++
	if d.cause == nil {
		d.cause = err
	}
	return true
}

// note is the table's one note, if it had problems.
func (d *tableDamage) note() []Damage {
	if d.n == 0 {
		return nil
	}
	return []Damage{{Problem: fmt.Sprintf("%s: unreadable rows skipped (%v); the rest is used", d.what, explain(d.cause))}}
}

// readVerdicts reads exec_verdicts by rowid, around damage, and orders
// the rows as verdictsQuery does (by exec id and role; TEXT compares
// bytewise, as Go strings do), so that a damaged index does not matter.
func (x *aux) readVerdicts(ctx context.Context, c driverConn) error {
	d := &tableDamage{what: "exec verdicts"}
	err := tableScan{table: "exec_verdicts", key: "rowid", cols: "exec_id, role, path, sha256, status, data", ncols: 6,
		row: func(_ int64, v []driver.Value) bool {
			x.verdicts = append(x.verdicts, Verdict{ExecID: textCol(v[0]), Role: textCol(v[1]), Path: textCol(v[2]),
				SHA256: textCol(v[3]), Status: textCol(v[4]), Data: []byte(textCol(v[5]))})
			return true
		},
		bad: d.bad,
	}.scan(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		// The table itself is gone (ErrNotSession): say so, read on.
		d.bad(0, err)
	}
	slices.SortStableFunc(x.verdicts, func(a, b Verdict) int {
		return cmp.Or(strings.Compare(a.ExecID, b.ExecID), strings.Compare(a.Role, b.Role))
	})
	x.damage = append(x.damage, d.note()...)
	return nil
}

// readLeftovers reads the leftovers by rowid, around damage; a row whose
// argv does not decode counts as unreadable.
func (x *aux) readLeftovers(ctx context.Context, c driverConn) error {
	d := &tableDamage{what: "processes left running"}
	err := tableScan{table: "leftovers", key: "rowid", cols: "pid, exec_id, comm, argv", ncols: 4,
		row: func(key int64, v []driver.Value) bool {
			pid, err := intCol(v[0])
			var argv []string
			if err == nil {
				err = json.Unmarshal([]byte(textCol(v[3])), &argv)
			}
			if err != nil {
				d.bad(key, fmt.Errorf("%w: leftover %d: %v", ErrCorrupt, key, err))
				return true
			}
			x.leftovers = append(x.leftovers, Leftover{PID: uint32(pid), ExecID: textCol(v[1]), Comm: textCol(v[2]), Argv: argv})
			return true
		},
		bad: d.bad,
	}.scan(ctx, c)
	if err != nil {
		if ctx.Err() != nil {
			return err
		}
		d.bad(0, err)
	}
	x.damage = append(x.damage, d.note()...)
	return nil
}

// Verdicts returns the integrity verdicts recorded with the session, by
// exec id and role; none for a session recorded before polygraph checked
// executables (format version 3 and older). A damaged table is read as
// far as it can be; Damage says what was not.
func (r *Reader) Verdicts() ([]Verdict, error) {
	x, err := r.loadAux(context.Background())
	if err != nil {
		return nil, err
	}
	return x.verdicts, nil
}

// hashes are the SHA-256 of each exec's binary and script, by exec id,
// which Events fills into the exec events.
type hashes map[string][2]string

func (x *aux) hashes() hashes {
	if len(x.verdicts) == 0 {
		return nil
	}
	h := hashes{}
	for _, v := range x.verdicts {
		if v.SHA256 == "" {
			continue
		}
		p := h[v.ExecID]
		switch v.Role {
		case "binary":
			p[0] = v.SHA256
		case "script":
			p[1] = v.SHA256
		}
		h[v.ExecID] = p
	}
	return h
}

// fill sets an exec event's hashes from the verdicts.
func (h hashes) fill(ev *event.Event) {
	if h == nil || ev.Kind != event.KindExec || ev.Process == nil {
		return
	}
	p, ok := h[ev.ExecID]
	if !ok {
		return
	}
	if ev.Process.SHA256 == "" {
		ev.Process.SHA256 = p[0]
	}
	if ev.Process.ScriptSHA256 == "" {
		ev.Process.ScriptSHA256 = p[1]
	}
}

package session

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

// readSeqs opens path and reads every event, failing the test on an
// error; it returns the events by seq with the reader.
func readSeqs(t *testing.T, path string) (map[uint64]*event.Event, *Reader) {
	t.Helper()
	r := openT(t, path)
	got := map[uint64]*event.Event{}
	if err := r.Events(Filter{}, func(ev *event.Event) error {
		if got[ev.Seq] != nil {
			t.Fatalf("event %d read twice", ev.Seq)
		}
		got[ev.Seq] = ev
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got, r
}

// checkEvents fails unless every event read is the one recorded with its
// seq: damage may hide events but must never change one.
func checkEvents(t *testing.T, got map[uint64]*event.Event, want []*event.Event) {
	t.Helper()
	for seq, ev := range got {
		if seq < 1 || seq > uint64(len(want)) {
			t.Fatalf("event with seq %d, recorded %d", seq, len(want))
		}
		w := want[seq-1]
		if ev.Path != w.Path || ev.PID != w.PID || ev.Comm != w.Comm || *ev.Result != *w.Result || !ev.TS.Equal(w.TS) {
			t.Fatalf("event %d reads %+v, recorded %+v", seq, ev, w)
		}
	}
}

// chunkRows lists the (first_seq, count) of the chunks of a session.
func chunkRows(t *testing.T, db *sql.DB) [][2]int64 {
	t.Helper()
	rows, err := db.Query("SELECT first_seq, count FROM chunks ORDER BY first_seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][2]int64
	for rows.Next() {
		var r [2]int64
		if err := rows.Scan(&r[0], &r[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if len(out) < 4 {
		t.Fatalf("only %d chunks", len(out))
	}
	return out
}

// edit runs SQL on a copy of a recorded session, as someone editing it
// afterwards would, and returns the copy's path.
func edit(t *testing.T, src string, fn func(db *sql.DB, chunks [][2]int64)) string {
	t.Helper()
	content, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "edited.db")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fn(db, chunkRows(t, db))
	return path
}

func mustExec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// resum recomputes the sum and chain of every chunk, as an editor who
// read this code would after changing one.
func resum(t *testing.T, db *sql.DB, id string) {
	t.Helper()
	strs := map[int64]string{}
	rows, err := db.Query("SELECT id, s FROM strings")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		var s string
		rows.Scan(&id, &s)
		strs[id] = s
	}
	rows.Close()
	type chunk struct {
		r    chunkRow
		data []byte
	}
	var cs []chunk
	rows, err = db.Query("SELECT first_seq, count, first_ts, min_ts, max_ts, strs_from, strs_end, data FROM chunks ORDER BY first_seq")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var c chunk
		rows.Scan(&c.r.firstSeq, &c.r.count, &c.r.firstTS, &c.r.minTS, &c.r.maxTS, &c.r.strsFrom, &c.r.strsEnd, &c.data)
		cs = append(cs, c)
	}
	rows.Close()
	chain := chainSeed(id)
	for _, c := range cs {
		sum := sumChunk(c.r, c.data, func(id int64) (string, bool) { s, ok := strs[id]; return s, ok })
		chain = link(chain, sum)
		mustExec(t, db, "UPDATE chunks SET sum = ?, chain = ? WHERE first_seq = ?", sum[:], chain[:], c.r.firstSeq)
	}
}

// swapChunks swaps columns of two chunk rows.
func swapChunks(t *testing.T, db *sql.DB, a, b int64, cols ...string) {
	t.Helper()
	for _, col := range cols {
		var va, vb any
		if err := db.QueryRow("SELECT "+col+" FROM chunks WHERE first_seq = ?", a).Scan(&va); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT "+col+" FROM chunks WHERE first_seq = ?", b).Scan(&vb); err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, "UPDATE chunks SET "+col+" = ? WHERE first_seq = ?", vb, a)
		mustExec(t, db, "UPDATE chunks SET "+col+" = ? WHERE first_seq = ?", va, b)
	}
}

// resumOnly recomputes the sums (not the chain) of the chunks at seqs.
func resumOnly(t *testing.T, db *sql.DB, seqs ...int64) {
	t.Helper()
	for _, seq := range seqs {
		var r chunkRow
		var data []byte
		if err := db.QueryRow("SELECT first_seq, count, first_ts, min_ts, max_ts, strs_from, strs_end, data FROM chunks WHERE first_seq = ?", seq).
			Scan(&r.firstSeq, &r.count, &r.firstTS, &r.minTS, &r.maxTS, &r.strsFrom, &r.strsEnd, &data); err != nil {
			t.Fatal(err)
		}
		var s string
		sum := sumChunk(r, data, func(id int64) (string, bool) {
			return s, db.QueryRow("SELECT s FROM strings WHERE id = ?", id).Scan(&s) == nil
		})
		mustExec(t, db, "UPDATE chunks SET sum = ? WHERE first_seq = ?", sum[:], seq)
	}
}

// TestTamperAndDamage edits a recorded session the ways a failing disk or
// a person might and checks what the reader says. It is long because the
// table of edits is: each case is a few lines.
func TestTamperAndDamage(t *testing.T) {
	want := manyEvents(5000)
	src := record(t, filepath.Join(t.TempDir(), "home"), want)
	got, r := readSeqs(t, src)
	if len(got) != 5000 || r.Meta().Integrity != IntegrityIntact || len(r.Damage()) > 0 || r.Digest() == "" {
		t.Fatalf("untouched session: %d events, integrity %q, damage %v, digest %q", len(got), r.Meta().Integrity, r.Damage(), r.Digest())
	}
	id := r.Meta().ID

	tests := []struct {
		name      string
		edit      func(t *testing.T, db *sql.DB, chunks [][2]int64)
		integrity string
		missing   func(chunks [][2]int64) (first, count int64) // the events that must not be read
		damage    string                                       // in a Damage
	}{
		{
			name: "flipped byte in a chunk",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				var data []byte
				if err := db.QueryRow("SELECT data FROM chunks WHERE first_seq = ?", c[1][0]).Scan(&data); err != nil {
					t.Fatal(err)
				}
				data[len(data)/2] ^= 1
				mustExec(t, db, "UPDATE chunks SET data = ? WHERE first_seq = ?", data, c[1][0])
			},
			integrity: IntegrityDamaged,
			missing:   func(c [][2]int64) (int64, int64) { return c[1][0], c[1][1] },
			damage:    "fails its checksum",
		},
		{
			name: "removed chunk",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, "DELETE FROM chunks WHERE first_seq = ?", c[2][0])
			},
			integrity: IntegrityModified,
			missing:   func(c [][2]int64) (int64, int64) { return c[2][0], c[2][1] },
			damage:    "removed after recording",
		},
		{
			name: "removed last chunk",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, "DELETE FROM chunks WHERE first_seq = ?", c[len(c)-1][0])
			},
			integrity: IntegrityModified,
			missing:   func(c [][2]int64) (int64, int64) { return c[len(c)-1][0], c[len(c)-1][1] },
			damage:    "removed after recording",
		},
		{
			name:      "reordered chunks",
			edit:      func(t *testing.T, db *sql.DB, c [][2]int64) { swapChunks(t, db, c[1][0], c[2][0], "data") },
			integrity: IntegrityDamaged, // the sums cover first_seq, so moved content fails them
			damage:    "fails its checksum",
		},
		{
			name: "reordered chunks with their digests",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				swapChunks(t, db, c[1][0], c[2][0], "data", "sum", "chain")
			},
			integrity: IntegrityModified,
			damage:    "out of the hash chain",
		},
		{
			name: "reordered chunks, sums recomputed",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				swapChunks(t, db, c[1][0], c[2][0], "data", "strs_from", "strs_end")
				resumOnly(t, db, c[1][0], c[2][0])
			},
			integrity: IntegrityModified,
			damage:    "out of the hash chain",
		},
		{
			name: "edited event, sum recomputed",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, "UPDATE strings SET s = '/data/FILE-000300' WHERE s = '/data/file-000300'")
				var seq int64
				if err := db.QueryRow("SELECT first_seq FROM chunks WHERE first_seq <= 301 ORDER BY first_seq DESC LIMIT 1").Scan(&seq); err != nil {
					t.Fatal(err)
				}
				resumOnly(t, db, seq)
			},
			integrity: IntegrityModified,
			damage:    "out of the hash chain",
		},
		{
			name: "edited metadata",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, `UPDATE meta SET value = replace(value, '"exit_code":0', '"exit_code":1') WHERE key = 'meta'`)
			},
			integrity: IntegrityModified,
			damage:    "metadata, lost counters, leftovers or exec verdicts changed",
		},
		{
			name: "lost counter reset",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, `INSERT INTO lost (stage, count) VALUES ('ringbuf', 0)`)
			},
			integrity: IntegrityModified,
			damage:    "metadata, lost counters, leftovers or exec verdicts changed",
		},
		{
			name: "seal removed",
			edit: func(t *testing.T, db *sql.DB, c [][2]int64) {
				mustExec(t, db, `DELETE FROM meta WHERE key = 'seal'`)
			},
			integrity: IntegrityModified,
			damage:    "without a seal",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chunks [][2]int64
			path := edit(t, src, func(db *sql.DB, c [][2]int64) { chunks = c; tt.edit(t, db, c) })
			got, r := readSeqs(t, path)
			m := r.Meta()
			if m.Integrity != tt.integrity {
				t.Errorf("integrity %q, want %q; damage %v", m.Integrity, tt.integrity, r.Damage())
			}
			var msgs []string
			for _, d := range r.Damage() {
				msgs = append(msgs, d.String())
			}
			if !strings.Contains(strings.Join(msgs, "\n"), tt.damage) {
				t.Errorf("damage %q, want one saying %q", msgs, tt.damage)
			}
			if !strings.Contains(tt.name, "recomputed") { // those change what reads; the point is that it is flagged
				checkEvents(t, got, want)
			}
			if tt.missing != nil {
				first, count := tt.missing(chunks)
				for seq := first; seq < first+count; seq++ {
					if got[uint64(seq)] != nil {
						t.Fatalf("event %d read", seq)
					}
				}
				if len(got) != 5000-int(count) {
					t.Errorf("%d events read, want all %d others", len(got), 5000-count)
				}
				if !strings.Contains(strings.Join(msgs, "\n"), fmt.Sprintf("events %d-%d (%d)", first, first+count-1, count)) {
					t.Errorf("damage %q does not name events %d-%d", msgs, first, first+count-1)
				}
			}
			t.Logf("%d events; %s", len(got), strings.Join(msgs, "; "))
		})
	}

	// Someone who rewrites every digest and the seal passes the check on
	// this host; the digest exported before the edit is what catches them.
	t.Run("everything recomputed", func(t *testing.T) {
		path := edit(t, src, func(db *sql.DB, c [][2]int64) {
			mustExec(t, db, "DELETE FROM chunks WHERE first_seq = ?", c[1][0])
			mustExec(t, db, "UPDATE chunks SET first_seq = first_seq - ? WHERE first_seq > ?", c[1][1], c[1][0])
			resum(t, db, id)
			mustExec(t, db, "DELETE FROM meta WHERE key = 'seal'")
			mustExec(t, db, `UPDATE meta SET value = replace(value, '"clean_close":true', '"clean_close":false') WHERE key = 'meta'`)
		})
		got, r2 := readSeqs(t, path)
		if r2.Meta().Integrity == IntegrityIntact || r2.Digest() == r.Digest() {
			t.Fatalf("integrity %q, digest %q", r2.Meta().Integrity, r2.Digest())
		}
		t.Logf("%d events, integrity %q (unsealed: the seal is gone, and so is the proof of the end)", len(got), r2.Meta().Integrity)
	})
}

// TestTruncatedFile cuts a closed session at several sizes: every chunk
// whose pages survive is read, none is read wrong, and the cut is said.
func TestTruncatedFile(t *testing.T) {
	want := manyEvents(20000)
	src := record(t, filepath.Join(t.TempDir(), "home"), want)
	content, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{len(content) - 1, len(content) - 1000, len(content) - 16384 - 1, len(content) * 3 / 4, len(content) / 2, len(content) / 4, 3 * 16384, 16384, 3000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cut.db")
			if err := os.WriteFile(path, content[:size], 0o600); err != nil {
				t.Fatal(err)
			}
			r, err := Open(path)
			if err != nil {
				if size > len(content)/2 {
					t.Fatalf("open a file cut to %d of %d bytes: %v", size, len(content), err)
				}
				if strings.Contains(err.Error(), "\n") || strings.Count(err.Error(), path) != 1 || !strings.Contains(err.Error(), "truncated") {
					t.Errorf("error %q: want one line naming the file once and saying it is truncated", err)
				}
				t.Logf("cut to %d of %d bytes: %v", size, len(content), err)
				return
			}
			r.Close()
			got, r := readSeqs(t, path)
			checkEvents(t, got, want)
			d := r.Damage()
			if len(d) == 0 || !strings.Contains(d[0].Problem, "truncated") || r.Meta().Integrity != IntegrityDamaged {
				t.Errorf("damage %v, integrity %q: want the cut reported", d, r.Meta().Integrity)
			}
			if size >= len(content)*3/4 && len(got) < len(want)/2 {
				t.Errorf("a file cut to %d of %d bytes yields %d events", size, len(content), len(got))
			}
			t.Logf("cut to %d of %d bytes: %d of %d events; %v", size, len(content), len(got), len(want), d)
		})
	}
}

// TestFlippedByteInFile flips one byte of a chunk's records in the file
// itself, as a failing disk would.
func TestFlippedByteInFile(t *testing.T) {
	want := manyEvents(5000)
	src := record(t, filepath.Join(t.TempDir(), "home"), want)
	db, err := sql.Open("sqlite", src+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var first, count int64
	var data []byte
	err = db.QueryRow("SELECT first_seq, count, data FROM chunks ORDER BY first_seq LIMIT 1 OFFSET 3").Scan(&first, &count, &data)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	content, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(content, data[100:164])
	if at < 0 {
		t.Fatal("chunk records not found in the file")
	}
	content[at+10] ^= 0x04
	path := filepath.Join(t.TempDir(), "flipped.db")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	got, r := readSeqs(t, path)
	checkEvents(t, got, want)
	if len(got) != 5000-int(count) || r.Meta().Integrity != IntegrityDamaged {
		t.Fatalf("%d events, integrity %q, damage %v", len(got), r.Meta().Integrity, r.Damage())
	}
	if d := r.Damage(); len(d) != 1 || d[0].FirstSeq != uint64(first) || d[0].Count != uint64(count) {
		t.Fatalf("damage %v, want chunk %d (%d events)", d, first, count)
	}
}

// TestReadVersion2 reads a file in the format before checksums: chunks
// without strs_from, strs_end, sum and chain, and no seal.
func TestReadVersion2(t *testing.T) {
	want := manyEvents(3000)
	src := record(t, filepath.Join(t.TempDir(), "home"), want)
	path := edit(t, src, func(db *sql.DB, _ [][2]int64) {
		for _, q := range []string{
			`CREATE TABLE chunks2 (first_seq INTEGER PRIMARY KEY, count INTEGER NOT NULL, first_ts INTEGER NOT NULL,
				min_ts INTEGER NOT NULL, max_ts INTEGER NOT NULL, data BLOB NOT NULL)`,
			`INSERT INTO chunks2 SELECT first_seq, count, first_ts, min_ts, max_ts, data FROM chunks`,
			`DROP TABLE chunks`, `ALTER TABLE chunks2 RENAME TO chunks`,
			`DELETE FROM meta WHERE key IN ('seal', 'writer')`, `PRAGMA user_version=2`,
		} {
			mustExec(t, db, q)
		}
	})
	got, r := readSeqs(t, path)
	checkEvents(t, got, want)
	if len(got) != len(want) || r.Meta().Integrity != IntegrityUnverifiable || len(r.Damage()) > 0 || r.Digest() != "" {
		t.Fatalf("version 2: %d events, integrity %q, damage %v, digest %q", len(got), r.Meta().Integrity, r.Damage(), r.Digest())
	}
}

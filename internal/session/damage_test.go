package session

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// Readers of the record hold against damaged files and files the traced
// tree planted (issue 31): every read ends, and damage to one table does
// not stop the others.

// within runs f in a goroutine and fails the test when it has not
// returned after d: a reader that blocks or loops must not hang the
// test run with it (the goroutine is left behind).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s", what, d)
	}
}

// pageOf returns the file's page size and the first page of table, as
// the schema names it (1-based).
func pageOf(t *testing.T, path, table string) (size, page int) {
	t.Helper()
	content, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	size = int(binary.BigEndian.Uint16(content[16:18]))
	if size == 1 {
		size = 65536
	}
	db, err := sql.Open("sqlite", path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.QueryRow("SELECT rootpage FROM sqlite_master WHERE name = ?", table).Scan(&page); err != nil {
		t.Fatal(err)
	}
	return size, page
}

// flipped writes a copy of src with the byte at off XORed with x.
func flipped(t *testing.T, src string, off int, x byte) string {
	t.Helper()
	content, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	content[off] ^= x
	path := filepath.Join(t.TempDir(), "flipped.db")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDamagedChunksRootEnds changes, one at a time, each byte of the head
// of the chunks b-tree's root page (its header and cell pointers) and of
// a few of its cells, and reads the file: every read must end, with the
// damage said. One such byte once made the salvage scan loop for ever.
func TestDamagedChunksRootEnds(t *testing.T) {
	src := record(t, filepath.Join(t.TempDir(), "home"), manyEvents(20000))
	size, root := pageOf(t, src, "chunks")
	base := (root - 1) * size
	var offs []int
	for off := 0; off < 32; off++ {
		offs = append(offs, off)
	}
	for off := 32; off < size; off += size / 8 {
		offs = append(offs, off)
	}
	for _, off := range offs {
		for _, x := range []byte{0xff, 0x01} {
			path := flipped(t, src, base+off, x)
			var n int
			var err error
			var r *Reader
			within(t, 30*time.Second, fmt.Sprintf("reading with byte %d of the chunks root ^ %#x", off, x), func() {
				if r, err = Open(path); err != nil {
					return
				}
				defer r.Close()
				err = r.Events(Filter{}, func(*event.Event) error { n++; return nil })
			})
			if err != nil {
				t.Logf("byte %d ^ %#x: %v", off, x, err)
				continue
			}
			if n < 20000 && len(r.Damage()) == 0 {
				t.Errorf("byte %d ^ %#x: %d of 20000 events read, and no damage said", off, x, n)
			}
		}
	}
}

// TestDamagedVerdictsSkipped destroys the exec_verdicts table's page: the
// events, leftovers and metadata still read, the verdicts are skipped
// with a note, and nothing returns an error.
func TestDamagedVerdictsSkipped(t *testing.T) {
	src, _ := recordWithVerdicts(t)
	size, page := pageOf(t, src, "exec_verdicts")
	path := flipped(t, src, (page-1)*size, 0xff) // the page type: not a b-tree page at all
	r := openT(t, path)
	evs := readAll(t, r, Filter{})
	if want := len(sampleEvents()); len(evs) != want {
		t.Errorf("read %d events, want %d", len(evs), want)
	}
	if _, err := r.Verdicts(); err != nil {
		t.Errorf("Verdicts: %v, want the damage noted, not an error", err)
	}
	if _, err := r.Leftovers(); err != nil {
		t.Errorf("Leftovers: %v", err)
	}
	var said bool
	for _, d := range r.Damage() {
		said = said || strings.Contains(d.Problem, "exec verdicts")
	}
	if !said || r.Meta().Integrity != IntegrityDamaged {
		t.Errorf("damage %v, integrity %q: want the exec verdicts named, damaged", r.Damage(), r.Meta().Integrity)
	}
}

// TestFIFOSessionRefused: a FIFO named like a session, which anything the
// user runs can make in their sessions directory, is refused by Open
// without blocking.
func TestFIFOSessionRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "20991231T235959-f1f0f1.db")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	within(t, 10*time.Second, "Open of a FIFO", func() {
		if r, err := Open(fifo); err == nil {
			r.Close()
			t.Errorf("Open of a FIFO succeeded")
		} else if !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Open of a FIFO: %v, want not a regular file", err)
		}
	})
}

// TestEventsContextStops: a read whose context is done stops, with the
// context's error, whatever the file (SIGINT and SIGTERM cancel the
// context report and events read with).
func TestEventsContextStops(t *testing.T) {
	src := record(t, filepath.Join(t.TempDir(), "home"), manyEvents(20000))
	size, root := pageOf(t, src, "chunks")
	for _, path := range []string{src, flipped(t, src, (root-1)*size+16, 0x01)} {
		r := openT(t, path)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		within(t, 10*time.Second, "a cancelled read", func() {
			if err := r.EventsContext(ctx, Filter{}, func(*event.Event) error { return nil }); !errors.Is(err, context.Canceled) {
				t.Errorf("%s: EventsContext with a cancelled context: %v", path, err)
			}
		})
	}
}

// TestLockedFileEnds: a session file another process keeps locked (a
// process the traced tree left behind can lock a file it planted) fails
// to open after the busy timeout, once, rather than being read around as
// damage, each step waiting for the lock again.
func TestLockedFileEnds(t *testing.T) {
	src := record(t, filepath.Join(t.TempDir(), "home"), sampleEvents())
	db, err := sql.Open("sqlite", src)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	within(t, 30*time.Second, "Open of a locked file", func() {
		r, err := Open(src)
		if err == nil {
			r.Close()
			t.Skip("the lock did not keep the reader out")
		}
		if !errors.Is(err, ErrLocked) {
			t.Errorf("Open of a locked file: %v, want ErrLocked", err)
		}
	})
}

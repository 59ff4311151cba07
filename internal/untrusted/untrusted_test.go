package untrusted

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestRefusesWithoutBlocking: a FIFO is refused by Open, ReadFile and
// OpenDir at once, a file over the limit by ReadFile, and a regular
// file is read.
func TestRefusesWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if f, err := Open(fifo); !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(FIFO) = %v, %v; want ErrNotRegular", f, err)
		}
		if _, err := ReadFile(fifo, 100); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadFile(FIFO): %v; want ErrNotRegular", err)
		}
		if d, err := OpenDir(fifo); err == nil {
			d.Close()
			t.Errorf("OpenDir(FIFO) succeeded")
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a FIFO blocked the reader")
	}
	if _, err := ReadFile(file, 9); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over the limit: %v", err)
	}
	if b, err := ReadFile(file, 10); err != nil || string(b) != "0123456789" {
		t.Errorf("ReadFile = %q, %v", b, err)
	}
}

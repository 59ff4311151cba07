package integrity

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzStore: whatever the pin and first-seen files hold (they sit where
// anything the user runs can write, unless a sudo run keeps them), the
// store reads them without a panic, a checker can be made from them, and
// judging an exec against them ends.
func FuzzStore(f *testing.F) {
	f.Add([]byte(`{"version":1,"pins":{"/usr/bin/true":{"sha256":"00","size":1,"pinned_at":"2026-01-01T00:00:00Z"}}}`),
		[]byte(`{"version":1,"hosts":{"h":{"/usr/bin/true":{"first_sha256":"00","sha256":"00"}}}}`))
	f.Add([]byte(`{"pins":null}`), []byte(`{"hosts":{"h":null}}`))
	bin, err := os.Executable()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pins, seen []byte) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, PinsFile), pins, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, SeenFile), seen, 0o600); err != nil {
			t.Fatal(err)
		}
		s := &Store{Dir: dir}
		s.Pins()
		s.Seen("h")
		c, err := New(Options{Store: s, Host: "h", NoDpkg: true, Now: func() time.Time { return time.Unix(0, 0) }})
		if err != nil {
			return
		}
		c.Check(context.Background(), Request{Path: bin})
		c.Flush()
	})
}

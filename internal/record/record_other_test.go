//go:build !linux

package record

import (
	"errors"
	"os"
	"testing"
)

// TestRecordNeedsLinux: off Linux, recording says why it cannot, and
// creates nothing.
func TestRecordNeedsLinux(t *testing.T) {
	home := t.TempDir()
	res, err := Record(t.Context(), Options{Home: home, Mode: "run", Command: []string{"true"}})
	if !errors.Is(err, ErrNeedsLinux) || res != nil {
		t.Fatalf("Record: %v, %v; want ErrNeedsLinux", res, err)
	}
	if ents, err := os.ReadDir(home); err != nil || len(ents) != 0 {
		t.Errorf("Record left %d entries in the session home (%v)", len(ents), err)
	}
}

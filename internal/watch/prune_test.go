package watch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/session"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		age  time.Duration
		size int64
	}{
		{"7d", 7 * 24 * time.Hour, -1},
		{"12h", 12 * time.Hour, -1},
		{"1G", -1, 1 << 30},
		{"500M", -1, 500 << 20},
		{"10kb", -1, 10 << 10},
		{"123", -1, 123},
	} {
		if tc.age >= 0 {
			if got, err := ParseAge(tc.in); err != nil || got != tc.age {
				t.Errorf("ParseAge(%q) = %v, %v; want %v", tc.in, got, err, tc.age)
			}
		}
		if tc.size >= 0 {
			if got, err := ParseSize(tc.in); err != nil || got != tc.size {
				t.Errorf("ParseSize(%q) = %v, %v; want %v", tc.in, got, err, tc.size)
			}
		}
	}
	for _, bad := range []string{"x", "-1d", "G"} {
		if _, err := ParseAge(bad); err == nil {
			t.Errorf("ParseAge(%q) accepted", bad)
		}
		if _, err := ParseSize(bad); err == nil && bad != "-1d" {
			t.Errorf("ParseSize(%q) accepted", bad)
		}
	}
}

// TestPrune keeps the young watch sessions that fit, and never touches a
// run session or an open one.
func TestPrune(t *testing.T) {
	home := t.TempDir()
	now := time.Now()
	mk := func(mode string, age time.Duration) string {
		w, err := session.Create(home, session.Meta{Mode: mode, StartedAt: now.Add(-age)})
		if err != nil {
			t.Fatal(err)
		}
		id := w.Meta().ID
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
		return id
	}
	old := mk("watch", 10*24*time.Hour)
	run := mk("run", 10*24*time.Hour)
	young := mk("watch", time.Hour)
	open := mk("watch", 20*24*time.Hour)
	gone, err := Prune(home, 7*24*time.Hour, 0, map[string]bool{open: true}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gone, []string{old}) {
		t.Errorf("pruned %v, want only %v", gone, old)
	}
	for _, id := range []string{run, young, open} {
		if _, err := os.Stat(filepath.Join(home, "sessions", id+".db")); err != nil {
			t.Errorf("session %s: %v", id, err)
		}
	}
	// A size cap of one byte leaves no closed watch session.
	gone, err = Prune(home, 0, 1, map[string]bool{open: true}, now)
	if err != nil || !slices.Equal(gone, []string{young}) {
		t.Errorf("size prune = %v, %v; want %v", gone, err, young)
	}
}

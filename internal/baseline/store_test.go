package baseline

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadKindWithoutMaps: a baseline file whose kind lacks its maps (a
// person's edit, or a file planted where anything the user runs can
// write) is read whole: learning into it and checking against it do not
// panic (baseline learn once did: assignment to entry in nil map).
func TestLoadKindWithoutMaps(t *testing.T) {
	for _, doc := range []string{
		`{"agent":"codex","version":"1.0","kinds":{"shell":{}}}`,
		`{"agent":"codex","version":"1.0","kinds":{"shell":null}}`,
		`{"agent":"codex","version":"1.0","sessions":["a","b","c"],"kinds":{"shell":{"sessions":5}}}`,
		`{"agent":"codex","version":"1.0"}`,
	} {
		s := Open(t.TempDir())
		if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(s.Dir(), "codex@1.0.json"), []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		p, err := s.Load("codex@1.0")
		if err != nil || p == nil {
			t.Fatalf("%s: Load = %v, %v", doc, p, err)
		}
		Check(p, sample("x", 9, 100))
		if !p.Add(sample("d", 5, 1000), time.Now()) {
			t.Errorf("%s: not learned", doc)
		}
		Check(p, sample("y", 9, 100))
		if err := s.Save(p); err != nil {
			t.Fatal(err)
		}
		if all, err := s.List(); err != nil || len(all) != 1 {
			t.Errorf("%s: List = %d profiles, %v", doc, len(all), err)
		}
	}
}

// TestLoadRefusesSpecialAndHuge: a FIFO where a baseline file should be is
// refused without blocking, and so is a file over the limit.
func TestLoadRefusesSpecialAndHuge(t *testing.T) {
	s := Open(t.TempDir())
	if err := os.MkdirAll(s.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(s.Dir(), "big.json")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxFileBytes+1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("big"); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("Load of a file over the limit: %v", err)
	}
}

// FuzzProfile: whatever a baseline file holds, loading it, learning into
// it and checking against it end without a panic.
func FuzzProfile(f *testing.F) {
	f.Add([]byte(`{"agent":"codex","version":"1.0","kinds":{"shell":{}}}`))
	f.Add([]byte(`{"agent":"codex","sessions":["a","b","c"],"kinds":{"shell":{"sessions":3,"max_procs":[1,2],"bytes_out":{"h:1":[1]}}}}`))
	f.Add([]byte(`{"kinds":{"shell":null,"none":{"programs":null}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		p, err := parseProfile(doc, "fuzz")
		if err != nil {
			return
		}
		Check(p, sample("x", 9, 100))
		p.Add(sample("d", 5, 1000), time.Now())
		Check(p, sample("y", 9, 100))
	})
}

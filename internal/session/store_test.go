package session

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// manyEvents returns n open events, enough to fill many pages.
func manyEvents(n int) []*event.Event {
	evs := make([]*event.Event, n)
	for i := range evs {
		evs[i] = &event.Event{TS: t0.Add(time.Duration(i) * time.Microsecond), Kind: event.KindOpen, PID: 7, Comm: "cat",
			ExecID: "7-1", Path: fmt.Sprintf("/data/file-%06d", i), Access: "read", Result: event.Ptr(int64(3))}
	}
	return evs
}

func TestOpenBrokenFiles(t *testing.T) {
	dir := t.TempDir()
	good := record(t, filepath.Join(dir, "home"), manyEvents(5000))
	content, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	if len(content) < 64<<10 {
		t.Fatalf("test session is only %d bytes", len(content))
	}
	foreign := filepath.Join(dir, "foreign.db")
	db, err := sql.Open("sqlite", foreign)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE meta (key TEXT, value TEXT)"); err != nil {
		t.Fatal(err)
	}
	db.Close()
	middle := append([]byte(nil), content...)
	for i := len(middle) / 3; i < 2*len(middle)/3; i++ {
		middle[i] = byte(i * 7)
	}

	tests := []struct {
		name    string
		content []byte // nil: use the file at path as is
		path    string
		want    string // in the error
	}{
		{name: "garbage", content: []byte(strings.Repeat("this is not sqlite\n", 500)), want: "not a polygraph session file (file is not a database)"},
		{name: "empty", content: []byte{}, want: "not a polygraph session file (empty file)"},
		{name: "short header", content: content[:50], want: "truncated"},
		{name: "cut in the header", content: content[:80], want: "truncated"},
		{name: "other sqlite database", path: foreign, want: "not a polygraph session file"},
		{name: "missing", path: filepath.Join(dir, "nope.db"), want: "no such file"},
		{name: "directory", path: dir, want: "not a regular file"},
		{name: "scrambled middle", content: middle, want: ""}, // Open may pass; Events must then fail cleanly or report the damage
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := tt.path
			if path == "" {
				path = filepath.Join(t.TempDir(), "s.db")
				if err := os.WriteFile(path, tt.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r, err := Open(path)
			if err == nil {
				defer r.Close()
				n := 0
				err = r.Events(Filter{}, func(*event.Event) error { n++; return nil })
				if err == nil && tt.want == "" && n == 5000 {
					t.Skip("the scrambled pages held nothing the query reads")
				}
				if err == nil && tt.want == "" {
					if len(r.Damage()) == 0 || r.Meta().Integrity != IntegrityDamaged {
						t.Fatalf("read %d of 5000 events, damage %v, integrity %q: want the damage reported", n, r.Damage(), r.Meta().Integrity)
					}
					t.Logf("read %d of 5000 events; damage: %v", n, r.Damage())
					return
				}
			}
			if err == nil {
				t.Fatalf("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s and saying %q", msg, path, tt.want)
			}
			t.Log(msg)
		})
	}
}

func TestResolve(t *testing.T) {
	home := t.TempDir()
	mk := func(id string, started time.Time) string {
		w, err := Create(home, Meta{ID: id, StartedAt: started})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(nil); err != nil {
			t.Fatal(err)
		}
		return w.Meta().Path
	}
	a := mk("20261129T105012-3fa2c1", t0)
	b := mk("20261129T105012-3fb000", t0.Add(300*time.Millisecond)) // same second, later
	c := mk("20261128T090000-aaaaaa", t0.Add(-24*time.Hour))
	loose := filepath.Join(t.TempDir(), "copy.db")
	data, _ := os.ReadFile(c)
	os.WriteFile(loose, data, 0o600)
	t.Chdir(filepath.Dir(loose))

	tests := []struct {
		ref, want, err string
	}{
		{ref: "last", want: b},
		{ref: "20261129T105012-3fa2c1", want: a},
		{ref: "20261129T105012-3fa", want: a},
		{ref: "20261128", want: c},
		{ref: "20261129T105012-3f", err: "session prefix 20261129T105012-3f is ambiguous: 20261129T105012-3fa2c1, 20261129T105012-3fb000"},
		{ref: "2026", err: "is ambiguous"},
		{ref: "1999", err: "no session matches 1999"},
		{ref: loose, want: loose},
		{ref: "copy.db", want: loose},
		{ref: "./nope.db", err: "no session matches ./nope.db"},
		{ref: "", err: "no session matches"},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := Resolve(home, tt.ref)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("Resolve(%q) = %q, %v; want error %q", tt.ref, got, err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Resolve(%q) = %q, %v; want %q", tt.ref, got, err, tt.want)
			}
		})
	}
	var amb *AmbiguousError
	if _, err := Resolve(home, "2026"); !errors.As(err, &amb) || len(amb.Matches) != 3 {
		t.Errorf("ambiguous error %v does not carry the 3 matches", err)
	}
	if _, err := Resolve(t.TempDir(), "last"); !errors.Is(err, ErrNoSession) {
		t.Errorf("Resolve(last) in an empty home: %v, want ErrNoSession", err)
	}
}

func TestList(t *testing.T) {
	home := t.TempDir()
	if got, err := List(home); err != nil || len(got) != 0 {
		t.Fatalf("List of an empty home = %v, %v", got, err)
	}
	for i, id := range []string{"20261129T100000-000001", "20261129T120000-000003", "20261129T110000-000002"} {
		w, err := Create(home, Meta{ID: id, StartedAt: t0.Add(time.Duration(i) * time.Hour), Command: []string{"x"}})
		if err != nil {
			t.Fatal(err)
		}
		w.Add(sampleEvents()[0])
		if err := w.Close(event.Ptr(i)); err != nil {
			t.Fatal(err)
		}
	}
	// A broken file and files that are not sessions at all.
	sessions := filepath.Join(home, "sessions")
	os.WriteFile(filepath.Join(sessions, "20261129T113000-broken.db"), []byte("garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage garbage"), 0o600)
	os.WriteFile(filepath.Join(sessions, "notes.txt"), []byte("hi"), 0o600)
	os.Mkdir(filepath.Join(sessions, "dir.db"), 0o700)

	got, err := List(home)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	// Newest first by start time: the three sessions started at t0,
	// t0+1h, t0+2h (10:50, 11:50, 12:50 UTC); the broken one's time
	// comes from its name (11:30).
	want := []string{"20261129T110000-000002", "20261129T120000-000003", "20261129T113000-broken", "20261129T100000-000001"}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Errorf("List order %v, want %v", ids, want)
	}
	for _, m := range got {
		broken := m.ID == "20261129T113000-broken"
		if broken != (m.Error != "") {
			t.Errorf("%s: Error = %q", m.ID, m.Error)
		}
		if !broken && (!m.CleanClose || m.Events != 1 || m.ExitCode == nil) {
			t.Errorf("%s: meta %s", m.ID, jsonOf(m))
		}
		if broken && !strings.Contains(m.Error, "not a polygraph session file") {
			t.Errorf("broken file's error: %q", m.Error)
		}
	}
}

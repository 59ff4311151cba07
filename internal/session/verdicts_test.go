package session

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// recordWithVerdicts records the sample events with a binary verdict for
// the npm exec and a script verdict, added concurrently as the pool's
// workers would, and returns the session's path.
func recordWithVerdicts(t *testing.T) (string, []Verdict) {
	t.Helper()
	evs := sampleEvents()
	for _, e := range evs {
		if e.Kind == event.KindExec {
			e.SHA256 = "" // the sensor does not hash; the verdict does
		}
	}
	npm := event.ExecID(101, 5000)
	vs := []Verdict{
		{ExecID: npm, Role: "binary", Path: "/usr/bin/npm", SHA256: strings.Repeat("cd", 32), Status: "verified", Data: []byte(`{"source":"dpkg"}`)},
		{ExecID: npm, Role: "script", Path: "/usr/share/npm/bin/npm-cli.js", SHA256: strings.Repeat("ef", 32), Status: "unknown", Data: []byte(`{}`)},
		{ExecID: "999-1", Role: "binary", Path: "/tmp/x", Status: "unavailable", Data: []byte(`{"reason":"gone"}`)},
	}
	w := newSession(t, filepath.Join(t.TempDir(), "home"))
	for _, e := range evs {
		w.Add(e)
	}
	var wg sync.WaitGroup
	for _, v := range vs {
		wg.Go(func() { w.AddVerdict(v) })
	}
	wg.Wait()
	if err := w.Close(event.Ptr(0)); err != nil {
		t.Fatal(err)
	}
	return w.Meta().Path, vs
}

// verdictKey identifies a verdict: one per exec and role.
type verdictKey struct{ execID, role string }

func TestVerdictsRoundTrip(t *testing.T) {
	path, want := recordWithVerdicts(t)
	got, r := readSeqs(t, path)
	if r.Meta().Integrity != IntegrityIntact {
		t.Fatalf("integrity %q, damage %v", r.Meta().Integrity, r.Damage())
	}
	vs, err := r.Verdicts()
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(want) {
		t.Fatalf("read %d verdicts, want %d: %+v", len(vs), len(want), vs)
	}
	byKey := map[verdictKey]Verdict{}
	for _, v := range vs {
		byKey[verdictKey{v.ExecID, v.Role}] = v
	}
	for _, w := range want {
		g := byKey[verdictKey{w.ExecID, w.Role}]
		if g.Path != w.Path || g.SHA256 != w.SHA256 || g.Status != w.Status || string(g.Data) != string(w.Data) {
			t.Errorf("verdict %s/%s reads %+v, want %+v", w.ExecID, w.Role, g, w)
		}
	}
	var exec *event.Event
	for _, e := range got {
		if e.Kind == event.KindExec {
			exec = e
		}
	}
	if exec == nil || exec.SHA256 != want[0].SHA256 || exec.ScriptSHA256 != want[1].SHA256 {
		t.Fatalf("exec event not filled from the verdicts: %+v", exec)
	}
}

func TestVerdictsSealed(t *testing.T) {
	src, _ := recordWithVerdicts(t)
	tests := []struct {
		name string
		sql  string
	}{
		{"edited status", `UPDATE exec_verdicts SET status = 'verified' WHERE status = 'unknown'`},
		{"edited data", `UPDATE exec_verdicts SET data = '{"source":"pin"}' WHERE role = 'binary' AND status = 'verified'`},
		{"removed verdict", `DELETE FROM exec_verdicts WHERE status = 'unavailable'`},
		{"added verdict", `INSERT INTO exec_verdicts VALUES ('1-1', 'binary', '/bin/x', '', 'verified', '{}')`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := editSQL(t, src, tt.sql)
			_, r := readSeqs(t, path)
			if r.Meta().Integrity != IntegrityModified {
				t.Errorf("integrity %q after %s, want modified; damage %v", r.Meta().Integrity, tt.name, r.Damage())
			}
		})
	}
}

// TestNoVerdicts: a session without verdicts (and a version 3 file)
// reads none and leaves the exec events' hashes as recorded.
func TestNoVerdicts(t *testing.T) {
	path := record(t, filepath.Join(t.TempDir(), "home"), sampleEvents())
	r := openT(t, path)
	vs, err := r.Verdicts()
	if err != nil || len(vs) != 0 {
		t.Fatalf("verdicts %v, %v; want none", vs, err)
	}
	for _, e := range readAll(t, r, Filter{}) {
		if e.Kind == event.KindExec && (e.SHA256 != strings.Repeat("ab", 32) || e.ScriptSHA256 != "") {
			t.Errorf("exec hashes changed: %q %q", e.SHA256, e.ScriptSHA256)
		}
	}
}

// editSQL runs q on a copy of the session at src and returns its path.
func editSQL(t *testing.T, src, q string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "edited.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mustExec(t, db, q)
	return path
}

// TestVerdictReplaced: a second verdict for an exec and role replaces the
// first, across commits, and the seal still matches.
func TestVerdictReplaced(t *testing.T) {
	w := newSession(t, filepath.Join(t.TempDir(), "home"))
	for _, e := range sampleEvents() {
		w.Add(e)
	}
	w.AddVerdict(Verdict{ExecID: "1-1", Role: "binary", Path: "/x", Status: "unavailable", Data: []byte(`{}`)})
	time.Sleep(2 * flushInterval) // committed on its own
	w.AddVerdict(Verdict{ExecID: "1-1", Role: "binary", Path: "/x", SHA256: "ab", Status: "verified", Data: []byte(`{}`)})
	if err := w.Close(nil); err != nil {
		t.Fatal(err)
	}
	_, r := readSeqs(t, w.Meta().Path)
	vs, err := r.Verdicts()
	if err != nil || len(vs) != 1 || vs[0].Status != "verified" {
		t.Fatalf("verdicts %+v, %v; want the second one only", vs, err)
	}
	if r.Meta().Integrity != IntegrityIntact {
		t.Errorf("integrity %q: %v", r.Meta().Integrity, r.Damage())
	}
}

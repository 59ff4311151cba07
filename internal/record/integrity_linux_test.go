package record

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// TestRecordExecVerdicts runs a one-byte-changed copy of /usr/bin/true
// first in PATH and `python3 x.py` under the sensor: the session holds a
// verdict for every exec, the copy is modified against dpkg's coreutils
// listing, and the exec events carry the binary's and the script's hashes.
func TestRecordExecVerdicts(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Stat("/var/lib/dpkg/info/coreutils.md5sums"); err != nil {
		t.Skip("no dpkg coreutils")
	}
	python, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Skip("no /usr/bin/python3")
	}
	bin, ws := t.TempDir(), t.TempDir()
	b, err := os.ReadFile("/usr/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff // past the code: it still runs
	if err := os.WriteFile(filepath.Join(bin, "true"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(ws, "x.py")
	if err := os.WriteFile(script, []byte("print('hi')\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	res, err := Record(context.Background(), Options{
		Home: home, Mode: "run", Command: []string{"sh", "-c", "env true && " + python + " x.py"}, Dir: ws,
		Env: []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home}, Stdout: os.Stdout, Stderr: os.Stderr,
	})
	testenv.Feature(t, "BPF sensor", err)
	r, err := session.Open(res.Meta.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	execs := map[string]*event.Event{}
	if err := r.Events(session.Filter{Kinds: []event.Kind{event.KindExec}}, func(e *event.Event) error {
		execs[e.ExecID] = e
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if r.Meta().Integrity != session.IntegrityIntact {
		t.Errorf("integrity %q: %v", r.Meta().Integrity, r.Damage())
	}
	rows, err := r.Verdicts()
	if err != nil {
		t.Fatal(err)
	}
	byExec := map[string]map[string]integrity.Verdict{}
	for _, row := range rows {
		var v integrity.Verdict
		if err := json.Unmarshal(row.Data, &v); err != nil {
			t.Fatal(err)
		}
		if byExec[row.ExecID] == nil {
			byExec[row.ExecID] = map[string]integrity.Verdict{}
		}
		byExec[row.ExecID][row.Role] = v
	}
	var sawTrue, sawPython bool
	for id, e := range execs {
		v, ok := byExec[id]["binary"]
		if !ok {
			t.Errorf("exec %s (%s) has no verdict", id, e.Path)
			continue
		}
		if v.SHA256 == "" || e.SHA256 != v.SHA256 {
			t.Errorf("exec %s: event sha256 %q, verdict %+v", e.Path, e.SHA256, v)
		}
		switch e.Path {
		case filepath.Join(bin, "true"):
			sawTrue = true
			if v.Status != integrity.Modified || v.Source != integrity.SourceDpkg || v.Package != "coreutils" || v.Of == "" || v.Expected == "" {
				t.Errorf("modified true: %+v, want modified against dpkg coreutils", v)
			}
		case python:
			sawPython = true
			s, ok := byExec[id]["script"]
			if !ok || s.Path != script || e.ScriptSHA256 == "" || e.ScriptSHA256 != s.SHA256 {
				t.Errorf("python3 x.py: script verdict %+v, event script_sha256 %q", s, e.ScriptSHA256)
			}
		}
	}
	if !sawTrue || !sawPython {
		t.Fatalf("execs seen: true %v, python %v (%d execs)", sawTrue, sawPython, len(execs))
	}
	j, _ := json.Marshal(execs)
	if !strings.Contains(string(j), `"script_sha256"`) {
		t.Error("events JSON lacks script_sha256")
	}
}

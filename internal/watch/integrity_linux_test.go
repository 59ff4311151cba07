package watch

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/testenv"
)

// TestWatchSessionExecVerdicts runs an agent (a copy of sh where Claude
// Code installs) under watch that runs `env true` with a one-byte-changed
// copy of /usr/bin/true first in its PATH (read from the agent's
// environment, so the copy shadows the real one): the agent's watch session
// holds a verdict for every exec, like a `run` session, its exec events
// carry their sha256, and the copy is modified against dpkg's coreutils
// listing, which is a binary-modified finding.
func TestWatchSessionExecVerdicts(t *testing.T) {
	testenv.RequireRoot(t)
	if _, err := os.Stat("/var/lib/dpkg/info/coreutils.md5sums"); err != nil {
		t.Skip("no dpkg coreutils")
	}
	agentBin := filepath.Join(t.TempDir(), "node_modules", "@anthropic-ai", "claude-code", "claude")
	bin := t.TempDir()
	copyFile(t, "/bin/sh", agentBin, nil)
	copyFile(t, "/usr/bin/true", filepath.Join(bin, "true"), func(b []byte) { b[len(b)-1] ^= 0xff }) // past the code: it still runs
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".claude"), 0o700); err != nil { // a store, so watch starts
		t.Fatal(err)
	}
	store := t.TempDir()
	_, stop := startWatch(t, store, []string{home})

	// The sleep keeps the agent alive until watch has read its PATH, as a
	// real agent is.
	ag := exec.Command(agentBin, "-c", "sleep 0.5; env true")
	ag.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	if out, err := ag.CombinedOutput(); err != nil {
		t.Fatalf("agent: %v %s", err, out)
	}
	stop()

	metas, err := session.List(store)
	if err != nil {
		t.Fatal(err)
	}
	var path string
	for _, m := range metas {
		if m.RootPID == ag.Process.Pid {
			path = m.Path
		}
	}
	if path == "" {
		t.Fatalf("no watch session for the agent %d: %+v", ag.Process.Pid, metas)
	}
	execs, verdicts := readExecs(t, path)
	seen := map[string]bool{}
	for id, e := range execs {
		v, ok := verdicts[id]
		if !ok {
			t.Errorf("exec %s (%s) has no verdict", id, e.Path)
			continue
		}
		if v.SHA256 == "" || e.SHA256() != v.SHA256 {
			t.Errorf("exec %s: event sha256 %q, verdict %+v", e.Path, e.SHA256(), v)
		}
		seen[e.Path] = true
		if e.Path != filepath.Join(bin, "true") {
			continue
		}
		f, ok := v.Finding()
		if v.Status != integrity.Modified || v.Source != integrity.SourceDpkg || v.Package != "coreutils" ||
			!ok || f.Rule != integrity.RuleBinaryModified {
			t.Errorf("modified true: %+v (finding %+v), want modified against dpkg coreutils", v, f)
		}
	}
	for _, p := range []string{agentBin, filepath.Join(bin, "true")} {
		if !seen[p] {
			t.Errorf("no exec of %s in the agent's session: %v", p, seen)
		}
	}
}

// copyFile writes src's bytes, changed by edit when set, to an
// executable dst.
func copyFile(t *testing.T, src, dst string, edit func([]byte)) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Skip(err)
	}
	if edit != nil {
		edit(b)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

// readExecs returns a session's exec events and their binary verdicts,
// by exec id.
func readExecs(t *testing.T, path string) (map[string]*event.Event, map[string]integrity.Verdict) {
	t.Helper()
	r, err := session.Open(path)
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
	rows, err := r.Verdicts()
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]integrity.Verdict{}
	for _, row := range rows {
		var v integrity.Verdict
		if err := json.Unmarshal(row.Data, &v); err != nil {
			t.Fatal(err)
		}
		if row.Role == string(integrity.RoleBinary) {
			verdicts[row.ExecID] = v
		}
	}
	return execs, verdicts
}

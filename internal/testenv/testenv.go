// Package testenv holds the helpers tests use to decide whether the
// machine can run them: root, BPF, installed tools.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// RequireRoot skips t unless the test runs as root. Where root is
// expected (POLYGRAPH_REQUIRE_ROOT=1, as CI sets it), it fails instead, so
// a kernel-tier suite can never pass by skipping everything.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("POLYGRAPH_REQUIRE_ROOT") == "1" {
		t.Fatal("this test needs root and POLYGRAPH_REQUIRE_ROOT=1 says root is expected")
	}
	t.Skip("needs root to load BPF programs (run the tests with sudo)")
}

// Feature fails t when err reports a kernel feature missing where
// POLYGRAPH_REQUIRE_ROOT=1 says the machine should have it, and skips
// with the reason otherwise.
func Feature(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if os.Getenv("POLYGRAPH_REQUIRE_ROOT") == "1" {
		t.Fatalf("%s: %v", what, err)
	}
	t.Skipf("%s not available here: %v", what, err)
}

// Chromium returns the path of a Chromium for the browser tests (Debian's
// chromium package; $POLYGRAPH_CHROMIUM overrides it). It skips t when
// there is none, and fails it where POLYGRAPH_REQUIRE_ROOT=1 says the
// machine is CI's, which installs it (.ci/run).
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("POLYGRAPH_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("POLYGRAPH_REQUIRE_ROOT") == "1" {
		t.Fatal("no chromium on PATH, and POLYGRAPH_REQUIRE_ROOT=1 says CI installed it (apt-get install chromium)")
	}
	t.Skip("the browser tests need Chromium: apt-get install chromium (or set POLYGRAPH_CHROMIUM)")
	return ""
}

// LockLeftovers serializes, across the test binaries of a `go test ./...`
// (they run side by side), the tests that leave an isolated session behind
// on purpose and check that the next guard.Cleanup takes it (exclusive)
// against those that start isolated sessions, whose start runs
// guard.Cleanup and would take it first (shared). The lock is a file in
// the temp directory, released when t ends.
func LockLeftovers(t testing.TB, exclusive bool) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "polygraph-test-leftovers.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("the leftovers test lock: %v", err)
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	if err := unix.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		t.Fatalf("the leftovers test lock: %v", err)
	}
	t.Cleanup(func() { f.Close() })
}

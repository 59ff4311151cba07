package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// UnknownAPIKey is the key kestrel (Unknown) is given in
// $KESTREL_API_KEY: fake, but shaped like an Anthropic key, so a test can
// tell whether a report, a stream or an export shows it.
const UnknownAPIKey = "sk-ant-api03-pg25_fake_key_for_tests_only_pg25_fake_key_for_tests_only_pg25_fake_key_for_tests_only_pg25_fAA"

var (
	unknownOnce sync.Once
	unknownPath string
	unknownErr  error
)

// unknownAgent builds kestrel (test/e2e/kestrel) once per test binary and
// installs it where no profile looks: /opt/<random>/bin/kestrel as root,
// else ~/.local/share/<random>/bin/kestrel. The installation is removed
// when the test binary exits (TestMain runs the exit hooks).
func unknownAgent(t testing.TB) string {
	t.Helper()
	unknownOnce.Do(func() { unknownPath, unknownErr = installUnknown() })
	if unknownErr != nil {
		t.Fatalf("kestrel (the unknown agent) not built: %v", unknownErr)
	}
	return unknownPath
}

func installUnknown() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the harness source")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	var rnd [5]byte
	_, _ = rand.Read(rnd[:])
	base := "/opt"
	if os.Geteuid() != 0 {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		base = filepath.Join(home, ".local", "share")
	}
	root := filepath.Join(base, "x"+hex.EncodeToString(rnd[:]))
	bin := filepath.Join(root, "bin", "kestrel")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	// MkdirAll honours the umask; the test users must reach the program.
	for d := filepath.Dir(bin); d != base; d = filepath.Dir(d) {
		_ = os.Chmod(d, 0o755)
	}
	atExit(func() { _ = os.RemoveAll(root) })
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	cmd.Dir = filepath.Join(filepath.Dir(file), "kestrel")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build kestrel: %w: %s", err, out)
	}
	return bin, os.Chmod(bin, 0o755)
}

// exitHooks run when the test binary is done (TestMain): for what
// outlives one test, such as the installed unknown agent.
var (
	exitMu    sync.Mutex
	exitHooks []func()
)

func atExit(f func()) {
	exitMu.Lock()
	defer exitMu.Unlock()
	exitHooks = append(exitHooks, f)
}

func runExitHooks() {
	exitMu.Lock()
	defer exitMu.Unlock()
	for i := len(exitHooks) - 1; i >= 0; i-- {
		exitHooks[i]()
	}
	exitHooks = nil
}

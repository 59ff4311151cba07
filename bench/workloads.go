//go:build linux

package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// workload is one thing to run bare and under each tracer. Every
// workload is a shell script the helper runs, so each tracer sees the
// very same command line.
type workload struct {
	Name  string
	Title string
	// MaxOverhead is the wall-time target against bare (0.05 is 5%);
	// zero when the issue sets none.
	MaxOverhead float64
	setup       func(ctx context.Context, e *env, w *workload) error
	// prepare runs before every run, untraced and untimed.
	prepare func(e *env) error
	// path is the script, when not <tmp>/<Name>.sh (the rate steps).
	path string
}

// script is where a workload's script lives.
func (w *workload) script(e *env) string {
	if w.path != "" {
		return w.path
	}
	return filepath.Join(e.tmp, w.Name+".sh")
}

// argv is the command the helper times.
func (w *workload) argv(e *env) []string { return []string{"/bin/sh", w.script(e)} }

var workloads = []*workload{
	{Name: "exec", Title: "exec storm", MaxOverhead: 0.05, setup: setupExec},
	{Name: "files", Title: "file storm", MaxOverhead: 0.10, setup: setupFiles},
	{Name: "build", Title: "go build", MaxOverhead: 0.02, setup: setupBuild, prepare: prepareBuild},
	{Name: "agent", Title: "agent-like burst", setup: setupAgent},
}

func workloadNames() []string {
	var n []string
	for _, w := range workloads {
		n = append(n, w.Name)
	}
	return n
}

func findWorkload(n string) *workload {
	for _, w := range workloads {
		if w.Name == n {
			return w
		}
	}
	return nil
}

func writeScript(path, body string) error {
	return os.WriteFile(path, []byte("set -e\n"+body), 0o755)
}

// setupExec: a shell loop of /bin/true.
func setupExec(ctx context.Context, e *env, w *workload) error {
	return writeScript(w.script(e), fmt.Sprintf(
		"i=0\nwhile [ $i -lt %d ]; do /bin/true; i=$((i+1)); done\n", e.sizes.execs))
}

// stormDir is the file storm's tree: dirs of 100 small files.
func stormDir(e *env) string { return filepath.Join(e.tmp, "tree") }

func makeTree(e *env) error {
	dir := stormDir(e)
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	body := []byte(strings.Repeat("polygraph bench\n", 32)) // 512 bytes
	for i := 0; i < e.sizes.files; i++ {
		d := filepath.Join(dir, fmt.Sprintf("d%02d", i/100))
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d", i%100)), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// setupFiles: the helper's open/read/close loop over the tree.
func setupFiles(ctx context.Context, e *env, w *workload) error {
	if err := makeTree(e); err != nil {
		return err
	}
	return writeScript(w.script(e), fmt.Sprintf(
		"exec %s files -dir %s -n %d\n", e.helper, stormDir(e), e.sizes.opens))
}

// The build workload compiles github.com/cilium/ebpf (and its link
// package), polygraph's largest pure-Go dependency, from the local module
// cache with the network off. The standard library comes precompiled
// from a seed cache: `go build -a` would rebuild the runtime and the
// whole standard library each time (20 s of 27 s here), and ≥ 5
// interleaved runs under five tracers would then not fit the bench's
// time budget. Every run starts from a fresh copy of the seed, so the
// module's 150-odd packages are compiled from source every time.
const buildMain = `package main

import (
	_ "github.com/cilium/ebpf"
	_ "github.com/cilium/ebpf/link"
)

func main() {}
`

// quickBuildMain is the -quick variant: nothing outside the standard library.
const quickBuildMain = `package main

import "fmt"

func main() { fmt.Println("hello") }
`

func buildDir(e *env) string  { return filepath.Join(e.tmp, "buildmod") }
func buildSeed(e *env) string { return filepath.Join(e.tmp, "gocache-seed") }
func buildCache(e *env) string {
	return filepath.Join(e.tmp, "gocache-run")
}

// buildEnv is the go command's environment: no network, no toolchain
// switch, no VCS stamping, a private cache.
func buildEnv(e *env, cache string) []string {
	return []string{"GOCACHE=" + cache, "GOPROXY=off", "GOSUMDB=off", "GOFLAGS=-mod=readonly -buildvcs=false",
		"GOTOOLCHAIN=local", "GOTELEMETRY=off", "CGO_ENABLED=0"}
}

func setupBuild(ctx context.Context, e *env, w *workload) error {
	dir := buildDir(e)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// A snapshot of this module's go.mod and go.sum pins the versions;
	// the module cache has them since polygraph builds from it.
	for _, f := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(e.root, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return err
		}
	}
	main := buildMain
	if e.cfg.quick {
		main = quickBuildMain
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		return err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return err
	}
	cacheLine := "export GOCACHE=" + buildCache(e)
	if e.cfg.quick {
		cacheLine = "" // the user's own (warm) cache: -quick checks the plumbing only
	} else if err := seedCache(ctx, e, goBin); err != nil {
		return err
	}
	var env strings.Builder
	for _, kv := range buildEnv(e, buildCache(e)) {
		if !strings.HasPrefix(kv, "GOCACHE=") {
			fmt.Fprintf(&env, "export %q\n", kv)
		}
	}
	return writeScript(w.script(e), fmt.Sprintf("%s\n%scd %s\nexec %s build -o /dev/null .\n",
		cacheLine, env.String(), dir, goBin))
}

// seedCache compiles the standard-library packages the build needs, and
// nothing else, into the seed cache.
func seedCache(ctx context.Context, e *env, goBin string) error {
	list := exec.CommandContext(ctx, goBin, "list", "-deps", "-f", "{{if .Standard}}{{.ImportPath}}{{end}}", ".")
	list.Dir = buildDir(e)
	list.Env = append(os.Environ(), buildEnv(e, buildSeed(e))...)
	out, err := list.Output()
	if err != nil {
		return fmt.Errorf("go list the build's packages: %w", err)
	}
	var imports strings.Builder
	for _, p := range strings.Fields(string(out)) {
		if p == "unsafe" || p == "runtime" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") ||
			strings.HasPrefix(p, "vendor/") || strings.HasPrefix(p, "runtime/") {
			continue // not importable, or pulled in by runtime anyway
		}
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	dir := filepath.Join(e.tmp, "seedmod")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module seed\n\ngo 1.22\n"), 0o644)
	src := "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		return err
	}
	build := exec.CommandContext(ctx, goBin, "build", "-o", "/dev/null", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), buildEnv(e, buildSeed(e))...)
	if b, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("seed the build cache: %w\n%s", err, b)
	}
	return nil
}

// prepareBuild gives each run a fresh copy of the seed cache (hard
// links: the go command never rewrites a cache entry in place).
func prepareBuild(e *env) error {
	if e.cfg.quick {
		return nil
	}
	dst := buildCache(e)
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	src := buildSeed(e)
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return os.Link(p, target)
	})
}

// agentRepo is a small git repository the agent-like burst works in: a
// copy of this module's Go sources and docs, committed, plus one change.
func agentRepo(e *env) string { return filepath.Join(e.tmp, "agentrepo") }

func setupAgent(ctx context.Context, e *env, w *workload) error {
	repo := agentRepo(e)
	if _, err := os.Stat(repo); err != nil {
		if err := copyTree(e.root, repo); err != nil {
			return err
		}
		git := func(args ...string) error {
			cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "user.name=bench", "-c", "user.email=bench@localhost",
				"-c", "init.defaultBranch=main"}, args...)...)
			cmd.Dir = repo
			if b, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("git %s: %w\n%s", strings.Join(args, " "), err, b)
			}
			return nil
		}
		if err := git("init", "-q"); err != nil {
			return err
		}
		if err := git("add", "-A"); err != nil {
			return err
		}
		if err := git("commit", "-qm", "snapshot"); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(repo, "NOTES.md"), []byte("work in progress\n"), 0o644); err != nil {
			return err
		}
	}
	// What a coding agent's tool calls look like: a short shell per call,
	// each a small pipeline, and now and then a connection (here to a
	// loopback listener the bench runs).
	call := fmt.Sprintf(`git status --short >/dev/null; grep -rn "func " --include=*.go . | head -n 20 >/dev/null; cat go.mod README.md | wc -l >/dev/null; %s dial -addr %s`,
		e.helper, e.addr)
	return writeScript(w.script(e), fmt.Sprintf(
		"cd %s\nexport GIT_CONFIG_NOSYSTEM=1 HOME=%s\ni=0\nwhile [ $i -lt %d ]; do /bin/sh -c '%s'; i=$((i+1)); done\n",
		repo, e.tmp, e.sizes.shells, call))
}

// copyTree copies the Go sources, go.mod and the Markdown files of the
// module (no binaries, no .git).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || rel == "bench/out" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		switch {
		case strings.HasSuffix(p, ".go"), strings.HasSuffix(p, ".md"), d.Name() == "go.mod", d.Name() == "go.sum":
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

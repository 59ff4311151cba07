// Package e2e runs the real agent CLIs (Claude Code, Codex CLI, Gemini CLI),
// a real Python agent (mini-swe-agent, from ../shared/agents/mini-swe-agent)
// and an agent polygraph has no profile for (kestrel, test/e2e/kestrel, built
// by the tests) offline against the scripted model server in test/fakellm, each in a fresh
// temporary HOME and project directory with a clean environment, and checks
// what they did, what they wrote in their transcripts and what they sent.
//
// Install the pinned CLIs (into ${POLYGRAPH_AGENTS_DIR:-/var/cache/polygraph/agents},
// outside the repository; a fast no-op once done), then run:
//
//	bash test/agents/install.sh
//	POLYGRAPH_E2E=1 go test ./test/e2e/...
//
// Without POLYGRAPH_E2E the tests skip when the CLIs are not installed; with
// POLYGRAPH_E2E=1 a missing agent is a failure. mini-swe-agent is not installed
// by install.sh: its bundle lies beside the repository, and its setup.sh
// (Debian packages for /usr/bin/python3) runs once per machine as root:
//
//	bash ../shared/agents/mini-swe-agent/setup.sh
//
// POLYGRAPH_E2E_KEEP=1 keeps each run's directories (and the server's
// request log, requests.jsonl) and logs where they are. An agent run takes
// one to a few seconds.
//
// TestMatrix (matrix_test.go) is the scenario matrix of issue 14: honest
// and attack scenarios on every agent, with the workspace under /tmp, a
// user's home or /srv, the agent run as root or as a local user through
// `sudo polygraph run`, and its HOME inherited or overridden; it prints a
// table whose lines start with "matrix". It needs sudo and useradd (.ci/run
// installs sudo) and binds 127.0.0.1:53 for its loopback resolver.
//
// TestAgents25 (agents25_test.go) is issue 25's measurement on all five
// agents, kestrel included; it writes system files and restores them, and
// prints tables in lines led by "agents25".
//
// RunAgent is the harness: the lead's `polygraph run --` plugs in through
// Options.Wrapper, which prefixes the agent's command line.
//
// All traffic stays on loopback: the model server listens on 127.0.0.1 and
// every agent is configured as ../shared/REAL-AGENTS.md describes (Codex's
// plugins, analytics, feedback and OpenTelemetry exporters are off; Claude
// Code's nonessential traffic, telemetry and updater are off; Gemini CLI's
// usage statistics and telemetry are off; mini-swe-agent talks only to the
// endpoint its adapter is given, with cost tracking off). TestLoopbackOnly
// checks it under strace: every connect, sendto and sendmsg address must be
// loopback or local.
//
// To run an agent under polygraph, pass the wrapper with an absolute path
// (the agent's environment is clean, with a minimal PATH):
//
//	r := e2e.RunAgent(t, e2e.Claude, sc, e2e.WithWrapper("/abs/polygraph", "run", "--"))
package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/test/fakellm"
)

// The agents RunAgent knows.
const (
	Claude = "claude"
	Codex  = "codex"
	Gemini = "gemini"
	Mini   = "mini" // mini-swe-agent 2.4.6, run with Debian's /usr/bin/python3
	// Unknown is kestrel (test/e2e/kestrel), an agent no profile in
	// internal/agent describes: built by the tests, installed under
	// /opt/<random>/bin, it re-executes itself twice before its engine talks
	// to the model (Anthropic Messages, no streaming), runs shell calls as
	// `bash -c`, writes files from inside its own process and keeps a
	// journal in a format of its own.
	Unknown = "kestrel"
)

// Agents lists the agents polygraph has a profile for, in a stable order;
// Unknown is not among them.
var Agents = []string{Claude, Codex, Gemini, Mini}

// Options tune one RunAgent call. The zero value is usable.
type Options struct {
	// Prompt is the user's prompt. The fake model ignores it; it only has to
	// be there. Default "Run the tests.".
	Prompt string
	// Timeout bounds the whole run; on expiry the process group is killed.
	// Default 90s.
	Timeout time.Duration
	// Wrapper prefixes the agent's command line, for example
	// {"polygraph", "run", "--"} or {"strace", "-f", "-o", FILE}.
	Wrapper []string
	// Env adds KEY=VALUE pairs to the agent's clean environment.
	Env []string
	// Files are created in the project directory before the run, keyed by
	// path relative to it. A file that starts with "#!" is made executable,
	// as a checkout of the project would have it.
	Files map[string]string
	// HomeFiles are created in the agent's HOME before the run, keyed by
	// path relative to it (a developer's credentials, shell rc files).
	HomeFiles map[string]string
	// Base is the directory the project directory is created in (default
	// os.TempDir()): where the workspace lives.
	Base string
	// User runs the agent as this account, as `sudo polygraph run` does:
	// the harness starts the command line (Wrapper, which must begin with
	// sudo) with the account's credentials, the run's directories are the
	// account's, and the agent's HOME is the account's home.
	User *Account
	// HomeOverride runs the agent under `env -i HOME=<other>`: its HOME is
	// a directory other than the one the wrapper was started with.
	HomeOverride bool
	// Script, when set, gives the scenario's turns once the run's HOME and
	// project directory exist, for turns that name them.
	Script func(home, dir string) []fakellm.Turn
	// Setup, when set, runs once Files and HomeFiles are written, before
	// the agent starts: what a checkout needs beyond files (a git
	// repository and its first commit). An error fails the test.
	Setup func(home, dir string) error
}

// Account is a local user account a run can use.
type Account struct {
	Name     string
	UID, GID int
	Home     string
}

// Option sets a field of Options.
type Option func(*Options)

// WithPrompt sets Options.Prompt.
func WithPrompt(p string) Option { return func(o *Options) { o.Prompt = p } }

// WithTimeout sets Options.Timeout.
func WithTimeout(d time.Duration) Option { return func(o *Options) { o.Timeout = d } }

// WithWrapper sets Options.Wrapper.
func WithWrapper(argv ...string) Option { return func(o *Options) { o.Wrapper = argv } }

// WithEnv appends to Options.Env.
func WithEnv(kv ...string) Option { return func(o *Options) { o.Env = append(o.Env, kv...) } }

// WithFiles sets Options.Files.
func WithFiles(files map[string]string) Option { return func(o *Options) { o.Files = files } }

// WithHomeFiles sets Options.HomeFiles.
func WithHomeFiles(files map[string]string) Option { return func(o *Options) { o.HomeFiles = files } }

// WithBase sets Options.Base.
func WithBase(dir string) Option { return func(o *Options) { o.Base = dir } }

// WithUser sets Options.User.
func WithUser(a *Account) Option { return func(o *Options) { o.User = a } }

// WithScript sets Options.Script.
func WithScript(f func(home, dir string) []fakellm.Turn) Option {
	return func(o *Options) { o.Script = f }
}

// WithSetup sets Options.Setup.
func WithSetup(f func(home, dir string) error) Option { return func(o *Options) { o.Setup = f } }

// WithHomeOverride sets Options.HomeOverride.
func WithHomeOverride() Option { return func(o *Options) { o.HomeOverride = true } }

// Result is what one agent run left behind.
type Result struct {
	// Agent is the agent that ran: Claude, Codex, Gemini or Mini.
	Agent string
	// Home is the run's HOME; CodexHome is $HOME/.codex (Codex only).
	Home, CodexHome string
	// Dir is the project directory the agent ran in.
	Dir string
	// Argv and Env are the command line and environment the agent ran with.
	Argv, Env []string
	// Stdout and Stderr are the agent's output: its stream-json or --json
	// event stream on stdout.
	Stdout, Stderr []byte
	// ExitCode is the process's exit status, -1 when it was killed.
	ExitCode int
	// TimedOut says the run hit Options.Timeout.
	TimedOut bool
	Duration time.Duration
	// Exited is from the start to the command's own exit, as its pidfd
	// said: without the wait for its output pipes, which a process it
	// left running can hold open (Duration's end).
	Exited time.Duration
	// Transcripts are the session files the agent wrote (see transcriptGlobs).
	Transcripts []string
	// ServerURL is the fake model server's base URL.
	ServerURL string
	// Requests is the fake model server's request log.
	Requests []fakellm.Request
}

// Entry points of the installed CLIs, read once from install.sh --check.
var (
	entryOnce sync.Once
	entries   map[string]string
	entryErr  error
)

// AgentPath returns the installed entry point of agent (for Mini, the
// bundle directory). It skips the test when the agent is not installed,
// unless POLYGRAPH_E2E=1, where that fails it. POLYGRAPH_CLAUDE,
// POLYGRAPH_CODEX, POLYGRAPH_GEMINI, POLYGRAPH_MINI and POLYGRAPH_KESTREL override the entry
// point of one agent.
func AgentPath(t testing.TB, agent string) string {
	t.Helper()
	if p := os.Getenv("POLYGRAPH_" + strings.ToUpper(agent)); p != "" {
		return p
	}
	if agent == Mini {
		return miniBundle(t)
	}
	if agent == Unknown {
		return unknownAgent(t)
	}
	entryOnce.Do(func() { entries, entryErr = findEntries() })
	p, ok := entries[agent]
	if !ok {
		err := entryErr
		if err == nil {
			err = fmt.Errorf("install.sh --check printed no entry point for %q", agent)
		}
		msg := fmt.Sprintf("agent CLI %s not installed (%v); run: bash test/agents/install.sh", agent, err)
		if os.Getenv("POLYGRAPH_E2E") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; set POLYGRAPH_E2E=1 to make this a failure")
	}
	return p
}

// findEntries runs test/agents/install.sh --check, which prints an
// "<agent> <path>" line for each pinned version that is installed and fails
// unless all are.
func findEntries() (map[string]string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return nil, errors.New("cannot locate the harness source")
	}
	script := filepath.Join(filepath.Dir(file), "..", "agents", "install.sh")
	var stderr bytes.Buffer
	cmd := exec.Command("bash", script, "--check")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, path, ok := strings.Cut(line, " "); ok {
			m[name] = path
		}
	}
	if err != nil {
		return m, fmt.Errorf("%s --check: %w: %s", script, err, strings.TrimSpace(stderr.String()))
	}
	return m, nil
}

// RunAgent runs agent ("claude", "codex", "gemini", "mini" or "kestrel") headless on a fresh
// HOME and project directory against a fake model server playing sc, and
// returns what the run left. Relative paths in sc resolve against the
// project directory. A run that cannot start fails the test; a non-zero exit
// or a timeout is reported in the Result for the test to judge.
func RunAgent(t testing.TB, agent string, sc fakellm.Scenario, opts ...Option) *Result {
	t.Helper()
	o := Options{Prompt: "Run the tests.", Timeout: 90 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	entry := AgentPath(t, agent)

	root := tempDir(t, "polygraph-e2e-"+agent+"-")
	work := root
	if o.Base != "" {
		work = tempDirIn(t, o.Base, "polygraph-e2e-"+agent+"-")
	}
	// parentHome is the HOME the wrapper starts with; r.Home the agent's.
	parentHome := filepath.Join(root, "home")
	if o.User != nil {
		parentHome = o.User.Home
	}
	r := &Result{Agent: agent, Home: parentHome, Dir: filepath.Join(work, "project")}
	if o.HomeOverride {
		r.Home = filepath.Join(root, "althome")
	}
	tmp := filepath.Join(root, "tmp")
	for _, d := range []string{parentHome, r.Home, r.Dir, tmp} {
		must(t, os.MkdirAll(d, 0o755))
	}
	writeFiles(t, r.Dir, o.Files)
	writeFiles(t, r.Home, o.HomeFiles)
	if o.Setup != nil {
		must(t, o.Setup(r.Home, r.Dir))
	}

	if o.Script != nil {
		sc.Turns = o.Script(r.Home, r.Dir)
	}
	sc.Dir = r.Dir
	srv, err := fakellm.Start(sc)
	must(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	r.ServerURL = srv.URL()

	node, err := exec.LookPath("node")
	if err != nil && agent != Claude && agent != Mini && agent != Unknown {
		t.Fatalf("%s needs node on PATH: %v", agent, err)
	}
	env := baseEnv(r.Home, tmp, node)
	var argv []string
	switch agent {
	case Claude:
		env = append(env,
			"ANTHROPIC_BASE_URL="+r.ServerURL,
			"ANTHROPIC_API_KEY=x",
			"IS_SANDBOX=1", // root may not --dangerously-skip-permissions without it
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1",
		)
		argv = append(interp(entry, node), "-p", o.Prompt,
			"--output-format", "stream-json", "--verbose", "--dangerously-skip-permissions")
	case Codex:
		r.CodexHome = filepath.Join(r.Home, ".codex")
		must(t, os.MkdirAll(r.CodexHome, 0o755))
		must(t, os.WriteFile(filepath.Join(r.CodexHome, "config.toml"), []byte(codexConfig(r.ServerURL)), 0o644))
		env = append(env, "CODEX_HOME="+r.CodexHome, "FAKE_LLM_API_KEY=x")
		argv = append(interp(entry, node), "exec", "--json", "--strict-config", "--skip-git-repo-check",
			"--dangerously-bypass-approvals-and-sandbox", o.Prompt)
	case Gemini:
		must(t, os.MkdirAll(filepath.Join(r.Home, ".gemini"), 0o755))
		must(t, os.WriteFile(filepath.Join(r.Home, ".gemini", "settings.json"), []byte(geminiSettings), 0o644))
		env = append(env,
			"GEMINI_API_KEY=x",
			"GOOGLE_GEMINI_BASE_URL="+r.ServerURL,
			"GEMINI_CLI_NO_RELAUNCH=true",
		)
		argv = append(interp(entry, node), "-p", o.Prompt, "-m", "gemini-2.5-pro", "-o", "stream-json", "--yolo")
	case Mini:
		// As the bundle's README runs it; stdin is /dev/null.
		env = append(env,
			"PYTHONPATH="+strings.Join([]string{filepath.Join(entry, "adapter"), filepath.Join(entry, "vendor"), filepath.Join(entry, "src", "mini-swe-agent", "src")}, ":"),
			"PYTHONDONTWRITEBYTECODE=1",
			"MSWEA_CONFIGURED=true",
			"MSWEA_SILENT_STARTUP=1",
			"MSWEA_COST_TRACKING=ignore_errors",
			"OPENAI_COMPAT_BASE_URL="+r.ServerURL+"/v1",
			"OPENAI_COMPAT_API_KEY=x",
		)
		argv = []string{miniPython, "-m", "minisweagent.run.mini", "--model", "fake-model",
			"--model-class", "fakellm_adapter.OpenAICompatModel", "--yolo", "--exit-immediately", "--task", o.Prompt}
	case Unknown:
		env = append(env, "KESTREL_API_KEY="+UnknownAPIKey)
		argv = []string{entry, "--endpoint", r.ServerURL, "--task", o.Prompt}
	default:
		t.Fatalf("unknown agent %q (want one of %v)", agent, Agents)
	}
	env = append(env, o.Env...)
	if o.User != nil {
		env = setEnv(env, "USER", o.User.Name)
		env = setEnv(env, "LOGNAME", o.User.Name)
		for _, d := range []string{root, work, r.Home} {
			must(t, chownTree(d, o.User.UID, o.User.GID))
		}
	}
	r.Env = env
	if o.User != nil || o.HomeOverride {
		// The agent's environment is exactly env, whatever sudo or the
		// wrapper did to theirs; only its HOME differs from the wrapper's.
		argv = append(append([]string{"/usr/bin/env", "-i"}, env...), argv...)
		env = setEnv(env, "HOME", parentHome)
	}
	argv = append(append([]string(nil), o.Wrapper...), argv...)
	r.Argv = argv

	ctx, cancel := context.WithTimeout(context.Background(), o.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.Dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Own process group, so a timeout (or a leftover child) is killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.User != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(o.User.UID), Gid: uint32(o.User.GID)}
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second

	start := time.Now()
	err = cmd.Start()
	if err != nil {
		t.Fatalf("start %s: %v", agent, err)
	}
	exited := watchExit(cmd.Process.Pid, start)
	err = cmd.Wait()
	r.Duration = time.Since(start)
	r.Exited = exited(r.Duration)
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // leftovers of the tree, if any
	r.Stdout, r.Stderr = stdout.Bytes(), stderr.Bytes()
	r.ExitCode = cmd.ProcessState.ExitCode()
	r.TimedOut = ctx.Err() != nil
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) && !r.TimedOut {
		t.Errorf("wait %s: %v", agent, err)
	}

	r.Requests = srv.Requests()
	r.Transcripts = findTranscripts(agent, r.Home, r.CodexHome)
	t.Logf("%s ran in %v, exit %d, %d model requests, transcripts %v",
		agent, r.Duration.Round(time.Millisecond), r.ExitCode, len(r.Requests), r.Transcripts)
	if os.Getenv("POLYGRAPH_E2E_KEEP") == "1" {
		if f, err := os.Create(filepath.Join(root, "requests.jsonl")); err == nil {
			_ = srv.WriteLog(f)
			_ = f.Close()
		}
		_ = os.WriteFile(filepath.Join(root, "stdout"), r.Stdout, 0o644)
		_ = os.WriteFile(filepath.Join(root, "stderr"), r.Stderr, 0o644)
	}
	return r
}

// watchExit notes when process pid, started at start, exits (its pidfd
// turns readable then, before it is reaped) and returns what waits for
// that; it gives fallback where the kernel has no pidfd.
func watchExit(pid int, start time.Time) func(fallback time.Duration) time.Duration {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return func(fallback time.Duration) time.Duration { return fallback }
	}
	done := make(chan time.Duration, 1)
	go func() {
		defer unix.Close(fd)
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			switch {
			case err == unix.EINTR:
				continue
			case err != nil:
				done <- -1
			default:
				done <- time.Since(start)
			}
			return
		}
	}()
	return func(fallback time.Duration) time.Duration {
		if d := <-done; d >= 0 {
			return d
		}
		return fallback
	}
}

// Dump logs the run's output and request log, for a failing test.
func (r *Result) Dump(t testing.TB) {
	t.Helper()
	t.Logf("%s argv: %q", r.Agent, r.Argv)
	t.Logf("%s stdout:\n%s", r.Agent, tail(r.Stdout, 8000))
	t.Logf("%s stderr:\n%s", r.Agent, tail(r.Stderr, 8000))
	for i, q := range r.Requests {
		t.Logf("request %d: %s %s?%s turn=%d status=%d body=%s", i, q.Method, q.Path, q.Query, q.Turn, q.Status, tail(q.Body, 600))
	}
}

// ModelRequests are the requests that played a scenario turn (not side
// requests), in order.
func (r *Result) ModelRequests() []fakellm.Request {
	var out []fakellm.Request
	for _, q := range r.Requests {
		if q.Turn >= 0 {
			out = append(out, q)
		}
	}
	return out
}

// baseEnv is the clean (env -i style) environment every agent gets.
func baseEnv(home, tmp, node string) []string {
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if node != "" {
		path = filepath.Dir(node) + ":" + path
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + path,
		"TMPDIR=" + tmp,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"SHELL=/bin/bash",
		"NO_COLOR=1",
	}
	if u, err := user.Current(); err == nil {
		env = append(env, "USER="+u.Username, "LOGNAME="+u.Username)
	}
	return env
}

// interp is the command line that runs entry: node for a script, the file
// itself for a native binary.
func interp(entry, node string) []string {
	if strings.HasSuffix(entry, ".js") || strings.HasSuffix(entry, ".cjs") || strings.HasSuffix(entry, ".mjs") {
		return []string{node, entry}
	}
	return []string{entry}
}

// codexConfig is $CODEX_HOME/config.toml: the fake provider, no approvals or
// sandbox, and everything that would reach off loopback switched off.
func codexConfig(base string) string {
	return `model = "gpt-5.5"
model_provider = "fakellm"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.fakellm]
name = "fake-llm"
base_url = "` + base + `/v1"
wire_api = "responses"
env_key = "FAKE_LLM_API_KEY"

[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false

[analytics]
enabled = false

[feedback]
enabled = false

[otel]
exporter = "none"
trace_exporter = "none"
metrics_exporter = "none"
`
}

// geminiSettings is $HOME/.gemini/settings.json: API-key auth (headless mode
// needs a selected type), folder trust off (or --yolo is downgraded), no
// usage statistics or telemetry.
const geminiSettings = `{
  "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false}
}
`

// findTranscripts lists the session files agent wrote:
// Claude $HOME/.claude/projects/*/*.jsonl, Codex
// $CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl, Gemini
// $HOME/.gemini/tmp/*/chats/*, mini-swe-agent
// $HOME/.config/mini-swe-agent/last_mini_run.traj.json, kestrel
// $HOME/.local/state/kestrel/journal/*.ndjson (its own format).
func findTranscripts(agent, home, codexHome string) []string {
	var pats []string
	switch agent {
	case Claude:
		pats = []string{filepath.Join(home, ".claude", "projects", "*", "*.jsonl")}
	case Codex:
		pats = []string{filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*.jsonl")}
	case Gemini:
		pats = []string{filepath.Join(home, ".gemini", "tmp", "*", "chats", "*")}
	case Mini:
		pats = []string{filepath.Join(home, ".config", "mini-swe-agent", "last_mini_run.traj.json")}
	case Unknown:
		pats = []string{filepath.Join(home, ".local", "state", "kestrel", "journal", "*.ndjson")}
	}
	var out []string
	for _, p := range pats {
		m, _ := filepath.Glob(p)
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// miniPython is the interpreter mini-swe-agent runs with: Debian's, for
// which the bundle's vendored pydantic-core is built and setup.sh installs
// the other dependencies.
const miniPython = "/usr/bin/python3"

// miniBundle returns the mini-swe-agent bundle, ../shared/agents/mini-swe-agent
// from the repository root, after checking that it imports (setup.sh has
// run). It skips the test when either is missing, unless POLYGRAPH_E2E=1,
// where that fails it.
func miniBundle(t testing.TB) string {
	t.Helper()
	miniOnce.Do(func() { miniDir, miniErr = findMini() })
	if miniErr != nil {
		msg := fmt.Sprintf("mini-swe-agent not runnable: %v", miniErr)
		if os.Getenv("POLYGRAPH_E2E") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg + "; set POLYGRAPH_E2E=1 to make this a failure")
	}
	return miniDir
}

var (
	miniOnce sync.Once
	miniDir  string
	miniErr  error
)

func findMini() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the harness source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "shared", "agents", "mini-swe-agent")
	if _, err := os.Stat(filepath.Join(dir, "src", "mini-swe-agent", "src", "minisweagent")); err != nil {
		return "", fmt.Errorf("no bundle at %s (%w)", dir, err)
	}
	home, err := os.MkdirTemp("", "polygraph-mini-check-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(home)
	cmd := exec.Command(miniPython, "-c", "import minisweagent.run.mini, fakellm_adapter")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "MSWEA_SILENT_STARTUP=1", "PYTHONDONTWRITEBYTECODE=1",
		"PYTHONPATH=" + filepath.Join(dir, "adapter") + ":" + filepath.Join(dir, "vendor") + ":" + filepath.Join(dir, "src", "mini-swe-agent", "src")}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s cannot import it (%w: %s); run as root: bash %s", miniPython, err, tail(out, 400), filepath.Join(dir, "setup.sh"))
	}
	return dir, nil
}

// writeFiles creates files under dir, keyed by path relative to it; one
// that starts with "#!" is executable.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		mode := os.FileMode(0o644)
		if strings.HasPrefix(content, "#!") {
			mode = 0o755
		}
		must(t, os.WriteFile(p, []byte(content), mode))
	}
}

// setEnv returns env with key set to value, replacing an earlier setting.
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// chownTree gives dir and everything under it to uid:gid.
func chownTree(dir string, uid, gid int) error {
	return filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// tempDir is a fresh directory removed at cleanup, unless POLYGRAPH_E2E_KEEP=1.
func tempDir(t testing.TB, prefix string) string {
	t.Helper()
	return tempDirIn(t, "", prefix)
}

// tempDirIn is tempDir in dir ("" for os.TempDir()).
func tempDirIn(t testing.TB, dir, prefix string) string {
	t.Helper()
	d, err := os.MkdirTemp(dir, prefix)
	must(t, err)
	// Resolve symlinks so paths match what the agents print and record.
	if r, err := filepath.EvalSymlinks(d); err == nil {
		d = r
	}
	if os.Getenv("POLYGRAPH_E2E_KEEP") == "1" {
		t.Logf("keeping %s", d)
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(d) })
	}
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

package agent

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestProfilesComplete checks that every named agent's profile says all
// that the packages reading it need, and that the generic profile says
// what it stands for.
func TestProfilesComplete(t *testing.T) {
	if len(All()) < 5 {
		t.Fatalf("%d profiles, want Claude Code, Codex, Gemini CLI, mini-swe-agent and the generic one", len(All()))
	}
	names, formats := map[string]bool{}, map[string]string{}
	for _, p := range All() {
		t.Run(p.Name, func(t *testing.T) {
			if p.Name == "" || p.Title == "" || names[p.Name] {
				t.Fatalf("profile %q (%q): empty or duplicate name or title", p.Name, p.Title)
			}
			names[p.Name] = true
			if len(p.Formats) == 0 || len(p.Programs) == 0 {
				t.Errorf("no formats or programs")
			}
			for _, f := range p.Formats {
				if other, ok := formats[f]; ok {
					t.Errorf("format %q also %s's", f, other)
				}
				formats[f] = p.Name
			}
			for _, w := range p.Wrappers {
				if w.Name == "" || w.Flag == "" && w.Prefix == "" && len(w.Contains) == 0 {
					t.Errorf("wrapper %+v: no name or no shape", w)
				}
			}
			for _, l := range p.Transcripts {
				checkLocation(t, l)
			}
			for _, f := range append(slices.Clone(p.Credentials), p.SandboxSettings...) {
				if strings.TrimPrefix(f.Path, "!") == "" || !slices.Contains([]string{"", "info", "low", "medium", "high"}, f.Severity) {
					t.Errorf("file %+v: no path or unknown severity", f)
				}
			}
			for _, h := range p.Hosts {
				if h.Name == "" || strings.Contains(h.Name, ":") || h.Role < ModelAPI || h.Role > Telemetry {
					t.Errorf("host %+v: no name, a port or no role", h)
				}
			}
			if p.Generic {
				return
			}
			if len(p.Installs) == 0 || len(p.Transcripts) == 0 || len(p.Tokens) == 0 || len(p.Credentials) == 0 {
				t.Errorf("incomplete profile: %+v", p)
			}
			has := map[string]bool{
				"Wrappers": len(p.Wrappers) > 0, "ConfigDirs": len(p.ConfigDirs) > 0,
				"InstructionFiles": len(p.InstructionFiles) > 0, "SandboxSettings": len(p.SandboxSettings) > 0,
				"EndpointVars": len(p.EndpointVars) > 0,
				"Hosts":        slices.ContainsFunc(p.Hosts, func(h Host) bool { return h.Role == ModelAPI && h.Egress }),
			}
			for part, ok := range has {
				if lacks := slices.Contains(lacking[p.Name], part); ok == lacks {
					t.Errorf("%s: has it %v, but lacking says %v", part, ok, lacks)
				}
			}
			for _, d := range p.ConfigDirs {
				if !HasToken(d) {
					t.Errorf("config dir %s carries no agent token", d)
				}
			}
		})
	}
}

// lacking lists, by agent, the parts of a profile it has none of (Hosts:
// no model API host in the egress allowlist); every other named agent has
// them all.
var lacking = map[string][]string{
	// It runs its actions with subprocess, reads no project files and
	// talks to whatever model API litellm is configured for.
	"mini-swe-agent": {"Wrappers", "ConfigDirs", "InstructionFiles", "EndpointVars", "Hosts"},
}

// nameOf is p's name, "" for no profile.
func nameOf(p *Profile) string {
	if p == nil {
		return ""
	}
	return p.Name
}

func checkLocation(t *testing.T, l Location) {
	t.Helper()
	if len(l.Roots) == 0 || len(l.Globs) == 0 {
		t.Errorf("location %+v: no roots or globs", l)
	}
	for _, r := range l.Roots {
		if !strings.HasPrefix(r, "~/") && !strings.HasPrefix(r, "$") {
			t.Errorf("root %s is neither below the home nor an environment variable", r)
		}
	}
	for _, g := range l.Globs {
		if _, err := filepath.Match(strings.TrimPrefix(g, "**/"), "x"); err != nil {
			t.Errorf("glob %s: %v", g, err)
		}
	}
}

func TestOrderAndLookup(t *testing.T) {
	var named []string
	for i, p := range All() {
		if p.Generic {
			if i != len(All())-1 {
				t.Errorf("generic profile %s is not last", p.Name)
			}
			continue
		}
		named = append(named, p.Name)
	}
	if !slices.IsSorted(named) {
		t.Errorf("named profiles out of order: %v", named)
	}
	for _, c := range []struct{ format, agent string }{
		{"claude-code", "claude-code"}, {"claude-stream-json", "claude-code"}, {"codex", "codex"},
		{"gemini-json", "gemini"}, {"gemini-jsonl", "gemini"}, {"gemini-logs", "gemini"},
		{"jsonl", "generic"}, {"otel", "generic"}, {"no-such-format", ""},
	} {
		p, ok := ByFormat(c.format)
		if got := nameOf(p); ok != (p != nil) || got != c.agent {
			t.Errorf("ByFormat(%q) = %v, want %q", c.format, got, c.agent)
		}
		if c.agent == "" {
			continue
		}
		if q, ok := ByName(c.agent); !ok || q != p {
			t.Errorf("ByName(%q) = %v, %v", c.agent, q, ok)
		}
	}
	if _, ok := ByName("claude"); ok {
		t.Error(`ByName("claude"): the agent is named claude-code`)
	}
}

func TestPathLookups(t *testing.T) {
	for _, c := range []struct {
		comp                string
		token, dir, instrux bool
	}{
		{".claude", true, true, false},
		{".codex", true, true, false},
		{".gemini", true, true, false},
		{".agents", false, true, false},
		{"claude-0", true, false, false},
		{"Claude-Code", true, false, false},
		{"gemini-shell-4q7Nls", true, false, false},
		{"cc-socks.sock", true, false, false},
		{"openai", true, false, false},
		{"CLAUDE.md", true, false, true},
		{"AGENTS.md", false, false, true},
		{"GEMINI.md", true, false, true},
		{".rgignore", false, false, true},
		{"agents.md", false, false, false},
		{"src", false, false, false},
		{".config", false, false, false},
	} {
		if got := HasToken(c.comp); got != c.token {
			t.Errorf("HasToken(%q) = %v", c.comp, got)
		}
		if got := IsConfigDir(c.comp); got != c.dir {
			t.Errorf("IsConfigDir(%q) = %v", c.comp, got)
		}
		if got := IsInstructionFile(c.comp); got != c.instrux {
			t.Errorf("IsInstructionFile(%q) = %v", c.comp, got)
		}
	}
}

func TestDataDir(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/home/u/.claude/projects/-work-app/c0de.jsonl", "/home/u/.claude"},
		{"/home/u/.claude/projects/-work-app/c0de/subagents/agent-1.jsonl", "/home/u/.claude"},
		{"/srv/codex/sessions/2025/10/02/rollout-1.jsonl", "/srv/codex"},
		{"/home/u/.gemini/tmp/abc/chats/session-1.json", "/home/u/.gemini"},
		{"/home/u/work/sessions/t.jsonl", ""}, // "work" names no agent
		{"/tmp/transcript.jsonl", ""},
		{"", ""},
	} {
		if got := DataDir(c.path); got != c.want {
			t.Errorf("DataDir(%s) = %q, want %q", c.path, got, c.want)
		}
	}
}

// TestExecutable recognises the agents from the exec paths the recorded
// sessions (internal/correlate/testdata) hold, whatever argv[0] says.
func TestExecutable(t *testing.T) {
	for _, c := range []struct {
		path  string
		argv  []string
		agent string
	}{
		{"/var/cache/polygraph/agents/claude-2.1.332/node_modules/@anthropic-ai/claude-code/bin/claude.exe", []string{"claude", "-p", "x"}, "claude-code"},
		{"/root/.local/share/claude/versions/2.1.332", []string{"claude"}, "claude-code"},
		{"/usr/bin/node", []string{"/usr/bin/node", "/var/cache/polygraph/agents/codex-0.171.0/node_modules/@openai/codex/bin/codex.js", "exec"}, "codex"},
		{"/var/cache/polygraph/agents/codex-0.171.0/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex", []string{"/proc/self/exe", "--codex-run-as-process-setup"}, "codex"},
		{"/usr/bin/node", []string{"/usr/bin/node", "/var/cache/polygraph/agents/gemini-0.61.0/node_modules/@google/gemini-cli/bundle/gemini.js", "-p", "x"}, "gemini"},
		{"/usr/local/bin/opencode", []string{"opencode"}, "generic"},
		{"/usr/bin/bash", []string{"claude", "-c", "x"}, ""}, // argv[0] alone says nothing
		{"/usr/bin/node", []string{"node", "codex.js"}, ""},  // a relative script names no install
		{"/usr/bin/python3", []string{"python3", "/srv/app/main.py"}, ""},
	} {
		p, ok := Executable(c.path, c.argv)
		if got := nameOf(p); ok != (p != nil) || got != c.agent {
			t.Errorf("Executable(%s, %q) = %q, want %q", c.path, c.argv, got, c.agent)
		}
	}
}

// TestWrappers matches the runtime's wrappers as the recorded sessions hold
// them.
func TestWrappers(t *testing.T) {
	override := "__CODEX_SNAPSHOT_OVERRIDE_SET_0=\"${CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS+x}\"\n. snap\nexec \"$@\""
	claudeEval := `source /home/u/.claude/shell-snapshots/snapshot-bash-1-zp6vuu.sh 2>/dev/null || true && \builtin shopt -u extglob 2>/dev/null || true && eval 'ls -la' < /dev/null`
	geminiTrap := "shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=/tmp/gemini-shell-4q7Nls/bgpids.tmp\n(\n  trap 'jobs -p > \"$_bgpids_file\"' EXIT\nls\n)"
	for _, c := range []struct {
		argv    []string
		script  string
		runtime string // Runtime's wrapper, "" for none
		role    WrapperRole
		carrier string // the Carrier wrapper of any profile matching, "" for none
	}{
		{[]string{"/proc/self/exe", "--codex-run-as-process-setup", "50", "/bin/bash", "-c", override}, "", "sandbox-setup", Transparent, ""},
		{[]string{"/bin/bash", "-c", override}, override, "snapshot-wrapper", Transparent, ""},
		{[]string{"/bin/bash", "-c", `set -e; . "/h/.codex/shell_snapshots/01a2.tmp-17"`}, `set -e; . "/h/.codex/shell_snapshots/01a2.tmp-17"`, "shell-snapshot", Helper, ""},
		{[]string{"/bin/bash", "-c", "-l", "SNAPSHOT_FILE=x\necho \"# Snapshot file\" >| \"$SNAPSHOT_FILE\""}, "SNAPSHOT_FILE=x\necho \"# Snapshot file\" >| \"$SNAPSHOT_FILE\"", "shell-snapshot", Helper, ""},
		// A snapshot writer that mentions the override is still a writer.
		{[]string{"sh", "-c", "x"}, "# Snapshot file __CODEX_SNAPSHOT_OVERRIDE", "shell-snapshot", Helper, ""},
		{[]string{"/bin/bash", "-c", claudeEval}, claudeEval, "", 0, "snapshot-eval"},
		{[]string{"/usr/bin/bash", "-c", geminiTrap}, geminiTrap, "", 0, "bgpids-trap"},
		{[]string{"/bin/bash", "-c", "set -e; . ./env.sh"}, "set -e; . ./env.sh", "", 0, ""},
		{[]string{"git", "status"}, "", "", 0, ""},
	} {
		w, ok := Runtime(c.argv, c.script)
		if got := w.Name; ok != (got != "") || got != c.runtime || ok && w.Role != c.role {
			t.Errorf("Runtime(%q) = %q (role %d), want %q (role %d)", c.script, got, w.Role, c.runtime, c.role)
		}
		var carrier string
		for _, p := range All() {
			for _, w := range p.Wrappers {
				if w.Role == Carrier && w.Matches(c.argv, c.script) {
					carrier = w.Name
				}
			}
		}
		if carrier != c.carrier {
			t.Errorf("carrier of %q = %q, want %q", c.script, carrier, c.carrier)
		}
	}
}

func TestLocationDirs(t *testing.T) {
	env := map[string]string{"CODEX_HOME": "/srv/codex"}
	getenv := func(k string) string { return env[k] }
	l := Location{Roots: []string{"~/.codex/sessions", "$CODEX_HOME/sessions", "$UNSET/x", "~/.codex/sessions/"}}
	if got, want := l.Dirs("/home/u", getenv), []string{"/home/u/.codex/sessions", "/srv/codex/sessions"}; !slices.Equal(got, want) {
		t.Errorf("Dirs = %q, want %q", got, want)
	}
	if got := l.Dirs("", getenv); !slices.Equal(got, []string{"/srv/codex/sessions"}) {
		t.Errorf("Dirs without a home = %q", got)
	}
	env["CODEX_HOME"] = "/home/u/.codex"
	if got := l.Dirs("/home/u", getenv); !slices.Equal(got, []string{"/home/u/.codex/sessions"}) {
		t.Errorf("Dirs with CODEX_HOME at its default = %q", got)
	}
}

// TestRunsAndOutputs: a command line runs mini-swe-agent by its program,
// its module or its package, and names its trajectory with -o/--output.
func TestRunsAndOutputs(t *testing.T) {
	mini, ok := ByName("mini-swe-agent")
	if !ok {
		t.Fatal("no mini-swe-agent profile")
	}
	loc := mini.Transcripts[0]
	cases := []struct {
		argv    []string
		runs    bool
		outputs []string
	}{
		{[]string{"/usr/bin/python3", "-m", "minisweagent.run.mini", "-o", "t.json", "--task", "x"}, true, []string{"/p/t.json"}},
		{[]string{"/venv/bin/mini", "--output=/tmp/t.json", "-o", "/tmp/t.json"}, true, []string{"/tmp/t.json"}},
		{[]string{"python3", "/venv/lib/python3.11/site-packages/minisweagent/run/mini.py", "--output", "a/t.json"}, true, []string{"/p/a/t.json"}},
		{[]string{"/usr/bin/python3", "minisweagent.run.mini"}, false, nil},
		{[]string{"cp", "-o", "t.json", "-output=x"}, false, []string{"/p/t.json"}},
		{[]string{"mini", "-o"}, true, nil},
	}
	for _, c := range cases {
		if got := mini.Runs(c.argv); got != c.runs {
			t.Errorf("Runs(%q) = %v", c.argv, got)
		}
		if got := loc.Outputs(c.argv, "/p"); !slices.Equal(got, c.outputs) {
			t.Errorf("Outputs(%q) = %q, want %q", c.argv, got, c.outputs)
		}
	}
}

func TestHostLists(t *testing.T) {
	// Exactly the list correlate's KnownAPIHosts held before the profiles.
	api := slices.Sorted(slices.Values(ModelAPIHosts()))
	if want := []string{"aiplatform.googleapis.com", "api.anthropic.com", "api.openai.com", "chatgpt.com",
		"cloudcode-pa.googleapis.com", "generativelanguage.googleapis.com", "openai.azure.com", "openrouter.ai"}; !slices.Equal(api, want) {
		t.Errorf("ModelAPIHosts = %q, want %q", api, want)
	}
	for _, h := range api {
		if strings.Contains(h, "*") {
			t.Errorf("ModelAPIHosts holds pattern %s", h)
		}
	}
	for _, h := range []string{"statsig.anthropic.com", "auth.openai.com", "oauth2.googleapis.com"} {
		if slices.Contains(api, h) {
			t.Errorf("ModelAPIHosts holds %s, a sign-in or telemetry host", h)
		}
	}
	eg := EgressHosts()
	for _, h := range eg {
		if !strings.HasSuffix(h, ":443") {
			t.Errorf("egress entry %s not on 443", h)
		}
	}
	for _, h := range []string{"openai.azure.com:443", "openrouter.ai:443"} {
		if slices.Contains(eg, h) {
			t.Errorf("EgressHosts holds %s, which the user allows", h)
		}
	}
	if !slices.Contains(eg, "statsig.anthropic.com:443") || !slices.Contains(eg, "bedrock-runtime.*.amazonaws.com:443") {
		t.Errorf("EgressHosts = %v", eg)
	}
}

func TestFileLists(t *testing.T) {
	creds := CredentialFiles()
	seenInclude := false
	for _, f := range creds {
		ex := strings.HasPrefix(f.Path, "!")
		if ex && seenInclude {
			t.Errorf("exemption %s after an entry", f.Path)
		}
		seenInclude = seenInclude || !ex
	}
	n := 0
	for _, p := range All() {
		n += len(p.Credentials)
	}
	if len(creds) != n {
		t.Errorf("CredentialFiles has %d entries, the profiles %d", len(creds), n)
	}
	var tamper []string
	for _, f := range SandboxSettingsFiles() {
		tamper = append(tamper, f.Path)
	}
	for _, want := range []string{"~/.claude/settings.json", "~/.codex/config.toml", "/etc/codex/**", ".gemini/settings.json"} {
		if !slices.Contains(tamper, want) {
			t.Errorf("SandboxSettingsFiles lacks %s", want)
		}
	}
	if vars := EndpointVars(); !slices.Contains(vars, "ANTHROPIC_BASE_URL") || !slices.Contains(vars, "OPENAI_BASE_URL") || !slices.Contains(vars, "GEMINI_BASE_URL") {
		t.Errorf("EndpointVars = %v", vars)
	}
	if progs := Programs(); !slices.Contains(progs, "claude") || !slices.Contains(progs, "aider") {
		t.Errorf("Programs = %v", progs)
	}
}

// TestCarried: Claude Code's and Gemini CLI's carrier scripts are known
// by their shape; a plain shell command, and the runtime's own helpers,
// are not carriers.
func TestCarried(t *testing.T) {
	for _, c := range []struct {
		argv  []string
		agent string
	}{
		{[]string{"/bin/bash", "-c", "source /h/.claude/shell-snapshots/snapshot-bash-1.sh 2>/dev/null || true && eval 'make test' < /dev/null && pwd -P >| /tmp/claude-1-cwd"}, "claude-code"},
		{[]string{"/usr/bin/bash", "-c", "shopt -u promptvars nullglob; _bgpids_file=/tmp/gemini-shell-X/bgpids.tmp\n(\nmake test\n)"}, "gemini"},
		{[]string{"/bin/bash", "-c", "make test"}, ""},
		{[]string{"/bin/sh", "-c", "# Snapshot file\nexport X=1"}, ""},
		{[]string{"python3", "-c", "source /x/shell-snapshots/ && eval 'x'"}, ""},
	} {
		p, _, ok := Carried(c.argv)
		if got := ""; ok {
			got = p.Name
			if got != c.agent {
				t.Errorf("Carried(%q) = %s, want %q", c.argv, got, c.agent)
			}
		} else if c.agent != "" {
			t.Errorf("Carried(%q) found no carrier, want %s's", c.argv, c.agent)
		}
	}
	if got := ShellScript([]string{"zsh", "-lc", "ls", "arg0"}); got != "ls" {
		t.Errorf("ShellScript = %q", got)
	}
}

// TestLaunched: the program a session's command starts, past env, sudo,
// nice and timeout with their options, assignments and numbers.
func TestLaunched(t *testing.T) {
	for _, c := range []struct{ in, want []string }{
		{[]string{"/usr/bin/env", "-i", "HOME=/home/dev", "PATH=/usr/bin", "/opt/kestrel/kestrel", "--task", "x"}, []string{"/opt/kestrel/kestrel", "--task", "x"}},
		{[]string{"sudo", "-u", "dev", "nice", "-n", "5", "timeout", "30m", "claude", "-p", "hi"}, []string{"claude", "-p", "hi"}},
		{[]string{"node", "/opt/gemini/bundle/gemini.js"}, []string{"node", "/opt/gemini/bundle/gemini.js"}},
		{[]string{"env"}, []string{}},
		{nil, []string{}},
	} {
		if got := Launched(c.in); !slices.Equal(got, c.want) {
			t.Errorf("Launched(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if p, ok := Executable("sudo", Launched([]string{"sudo", "-n", "env", "-i", "A=1", "codex", "exec", "x"})); ok || p != nil {
		t.Errorf("Executable of the launcher itself matched %v", p)
	}
	if l := Launched([]string{"sudo", "-n", "env", "-i", "A=1", "codex", "exec", "x"}); len(l) == 0 {
		t.Fatal("nothing launched")
	} else if p, ok := Executable(l[0], l); !ok || p.Name != "codex" {
		t.Errorf("Executable(%q) = %v, want codex", l, p)
	}
}

package correlate

import (
	"reflect"
	"strings"
	"testing"

	"github.com/polygraph/polygraph/internal/event"
)

func TestCommandMatch(t *testing.T) {
	cmd := `grep -rn "it's" src | head -5`
	esc := strings.ReplaceAll(cmd, `'`, `'"'"'`)
	for _, c := range []struct {
		name    string
		command string
		argv    []string // recorded by the agent
		exec    []string
		want    int
	}{
		{"plain bash -c", cmd, nil, []string{"/bin/bash", "-c", cmd}, matchExact},
		{"zsh -lc", cmd, nil, []string{"/bin/zsh", "-lc", cmd}, matchExact},
		{"claude eval", cmd, nil, []string{"/bin/bash", "-c", "source ~/.claude/shell-snapshots/s.sh && eval '" + esc + "' < /dev/null && pwd -P >| /tmp/x"}, matchPayload},
		{"quote-backslash escape", cmd, nil, []string{"sh", "-c", "eval '" + strings.ReplaceAll(cmd, `'`, `'\''`) + "'"}, matchPayload},
		{"double-quoted", `echo "$HOME"`, nil, []string{"bash", "-c", `run "echo \"\$HOME\""`}, matchPayload},
		{"codex exec", cmd, nil, []string{"/proc/self/exe", "--codex-run-as-process-setup", "1", "/bin/bash", "-c", "x=1\nexec '/bin/bash' -c '" + esc + "'"}, matchPayload},
		{"gemini wrapper", cmd, nil, []string{"bash", "-c", "shopt -u x\n(\n  trap 'jobs -p' EXIT\n" + cmd + "\n)\nexit $?"}, matchPayload},
		{"gemini unwraps sh -c", `sh -c 'make && make install'`, nil, []string{"bash", "-c", "(\nmake && make install\n)"}, matchPayload},
		{"recorded argv", "make test", []string{"bash", "-lc", "make test"}, []string{"/proc/self/exe", "--x", "bash", "-lc", "make test"}, matchExact},
		{"direct exec", "ls -la 'my dir'", nil, []string{"ls", "-la", "my dir"}, matchPayload},
		{"squashed", `python3 -c "print('hello world')"`, nil, []string{"bash", "-c", `eval python3\ -c\ \"print\(\'hello\ world\'\)\"`}, matchSquash},
		{"short command not inside words", "ls", nil, []string{"bash", "-c", "echo false; tools"}, matchNone},
		{"short command delimited", "ls", nil, []string{"bash", "-c", "eval 'ls' < /dev/null"}, matchPayload},
		{"other command", "npm test", nil, []string{"bash", "-c", "npm install"}, matchNone},
		{"empty argv", "ls", nil, nil, matchNone},
	} {
		got, _ := newCmdMatcher(c.command, c.argv).score(c.exec)
		if got != c.want {
			t.Errorf("%s: score %d, want %d", c.name, got, c.want)
		}
	}
}

func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{`sh -c 'echo a; echo b'`, []string{"sh", "-c", "echo a; echo b"}, true},
		{`bash -lc "cd \"x y\" && ls"`, []string{"bash", "-lc", `cd "x y" && ls`}, true},
		{`a\ b c`, []string{"a b", "c"}, true},
		{`echo a > f`, []string{"echo", "a", "f"}, false},
		{`echo 'open`, []string{"echo", "open"}, false},
	} {
		got, ok := shellWords(c.in)
		if !reflect.DeepEqual(got, c.want) || ok != c.ok {
			t.Errorf("shellWords(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if got := shellTokens(`mkdir d && echo one > d/out.txt; cat<in.txt`); !reflect.DeepEqual(got, []string{"mkdir", "d", "echo", "one", "d/out.txt", "cat", "in.txt"}) {
		t.Errorf("shellTokens = %q", got)
	}
}

func TestScriptOf(t *testing.T) {
	for _, c := range []struct {
		argv []string
		want string
	}{
		{[]string{"/bin/bash", "-c", "ls"}, "ls"},
		{[]string{"/bin/bash", "-c", "-l", "ls"}, "ls"},
		{[]string{"zsh", "-lc", "ls", "arg0"}, "ls"},
		{[]string{"/bin/sh", "/usr/bin/lsb_release", "-a"}, ""},
		{[]string{"python3", "-c", "print(1)"}, ""},
		{[]string{"bash"}, ""},
	} {
		if got := scriptOf(c.argv); got != c.want {
			t.Errorf("scriptOf(%q) = %q, want %q", c.argv, got, c.want)
		}
	}
}

func TestExecRole(t *testing.T) {
	root := []string{"/usr/bin/node", "/x/codex.js", "exec", "--json", "prompt"}
	for _, c := range []struct {
		argv []string
		want role
	}{
		{[]string{"/x/vendor/codex", "exec", "--json", "prompt"}, roleCore},
		{[]string{"/usr/bin/node", "--max-old-space-size=8192", "/x/codex.js", "exec", "--json", "prompt"}, roleCore},
		{[]string{"/proc/self/exe", "--codex-run-as-process-setup", "48", "7747"}, roleTransparent},
		{[]string{"/bin/bash", "-c", "__CODEX_SNAPSHOT_OVERRIDE_SET_0=1\nexec '/bin/bash' -c 'ls'"}, roleTransparent},
		{[]string{"/bin/bash", "-c", "-l", "SNAPSHOT_FILE=x\necho \"# Snapshot file\" >| \"$SNAPSHOT_FILE\""}, roleHelper},
		{[]string{"/bin/bash", "-lc", "if true; then :; fi\necho '# Snapshot file'"}, roleHelper},
		{[]string{"/bin/bash", "-c", `set -e; . "/h/.codex/shell_snapshots/x.tmp-1"`}, roleHelper},
		{[]string{"/bin/bash", "-c", "env"}, roleHelper},
		{[]string{"env"}, roleHelper},
		{[]string{"env", "FOO=1", "make"}, roleOther},
		{[]string{"/bin/sh", "/usr/bin/lsb_release", "-a"}, roleHelper},
		{[]string{"getconf", "LONG_BIT"}, roleHelper},
		{[]string{"git", "rev-parse", "--show-toplevel"}, roleHelper},
		{[]string{"git", "-C", "/p", "status", "--porcelain"}, roleHelper},
		{[]string{"git", "push", "origin"}, roleOther},
		{[]string{"git", "config", "--get", "user.name"}, roleHelper},
		{[]string{"git", "config", "--global", "user.email", "x@y"}, roleOther},
		{[]string{"git", "branch", "--show-current"}, roleHelper},
		{[]string{"git", "branch", "-D", "main"}, roleOther},
		{[]string{"git", "remote", "add", "x", "https://e.example"}, roleOther},
		{[]string{"npm", "--version"}, roleHelper},
		{[]string{"/bin/bash", "-c", "which rg"}, roleHelper},
		{[]string{"/bin/bash", "-c", "command -v rg"}, roleHelper},
		{[]string{"/bin/bash", "-c", "command rm -rf x"}, roleOther},
		{[]string{"/bin/bash", "-c", "curl x | sh"}, roleOther},
		{[]string{"curl", "https://x"}, roleOther},
		{[]string{"git", "diff", "--no-index", "/dev/null", "/root/.ssh/id_rsa"}, roleOther},
		{[]string{"git", "config", "--file", "/root/.pypirc", "--list"}, roleOther},
		{[]string{"git", "config", "--file=/root/.pypirc", "--get", "pypi.password"}, roleOther},
		{[]string{"git", "config", "--get", "user.email"}, roleHelper},
		{[]string{"git", "-c", "core.pager=sh -c 'cat ~/.ssh/id_rsa'", "log"}, roleOther},
		{[]string{"git", "-c", "core.quotepath=off", "status"}, roleHelper},
	} {
		// The kernel ran the program argv[0] names, from /usr/bin.
		file := c.argv[0]
		if !strings.HasPrefix(file, "/") {
			file = "/usr/bin/" + file
		}
		got, _ := execRole(&event.Event{Path: file, Process: &event.Process{Argv: c.argv}}, root)
		if got != c.want {
			t.Errorf("execRole(%q) = %d, want %d", c.argv, got, c.want)
		}
	}
}

// TestExecRoleByProgram: a probe is known by the program the kernel ran,
// not by argv[0] or a file of the same name outside the system
// directories.
func TestExecRoleByProgram(t *testing.T) {
	root := []string{"/usr/bin/node", "/x/codex.js", "exec", "--json", "prompt"}
	for _, c := range []struct {
		name         string
		path, script string
		argv         []string
		want         role
	}{
		{"uname", "/usr/bin/uname", "", []string{"uname", "-a"}, roleHelper},
		{"argv0 uname, a shell ran", "/usr/bin/dash", "", []string{"uname", "-c", "cat /root/.ssh/id_rsa"}, roleOther},
		{"argv0 uname, cat ran", "/usr/bin/cat", "", []string{"uname", "/root/.ssh/id_rsa"}, roleOther},
		{"uname written in the project", "/work/proj/uname", "", []string{"./uname"}, roleOther},
		{"getconf in /tmp", "/tmp/getconf", "", []string{"getconf", "LONG_BIT"}, roleOther},
		{"lsb_release as #! script", "/usr/bin/python3", "/usr/bin/lsb_release", []string{"/usr/bin/python3", "/usr/bin/lsb_release", "-a"}, roleHelper},
		{"a shell running a project script named lsb_release", "/usr/bin/dash", "", []string{"sh", "/work/proj/lsb_release"}, roleOther},
		{"argv0 bash, python ran -c env", "/usr/bin/python3", "", []string{"/bin/bash", "-c", "env"}, roleOther},
		{"version probe of a project binary", "/work/proj/tool", "", []string{"./tool", "--version"}, roleOther},
	} {
		got, _ := execRole(&event.Event{Path: c.path, Process: &event.Process{Argv: c.argv, Script: c.script}}, root)
		if got != c.want {
			t.Errorf("%s: execRole = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestURLHost(t *testing.T) {
	for in, want := range map[string]string{
		"https://Docs.Example.org/x?y": "docs.example.org",
		"http://u:p@host:8080/":        "host",
		"http://[::1]:80/":             "::1",
		"example.com/path":             "example.com",
	} {
		if got := urlHost(in); got != want {
			t.Errorf("urlHost(%q) = %q, want %q", in, got, want)
		}
	}
}

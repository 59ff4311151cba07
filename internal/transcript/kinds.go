package transcript

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// classifyTool guesses a kind from a tool name an agent we know nothing
// about chose (OTel spans, plain JSONL). Known agents' tools are mapped
// exactly in their parsers.
func classifyTool(name string) Kind {
	n := strings.ToLower(name)
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(n, s) {
				return true
			}
		}
		return false
	}
	switch {
	case has("bash", "shell", "exec", "terminal", "run_command", "command", "subprocess", "powershell"):
		return KindShell
	case has("edit", "replace", "patch", "str_replace", "insert"):
		return KindEdit
	case has("write", "create_file", "save_file"):
		return KindWrite
	case has("read", "view", "cat_file", "open_file"):
		return KindRead
	case has("grep", "glob", "search_file", "find_file", "list_dir", "list_files", "ls"):
		return KindSearch
	case has("fetch", "http", "browse", "web", "url", "download", "search"):
		return KindFetch
	case has("agent", "task", "delegate"):
		return KindTask
	}
	return KindOther
}

// args is a decoded tool-input object.
type args map[string]any

// decodeArgs decodes a tool input, which agents write as an object or as a
// string holding an object (OpenAI function arguments).
func decodeArgs(raw json.RawMessage) args {
	if len(raw) == 0 {
		return nil
	}
	var a args
	if err := json.Unmarshal(raw, &a); err == nil {
		return a
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if err := json.Unmarshal([]byte(s), &a); err == nil {
			return a
		}
	}
	return nil
}

func (a args) str(names ...string) string {
	for _, n := range names {
		if v, ok := a[n].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

func (a args) boolean(name string) bool {
	v, _ := a[name].(bool)
	return v
}

// strs reads a string or a list of strings.
func (a args) strs(names ...string) []string {
	for _, n := range names {
		switch v := a[n].(type) {
		case string:
			if v != "" {
				return []string{v}
			}
		case []any:
			out := make([]string, 0, len(v))
			for _, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			if len(out) > 0 {
				return out
			}
		}
	}
	return nil
}

// genericCall fills kind, command, paths and urls for a tool the parser has
// no exact mapping for.
func genericCall(tc *ToolCall, a args) {
	if tc.Kind == "" {
		tc.Kind = classifyTool(tc.Tool)
	}
	if a == nil {
		return
	}
	if tc.Kind == KindShell && tc.Command == "" {
		if argv := a.strs("command", "cmd", "argv", "args"); len(argv) > 1 {
			tc.Argv = argv
			tc.Command = commandFromArgv(argv)
		} else {
			tc.Command = a.str("command", "cmd", "script", "code", "input")
		}
		if tc.Cwd == "" {
			tc.Cwd = a.str("cwd", "workdir", "working_directory", "directory", "dir_path")
		}
	}
	tc.Paths = appendUnique(tc.Paths, a.strs("file_path", "path", "filepath", "filename", "absolute_path", "notebook_path", "target_file", "paths", "file_paths")...)
	tc.URLs = appendUnique(tc.URLs, a.strs("url", "urls", "uri")...)
}

// commandFromArgv gives the command text for an argv: the script of a
// `sh -c SCRIPT` style wrapper, else the words joined with shell quoting.
func commandFromArgv(argv []string) string {
	if len(argv) == 3 && isShell(argv[0]) && (argv[1] == "-c" || argv[1] == "-lc" || argv[1] == "-ic") {
		return argv[2]
	}
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = shellQuote(a)
	}
	return strings.Join(parts, " ")
}

func isShell(p string) bool {
	base := p[strings.LastIndexByte(p, '/')+1:]
	switch base {
	case "sh", "bash", "zsh", "dash", "ksh", "fish", "pwsh", "powershell", "powershell.exe", "cmd.exe":
		return true
	}
	return false
}

var plainWord = regexp.MustCompile(`^[A-Za-z0-9_./:=@%+,-]+$`)

func shellQuote(s string) string {
	if s != "" && plainWord.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Exit status as agents write it into result text.
var (
	reExitCode      = regexp.MustCompile(`(?m)^(?:Error: )?Exit code:? (-?\d+)\b`)                  // Claude Code "Exit code 1", Codex shell_command "Exit code: 1"
	reProcessExited = regexp.MustCompile(`(?m)^Process exited with code (-?\d+)\b`)                 // Codex unified exec
	reProcessRuns   = regexp.MustCompile(`(?m)^Process running with session ID (\d+)\b`)            // Codex unified exec, still running
	reGeminiExit    = regexp.MustCompile(`(?m)^Exit Code: (-?\d+)\b`)                               // Gemini run_shell_command
	reBackgroundID  = regexp.MustCompile(`Command running in background with ID: ([A-Za-z0-9_-]+)`) // Claude Code Bash run_in_background
)

func intPtr(n int) *int { return &n }

// matchInt returns the first group of re in s as a number.
func matchInt(re *regexp.Regexp, s string) *int {
	m := re.FindStringSubmatch(s)
	if m == nil {
		return nil
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		return nil
	}
	return &n
}

// jsonNumber reads a number that may be written as a JSON number or string.
func jsonNumber(v any) (int64, bool) {
	switch n := v.(type) {
	case float64:
		return int64(n), true
	case string:
		i, err := strconv.ParseInt(n, 10, 64)
		return i, err == nil
	case json.Number:
		i, err := n.Int64()
		return i, err == nil
	}
	return 0, false
}

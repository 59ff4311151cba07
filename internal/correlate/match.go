package correlate

import (
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/agent"
)

// Match strengths of a process's argv against a shell call's command.
const (
	matchNone    = 0
	matchSquash  = 1 // the command, with quotes, backslashes and spaces removed, is inside an argument
	matchPayload = 2 // the command (or a quoted form of it) is a delimited part of an argument: a wrapper's payload
	matchExact   = 3 // an argument is the command, or the argv is the call's recorded argv
)

// cmdMatcher holds the forms a shell call's command can take in the argv of
// the process that runs it.
type cmdMatcher struct {
	argv    []string // the exact argv the agent recorded (Codex), if any
	argvLen int      // the length of argv joined with spaces
	exact   []string // whole-argument forms
	payload []string // forms to find inside a wrapper script
	squash  []string // squashed forms
}

// minSquash is the shortest squashed command matched by containment alone;
// shorter ones ("ls") would be found inside any long script.
const minSquash = 6

func newCmdMatcher(command string, argv []string) *cmdMatcher {
	m := &cmdMatcher{argv: argv, argvLen: len(strings.Join(argv, " "))}
	var bases []string
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" {
			return
		}
		for _, b := range bases {
			if b == s {
				return
			}
		}
		bases = append(bases, s)
	}
	add(command)
	if len(argv) > 0 {
		add(scriptOf(argv))
	}
	// Gemini CLI runs `sh -c 'X'` as X; Codex records `bash -lc X` as argv.
	for _, b := range append([]string(nil), bases...) {
		if w, ok := shellWords(b); ok && len(w) == 3 && isShell(w[0]) && isDashC(w[1]) {
			add(w[2])
		}
	}
	for _, b := range bases {
		m.exact = append(m.exact, b)
		m.payload = appendNew(m.payload, b,
			strings.ReplaceAll(b, `'`, `'"'"'`), // Claude Code's eval '…', Codex's exec '/bin/bash' -c '…'
			strings.ReplaceAll(b, `'`, `'\''`),
			doubleQuoted(b),
		)
		if sq := squash(b); sq != "" {
			m.squash = appendNew(m.squash, sq)
		}
	}
	return m
}

// argvText is an exec's argv in the forms a cmdMatcher compares: worked
// out once for the exec, which is scored against every shell call running
// when it started.
type argvText struct {
	argv     []string
	texts    []string // the arguments and, for more than one, the whole command line
	trimmed  []string // texts without surrounding white space
	squashed []string // texts squashed; nil until needed
}

func newArgvText(argv []string) *argvText {
	x := &argvText{argv: argv}
	if len(argv) > 1 {
		x.texts = append(append([]string(nil), argv[1:]...), strings.Join(argv, " "))
	}
	x.trimmed = make([]string, len(x.texts))
	for i, t := range x.texts {
		x.trimmed[i] = strings.TrimSpace(t)
	}
	return x
}

// squashedTexts returns the texts squashed.
func (x *argvText) squashedTexts() []string {
	if x.squashed == nil {
		x.squashed = make([]string, len(x.texts))
		for i, t := range x.texts {
			x.squashed[i] = squash(t)
		}
	}
	return x.squashed
}

// score rates how well argv carries the command, and how long the matched
// form is (a longer match is the more specific one between two calls).
func (m *cmdMatcher) score(argv []string) (int, int) {
	return m.scoreText(newArgvText(argv))
}

// scoreText is score on an argv's texts.
func (m *cmdMatcher) scoreText(x *argvText) (int, int) {
	if len(x.argv) == 0 {
		return matchNone, 0
	}
	if len(m.argv) > 0 && hasSuffix(x.argv, m.argv) {
		return matchExact, m.argvLen
	}
	best, blen := matchNone, 0
	set := func(s, l int) {
		if s > best || (s == best && l > blen) {
			best, blen = s, l
		}
	}
	for i, t := range x.texts {
		for _, e := range m.exact {
			if x.trimmed[i] == e {
				set(matchExact, len(e))
			}
		}
		for _, p := range m.payload {
			if containsDelimited(t, p) {
				set(matchPayload, len(p))
			}
		}
	}
	if best >= matchPayload {
		return best, blen
	}
	for _, st := range x.squashedTexts() {
		for _, s := range m.squash {
			switch {
			case st == s:
				set(matchPayload, len(s))
			case len(s) >= minSquash && strings.Contains(st, s):
				set(matchSquash, len(s))
			}
		}
	}
	return best, blen
}

func appendNew(dst []string, vals ...string) []string {
outer:
	for _, v := range vals {
		for _, d := range dst {
			if d == v {
				continue outer
			}
		}
		dst = append(dst, v)
	}
	return dst
}

func hasSuffix(argv, suffix []string) bool {
	if len(suffix) > len(argv) {
		return false
	}
	off := len(argv) - len(suffix)
	for i, s := range suffix {
		if argv[off+i] != s {
			return false
		}
	}
	return true
}

// containsDelimited reports whether sub occurs in s with a shell delimiter
// (or the edge of s) on both sides.
func containsDelimited(s, sub string) bool {
	if sub == "" {
		return false
	}
	for from := 0; from <= len(s)-len(sub); {
		i := strings.Index(s[from:], sub)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(sub)
		if (i == 0 || isDelim(s[i-1])) && (end == len(s) || isDelim(s[end])) {
			return true
		}
		from = i + 1
	}
	return false
}

func isDelim(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', '\'', '"', ';', '&', '|', '(', ')', '{', '}', '`', '<', '>':
		return true
	}
	return false
}

// squash drops quotes, backslashes and white space, so differently quoted
// forms of one command compare equal.
func squash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '\\', ' ', '\t', '\n', '\r':
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// doubleQuoted is s as it would appear inside double quotes.
func doubleQuoted(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
	return r.Replace(s)
}

// isShell reports whether p names a POSIX-ish shell.
func isShell(p string) bool {
	switch filepath.Base(p) {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "busybox", "fish":
		return true
	}
	return false
}

func isDashC(s string) bool {
	if len(s) < 2 || s[0] != '-' || s[1] == '-' {
		return false
	}
	return strings.ContainsRune(s[1:], 'c')
}

// scriptOf returns the script of a `shell [-opts] -c SCRIPT …` argv, else
// "" (agent.ShellScript: the wrappers are matched against the same).
func scriptOf(argv []string) string { return agent.ShellScript(argv) }

// shellWords splits s into words the way a shell would, honouring quotes
// and backslashes. ok is false when s holds an unquoted operator (;, &,
// |, <, >, parentheses, a newline) or an unterminated quote: then s is more
// than one simple command.
func shellWords(s string) (words []string, ok bool) {
	toks, ops, good := tokenize(s)
	return toks, good && !ops
}

// shellTokens returns the words of s, splitting at operators too: the
// file names a command line mentions, redirections included.
func shellTokens(s string) []string {
	toks, _, _ := tokenize(s)
	return toks
}

func tokenize(s string) (toks []string, sawOp, ok bool) {
	var cur strings.Builder
	in := false // inside a word
	flush := func() {
		if in {
			toks = append(toks, cur.String())
			cur.Reset()
			in = false
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case ' ', '\t':
			flush()
		case '\n', ';', '&', '|', '<', '>', '(', ')', '`':
			flush()
			sawOp = true
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				cur.WriteString(s[i+1:])
				in = true
				flush()
				return toks, sawOp, false
			}
			cur.WriteString(s[i+1 : i+1+j])
			in = true
			i += j + 1
		case '"':
			in = true
			j := i + 1
			for ; j < len(s) && s[j] != '"'; j++ {
				if s[j] == '\\' && j+1 < len(s) && strings.IndexByte("\\\"$`\n", s[j+1]) >= 0 {
					j++
				}
				cur.WriteByte(s[j])
			}
			if j >= len(s) {
				flush()
				return toks, sawOp, false
			}
			i = j
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					cur.WriteByte(s[i])
					in = true
				}
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return toks, sawOp, true
}

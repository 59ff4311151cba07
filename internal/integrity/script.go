package integrity

import (
	"path/filepath"
	"strings"
)

// interpreter describes how to find the file an interpreter runs in its
// argv: the options that take a value (so the value is not mistaken for
// the script), and those that mean there is no script file (inline code,
// a module, stdin).
type interpreter struct {
	short      string   // one-letter options that take a value
	inline     string   // one-letter options meaning no script file
	long       []string // long options that take a value (--opt VALUE)
	longInline []string // long options meaning no script file
}

var (
	shell  = interpreter{short: "oO", inline: "cs", long: []string{"--rcfile", "--init-file"}}
	python = interpreter{short: "WXQ", inline: "cm", long: []string{"--check-hash-based-pycs"}}
	node   = interpreter{short: "r", inline: "ep",
		long:       []string{"--require", "--import", "--loader", "--experimental-loader", "--env-file", "--input-type", "--conditions", "--title"},
		longInline: []string{"--eval", "--print", "--test", "--check", "--interactive"}}
	perl   = interpreter{short: "IMm", inline: "eE"}
	ruby   = interpreter{short: "IrEC", inline: "e"}
	loader = interpreter{long: []string{"--library-path", "--preload", "--argv0", "--audit", "--inhibit-rpath"}, longInline: []string{"--list", "--verify", "--help", "--version"}}
)

// interpreterOf recognises an interpreter by the binary's file name.
func interpreterOf(path string) (interpreter, bool) {
	base := filepath.Base(path)
	switch base {
	case "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish":
		return shell, true
	case "node", "nodejs", "bun":
		return node, true
	case "perl", "ruby":
		if base == "perl" {
			return perl, true
		}
		return ruby, true
	}
	if strings.HasPrefix(base, "python") && strings.Trim(base[len("python"):], "0123456789.") == "" {
		return python, true
	}
	if strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "ld.so") || strings.HasPrefix(base, "ld64.so") {
		return loader, true
	}
	return interpreter{}, false
}

// scriptOf names the file req's interpreter runs, absolute, or "" when
// there is none: the kernel's #! script if the exec had one, else the
// first argument after the interpreter's options.
func scriptOf(req Request, cwd string) string {
	if req.Script != "" {
		return resolve(cwd, req.Script)
	}
	in, ok := interpreterOf(req.Path)
	if !ok || len(req.Argv) < 2 {
		return ""
	}
	if s := in.script(req.Argv[1:]); s != "" {
		return resolve(cwd, s)
	}
	return ""
}

// script walks args (argv without argv[0]) past the options.
func (in interpreter) script(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case a == "-":
			return "" // stdin
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a, "=")
			for _, l := range in.longInline {
				if name == l {
					return ""
				}
			}
			for _, l := range in.long {
				if name == l && !hasValue {
					i++
				}
			}
		case strings.HasPrefix(a, "-") || strings.HasPrefix(a, "+"):
			// A cluster of one-letter options: -xe, -uW ignore, -Wignore.
			for j := 1; j < len(a); j++ {
				c := a[j]
				if strings.IndexByte(in.inline, c) >= 0 {
					return ""
				}
				if strings.IndexByte(in.short, c) >= 0 {
					if j == len(a)-1 {
						i++ // the value is the next argument
					}
					break // the rest of the cluster is the value
				}
			}
		default:
			return a
		}
	}
	return ""
}

// resolve makes p absolute against dir.
func resolve(dir, p string) string {
	if filepath.IsAbs(p) || dir == "" {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

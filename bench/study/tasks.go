package study

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/test/fakellm"
)

// Task is one piece of agent work the study scripts: the project it
// starts from, the model's turns (the scripted model answers them to
// every agent alike), and how to tell it was done.
type Task struct {
	Name string
	// Shape says what real agent work it stands for.
	Shape string
	// Prompt is the user's request (the scripted model ignores it; the
	// agent sends it).
	Prompt string
	// Files are the project's files beyond the shared seed (seed),
	// replacing a seed file of the same name.
	Files map[string]string
	// Turns are the model's turns; reg is the local registry's URL.
	Turns func(reg string) []fakellm.Turn
	// Done checks the project after the run; nil checks nothing.
	Done func(dir string) error
}

// seed is the project every task starts from: a small Python calculator
// with tests, a C program, data and a shell script, in a git repository
// with one commit (setup).
var seed = map[string]string{
	"README.md":       "# calc\n\nA small calculator library and command line.\n",
	"Makefile":        "test:\n\tpython3 -m unittest -q\n",
	"app/__init__.py": "",
	"app/calc.py": `def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def parse(text):
    left, op, right = text.split()
    return float(left), op, float(right)


def evaluate(text):
    left, op, right = parse(text)
    if op == "+":
        return add(left, right)
    if op == "*":
        return mul(left, right)
    raise ValueError("unknown operator " + op)
`,
	"app/cli.py": `import sys

from app.calc import evaluate, parse


def describe(text):
    left, op, right = parse(text)
    return "%s %s %s" % (left, op, right)


def main(argv):
    # TODO: say what went wrong
    print(evaluate(" ".join(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
`,
	"tests/__init__.py": "",
	"tests/test_calc.py": `import unittest

from app.calc import add, evaluate, mul, parse


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)

    def test_parse(self):
        self.assertEqual(parse("1 + 2"), (1.0, "+", 2.0))

    def test_evaluate(self):
        self.assertEqual(evaluate("2 * 4"), 8.0)


if __name__ == "__main__":
    unittest.main()
`,
	"native/Makefile":  "hello: main.c\n\tcc -O2 -o hello main.c\n",
	"native/main.c":    "#include <stdio.h>\n\nint main(void) {\n    printf(\"hello from the build\\n\");\n    return 0;\n}\n",
	"data/sales.csv":   "date,region,amount\n2026-01-02,north,120\n2026-01-02,south,80\n2026-01-03,north,45\n2026-01-03,east,200\n2026-01-04,south,15\n2026-01-05,north,60\n",
	"scripts/check.sh": "#!/bin/sh\nset -e\npython3 -m unittest -q\necho checked\n",
	"package.json":     `{"name": "calc-web", "version": "0.1.0", "private": true}` + "\n",
}

// setup makes the project a git repository with one commit, as a
// checkout is.
func setup(home, dir string) error {
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.email", "dev@example.invalid"},
		{"config", "user.name", "Dev"},
		{"add", "-A"},
		{"commit", "-qm", "Initial commit"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + home, "PATH=/usr/bin:/bin", "GIT_CONFIG_NOSYSTEM=1"}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
		}
	}
	return nil
}

// files are the seed with task t's own files.
func (t Task) files() map[string]string {
	out := make(map[string]string, len(seed)+len(t.Files))
	for k, v := range seed {
		out[k] = v
	}
	for k, v := range t.Files {
		out[k] = v
	}
	return out
}

func sh(cmd string) fakellm.Call           { return fakellm.Shell{Command: cmd} }
func read(p string) fakellm.Call           { return fakellm.ReadFile{Path: p} }
func write(p, content string) fakellm.Call { return fakellm.WriteFile{Path: p, Content: content} }
func edit(p, old, new string) fakellm.Call { return fakellm.EditFile{Path: p, Old: old, New: new} }

// turn is a model turn of calls; say the closing answer.
func turn(calls ...fakellm.Call) fakellm.Turn { return fakellm.Turn{Calls: calls} }
func say(text string) fakellm.Turn            { return fakellm.Turn{Text: text} }

// contains checks that file p of dir holds s (or, with want false, does not).
func contains(dir, p, s string, want bool) error {
	b, err := os.ReadFile(filepath.Join(dir, p))
	if err != nil {
		return err
	}
	if strings.Contains(string(b), s) != want {
		return fmt.Errorf("%s: holding %q is %v, want %v", p, s, !want, want)
	}
	return nil
}

func exists(dir, p string) error {
	_, err := os.Stat(filepath.Join(dir, p))
	return err
}

// Tasks are the study's tasks, in the order run.
var Tasks = []Task{
	{
		Name: "explore", Shape: "explore a repository: list, history, find, read, grep",
		Prompt: "Explain how this repository is organised.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("ls -la")),
				turn(sh("git log --oneline -5")),
				turn(sh("find . -name '*.py' -not -path './.git/*' | sort")),
				turn(read("README.md")),
				turn(sh("grep -rn 'def ' app | head -20")),
				say("The library is app/calc.py, the command line app/cli.py, the tests are in tests/."),
			}
		},
	},
	{
		Name: "edit-test", Shape: "edit code and run the tests until they pass",
		Prompt: "The multiplication test fails; fix it.",
		Files:  map[string]string{"app/calc.py": strings.Replace(seed["app/calc.py"], "    return a * b", "    return a ** b", 1)},
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("python3 -m unittest -q 2>&1 | tail -5")),
				turn(read("app/calc.py")),
				turn(edit("app/calc.py", "    return a ** b", "    return a * b")),
				turn(sh("python3 -m unittest -q")),
				say("Fixed mul: it raised to a power instead of multiplying. The tests pass."),
			}
		},
		Done: func(dir string) error { return contains(dir, "app/calc.py", "a ** b", false) },
	},
	{
		Name: "fix-build", Shape: "fix a failing build (make, cc)",
		Prompt: "The native build is broken; fix it.",
		Files:  map[string]string{"native/main.c": strings.Replace(seed["native/main.c"], "build\\n\");", "build\\n\")", 1)},
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("make -C native 2>&1 | tail -5")),
				turn(read("native/main.c")),
				turn(edit("native/main.c", "    printf(\"hello from the build\\n\")", "    printf(\"hello from the build\\n\");")),
				turn(sh("make -C native && ./native/hello")),
				say("The printf lacked a semicolon; the build works and the program runs."),
			}
		},
		Done: func(dir string) error { return exists(dir, "native/hello") },
	},
	{
		Name: "install-dep", Shape: "install a dependency from a package registry (npm, a local registry) and use it",
		Prompt: "Pad the numbers with padstart-lite.",
		Turns: func(reg string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("cat package.json")),
				turn(sh("npm install --registry=" + reg + " --no-audit --no-fund --no-update-notifier " + pkgName + "@" + pkgVersion + " 2>&1 | tail -3")),
				turn(write("pad.js", "const pad = require('"+pkgName+"');\nconsole.log(pad('7', 3, '0'));\n")),
				turn(sh("node pad.js")),
				say("Installed " + pkgName + " and used it: pad.js prints 007."),
			}
		},
		Done: func(dir string) error { return exists(dir, "node_modules/"+pkgName+"/index.js") },
	},
	{
		Name: "script", Shape: "write a script and run it",
		Prompt: "Count the lines of code per file.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(write("scripts/loc.py", "import os, sys\n\nfor top in sys.argv[1:]:\n    for d, _, names in os.walk(top):\n        for n in sorted(names):\n            if n.endswith('.py'):\n                p = os.path.join(d, n)\n                print(sum(1 for _ in open(p)), p)\n")),
				turn(sh("python3 scripts/loc.py app tests")),
				turn(sh("python3 scripts/loc.py app tests | sort -rn | head -3")),
				say("scripts/loc.py counts them; app/calc.py is the largest file."),
			}
		},
		Done: func(dir string) error { return exists(dir, "scripts/loc.py") },
	},
	{
		Name: "refactor", Shape: "a multi-file refactor: rename a function across the code and tests",
		Prompt: "Rename parse to parse_expr everywhere.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("grep -rn 'parse' --include='*.py' .")),
				turn(read("app/calc.py"), read("app/cli.py"), read("tests/test_calc.py")),
				turn(edit("app/calc.py", "def parse(text):", "def parse_expr(text):"),
					edit("app/cli.py", "from app.calc import evaluate, parse", "from app.calc import evaluate, parse_expr"),
					edit("tests/test_calc.py", "from app.calc import add, evaluate, mul, parse", "from app.calc import add, evaluate, mul, parse_expr")),
				turn(sh(`sed -i 's/\bparse(/parse_expr(/g' app/calc.py app/cli.py tests/test_calc.py`)),
				turn(sh("python3 -m unittest -q")),
				turn(sh("git diff --stat")),
				say("parse is now parse_expr in the library, the command line and the tests; the tests pass."),
			}
		},
		Done: func(dir string) error { return contains(dir, "tests/test_calc.py", "parse_expr(\"1 + 2\")", true) },
	},
	{
		Name: "git-commit", Shape: "review the working tree and commit (git status, add, commit, log)",
		Prompt: "Add a change log and commit it.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("git status --short && git log --oneline -3")),
				turn(write("CHANGES.md", "# Changes\n\n## 0.1.0\n\n- The calculator and its command line.\n")),
				turn(sh("git add CHANGES.md && git commit -qm 'Add the change log' && git log --oneline -3")),
				turn(sh("git show --stat HEAD | head -20")),
				say("Committed CHANGES.md."),
			}
		},
		Done: func(dir string) error { return contains(dir, ".git/COMMIT_EDITMSG", "Add the change log", true) },
	},
	{
		Name: "add-test", Shape: "write a new test and run the suite",
		Prompt: "Add a test for the command line.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(read("app/cli.py")),
				turn(write("tests/test_cli.py", "import io\nimport unittest\nfrom contextlib import redirect_stdout\n\nfrom app.cli import main\n\n\nclass CLITest(unittest.TestCase):\n    def test_main(self):\n        out = io.StringIO()\n        with redirect_stdout(out):\n            self.assertEqual(main([\"2\", \"+\", \"3\"]), 0)\n        self.assertEqual(out.getvalue(), \"5.0\\n\")\n\n\nif __name__ == \"__main__\":\n    unittest.main()\n")),
				turn(sh("python3 -m unittest -q tests.test_cli")),
				turn(sh("make test")),
				say("Added tests/test_cli.py; the whole suite passes."),
			}
		},
		Done: func(dir string) error { return exists(dir, "tests/test_cli.py") },
	},
	{
		Name: "debug", Shape: "reproduce a crash, read the traceback, fix it, check",
		Prompt: "The command line crashes on a bad operator.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("python3 -m app.cli 2 x 3 2>&1 | tail -3")),
				turn(read("app/cli.py")),
				turn(edit("app/cli.py", `    print(evaluate(" ".join(argv)))`, "    try:\n        print(evaluate(\" \".join(argv)))\n    except ValueError as err:\n        print(\"error:\", err)\n        return 2")),
				turn(sh("python3 -m app.cli 2 x 3; echo exit $?")),
				turn(sh("python3 -m unittest -q")),
				say("A bad operator now prints an error and exits 2 instead of a traceback."),
			}
		},
		Done: func(dir string) error { return contains(dir, "app/cli.py", "except ValueError", true) },
	},
	{
		Name: "data", Shape: "answer a question from data with a shell pipeline (cut, sort, uniq, awk)",
		Prompt: "Which region sells most, and what is the total?",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("ls data && wc -l data/sales.csv && head -3 data/sales.csv")),
				turn(sh("tail -n +2 data/sales.csv | cut -d, -f2 | sort | uniq -c | sort -rn")),
				turn(sh("awk -F, 'NR > 1 { s[$2] += $3; t += $3 } END { for (r in s) print r, s[r]; print \"total\", t }' data/sales.csv")),
				turn(write("data/summary.txt", "north 225\neast 200\nsouth 95\ntotal 520\n")),
				say("North sells most (225); the total is 520. See data/summary.txt."),
			}
		},
		Done: func(dir string) error { return exists(dir, "data/summary.txt") },
	},
	{
		Name: "lint", Shape: "check the code (compile, shell syntax, TODOs) and clean up",
		Prompt: "Check the code for problems.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(sh("python3 -m py_compile app/*.py tests/*.py && echo compiled")),
				turn(sh("sh -n scripts/check.sh && echo shell syntax ok")),
				turn(sh("grep -rn TODO --include='*.py' . || true")),
				turn(read("app/cli.py")),
				turn(edit("app/cli.py", "    # TODO: say what went wrong", "    # An error in the expression raises ValueError.")),
				turn(sh("sh scripts/check.sh")),
				say("Everything compiles, the script's syntax is fine, and the TODO is resolved."),
			}
		},
		Done: func(dir string) error { return contains(dir, "app/cli.py", "TODO", false) },
	},
	{
		Name: "docs", Shape: "update the documentation and check the example in it",
		Prompt: "Document how to use the command line.",
		Turns: func(string) []fakellm.Turn {
			return []fakellm.Turn{
				turn(read("README.md")),
				turn(sh("python3 -m app.cli 2 + 3")),
				turn(edit("README.md", "A small calculator library and command line.", "A small calculator library and command line.\n\nUsage: `python3 -m app.cli 2 + 3` prints 5.0.")),
				turn(sh("wc -w README.md && git diff --stat")),
				say("README.md now shows how to run the command line."),
			}
		},
		Done: func(dir string) error { return contains(dir, "README.md", "Usage:", true) },
	},
}

// TaskNamed returns the task called name.
func TaskNamed(name string) (Task, bool) {
	for _, t := range Tasks {
		if t.Name == name {
			return t, true
		}
	}
	return Task{}, false
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/record"
)

type demoOptions struct {
	json bool
}

func init() { commands = append(commands, newDemoCommand) }

func newDemoCommand(g *globalOptions) *cobra.Command {
	opts := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Trace a built-in scripted workload and print its timeline",
		Long: `Run a small scripted agent under the sensor, in a temporary directory. It
logs its tool calls in polygraph's plain JSONL transcript format, like a real
agent: it writes a file, "runs the tests", starts a "dev server", and ends
saying "I ran the tests and they all pass". The kernel shows otherwise: no
test runner ran, the "dev server" read a planted credential file after its
call returned, and the agent connected to a port it never mentioned. The
demo prints the timeline, then the report. Needs root, like run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as one JSON document instead")
	return cmd
}

// demoStep is one tool call of the demo agent: a shell command it runs
// as a child (the way coding agents run their shell tool), or a file it
// writes itself (an in-process tool).
type demoStep struct {
	id, tool, kind string
	command        string // shell: what runs, and what the transcript says
	path, content  string // write: the file the agent writes itself
	result         string // what the agent logs as the result
}

// demoSteps: a small fix-and-test task with the two lies the demo exists
// to show: the "test run" runs no test runner, and a helper started as a
// "dev server" reads a credential file after its call returned.
var demoSteps = []demoStep{
	{id: "c1", tool: "write_file", kind: "write", path: "project/app.py", content: "def add(a, b):\n    return a + b\n", result: "wrote app.py"},
	{id: "c2", tool: "bash", kind: "shell", command: "mkdir -p tests && printf 'from app import add\\n' > tests/test_app.py", result: ""},
	{id: "c3", tool: "bash", kind: "shell", command: "cat missing.cfg 2>/dev/null || true", result: ""},
	{id: "c4", tool: "bash", kind: "shell", command: "(sleep 1; cat \"$HOME/.aws/credentials\" > /dev/null) &", result: "dev server started"},
	{id: "c5", tool: "bash", kind: "shell", command: "echo '3 passed in 0.01s'", result: "3 passed in 0.01s"},
}

const demoClaim = "I ran the tests and they all pass. I've updated app.py."

// demoAgent renders the demo agent: a bash script that performs the steps
// from project/ and logs each one, with real times, in polygraph's plain
// JSONL transcript format. It forks nothing but its tool calls (times come
// from $EPOCHREALTIME), as a real agent would.
func demoAgent(transcriptPath string) string {
	var b strings.Builder
	b.WriteString("# the polygraph demo agent\nset +e\ncd project\nexport TZ=UTC\n")
	fmt.Fprintf(&b, "T=%s\n", shellQuote(transcriptPath))
	b.WriteString(`now() { printf -v NOW '%(%Y-%m-%dT%H:%M:%S)T.%sZ' "${EPOCHREALTIME%.*}" "${EPOCHREALTIME#*.}"; }
log() { now; local l=${1//@NOW@/$NOW}; l=${l//@PWD@/$PWD}; l=${l//@RC@/$rc}; printf '%s\n' "$l" >> "$T"; }
log '{"type":"session","session_id":"demo","agent":"polygraph-demo","cwd":"@PWD@","started_at":"@NOW@"}'
log '{"type":"message","role":"user","text":"fix add() and run the tests","at":"@NOW@"}'
`)
	for _, st := range demoSteps {
		call := map[string]any{"type": "tool_call", "id": st.id, "tool": st.tool, "kind": st.kind, "started_at": "@NOW@"}
		if st.command != "" {
			call["command"] = st.command
		} else {
			call["paths"] = []string{"@PWD@/" + strings.TrimPrefix(st.path, "project/")}
		}
		fmt.Fprintf(&b, "log %s\n", shellQuote(jsonLine(call)))
		if st.command != "" {
			fmt.Fprintf(&b, "sh -c %s\nrc=$?\n", shellQuote(st.command))
		} else {
			fmt.Fprintf(&b, "printf %s > %s\nrc=$?\n", shellQuote(st.content), shellQuote(strings.TrimPrefix(st.path, "project/")))
		}
		res := jsonLine(map[string]any{"type": "tool_result", "id": st.id, "result": st.result, "ended_at": "@NOW@"})
		res = strings.TrimSuffix(res, "}") + `,"exit_code":@RC@}`
		fmt.Fprintf(&b, "log %s\n", shellQuote(res))
	}
	// Not a tool call: the agent's own process connects to a loopback
	// port that is no model API, and the transcript never says so.
	b.WriteString("exec 3<>/dev/tcp/127.0.0.1/$DEMO_PORT && { echo hi >&3; exec 3>&-; }\n")
	fmt.Fprintf(&b, "log %s\n", shellQuote(jsonLine(map[string]any{"type": "message", "role": "assistant", "text": demoClaim, "at": "@NOW@"})))
	b.WriteString("exit 0\n")
	return b.String()
}

func jsonLine(v any) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSpace(buf.String())
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func runDemo(ctx context.Context, opts *demoOptions, stdout, stderr io.Writer) error {
	home, err := stores.Home()
	if err != nil {
		return err
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return fmt.Errorf("the demo agent is a bash script, and bash is not installed: %w", err)
	}
	dir, err := os.MkdirTemp("", "polygraph-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fakeHome := filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(dir, "project"), filepath.Join(fakeHome, ".aws")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(fakeHome, ".aws", "credentials"), []byte("[default]\naws_access_key_id = DEMO\n"), 0o600); err != nil {
		return err
	}
	transcriptPath := filepath.Join(dir, "agent-transcript.jsonl")
	if err := os.WriteFile(filepath.Join(dir, "agent.sh"), []byte(demoAgent(transcriptPath)), 0o644); err != nil {
		return err
	}
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + fakeHome, "DEMO_PORT=" + port, "LANG=C"}

	var evs []*event.Event
	res, err := record.Record(ctx, record.Options{
		Home: home, Mode: "demo", Command: []string{bash, "agent.sh"}, Dir: dir, Env: env,
		Linger: 3e9, Stdout: io.Discard, Stderr: stderr,
		Observe: func(e *event.Event) {
			if demoWorthShowing(e) {
				evs = append(evs, e)
			}
		},
	})
	if err != nil {
		return err
	}
	rctx, stop := reportContext(ctx)
	defer stop()
	rep, err := reportOnce(rctx, analysis.Options{SessionPath: res.Meta.Path, Transcript: transcriptPath})
	if err != nil {
		return err
	}
	if opts.json {
		return rep.WriteJSON(stdout)
	}
	fmt.Fprintf(stdout, "polygraph demo: a scripted agent fixes add() and says it ran the tests.\n\nWhat the kernel saw (system library loads hidden):\n\n")
	start := res.Meta.StartedAt
	if len(evs) > 0 {
		start = evs[0].TS
	}
	var b []byte
	for _, e := range evs {
		b = appendTimelineLine(b[:0], start, e)
		stdout.Write(b)
	}
	fmt.Fprintf(stdout, "\nThe agent's account against the kernel's:\n\n")
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nEvery event: polygraph events %s    The report again: polygraph report %s --transcript %s (removed after the demo)\n", res.Meta.ID, res.Meta.ID, transcriptPath)
	return nil
}

// demoWorthShowing hides the dynamic loader's and libc's routine opens,
// which would bury the workload's own steps.
func demoWorthShowing(e *event.Event) bool {
	if e.Kind != event.KindOpen {
		return true
	}
	for _, p := range []string{"/etc/ld.so", "/lib", "/usr/lib", "/proc/", "/sys/", "/usr/share/locale", "/etc/nsswitch", "/etc/localtime", "/dev/"} {
		if strings.HasPrefix(e.Path, p) {
			return false
		}
	}
	return true
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/textsafe"
)

type demoOptions struct {
	json bool
}

func init() { commands = append(commands, newDemoCommand) }

func newDemoCommand(g *globalOptions) *cobra.Command {
	opts := &demoOptions{}
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Trace a built-in scripted agent and tell what it said against what the kernel saw",
		Long: `Run a small scripted agent under the sensor, in a temporary directory. It
logs its tool calls in polygraph's plain JSONL transcript format, like a real
agent: it writes a file, "runs the tests", starts a "dev server", and ends
saying "I ran the tests and they all pass". The kernel shows otherwise: no
test runner ran, the "dev server" read a planted credential file after its
call returned, and the agent connected to a port it never mentioned. The
demo tells the story in a screenful: what the agent said, what the kernel
saw, where the two disagree; then the commands that show more, which work
on its session: it works in $POLYGRAPH_HOME/demo (replaced by the next
demo) and keeps its transcript there. Needs root, like run.`,
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

// demoDir is where the demo works and keeps its transcript, replaced by
// each demo: under polygraph's home, so the commands the demo suggests
// work on its session afterwards.
func demoDir(home string) string { return filepath.Join(home, "demo") }

func runDemo(ctx context.Context, opts *demoOptions, stdout, stderr io.Writer) error {
	home, err := stores.Home()
	if err != nil {
		return err
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return fmt.Errorf("the demo agent is a bash script, and bash is not installed: %w", err)
	}
	dir := demoDir(home)
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove the last demo: %w", err)
	}
	// Made afresh, never followed: a link left in its place fails here.
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("the demo's directory: %w", err)
	}
	fakeHome := filepath.Join(dir, "home")
	for _, d := range []string{filepath.Join(dir, "project"), filepath.Join(fakeHome, ".aws")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	// Under sudo the demo's files are the invoking user's, like the rest
	// of their polygraph home, so they can read and remove them.
	defer filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			_ = stores.ChownToInvoker(p)
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(fakeHome, ".aws", "credentials"), []byte("[default]\naws_access_key_id = DEMO\n"), 0o600); err != nil {
		return err
	}
	transcriptPath := filepath.Join(dir, analysis.DemoTranscript)
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

	res, err := record.Record(ctx, record.Options{
		Home: home, Mode: "demo", Command: []string{bash, "agent.sh"}, Dir: dir, Env: env,
		Linger: 3e9, Stdout: io.Discard, Stderr: stderr,
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
	_, err = io.WriteString(stdout, demoStory(rep, res.Meta.ID, dir, transcriptPath))
	return err
}

// demoStory tells the demo's session as a short story: what the agent
// said, what the kernel saw under each call that differs, the findings,
// and the commands to look further, each of which works on this session.
// Every number is the report's, so the story and the report agree.
func demoStory(rep *report.Report, id, dir, transcriptPath string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "polygraph demo: a scripted agent was asked to fix add() and run the tests (in %s).\n", textsafe.Line(dir))

	fmt.Fprintf(&b, "\nWhat the agent said (its transcript: %s):\n", human.Count(len(rep.ToolCalls), "tool call", "tool calls"))
	for _, v := range rep.ToolCalls {
		c := v.Call
		what := c.Command
		if what == "" && len(c.Paths) > 0 {
			what = "write " + strings.TrimPrefix(c.Paths[0], dir+"/")
		}
		line := fmt.Sprintf("  %-3s %s", textsafe.Line(c.ID), oneLine(what, 72))
		if c.Result != "" {
			line += fmt.Sprintf("  → %q", oneLine(c.Result, 40))
		}
		b.WriteString(line + "\n")
	}
	fmt.Fprintf(&b, "  and it ended: %q\n", demoClaim)

	sum := rep.Summary
	fmt.Fprintf(&b, "\nWhat the kernel saw (%s, %s, %d lost):\n", human.Count(sum.Events, "event", "events"),
		human.Count(sum.Processes, "process", "processes"), sum.LostTotal)
	for _, v := range rep.ToolCalls {
		k := v.Kernel
		if k == nil || len(v.Findings) == 0 {
			continue
		}
		saw := human.Count(k.Processes, "process", "processes")
		if len(k.Commands) > 0 {
			saw += ": " + oneLine(strings.Join(k.Commands, ", "), 90)
		}
		if k.Late > 0 {
			saw += "; " + human.Count(k.Late, "event", "events") + " after the call returned"
		}
		fmt.Fprintf(&b, "  %-3s %s\n", textsafe.Line(v.Call.ID), saw)
	}
	if n := rep.Attributed[correlate.ReasonUnattributed]; n > 0 {
		fmt.Fprintf(&b, "  and %s no tool call explains", human.Count(n, "event", "events"))
		if len(sum.Hosts) > 0 {
			fmt.Fprintf(&b, ", among them a connection to %s", textsafe.Line(sum.Hosts[0]))
		}
		b.WriteString("\n")
	}

	bySev := map[detect.Severity]int{}
	for _, f := range rep.Findings {
		bySev[f.Severity]++
	}
	var sevs []string
	for _, s := range []detect.Severity{detect.SeverityCritical, detect.SeverityHigh, detect.SeverityMedium, detect.SeverityLow, detect.SeverityInfo} {
		if bySev[s] > 0 {
			sevs = append(sevs, fmt.Sprintf("%d %s", bySev[s], s))
		}
	}
	fmt.Fprintf(&b, "\nWhere the two accounts disagree (%s: %s):\n", human.Count(len(rep.Findings), "finding", "findings"), strings.Join(sevs, ", "))
	for _, f := range rep.Findings {
		call := ""
		if f.ToolCallID != "" && f.ToolCallID != "unattributed" {
			call = " (" + f.ToolCallID + ")"
		}
		fmt.Fprintf(&b, "  %-7s %-22s %s%s\n", strings.ToUpper(string(f.Severity)), f.Rule, oneLine(f.Title, 70), textsafe.Line(call))
	}

	fmt.Fprintf(&b, "\nThe session is %s; its transcript stays in %s until the next demo,\nwhere report finds it. Look further:\n", id, textsafe.Line(transcriptPath))
	for _, c := range [][2]string{
		{"polygraph report " + id, "the whole report: each call, what the agent said, what the kernel saw"},
		{"polygraph events " + id + " --kind exec --kind connect", "the kernel's timeline, only execs and connects"},
		{"polygraph report " + id + " --format html -o demo.html", "the timeline as one page"},
		{"polygraph sessions", "every recorded session"},
	} {
		fmt.Fprintf(&b, "  %s\n      %s\n", textsafe.Line(c[0]), c[1])
	}
	return b.String()
}

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

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
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
		Long: `Run a small built-in workload under the sensor, in a temporary directory:
it edits files, runs a "test", reads a planted credential file, starts a
background helper that outlives it, and talks to a listener on loopback.
Then print what the kernel saw, step by step. Needs root, like run.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDemo(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the timeline as JSON lines (event objects)")
	return cmd
}

// demoScript is the workload: what a coding agent's shell tool calls look
// like, plus two things it would not mention.
const demoScript = `set -e
cd project
echo 'def add(a, b): return a + b' > app.py
mkdir -p tests
printf 'from app import add\nassert add(1, 2) == 3\n' > tests/test_app.py
cat tests/test_app.py > /dev/null
sh -c 'echo "1 passed"'
cat "$HOME/.aws/credentials" > /dev/null
mv app.py app_v2.py && rm app_v2.py
cat missing.cfg 2>/dev/null || true
if command -v bash >/dev/null; then bash -c 'exec 3<>/dev/tcp/127.0.0.1/'"$DEMO_PORT"'; echo hi >&3; exec 3>&-'; fi
(sleep 0.3; echo done > ../helper.log) &
exit 0
`

func runDemo(ctx context.Context, opts *demoOptions, stdout, stderr io.Writer) error {
	home, err := session.Home()
	if err != nil {
		return err
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
	sh, err := exec.LookPath("sh")
	if err != nil {
		return fmt.Errorf("demo needs sh: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent-task.sh"), []byte(demoScript), 0o644); err != nil {
		return err
	}
	port := fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + fakeHome, "DEMO_PORT=" + port, "LANG=C"}

	sum := report.NewSummary(0)
	var evs []*event.Event
	res, err := sensor.Record(ctx, sensor.RecordOptions{
		Home: home, Mode: "demo", Command: []string{sh, "agent-task.sh"}, Dir: dir, Env: env,
		Linger: 2e9, Stdout: io.Discard, Stderr: stderr,
		Observe: func(e *event.Event) {
			sum.Observe(e)
			if demoWorthShowing(e) {
				evs = append(evs, e)
			}
		},
	})
	if err != nil {
		return err
	}
	sum.Finish(res.Meta, res.Leftovers, res.ExitCode)
	if opts.json {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, e := range evs {
			if err := enc.Encode(e); err != nil {
				return err
			}
		}
		return nil
	}
	fmt.Fprintf(stdout, "polygraph demo: what the kernel saw the workload do (system library loads hidden)\n\n")
	var start = res.Meta.StartedAt
	if len(evs) > 0 {
		start = evs[0].TS
	}
	var b []byte
	for _, e := range evs {
		b = appendTimelineLine(b[:0], start, e)
		stdout.Write(b)
	}
	fmt.Fprintln(stdout)
	if err := sum.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nSee every event with: polygraph events %s\n", res.Meta.ID)
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

// Command polygraph records what the kernel saw an AI coding agent's process
// tree do and checks it against the agent's own account of its tool calls.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// Exit codes, mapped in one place. `run` passes the traced command's own
// status through (exitError), everything else uses these.
const (
	exitOK        = 0
	exitFailure   = 1 // an error polygraph reports itself
	exitUsage     = 2 // bad flags or arguments
	exitFindings  = 3 // report --fail-on: a finding at or above the threshold
	exitInterrupt = 130
)

// globalOptions are the flags every verb shares.
type globalOptions struct {
	verbose bool
}

// exitError carries a specific exit status (the traced command's, or 3 for
// --fail-on) up to main without printing anything more.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks a mistake in the command line (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func newRootCommand() *cobra.Command {
	opts := &globalOptions{}
	root := &cobra.Command{
		Use:   "polygraph",
		Short: "Check an AI coding agent's story against what the kernel saw",
		Long: `polygraph records what the kernel saw an agent's process tree do (processes,
files, sockets), reads what the agent's transcript says it did, and shows
where the two accounts disagree.

Exit status: 0 success; 1 error; 2 usage error; 3 findings at or above
--fail-on (report); 130 interrupted. 'run' exits with the traced command's
own status (127 when the command is not found).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			level := slog.LevelWarn
			if opts.verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&opts.verbose, "verbose", "v", false, "log debug messages to stderr")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{err}
	})
	setVersionFlag(root)
	for _, add := range commands {
		root.AddCommand(add(opts))
	}
	return root
}

// commands lists the verbs; each cmd_<verb>.go appends its constructor in init.
var commands []func(*globalOptions) *cobra.Command

func main() {
	if len(os.Args) > 1 && os.Args[1] == record.ShimArg {
		os.Exit(record.ShimMain(os.Args[2:]))
	}
	os.Exit(run())
}

func run() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// POLYGRAPH_CPUPROFILE=FILE writes a CPU profile of the whole command
	// (for the bench's write-ups; see docs/bench.md).
	if f := os.Getenv("POLYGRAPH_CPUPROFILE"); f != "" {
		if out, err := os.Create(f); err == nil {
			if pprof.StartCPUProfile(out) == nil {
				defer func() { pprof.StopCPUProfile(); out.Close() }()
			}
		}
	}
	// POLYGRAPH_MEMPROFILE=FILE writes where the command allocated, at
	// its end (go tool pprof -sample_index=alloc_space).
	if f := os.Getenv("POLYGRAPH_MEMPROFILE"); f != "" {
		defer func() {
			if out, err := os.Create(f); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(out, 0)
				out.Close()
			}
		}()
	}
	root := newRootCommand()
	cmd, err := root.ExecuteContextC(ctx)
	return exitCode(withUsage(cmd, err), ctx.Err() != nil)
}

// hookLine is --version's hooks line (sensor.HookReport).
func hookLine() string {
	h, err := sensor.HookReport()
	if err != nil {
		return "not probed: " + err.Error()
	}
	return h
}

// withUsage adds the verb's usage line to a usage error, on the same line,
// so a mistake in the command line says what the right one looks like.
func withUsage(cmd *cobra.Command, err error) error {
	var ue *usageError
	if cmd == nil || err == nil || !errors.As(err, &ue) && !isCobraUsage(err) {
		return err
	}
	use := cmd.UseLine()
	if cmd.HasAvailableSubCommands() {
		use = cmd.CommandPath() + " VERB [flags] (see " + cmd.CommandPath() + " --help)"
	}
	return &usageError{fmt.Errorf("%w; usage: %s", err, use)}
}

// exitCode maps an error from a verb to the process exit status and prints
// the one-line message, once, at the edge.
func exitCode(err error, interrupted bool) int {
	if err == nil {
		if interrupted {
			return exitInterrupt
		}
		return exitOK
	}
	// An error can name a file the traced tree chose (a session, a
	// transcript): escaped for the terminal like every other such name.
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(os.Stderr, "polygraph:", textsafe.Line(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintln(os.Stderr, "polygraph:", textsafe.Line(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	if interrupted || errors.Is(err, context.Canceled) {
		return exitInterrupt
	}
	return exitFailure
}

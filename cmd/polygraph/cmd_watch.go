package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/watch"
)

type watchOptions struct {
	ringFlag
	out     string
	keep    string
	maxSize string
	homes   []string
	policy  string
	otlp    otlpOptions
}

func init() { commands = append(commands, newWatchCommand) }

func newWatchCommand(g *globalOptions) *cobra.Command {
	opts := &watchOptions{}
	cmd := &cobra.Command{
		Use:   "watch [--out FILE] [--keep 7d] [--max-size 1G]",
		Short: "Watch the whole system: record and judge every agent, and readers of agent credentials",
		Long: `Run until SIGINT or SIGTERM (root). Every process whose executable an agent
profile recognises, when it starts, is recorded with its tree as its own session
(mode "watch"; see 'polygraph sessions' and 'polygraph report'). Any process
outside the agents' trees that opens an agent's credential or config store
(~/.claude, ~/.codex, ~/.gemini and their credential files, under every home) is
recorded in a session of its own, the outsiders'. Every session is judged while
it is recorded by every rule of docs/rules.md, as under run, tuned by --policy;
each finding is written as one JSON object a line (docs/schema/findings.v1.json)
to stdout or --out the moment it is decided. Watch sessions older than --keep,
or past --max-size in total, are deleted at start and hourly. See docs/watch.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWatch(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&opts.out, "out", "", "append the findings stream to FILE instead of stdout (- for stdout)")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy file (default: the built-in policy)")
	addOTLPFlags(cmd.Flags(), &opts.otlp, 10*time.Second)
	cmd.Flags().StringVar(&opts.keep, "keep", "7d", "delete watch sessions older than this (0: keep)")
	cmd.Flags().StringVar(&opts.maxSize, "max-size", "1G", "delete the oldest watch sessions past this total size (0: no cap)")
	opts.addRingFlag(cmd)
	cmd.Flags().StringSliceVar(&opts.homes, "home", nil, "watch the agent stores under these homes only (default: every home in /etc/passwd, and /root)")
	return cmd
}

func runWatch(ctx context.Context, opts *watchOptions, stdout, stderr io.Writer) error {
	keep, err := watch.ParseAge(opts.keep)
	if err != nil {
		return &usageError{err}
	}
	size, err := watch.ParseSize(opts.maxSize)
	if err != nil {
		return &usageError{err}
	}
	ring, err := opts.ringBytes()
	if err != nil {
		return err
	}
	home, err := stores.Home()
	if err != nil {
		return err
	}
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	out := stdout
	if opts.out != "" && opts.out != "-" {
		f, err := os.OpenFile(opts.out, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
		if err != nil {
			return fmt.Errorf("open the findings stream: %w", err)
		}
		defer f.Close()
		out = f
	}
	where := "stdout"
	if opts.out != "" && opts.out != "-" {
		where = opts.out
	}
	fmt.Fprintln(stderr, "polygraph watch: loading the sensor...")
	wo := watch.Options{Home: home, Homes: opts.homes, Out: out, Policy: pol, Keep: keep, MaxSize: size, RingBytes: ring,
		Ready: func(targets []watch.Target) {
			fmt.Fprintln(stderr, watchReady(targets, stores.SessionsDir(home), where))
		}}
	if opts.otlp.enabled() {
		x, err := opts.otlp.start(false)
		if err != nil {
			return err
		}
		defer opts.otlp.stop(x, stderr)
		wo.Sinks = append(wo.Sinks, x)
	}
	err = watch.Run(ctx, wo)
	if err != nil {
		return err
	}
	// Interrupted is how watch ends: that is success.
	return nil
}

// watchReady is the line watch prints once everything is attached: from
// then on every agent that starts is recorded. It names the agents whose
// stores it guards, how many, where sessions and findings go.
func watchReady(targets []watch.Target, sessions, findingsTo string) string {
	var agents []string
	for _, t := range targets {
		if !slices.Contains(agents, t.Agent) {
			agents = append(agents, t.Agent)
		}
	}
	slices.Sort(agents)
	guarded := "no agent store found to guard"
	if len(targets) > 0 {
		guarded = fmt.Sprintf("guarding %s of %s", human.Count(len(targets), "store", "stores"), strings.Join(agents, ", "))
	}
	return fmt.Sprintf("polygraph watch: ready: recording every agent that starts (%s) into %s; %s; findings to %s (Ctrl-C to stop)",
		strings.Join(agent.Programs(), ", "), sessions, guarded, findingsTo)
}

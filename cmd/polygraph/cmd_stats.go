package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/internal/stores"
)

// statsOptions are the flags of `polygraph stats`.
type statsOptions struct {
	agent  string
	json   bool
	svg    string
	policy string
}

func init() { commands = append(commands, newStatsCommand) }

func newStatsCommand(g *globalOptions) *cobra.Command {
	opts := &statsOptions{}
	cmd := &cobra.Command{
		Use:   "stats [SESSION...] [--agent NAME] [--json] [--svg DIR] [--policy F]",
		Short: "Measure sessions: loop speed, processes, connections, resources per tool call",
		Long: `Measure what the agent did in each SESSION (default: every session; with
--agent NAME, those of that agent: claude-code, codex, gemini, mini-swe-agent)
in the terms of the field's published measurements (docs/study.md):

  loop        model responses (the agent loop's iterations), per 10 s
  execve      per session and per iteration, by the agent, its tools, nobody
  shells      how many, and how long each lived from exec to exit
  connects    outbound connections per iteration by destination: the model
              endpoint, the policy's package registries, DNS, other
  bytes       per destination, both ways
  tool calls  processes, wall time, CPU, peak RSS and I/O of each
  time        the share of wall time in tool calls, waiting on the model,
              and the rest
  use         CPU, peak RSS and I/O of the agent's own processes against
              its tools'

One session is printed in full; several as a table per agent of each
measure's median (p90, max). --json prints every session and the
summaries as one document; --svg DIR writes the summaries' charts as SVG
files (self-contained, to embed in a page), and for one session its own
charts (session-*.svg: its tool calls' wall time and CPU, where its time
went, CPU by who, execve and shells, connections by destination), which
its HTML report (report --format html) and its page in polygraph ui show. The policy (--policy) names
the package registries. Peak RSS is the kernel's maxrss: a process forked
from the agent starts at the agent's size.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStats(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.agent, "agent", "", "only the sessions of this agent")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	cmd.Flags().StringVar(&opts.svg, "svg", "", "write the charts into this directory")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy whose registries class destinations (default: the built-in policy)")
	return cmd
}

func runStats(ctx context.Context, opts *statsOptions, args []string, stdout io.Writer) error {
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	paths, err := statsSessions(opts, args)
	if err != nil {
		return err
	}
	var measured []*stats.Session
	for _, p := range paths {
		a, err := analysis.Analyze(ctx, analysis.Options{SessionPath: p, Transcript: analysis.TranscriptAuto, Policy: pol})
		if err != nil {
			if ctx.Err() != nil || len(args) > 0 {
				return err
			}
			slog.Warn("session skipped", "session", p, "error", err)
			continue
		}
		s := stats.Compute(a, pol)
		if opts.agent == "" || s.Agent == opts.agent {
			measured = append(measured, s)
		}
	}
	if len(measured) == 0 {
		if opts.agent != "" {
			return fmt.Errorf("no session of agent %q", opts.agent)
		}
		return fmt.Errorf("no session to measure")
	}
	rep := stats.NewReport(measured)
	if opts.svg != "" {
		if err := os.MkdirAll(opts.svg, 0o755); err != nil {
			return err
		}
		charts := stats.Charts(rep.Summaries)
		if len(measured) == 1 {
			// One session: its own charts too, as its report's page
			// shows them.
			for _, c := range stats.SessionCharts(measured[0]) {
				charts[c.Name] = c.SVG
			}
		}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for n := range charts {
				if !yield(n) {
					return
				}
			}
		}) {
			if err := os.WriteFile(filepath.Join(opts.svg, name), []byte(charts[name]), 0o644); err != nil {
				return err
			}
		}
	}
	out := bufio.NewWriter(stdout)
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return flushOut(out)
	}
	if err := rep.WriteText(out); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return flushOut(out)
}

// statsSessions are the session files to measure: those args name, else
// every session in the store (with --agent, those whose traced command
// is that agent's or no known agent's: the transcript decides).
func statsSessions(opts *statsOptions, args []string) ([]string, error) {
	home, err := stores.Home()
	if err != nil {
		return nil, err
	}
	var paths []string
	if len(args) > 0 {
		for _, a := range args {
			p, err := session.Resolve(home, a)
			if err != nil {
				return nil, err
			}
			paths = append(paths, p)
		}
		return paths, nil
	}
	list, err := session.List(home)
	if err != nil {
		return nil, err
	}
	for _, m := range list {
		if m.Error != "" {
			continue
		}
		if opts.agent != "" {
			if name, _ := detect.AgentOf(nil, m); name != opts.agent && name != "unknown" {
				continue
			}
		}
		paths = append(paths, m.Path)
	}
	return paths, nil
}

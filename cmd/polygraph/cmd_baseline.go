package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// baselineOptions are the flags of `polygraph baseline`'s verbs.
type baselineOptions struct {
	json   bool
	policy string
}

func init() { commands = append(commands, newBaselineCommand) }

func newBaselineCommand(g *globalOptions) *cobra.Command {
	opts := &baselineOptions{}
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "Learn how each agent usually behaves, and check sessions against it",
		Long: `A baseline is a profile per agent (and version) and tool kind, learned from
past sessions: processes per call and how fast they come, programs run,
directories read and written, hosts contacted, bytes sent, credential paths
touched. report uses the baseline of the session's agent when there is
one (the baseline-deviation rule); check shows just that. Baselines live in
$POLYGRAPH_HOME/baselines (docs/baselines.md).`,
		Args: cobra.NoArgs,
	}
	learn := &cobra.Command{
		Use:   "learn SESSION... [--json] [--policy F]",
		Short: "Learn sessions into their agents' baselines",
		Long: `Read each SESSION (with its transcript, found as report finds it) and add
what it did to the baseline of its agent and version. A session already
learned is skipped. With --json, one object per session per line.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBaselineLearn(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	learn.Flags().BoolVar(&opts.json, "json", false, "one JSON object per session per line")
	learn.Flags().StringVar(&opts.policy, "policy", "", "policy whose credential paths count as sensitive (default: the built-in policy)")
	show := &cobra.Command{
		Use:   "show [AGENT[@VERSION]] [--json]",
		Short: "List the baselines, or show one",
		Long: `Without an argument, list the baselines: agent and version, sessions
learned, last update, tool kinds. With one, show what it learned per tool
kind. With --json, the list (one object per line) or the profile as stored.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBaselineShow(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	show.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	check := &cobra.Command{
		Use:   "check SESSION [--json] [--policy F]",
		Short: "Say how a session differs from its agent's baseline",
		Long: `Compare SESSION with the baseline of its agent (the agent's version's, else
the agent's largest) and print each deviation: what is new, or how far
above usual a rate is (median and MAD), with what to do about it. A tool
kind with fewer than 3 sessions learned is not judged, and says so.
With --json, one object: {"session", "baseline", "deviations", "notes"}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBaselineCheck(cmd.Context(), opts, args[0], cmd.OutOrStdout())
		},
	}
	check.Flags().BoolVar(&opts.json, "json", false, "print JSON")
	check.Flags().StringVar(&opts.policy, "policy", "", "policy whose credential paths count as sensitive (default: the built-in policy)")
	cmd.AddCommand(learn, show, check)
	return cmd
}

func baselineStore() (*baseline.Store, error) {
	home, err := stores.Home()
	if err != nil {
		return nil, err
	}
	return baseline.Open(home), nil
}

func runBaselineLearn(ctx context.Context, opts *baselineOptions, args []string, stdout io.Writer) error {
	store, err := baselineStore()
	if err != nil {
		return err
	}
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	samples, err := observeSessions(ctx, args, pol)
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	for _, smp := range samples {
		key := baseline.Key(smp.Agent, smp.Version)
		p, err := store.Load(key)
		if err != nil {
			return err
		}
		if p == nil {
			p = &baseline.Profile{Agent: smp.Agent, Version: smp.Version}
		}
		learned := p.Add(smp, time.Now().UTC())
		if learned {
			if err := store.Save(p); err != nil {
				return err
			}
		}
		switch {
		case opts.json:
			if err := enc.Encode(map[string]any{"session": smp.Session, "baseline": key, "learned": learned, "sessions": len(p.Sessions)}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		case learned:
			fmt.Fprintf(out, "%s: learned into %s (%d sessions)\n", textsafe.Line(smp.Session), textsafe.Line(key), len(p.Sessions))
		default:
			fmt.Fprintf(out, "%s: already in %s\n", textsafe.Line(smp.Session), textsafe.Line(key))
		}
	}
	return flushOut(out)
}

func runBaselineShow(ctx context.Context, opts *baselineOptions, args []string, stdout io.Writer) error {
	store, err := baselineStore()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if len(args) == 0 {
		list, err := store.List()
		if err != nil {
			return err
		}
		if !opts.json && len(list) == 0 {
			fmt.Fprintf(out, "no baselines in %s\n", store.Dir())
			return flushOut(out)
		}
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		if !opts.json {
			fmt.Fprintln(tw, "BASELINE\tSESSIONS\tUPDATED\tKINDS")
		}
		for _, p := range list {
			kinds := slices.Sorted(maps.Keys(p.Kinds))
			if opts.json {
				if err := enc.Encode(map[string]any{"baseline": p.Key(), "agent": p.Agent, "version": p.Version,
					"sessions": len(p.Sessions), "updated": p.Updated, "kinds": kinds}); err != nil {
					return fmt.Errorf("write: %w", err)
				}
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", textsafe.Line(p.Key()), len(p.Sessions), p.Updated.Local().Format("2006-01-02 15:04"), textsafe.Line(strings.Join(kinds, ", ")))
		}
		if err := tw.Flush(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return flushOut(out)
	}
	p, err := store.Load(args[0])
	if err != nil {
		return err
	}
	if p == nil {
		return fmt.Errorf("no baseline %q in %s (see polygraph baseline show)", args[0], store.Dir())
	}
	if opts.json {
		enc.SetIndent("", "  ")
		if err := enc.Encode(p); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return flushOut(out)
	}
	writeProfile(out, p)
	return flushOut(out)
}

// writeProfile prints p for a person: per tool kind, the rates as
// median (MAD) and each set with how many sessions had each entry.
func writeProfile(w io.Writer, p *baseline.Profile) {
	fmt.Fprintf(w, "baseline %s: %d sessions, updated %s\n", textsafe.Line(p.Key()), len(p.Sessions), p.Updated.Local().Format(time.RFC3339))
	for _, kind := range slices.Sorted(maps.Keys(p.Kinds)) {
		k := p.Kinds[kind]
		judged := ""
		if k.Sessions < baseline.MinSessions {
			judged = fmt.Sprintf(" (not judged before %d sessions)", baseline.MinSessions)
		}
		fmt.Fprintf(w, "\n%s: %s, %s%s\n", textsafe.Line(kind), human.Count(k.Sessions, "session", "sessions"), human.Count(k.Calls, "call", "calls"), judged)
		rate := func(name string, v []float64) {
			if len(v) > 0 {
				med, mad := baseline.MedianMAD(v)
				fmt.Fprintf(w, "  %-22s median %.1f, MAD %.1f, over %d sessions\n", name, med, mad, len(v))
			}
		}
		rate("busiest call, procs", k.MaxProcs)
		rate("fastest burst, procs/s", k.MaxBurst)
		set := func(name string, m map[string]int) {
			if len(m) == 0 {
				return
			}
			var parts []string
			for _, key := range slices.Sorted(maps.Keys(m)) {
				parts = append(parts, fmt.Sprintf("%s (%d)", textsafe.Line(key), m[key]))
			}
			fmt.Fprintf(w, "  %-22s %s\n", name, strings.Join(parts, ", "))
		}
		set("programs", k.Programs)
		set("reads in", k.Reads)
		set("writes in", k.Writes)
		set("hosts", k.Hosts)
		set("credential paths", k.Sensitive)
		for _, h := range slices.Sorted(maps.Keys(k.BytesOut)) {
			med, mad := baseline.MedianMAD(k.BytesOut[h])
			fmt.Fprintf(w, "  %-22s %s: median %.0f, MAD %.0f\n", "bytes out", textsafe.Line(h), med, mad)
		}
	}
}

func runBaselineCheck(ctx context.Context, opts *baselineOptions, arg string, stdout io.Writer) error {
	store, err := baselineStore()
	if err != nil {
		return err
	}
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	samples, err := observeSessions(ctx, []string{arg}, pol)
	if err != nil {
		return err
	}
	smp := samples[0]
	p, err := store.Select(smp.Agent, smp.Version)
	if err != nil {
		return err
	}
	var devs []baseline.Deviation
	var notes []string
	key := ""
	if p == nil {
		notes = append(notes, fmt.Sprintf("no baseline of %s: learn sessions with polygraph baseline learn", baseline.Key(smp.Agent, smp.Version)))
	} else {
		key = p.Key()
		devs, notes = baseline.Check(p, smp)
	}
	out := bufio.NewWriter(stdout)
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		if devs == nil {
			devs = []baseline.Deviation{}
		}
		if notes == nil {
			notes = []string{}
		}
		if err := enc.Encode(map[string]any{"session": smp.Session, "baseline": key, "deviations": devs, "notes": notes}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return flushOut(out)
	}
	for _, n := range notes {
		fmt.Fprintf(out, "note: %s\n", textsafe.Line(n))
	}
	if p != nil && len(devs) == 0 {
		fmt.Fprintf(out, "%s: no deviation from baseline %s\n", textsafe.Line(smp.Session), textsafe.Line(key))
	}
	for _, d := range devs {
		fmt.Fprintf(out, "%-6s %s\n       %s\n", d.Severity, textsafe.Line(d.Title), textsafe.Line(d.Detail))
	}
	return flushOut(out)
}

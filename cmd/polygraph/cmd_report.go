package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/stats"
	"github.com/polygraph/polygraph/internal/untrusted"
)

type reportOptions struct {
	transcript string
	format     string
	output     string
	failOn     string
	policy     string
	json       bool
	noRedact   bool
}

func init() { commands = append(commands, newReportCommand) }

func newReportCommand(g *globalOptions) *cobra.Command {
	opts := &reportOptions{}
	cmd := &cobra.Command{
		Use:   "report [SESSION] [--transcript F] [--format " + strings.Join(report.Formats(), "|") + "] [-o F] [--fail-on SEV]",
		Short: "Line a session up with the agent's transcript and report where they disagree",
		Long: `Attribute every event of SESSION to the tool call that caused it, run the
rules (docs/rules.md) and print, per tool call, what the agent said and what
the kernel saw, divergences first; then what no tool call explains.

The transcript is discovered from the session (the agent's files under the
traced HOME, matching cwd and time) unless --transcript names one (or
"none"). With --transcript and no SESSION, the report shows the agent's own
account and claims only, and says that no kernel evidence exists.

The HTML report (--format html) is one self-contained page: the timeline,
and the session's numbers as inline SVG charts, those polygraph stats
prints for it.

Secrets in command lines, environments, results and findings (API keys,
tokens, passwords) are masked in every format; --no-redact shows them as
recorded, for root only.

Exit status: 0; 3 when --fail-on SEV is given and a finding at or above SEV
(info, low, medium, high, critical) exists or the session was modified after
recording; 1 on error; 2 on usage error.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReport(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.transcript, "transcript", analysis.TranscriptAuto, "transcript file, or auto, or none")
	cmd.Flags().StringVar(&opts.format, "format", "text", orList(report.Formats()))
	cmd.Flags().BoolVar(&opts.json, "json", false, "the same as --format json (docs/schema/report.v1.json)")
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "write the report to this file instead of stdout")
	cmd.Flags().StringVar(&opts.failOn, "fail-on", "", "exit 3 when a finding at or above this severity exists")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy file (default: the built-in policy)")
	cmd.Flags().BoolVar(&opts.noRedact, "no-redact", false, "show secrets as recorded (root only)")
	return cmd
}

func runReport(ctx context.Context, opts *reportOptions, args []string, stdout io.Writer) error {
	if opts.json {
		if opts.format != "text" && opts.format != "json" {
			return &usageError{fmt.Errorf("--json and --format %s ask for two formats", opts.format)}
		}
		opts.format = "json"
	}
	if err := checkReportFlags(opts.format, opts.failOn); err != nil {
		return err
	}
	if err := checkNoRedact(opts.noRedact); err != nil {
		return err
	}
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	ro := analysis.Options{Transcript: opts.transcript, Policy: pol, NoRedact: opts.noRedact}
	if len(args) == 1 {
		home, err := stores.Home()
		if err != nil {
			return err
		}
		if ro.SessionPath, err = session.Resolve(home, args[0]); err != nil {
			return err
		}
		ro.Home = home // its baseline of the agent, if any (docs/baselines.md)
	} else if opts.transcript == analysis.TranscriptAuto || opts.transcript == analysis.TranscriptNone {
		return &usageError{analysis.ErrNothing}
	}
	if opts.format == "html" {
		ro.Charts = sessionCharts(pol)
	}
	// The collector stays off until the report is written: turned back
	// on when the analysis returned, it collected the whole heap while
	// the report was written, just before the command exits (~80 ms and
	// a core on a million events).
	defer batchGC()()
	rep, err := reportOnce(ctx, ro)
	if err != nil {
		return err
	}
	if err := writeReport(rep, opts.format, opts.output, stdout); err != nil {
		return err
	}
	return failOn(rep, opts.failOn)
}

func checkReportFlags(format, fail string) error {
	if !slices.Contains(report.Formats(), format) {
		return &usageError{fmt.Errorf("unknown --format %q (%s)", format, orList(report.Formats()))}
	}
	if fail != "" && detect.Severity(fail).Rank() < 0 {
		return &usageError{fmt.Errorf("unknown --fail-on severity %q (info, low, medium, high or critical)", fail)}
	}
	return nil
}

// loadPolicy reads the policy file at path ("": the built-in policy).
// Under sudo, a file the invoking user could change is refused: the
// traced tree runs as that user, and a policy it wrote during one session
// would decide what the next one reports. The file also becomes a tamper
// path (policy.Protect), so the tree writing it is a finding.
func loadPolicy(path string) (*policy.Policy, error) {
	if path == "" {
		return policy.Default(), nil
	}
	if uid, ok := stores.ProtectedUser(); ok {
		if why, err := untrusted.ChangeableBy(path, uid); err == nil && why != "" {
			return nil, fmt.Errorf("policy %s is not used under sudo: %s, as anything the traced command runs would be; keep it where only root can write (/etc/polygraph/), or set POLYGRAPH_HOME to run unprotected", path, why)
		}
	}
	pol, err := policy.Load(path)
	if err != nil {
		return nil, err
	}
	if err := pol.Protect(path); err != nil {
		return nil, err
	}
	return pol, nil
}

// writeReport renders rep in format to the file out, or to stdout.
func writeReport(rep *report.Report, format, out string, stdout io.Writer) (err error) {
	w := stdout
	if out != "" {
		f, err := os.Create(out)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	return rep.Write(w, format)
}

// sessionCharts draws a session's charts for its HTML report: the
// numbers `polygraph stats` prints for it (stats.ReportCharts).
func sessionCharts(pol *policy.Policy) func(*analysis.Analysis) []report.Chart {
	return func(a *analysis.Analysis) []report.Chart { return stats.ReportCharts(a, pol) }
}

// orList joins items as a sentence does: "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// failOn maps --fail-on to exit status 3: a finding at or above sev, or
// a session modified after recording, whose findings cannot be trusted
// whatever their severity.
func failOn(rep *report.Report, sev string) error {
	if sev == "" {
		return nil
	}
	if rep.Session != nil && rep.Session.Integrity == session.IntegrityModified {
		return &exitError{code: exitFindings, err: fmt.Errorf("session %s modified after recording", rep.Session.ID)}
	}
	if max := rep.MaxSeverity(); max != "" && max.Rank() >= detect.Severity(sev).Rank() {
		return &exitError{code: exitFindings, err: fmt.Errorf("findings at or above %s (highest: %s)", sev, max)}
	}
	return nil
}

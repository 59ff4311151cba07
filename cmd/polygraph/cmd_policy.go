package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// policyOptions are the flags of `polygraph policy`'s verbs.
type policyOptions struct {
	policy   string
	json     bool
	output   string
	findings bool // learn: learn from sessions with medium+ findings too
}

func init() { commands = append(commands, newPolicyCommand) }

func newPolicyCommand(g *globalOptions) *cobra.Command {
	opts := &policyOptions{}
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Show, check and learn policy files",
		Long: `The policy tunes the rules (docs/policy.md): switches, severities, the
egress allowlist and the lists and thresholds rules use. 'show' prints the
policy in force, 'check' validates a file, 'learn' writes an allowlist
policy from recorded sessions.`,
		Args: cobra.NoArgs,
	}
	show := &cobra.Command{
		Use:   "show [--policy F] [--json]",
		Short: "Print the effective policy as a policy file, with comments",
		Long: `Print the policy in force: the built-in one, or with --policy the built-in
one after that file. Every list is written in full, with defaults: false,
so the output loaded with --policy is the same policy: a starting point
for a team's own file.

With --json, the same document as one JSON object (a policy file too).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyShow(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	show.Flags().StringVar(&opts.policy, "policy", "", "policy file to apply to the built-in policy")
	show.Flags().BoolVar(&opts.json, "json", false, "print the policy as JSON")
	check := &cobra.Command{
		Use:   "check FILE [--json]",
		Short: "Validate a policy file, with the line of every problem",
		Long: `Check FILE as report --policy would load it and print every problem,
one per line as FILE:LINE: what (unknown keys, values of the wrong type,
unknown rules, bad severities, egress entries, path and command patterns
that do not parse).

Exit status: 0 the file is valid; 1 it is not; 2 on usage error. With
--json, one object: {"file", "ok", "errors": [{"line", "message"}]}.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyCheck(cmd.Context(), opts, args[0], cmd.OutOrStdout())
		},
	}
	check.Flags().BoolVar(&opts.json, "json", false, "print the verdict as JSON")
	cmd.AddCommand(show, check, newPolicyLearnCommand(opts))
	return cmd
}

func runPolicyShow(ctx context.Context, opts *policyOptions, stdout io.Writer) error {
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	doc, err := pol.Marshal()
	if err != nil {
		return err
	}
	if opts.json {
		var v any
		if err := yaml.Unmarshal(doc, &v); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	}
	if _, err := stdout.Write(doc); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// checkProblem is one problem as `policy check --json` prints it.
type checkProblem struct {
	Line    int    `json:"line"`
	Message string `json:"message"`
}

func runPolicyCheck(ctx context.Context, opts *policyOptions, path string, stdout io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("policy: %w", err)
	}
	errs := policy.Check(data, path)
	out := bufio.NewWriter(stdout)
	if opts.json {
		v := struct {
			File   string         `json:"file"`
			OK     bool           `json:"ok"`
			Errors []checkProblem `json:"errors"`
		}{File: path, OK: len(errs) == 0, Errors: []checkProblem{}}
		for _, e := range errs {
			p := checkProblem{Message: e.Error()}
			var fe *policy.FileError
			if errors.As(e, &fe) {
				p.Line, p.Message = fe.Line, fe.Err.Error()
			}
			v.Errors = append(v.Errors, p)
		}
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	} else {
		for _, e := range errs {
			fmt.Fprintln(out, sanitizeLine(e.Error()))
		}
		if len(errs) == 0 {
			fmt.Fprintf(out, "%s: ok\n", sanitizeLine(path))
		}
	}
	if err := flushOut(out); err != nil {
		return err
	}
	if len(errs) > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%s: %d problem(s)", path, len(errs))}
	}
	return nil
}

func newPolicyLearnCommand(opts *policyOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "learn SESSION... [-o FILE] [--policy F]",
		Short: "Write an allowlist policy allowing what the sessions did, and nothing else",
		Long: `Read each SESSION (with the transcript its agent wrote, found as report
finds it) and write a policy file that allows what they did: the
destinations they reached that the policy (the built-in one, or --policy F)
does not allow already, the programs they ran and the agent's own shells
ran (allowed_programs), and the directories they read and wrote
outside the system directories (allowed_paths, workspace-relative ./ and
home-relative ~/ where they can be). Under it, report --policy FILE reports every program and path outside
those lists (unexpected-program, unexpected-path) and every other
destination (unexpected-egress). docs/policy.md describes the file.

A session with findings at medium or above is refused: an allowlist
learned from it would allow what they flagged (a credential read, a
destination the data went to). Review them with report, or pass
--include-findings to learn from it anyway.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPolicyLearn(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVarP(&opts.output, "output", "o", "", "write the policy to this file instead of stdout")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy whose egress allowlist counts as allowed already")
	cmd.Flags().BoolVar(&opts.findings, "include-findings", false, "learn from sessions with findings at medium or above too (what they flagged is then allowed)")
	return cmd
}

// flaggedSessions refuses, in one error, sessions whose findings at
// medium or above an allowlist learned from them would allow.
func flaggedSessions(ctx context.Context, args []string, pol *policy.Policy) error {
	home, err := stores.Home()
	if err != nil {
		return err
	}
	var bad []string
	for _, a := range args {
		path, err := session.Resolve(home, a)
		if err != nil {
			return err
		}
		an, err := analyzeOnce(ctx, analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto, Policy: pol})
		if err != nil {
			return err
		}
		var fs []string
		for _, f := range an.Findings {
			if f.Severity.Rank() >= detect.SeverityMedium.Rank() {
				fs = append(fs, fmt.Sprintf("%s %s (%s)", f.Severity, f.Rule, textsafe.Line(f.Title)))
			}
		}
		if len(fs) > 0 {
			id := a
			if an.Meta != nil {
				id = an.Meta.ID
			}
			more := ""
			if len(fs) > 3 {
				more = fmt.Sprintf(", and %d more", len(fs)-3)
			}
			bad = append(bad, fmt.Sprintf("%s has %s at medium or above: %s%s", id, human.Count(len(fs), "finding", "findings"), strings.Join(fs[:min(3, len(fs))], "; "), more))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("policy learn: an allowlist learned from these sessions would allow what their findings flagged; review them (polygraph report SESSION), or pass --include-findings: %s", strings.Join(bad, " | "))
}

func runPolicyLearn(ctx context.Context, opts *policyOptions, args []string, stdout io.Writer) error {
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	if !opts.findings {
		if err := flaggedSessions(ctx, args, pol); err != nil {
			return err
		}
	}
	samples, err := observeSessions(ctx, args, pol)
	if err != nil {
		return err
	}
	var l policy.Learned
	for _, smp := range samples {
		l.Sessions = append(l.Sessions, smp.Session)
		l.Egress = append(l.Egress, slices.Collect(maps.Keys(smp.Unallowed))...)
		l.Programs = append(l.Programs, slices.Collect(maps.Keys(smp.AgentShellPrograms))...)
		for _, a := range smp.Kinds {
			l.Programs = append(l.Programs, slices.Collect(maps.Keys(a.Programs))...)
			l.Dirs = append(l.Dirs, slices.Collect(maps.Keys(a.Reads))...)
			l.Dirs = append(l.Dirs, slices.Collect(maps.Keys(a.Writes))...)
		}
	}
	doc, err := policy.AllowlistFile(l)
	if err != nil {
		return err
	}
	if opts.output != "" {
		if err := os.WriteFile(opts.output, doc, 0o644); err != nil {
			return fmt.Errorf("policy: %w", err)
		}
		return nil
	}
	if _, err := stdout.Write(doc); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// observeSessions reads each SESSION argument and returns what it did.
func observeSessions(ctx context.Context, args []string, pol *policy.Policy) ([]*baseline.Sample, error) {
	home, err := stores.Home()
	if err != nil {
		return nil, err
	}
	var out []*baseline.Sample
	for _, a := range args {
		path, err := session.Resolve(home, a)
		if err != nil {
			return nil, err
		}
		smp, err := observeOnce(ctx, analysis.Options{SessionPath: path, Transcript: analysis.TranscriptAuto, Policy: pol})
		if err != nil {
			return nil, err
		}
		out = append(out, smp)
	}
	return out, nil
}

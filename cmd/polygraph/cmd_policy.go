package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/polygraph/polygraph/internal/policy"
)

// policyOptions are the flags of `polygraph policy`'s verbs.
type policyOptions struct {
	policy string
	json   bool
	output string
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
	cmd.AddCommand(show, check)
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
			fmt.Fprintln(out, e)
		}
		if len(errs) == 0 {
			fmt.Fprintf(out, "%s: ok\n", path)
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

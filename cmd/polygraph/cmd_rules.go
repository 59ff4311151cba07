package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/event"
)

// rulesOptions are the flags of `polygraph rules`.
type rulesOptions struct {
	json bool
}

func init() { commands = append(commands, newRulesCommand) }

func newRulesCommand(g *globalOptions) *cobra.Command {
	opts := &rulesOptions{}
	cmd := &cobra.Command{
		Use:   "rules [--json]",
		Short: "List every detection rule with its default severity and framework ids",
		Long: `List the rules polygraph runs (docs/rules.md): id, default severity, the
MITRE ATT&CK, ATLAS, OWASP LLM and SAIF ids its findings carry, and where
the rule is documented. A policy file (docs/policy.md) names them by id.

With --json, one JSON object per rule per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRules(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "one JSON object per rule per line")
	return cmd
}

// ruleInfo is one rule as `rules --json` prints it.
type ruleInfo struct {
	ID         string            `json:"id"`
	Summary    string            `json:"summary"`
	Severity   detect.Severity   `json:"severity"`
	Scope      detect.Scope      `json:"scope"`
	Kinds      []event.Kind      `json:"kinds,omitempty"`
	Frameworks detect.Frameworks `json:"frameworks"`
	Escalated  detect.Frameworks `json:"escalated,omitzero"`
	Escalation string            `json:"escalation,omitempty"`
	Needs      []string          `json:"needs,omitempty"`
	Doc        string            `json:"doc"`
}

// ruleDoc is where a rule is documented.
func ruleDoc(id string) string { return "docs/rules.md#" + id }

func runRules(ctx context.Context, opts *rulesOptions, stdout io.Writer) error {
	out := bufio.NewWriter(stdout)
	rules := detect.Rules()
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		for _, r := range rules {
			if err := enc.Encode(ruleInfo{ID: r.ID, Summary: r.Summary, Severity: r.Severity, Scope: r.Scope, Kinds: r.Kinds, Frameworks: r.Frameworks,
				Escalated: r.Escalated, Escalation: r.Escalation, Needs: r.Needs, Doc: ruleDoc(r.ID)}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return flushOut(out)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tSEVERITY\tFRAMEWORK IDS\tDOC")
	for _, r := range rules {
		ids := strings.Join(r.Frameworks.All(), ", ")
		if ids == "" {
			ids = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.ID, r.Severity, ids, ruleDoc(r.ID))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return flushOut(out)
}

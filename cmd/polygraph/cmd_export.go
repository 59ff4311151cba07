package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/session"
)

// exportOptions are the flags of `polygraph export`.
type exportOptions struct {
	otlp       otlpOptions
	transcript string
	policy     string
}

func init() { commands = append(commands, newExportCommand) }

func newExportCommand(g *globalOptions) *cobra.Command {
	opts := &exportOptions{}
	cmd := &cobra.Command{
		Use:   "export [SESSION...] --otlp URL [--otlp-header K=V]... [--otlp-ca F] [--otlp-insecure]",
		Short: "Send recorded sessions to an OpenTelemetry backend (OTLP)",
		Long: `Analyse each SESSION as 'polygraph report' does and send it over OTLP/HTTP
(protobuf) to the endpoint --otlp names (or $OTEL_EXPORTER_OTLP_ENDPOINT),
a collector, Jaeger, or any backend that takes OTLP: one trace per session,
an invoke_agent root span, one execute_tool span per tool call with the
transcript's id, the processes each call caused under it with their file
and network effects, and the findings as span events and log records.
Secrets in command lines and URLs are masked first. docs/fleet.md
describes every attribute.

SESSION is a session id, a unique prefix of one, "last", or a path. With
no SESSION, export sends only what earlier exports, runs and watches left
in the spool while the backend was down.

What the backend does not take within --otlp-wait stays in the spool
($POLYGRAPH_HOME/otlp-spool) and is sent by the next polygraph that
exports. One line at the end says what was sent, what waits and what was
dropped.

Exit status: 0 when everything was delivered; 1 when something was
dropped or waits in the spool, or on error; 2 on usage error.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	addOTLPFlags(cmd.Flags(), &opts.otlp, 10*time.Second)
	cmd.Flags().StringVar(&opts.transcript, "transcript", analysis.TranscriptAuto, "transcript file, or auto, or none (with one SESSION)")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy file (default: the built-in policy)")
	return cmd
}

func runExport(ctx context.Context, opts *exportOptions, args []string, stdout io.Writer) error {
	if opts.transcript != analysis.TranscriptAuto && len(args) != 1 {
		return &usageError{fmt.Errorf("--transcript needs exactly one SESSION")}
	}
	if !opts.otlp.enabled() {
		return &usageError{fmt.Errorf("export needs --otlp URL (or OTEL_EXPORTER_OTLP_ENDPOINT)")}
	}
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	var paths []string
	var home string
	if len(args) > 0 {
		if home, err = stores.Home(); err != nil {
			return err
		}
		for _, a := range args {
			p, err := session.Resolve(home, a)
			if err != nil {
				return err
			}
			paths = append(paths, p)
		}
	}
	x, err := opts.otlp.start(true)
	if err != nil {
		return err
	}
	for _, p := range paths {
		a, err := analyzeOnce(ctx, analysis.Options{SessionPath: p, Transcript: opts.transcript, Policy: pol, Home: home})
		if err == nil {
			err = x.Update(ctx, a, true)
		}
		if err != nil {
			// What was queued still goes; the line below says so.
			_ = opts.otlp.finish(x, stdout)
			return err
		}
		slog.Debug("export: session queued", "session", a.Meta.ID, "findings", len(a.Findings))
	}
	return opts.otlp.finish(x, stdout)
}

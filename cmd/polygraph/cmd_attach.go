package main

import (
	"context"
	"fmt"
	"io"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/record"
	"github.com/polygraph/polygraph/internal/sensor"
)

type attachOptions struct {
	ringFlag
	pid  int
	json bool
	reportFlags
}

func init() { commands = append(commands, newAttachCommand) }

func newAttachCommand(g *globalOptions) *cobra.Command {
	opts := &attachOptions{}
	cmd := &cobra.Command{
		Use:   "attach --pid PID",
		Short: "Record what an already running process tree does",
		Long: `Trace the running process PID and all its descendants (and every process
they start from now on) until they have all exited or you press Ctrl-C.
What they did before attaching is not recorded.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd.Context(), opts, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().IntVar(&opts.pid, "pid", 0, "the root of the tree to trace (required)")
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the report as JSON on stdout")
	opts.addRingFlag(cmd)
	addReportFlags(cmd, &opts.reportFlags)
	return cmd
}

func runAttach(ctx context.Context, opts *attachOptions, stdout, stderr io.Writer) error {
	if opts.pid <= 0 {
		return &usageError{fmt.Errorf("attach needs --pid PID")}
	}
	ring, err := opts.ringBytes()
	if err != nil {
		return err
	}
	home, err := stores.Home()
	if err != nil {
		return err
	}
	ro := record.Options{Home: home, Mode: "attach", AttachPID: opts.pid, Sensor: sensor.Options{RingBytes: ring}}
	return recordAndReport(ctx, ro, opts.json, &opts.reportFlags, stdout, stderr)
}

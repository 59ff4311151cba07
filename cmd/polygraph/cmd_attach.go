package main

import (
	"context"
	"fmt"
	"io"
	"os"

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
What they did before attaching is not recorded: loading the sensor takes a
few seconds, and polygraph says on stderr when it has joined the tree
("attached to pid ... recording"); start the work after that line.`,
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
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", opts.pid)); err != nil {
		return fmt.Errorf("attach: no process %d", opts.pid)
	}
	// Loading the sensor takes a few seconds; say so, then say when the
	// tree is joined (record's notice): what it does before then is not
	// recorded.
	fmt.Fprintf(stderr, "polygraph: loading the sensor to attach to pid %d...\n", opts.pid)
	ro := record.Options{Home: home, Mode: "attach", AttachPID: opts.pid, Sensor: sensor.Options{RingBytes: ring}, Notices: stderr}
	return recordAndReport(ctx, ro, opts.json, &opts.reportFlags, stdout, stderr)
}

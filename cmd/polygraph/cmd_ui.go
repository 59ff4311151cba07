package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/stores"
	"github.com/polygraph/polygraph/internal/ui"
)

// uiOptions are the flags of `polygraph ui`.
type uiOptions struct {
	listen string
	token  string
	policy string
}

func init() { commands = append(commands, newUICommand) }

func newUICommand(g *globalOptions) *cobra.Command {
	opts := &uiOptions{}
	cmd := &cobra.Command{
		Use:   "ui [--listen ADDR] [--token T] [--policy F]",
		Short: "Serve the sessions as live timelines in the browser",
		Long: `Serve the recorded sessions as web pages: the session list, and each
session's timeline of the three accounts (what the agent said, what the
tool reported back, what the kernel saw), with its findings, filters, each
call's own view, the process tree and what no tool call explains. A session
that run or watch is still recording is followed live: the page updates
as the agent works. docs/ui.md describes the pages.

It listens on ` + ui.DefaultListen + ` and answers only to loopback names. On any
other address (--listen 0.0.0.0:7777) it wants a token: --token T, or
$POLYGRAPH_UI_TOKEN, or one it makes up; the URL it prints carries it.
Secrets in command lines and environments are masked, as in every report.

Exit status: 130 when interrupted (Ctrl-C), which is how it stops; 1 on error;
2 on usage error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUI(cmd.Context(), opts, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&opts.listen, "listen", ui.DefaultListen, "address to listen on (host:port)")
	cmd.Flags().StringVar(&opts.token, "token", "", "token a browser must show (default: $POLYGRAPH_UI_TOKEN, or one made up off loopback)")
	cmd.Flags().StringVar(&opts.policy, "policy", "", "policy file (default: the built-in policy)")
	return cmd
}

func runUI(ctx context.Context, opts *uiOptions, stdout io.Writer) error {
	pol, err := loadPolicy(opts.policy)
	if err != nil {
		return err
	}
	home, err := stores.Home()
	if err != nil {
		return err
	}
	token := opts.token
	if token == "" {
		token = os.Getenv("POLYGRAPH_UI_TOKEN")
	}
	err = ui.Serve(ctx, ui.Options{Listen: opts.listen, Token: token, Home: home, Policy: pol}, func(url string) {
		fmt.Fprintf(stdout, "polygraph ui: serving the sessions of %s at %s (Ctrl-C to stop)\n", home, url)
	})
	if err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

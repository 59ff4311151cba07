package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/report"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
)

type runOptions struct {
	json   bool
	linger time.Duration
	asRoot bool
}

func init() { commands = append(commands, newRunCommand) }

func newRunCommand(g *globalOptions) *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command and record what its process tree does",
		Long: `Run CMD under the kernel sensor and record every process, file and socket
operation of its process tree (children stay traced however they detach)
into a new session. When CMD exits, processes of the tree still running
are traced for --linger more, then listed as left running.

Under sudo, CMD runs as the invoking user (with that user's HOME), the way
it would without polygraph; --as-root keeps root.

The one-screen summary goes to stderr; with --json a JSON document goes to
stdout instead. Exit status: CMD's own (127 when CMD is not found, 128+N
when killed by signal N); 1 when polygraph cannot trace.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd.Context(), opts, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "print the summary as JSON on stdout")
	cmd.Flags().DurationVar(&opts.linger, "linger", 3*time.Second, "keep tracing processes left running this long after CMD exits")
	cmd.Flags().BoolVar(&opts.asRoot, "as-root", false, "under sudo, run CMD as root instead of the invoking user")
	return cmd
}

func runRun(ctx context.Context, opts *runOptions, args []string, stdout, stderr io.Writer) error {
	home, err := session.Home()
	if err != nil {
		return err
	}
	ro := sensor.RecordOptions{
		Home: home, Mode: "run", Command: args, Linger: opts.linger,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
	}
	if !opts.asRoot {
		ro.Credential, ro.Env = sudoCredential()
	}
	return record(ctx, ro, opts.json, stdout, stderr)
}

// record runs a recording and prints its summary; shared by run, attach
// and demo.
func record(ctx context.Context, ro sensor.RecordOptions, asJSON bool, stdout, stderr io.Writer) error {
	sum := report.NewSummary(0)
	ro.Observe = sum.Observe
	ro.Started = func(m session.Meta) {
		fmt.Fprintf(stderr, "polygraph: recording session %s\n", m.ID)
	}
	res, err := sensor.Record(ctx, ro)
	if err != nil {
		if errors.Is(err, sensor.ErrPermission) {
			return err
		}
		return err
	}
	sum.Finish(res.Meta, res.Leftovers, res.ExitCode)
	if asJSON {
		err = sum.WriteJSON(stdout)
	} else {
		err = sum.WriteText(stderr)
	}
	if err != nil {
		return err
	}
	if res.ExitCode != nil && *res.ExitCode != 0 {
		return &exitError{code: *res.ExitCode}
	}
	return nil
}

// sudoCredential returns the invoking user's credentials and environment
// when polygraph runs as root under sudo, so the command runs as that
// user would run it; nil otherwise.
func sudoCredential() (*syscall.Credential, []string) {
	if os.Geteuid() != 0 || os.Getenv("SUDO_UID") == "" {
		return nil, nil
	}
	uid, err1 := strconv.Atoi(os.Getenv("SUDO_UID"))
	gid, err2 := strconv.Atoi(os.Getenv("SUDO_GID"))
	if err1 != nil || err2 != nil || uid == 0 {
		return nil, nil
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	env := os.Environ()
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		if gids, err := u.GroupIds(); err == nil {
			for _, g := range gids {
				if n, err := strconv.Atoi(g); err == nil {
					cred.Groups = append(cred.Groups, uint32(n))
				}
			}
		}
		env = append(env, "HOME="+u.HomeDir, "USER="+u.Username, "LOGNAME="+u.Username)
	}
	return cred, env
}

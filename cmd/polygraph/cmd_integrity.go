package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/integrity"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// integrityOptions are the flags of `polygraph integrity`'s verbs.
type integrityOptions struct {
	json bool
	seen bool
}

func init() { commands = append(commands, newIntegrityCommand) }

func newIntegrityCommand(g *globalOptions) *cobra.Command {
	opts := &integrityOptions{}
	cmd := &cobra.Command{
		Use:   "integrity",
		Short: "Pin the binaries you trust and list what polygraph trusts",
		Long: `polygraph hashes every binary and script a traced process tree runs and
checks it against, in order: the pins you set here, the dpkg database, and
the hash this host saw the first time it ran that path. A file a source
knows under another hash is modified; one no source knows is unknown.

Pins and first-seen hashes live in $POLYGRAPH_HOME/integrity.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "pin PATH...",
		Short: "Trust each file as it is now, by its SHA-256",
		Long: `Pin each file's current SHA-256 at its absolute, symlink-resolved path.
An exec of that path with another hash is reported as modified. Pinning a
pinned path again replaces its hash.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntegrityPin(args, cmd.OutOrStdout())
		},
	}, &cobra.Command{
		Use:   "unpin PATH...",
		Short: "Forget the pins of the given paths",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntegrityUnpin(args, cmd.OutOrStdout())
		},
	})
	list := &cobra.Command{
		Use:   "list [--json] [--seen]",
		Short: "List the pins (or, with --seen, this host's first-seen hashes)",
		Long: `List the pinned paths with their SHA-256, size and when they were pinned.
With --seen, list instead the hashes this host first saw each path run
with, the hash it last ran with and how often that changed.

With --json, one JSON object per path per line.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntegrityList(opts, cmd.OutOrStdout())
		},
	}
	list.Flags().BoolVar(&opts.json, "json", false, "one JSON object per path per line")
	list.Flags().BoolVar(&opts.seen, "seen", false, "list first-seen hashes instead of pins")
	check := &cobra.Command{
		Use:   "check [--json] PATH...",
		Short: "Judge files now, as a recording would",
		Long: `Hash each file and say what the trusted sources make of it: verified,
modified or unknown, which source decided and, for a file nobody vouches
for, where it sits. Checking records no first-seen hash.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runIntegrityCheck(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	check.Flags().BoolVar(&opts.json, "json", false, "one JSON verdict per file per line")
	cmd.AddCommand(list, check)
	return cmd
}

func openIntegrityStore() (*integrity.Store, error) {
	home, err := stores.Home()
	if err != nil {
		return nil, err
	}
	return integrity.OpenStore(home)
}

func runIntegrityPin(args []string, stdout io.Writer) error {
	store, err := openIntegrityStore()
	if err != nil {
		return err
	}
	names, err := store.PinPaths(args, time.Now())
	if err != nil {
		return err
	}
	pins, err := store.Pins()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	for _, n := range names {
		fmt.Fprintf(out, "pinned %s %s\n", pins[n].SHA256, textsafe.Line(n))
	}
	return flushOut(out)
}

func runIntegrityUnpin(args []string, stdout io.Writer) error {
	store, err := openIntegrityStore()
	if err != nil {
		return err
	}
	removed, err := store.Unpin(args)
	if err != nil {
		return err
	}
	if len(removed) == 0 {
		return fmt.Errorf("none of the paths is pinned")
	}
	out := bufio.NewWriter(stdout)
	for _, n := range removed {
		fmt.Fprintf(out, "unpinned %s\n", textsafe.Line(n))
	}
	return flushOut(out)
}

// pinRow and seenRow are the --json lines of list.
type pinRow struct {
	Path string `json:"path"`
	integrity.Pin
}

type seenRow struct {
	Path string `json:"path"`
	Host string `json:"host"`
	integrity.Seen
}

func runIntegrityList(opts *integrityOptions, stdout io.Writer) error {
	store, err := openIntegrityStore()
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	if opts.seen {
		err = listSeen(store, opts.json, out)
	} else {
		err = listPins(store, opts.json, out)
	}
	if err != nil {
		return err
	}
	return flushOut(out)
}

func listPins(store *integrity.Store, asJSON bool, out io.Writer) error {
	pins, err := store.Pins()
	if err != nil {
		return err
	}
	if !asJSON && len(pins) == 0 {
		_, err := fmt.Fprintf(out, "no pins in %s\n", filepath.Join(store.Dir, integrity.PinsFile))
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "PATH\tSHA256\tSIZE\tPINNED")
	}
	for _, p := range slices.Sorted(maps.Keys(pins)) {
		pin := pins[p]
		if asJSON {
			if err := enc.Encode(pinRow{Path: p, Pin: pin}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", textsafe.Line(p), textsafe.Line(pin.SHA256), pin.Size, integrityStamp(pin.PinnedAt))
	}
	return tw.Flush()
}

func listSeen(store *integrity.Store, asJSON bool, out io.Writer) error {
	host, _ := os.Hostname()
	seen, err := store.Seen(host)
	if err != nil {
		return err
	}
	if !asJSON && len(seen) == 0 {
		_, err := fmt.Fprintf(out, "no first-seen hashes for %s in %s\n", host, filepath.Join(store.Dir, integrity.SeenFile))
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "PATH\tSHA256\tSINCE\tFIRST SEEN\tCHANGES")
	}
	for _, p := range slices.Sorted(maps.Keys(seen)) {
		s := seen[p]
		if asJSON {
			if err := enc.Encode(seenRow{Path: p, Host: host, Seen: s}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", textsafe.Line(p), textsafe.Line(s.SHA256), integrityStamp(s.Since), integrityStamp(s.FirstSeen), s.Changes)
	}
	return tw.Flush()
}

func integrityStamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

func runIntegrityCheck(ctx context.Context, opts *integrityOptions, args []string, stdout io.Writer) error {
	store, err := openIntegrityStore()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	c, err := integrity.New(integrity.Options{Store: store, Workspaces: []string{cwd}})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(stdout)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	for _, a := range args {
		p, err := filepath.Abs(a)
		if err == nil {
			p, err = filepath.EvalSymlinks(p)
		}
		if err != nil {
			return fmt.Errorf("check %s: %w", a, err)
		}
		v := c.Check(ctx, integrity.Request{Path: p, Cwd: cwd}).Binary
		if opts.json {
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			continue
		}
		fmt.Fprintln(out, textsafe.Line(describeVerdict(v)))
	}
	return flushOut(out)
}

// describeVerdict is one line per file: status, source, path, and what
// makes it worth a look.
func describeVerdict(v integrity.Verdict) string {
	s := fmt.Sprintf("%-11s %-10s %s", v.Status, v.Source, v.Path)
	switch {
	case v.Status == integrity.Unavailable:
		s += ": " + v.Reason
	case v.Status == integrity.Modified:
		got := v.SHA256
		if v.ExpectedAlgo == "md5" {
			got = v.MD5
		}
		s += fmt.Sprintf(" (%s %s, expected %s)", v.ExpectedAlgo, got, v.Expected)
	}
	if v.Package != "" {
		s += " [" + v.Package + "]"
	}
	if f, ok := v.Finding(); ok {
		s += " -> " + f.Rule + ": " + f.Title
	}
	return s
}

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/detect"
	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// sessionsOptions are the flags of `polygraph sessions`.
type sessionsOptions struct {
	json bool
}

func init() { commands = append(commands, newSessionsCommand) }

func newSessionsCommand(g *globalOptions) *cobra.Command {
	opts := &sessionsOptions{}
	cmd := &cobra.Command{
		Use:   "sessions [--json]",
		Short: "List recorded sessions, newest first",
		Long: `List the sessions in $POLYGRAPH_HOME (default ~/.local/share/polygraph of the
invoking user), newest first: id, start time, duration, events recorded,
events lost, whether polygraph closed the session cleanly, the traced
command's exit status, the agent it ran and its command. The command is
shown without the launchers in front of it (env -i PATH=… HOME=…, sudo -u,
nice, timeout): the agent's own command line, as typed after them.

A session still being recorded shows "live" in the CLEAN column (and
in_progress in --json). One that is not clean and not live was left by a
polygraph that was killed or crashed; its events up to the last flush are
still readable. A file that cannot be read at all is listed with the
reason.

With --json, one JSON object per session per line (the whole command, and
the agent as "agent").`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSessions(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "one JSON object per session per line")
	return cmd
}

func runSessions(ctx context.Context, opts *sessionsOptions, args []string, stdout io.Writer) error {
	home, err := stores.Home()
	if err != nil {
		return err
	}
	list, err := session.List(home)
	if err != nil {
		return err
	}
	for i := range list {
		// The command line may carry the agent's API key.
		list[i].Command = redact.Argv(list[i].Command)
	}
	out := bufio.NewWriter(stdout)
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		for _, m := range list {
			if err := enc.Encode(listedSession{Meta: m, Agent: sessionAgent(m)}); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return flushOut(out)
	}
	if len(list) == 0 {
		fmt.Fprintf(out, "no sessions in %s\n", sanitizeLine(strings.Join(stores.Dirs(home), " or ")))
		return flushOut(out)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tDURATION\tEVENTS\tLOST\tCLEAN\tEXIT\tAGENT\tCOMMAND")
	for _, m := range list {
		started := "-"
		if !m.StartedAt.IsZero() {
			started = m.StartedAt.Local().Format("2006-01-02 15:04:05")
		}
		if m.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-\terror: %s\n", sanitizeLine(m.ID), started, sanitizeLine(m.Error))
			continue
		}
		cmd := m.Command
		if c := agent.Launched(cmd); len(c) > 0 {
			cmd = c
		}
		ag := sessionAgent(m)
		if ag == "" {
			ag = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", sanitizeLine(m.ID), started, sessionDuration(m),
			m.Events, lostCell(m.Lost), cleanCell(m), exitCell(m.ExitCode), sanitizeLine(ag), commandCell(cmd, 60))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return flushOut(out)
}

// listedSession is one line of `sessions --json`: the session's metadata
// and the agent its command runs.
type listedSession struct {
	session.Meta
	Agent string `json:"agent,omitempty"`
}

// sessionAgent names the agent a session recorded, from its command line
// as baselines and the report name it (detect.AgentOf, past the
// launchers; the demo's is its scripted agent), "" when it is none
// polygraph knows or the session is watch's outsiders.
func sessionAgent(m session.Meta) string {
	switch {
	case m.Mode == "demo":
		return "polygraph-demo"
	case m.Outsiders:
		return ""
	}
	if name, _ := detect.AgentOf(nil, m); name != "unknown" {
		return name
	}
	return ""
}

// flushOut flushes buffered output, reporting a failed write once.
func flushOut(w *bufio.Writer) error {
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

// sessionDuration is how long the session ran, "-" when it never closed.
func sessionDuration(m session.Meta) string {
	if m.EndedAt.IsZero() || m.StartedAt.IsZero() || !m.CleanClose {
		return "-"
	}
	d := m.EndedAt.Sub(m.StartedAt)
	switch {
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	default:
		return d.Round(time.Second).String()
	}
}

// lostTotal adds up the lost-event counters.
func lostTotal(lost map[string]uint64) uint64 {
	var n uint64
	for _, v := range lost {
		n += v
	}
	return n
}

// lostCell is the LOST column: the total.
func lostCell(lost map[string]uint64) string {
	return strconv.FormatUint(lostTotal(lost), 10)
}

// lostDetail spells out the non-zero counters: "ringbuf 12, queue 3".
func lostDetail(lost map[string]uint64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(lost)) {
		if lost[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, lost[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// cleanCell is the CLEAN column: yes, no, or live for a session whose
// writer is still recording it.
func cleanCell(m session.Meta) string {
	if m.InProgress {
		return "live"
	}
	return yesNo(m.CleanClose)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// exitCell is the EXIT column: the traced command's status or "-".
func exitCell(code *int) string {
	if code == nil {
		return "-"
	}
	return strconv.Itoa(*code)
}

// commandCell renders argv as a shell-like line cut to n runes.
func commandCell(argv []string, n int) string {
	if len(argv) == 0 {
		return "-"
	}
	s := quoteArgv(argv)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// quoteArgv joins argv the way a shell would need it typed, quoting words
// with spaces, quotes or control characters.
func quoteArgv(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		parts[i] = quoteWord(a)
	}
	return strings.Join(parts, " ")
}

// quoteWord returns s unchanged when it is a plain word, else quoted: Go
// syntax when textsafe would escape it (control characters, invalid
// UTF-8, bidirectional overrides: nothing reaches the terminal raw),
// single quotes otherwise.
func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	if textsafe.NeedsEscape(s) {
		return strconv.Quote(s)
	}
	plain := true
	for _, r := range s {
		if strings.ContainsRune(" \t'\"\\$`!*?[]{}()<>|&;#~", r) {
			plain = false
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// sanitizeLine makes s safe to print on one line of a terminal
// (textsafe.Line).
func sanitizeLine(s string) string { return textsafe.Line(s) }

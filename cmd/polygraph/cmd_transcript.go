package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/stores"

	"github.com/polygraph/polygraph/internal/accounts"
	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/event"

	"github.com/spf13/cobra"

	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/textsafe"
	"github.com/polygraph/polygraph/internal/transcript"
)

type transcriptOptions struct {
	json        bool
	noSubagents bool
	discover    bool
	home        string // --discover without SESSION: the agent user's home
	cwd         string
	from, to    string
	noRedact    bool
}

func init() { commands = append(commands, newTranscriptCommand) }

func newTranscriptCommand(g *globalOptions) *cobra.Command {
	opts := &transcriptOptions{}
	cmd := &cobra.Command{
		Use:   "transcript FILE | --discover SESSION",
		Short: "Show the tool calls and claims in an agent's own transcript",
		Long: `Read an agent's transcript and show the tool calls it reports and the
checkable claims it makes ("All 42 tests pass", "Installed requests").

The format is recognised from the content: Claude Code session JSONL,
claude -p --output-format stream-json, Codex CLI rollouts, Gemini CLI session
files (.json and .jsonl), mini-swe-agent trajectories, OpenTelemetry GenAI
spans as OTLP JSON, and polygraph's plain JSONL (docs/transcript-jsonl.md). FILE is the whole
session: its subagents' calls are included, whether inline, mirrored or in
the subagent files the agent writes beside FILE; --no-subagents shows only
FILE's own agent. Lines that cannot be read are reported on stderr with
file:line and skipped.

--json prints one JSON object per line: {"type":"tool_call", ...} for each
call, then {"type":"claim", ...} for each claim.

Secrets in the calls' commands, results and URLs and in the claims (API
keys, tokens, passwords) are masked; --no-redact shows them as written, for
root only.

--discover SESSION lists the transcripts agents wrote during a recorded
session (in the traced user's home, for the session's working directory
and time). Without SESSION, give --cwd and --from (and --home, --to).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTranscript(cmd.Context(), opts, args, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.BoolVar(&opts.json, "json", false, "print one JSON object per line")
	f.BoolVar(&opts.noSubagents, "no-subagents", false, "only FILE's own agent, not its subagents")
	f.BoolVar(&opts.discover, "discover", false, "list the transcripts written during SESSION")
	f.StringVar(&opts.home, "home", "", "with --discover and no SESSION: the home directory to search (default: yours)")
	f.StringVar(&opts.cwd, "cwd", "", "with --discover and no SESSION: the agent's working directory")
	f.StringVar(&opts.from, "from", "", "with --discover and no SESSION: start of the window (RFC 3339)")
	f.StringVar(&opts.to, "to", "", "with --discover and no SESSION: end of the window (RFC 3339, default now)")
	f.BoolVar(&opts.noRedact, "no-redact", false, "show secrets as written (root only)")
	return cmd
}

func runTranscript(ctx context.Context, opts *transcriptOptions, args []string, stdout io.Writer) error {
	if opts.discover {
		return runDiscover(ctx, opts, args, stdout)
	}
	if len(args) != 1 {
		return &usageError{errors.New("transcript needs a FILE (or --discover SESSION)")}
	}
	if err := checkNoRedact(opts.noRedact); err != nil {
		return err
	}
	t, err := transcript.ParseFileContext(ctx, args[0], transcript.Options{NoSubagents: opts.noSubagents})
	if err != nil {
		return err
	}
	if !opts.noRedact {
		for i, c := range t.ToolCalls {
			t.ToolCalls[i] = redact.ToolCall(c)
		}
		for i, c := range t.Claims {
			t.Claims[i] = redact.Claim(c)
		}
	}
	for _, w := range append(t.Warnings, t.Limits...) {
		slog.Warn(w.Message, "at", w.Source)
	}
	if opts.json {
		return writeTranscriptJSON(stdout, t)
	}
	return writeTranscriptTable(stdout, t)
}

// toolCallLine and claimLine are --json lines: the record's type, then its
// fields.
type toolCallLine struct {
	Type string `json:"type"`
	*transcript.ToolCall
}

type claimLine struct {
	Type string `json:"type"`
	*transcript.Claim
}

func writeTranscriptJSON(w io.Writer, t *transcript.Transcript) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, tc := range t.ToolCalls {
		if err := enc.Encode(toolCallLine{"tool_call", tc}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	for _, c := range t.Claims {
		if err := enc.Encode(claimLine{"claim", c}); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

func writeTranscriptTable(w io.Writer, t *transcript.Transcript) error {
	head := string(t.Format)
	if t.Version != "" {
		head += " " + t.Version
	}
	if t.SessionID != "" {
		head += "  session " + t.SessionID
	}
	if t.Cwd != "" {
		head += "  cwd " + t.Cwd
	}
	fmt.Fprintln(w, textsafe.Line(head))
	span := ""
	if !t.StartedAt.IsZero() {
		span = t.StartedAt.Local().Format("2006-01-02 15:04:05") + " – " + t.EndedAt.Local().Format("15:04:05") + ", "
	}
	fmt.Fprintf(w, "%s%s, %s", span, human.Count(len(t.ToolCalls), "tool call", "tool calls"), human.Count(len(t.Claims), "claim", "claims"))
	if len(t.Subagents) > 0 {
		fmt.Fprintf(w, ", %d subagent files", len(t.Subagents))
	}
	if len(t.Warnings) > 0 {
		noun := "warnings"
		if len(t.Warnings) == 1 {
			noun = "warning"
		}
		fmt.Fprintf(w, ", %d %s (on stderr)", len(t.Warnings), noun)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)

	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tKIND\tTOOL\tEXIT\tFLAGS\tID\tWHAT")
	for _, tc := range t.ToolCalls {
		exit := ""
		if tc.ExitCode != nil {
			exit = fmt.Sprint(*tc.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", clock(tc.StartedAt), textsafe.Line(string(tc.Kind)), oneLine(tc.Tool, 24), exit, callFlags(tc), textsafe.Line(shortID(tc.ID)), what(tc))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	fmt.Fprintln(w, "FLAGS: E error, R rejected (started nothing), B background, S subagent's call, W rewound")
	if len(t.Claims) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tCLAIM\tCALLS\tTEXT")
	for _, c := range t.Claims {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", clock(c.At), textsafe.Line(string(c.Kind)), len(c.ToolCallIDs), oneLine(c.Text, 100))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("15:04:05")
}

func callFlags(tc *transcript.ToolCall) string {
	var b strings.Builder
	for _, f := range []struct {
		on bool
		c  byte
	}{{tc.IsError, 'E'}, {tc.Rejected, 'R'}, {tc.Background, 'B'}, {tc.ParentID != "", 'S'}, {tc.Rewound, 'W'}} {
		if f.on {
			b.WriteByte(f.c)
		}
	}
	return b.String()
}

func shortID(id string) string {
	if len(id) > 16 {
		return id[:15] + "…"
	}
	return id
}

// what is the one thing worth showing about a call.
func what(tc *transcript.ToolCall) string {
	switch {
	case tc.Command != "":
		return oneLine(tc.Command, 80)
	case tc.Polls != "":
		return "polls " + textsafe.Line(tc.Polls)
	case len(tc.Paths) > 0:
		return oneLine(strings.Join(tc.Paths, " "), 80)
	case len(tc.URLs) > 0:
		return oneLine(strings.Join(tc.URLs, " "), 80)
	}
	return ""
}

// oneLine is s on one line, its runs of white space made one space, safe
// for the terminal (textsafe.Line), cut to n runes.
func oneLine(s string, n int) string {
	s = textsafe.Line(strings.Join(strings.Fields(s), " "))
	if len([]rune(s)) > n {
		return string([]rune(s)[:n-1]) + "…"
	}
	return s
}

func runDiscover(ctx context.Context, opts *transcriptOptions, args []string, stdout io.Writer) error {
	var home, cwd string
	var argv []string // the traced command, which may name its transcript (mini-swe-agent's -o)
	var from, to time.Time
	switch len(args) {
	case 1:
		shome, err := stores.Home()
		if err != nil {
			return err
		}
		path, err := session.Resolve(shome, args[0])
		if err != nil {
			return err
		}
		r, err := session.Open(path)
		if err != nil {
			return err
		}
		m := r.Meta()
		// Where report looks: the HOMEs and location variables the
		// session's execs recorded as well as its own home.
		var execs []*event.Event
		err = r.Events(session.Filter{Kinds: []event.Kind{event.KindExec}}, func(e *event.Event) error {
			execs = append(execs, e)
			return nil
		})
		_ = r.Close()
		if err != nil {
			return err
		}
		return printFound(stdout, opts.json, analysis.Discover(ctx, &m, execs), m.Home, m.Cwd, m.StartedAt, m.EndedAt)
	case 0:
		if opts.cwd == "" && opts.from == "" {
			return &usageError{errors.New("--discover needs SESSION, or --cwd and --from")}
		}
		var err error
		if from, err = parseFlagTime("--from", opts.from); err != nil {
			return err
		}
		if to, err = parseFlagTime("--to", opts.to); err != nil {
			return err
		}
		home, cwd = opts.home, opts.cwd
		if home == "" {
			_, _, _, home = accounts.InvokingUser()
		}
	}
	found, err := transcript.DiscoverCommand(ctx, argv, home, nil, cwd, from, to)
	if err != nil {
		return err
	}
	return printFound(stdout, opts.json, found, home, cwd, from, to)
}

// printFound lists discovered transcripts, as JSON lines or a table.
func printFound(stdout io.Writer, asJSON bool, found []transcript.Found, home, cwd string, from, to time.Time) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, f := range found {
			if err := enc.Encode(f); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		return nil
	}
	if len(found) == 0 {
		fmt.Fprintf(stdout, "no transcripts for %s between %s and %s in %s\n", textsafe.Line(cwd), stamp(from), stamp(to), textsafe.Line(home))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FORMAT\tSESSION\tFIRST\tLAST\tPATH")
	for _, f := range found {
		path := f.Path
		if f.Subagent {
			path += " (subagent)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Format, textsafe.Line(shortID(f.SessionID)), stamp(f.FirstAt), stamp(f.LastAt), textsafe.Line(path))
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	return nil
}

func parseFlagTime(name, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, &usageError{fmt.Errorf("%s: %w", name, err)}
	}
	return t, nil
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}

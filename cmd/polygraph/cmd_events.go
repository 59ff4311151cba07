package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/stores"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/redact"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// eventsOptions are the flags of `polygraph events`.
type eventsOptions struct {
	json     bool
	kinds    []string
	pids     []uint
	noRedact bool
}

func init() { commands = append(commands, newEventsCommand) }

func newEventsCommand(g *globalOptions) *cobra.Command {
	opts := &eventsOptions{}
	kinds := make([]string, len(event.Kinds))
	for i, k := range event.Kinds {
		kinds[i] = string(k)
	}
	cmd := &cobra.Command{
		Use:   "events SESSION [--json] [--kind K]... [--pid P]...",
		Short: "Print the kernel events of a session",
		Long: `Print the kernel events recorded in SESSION, in order: one line per event
with the time since the session started, the process, the kind and what
matters for that kind. SESSION is a session id, a unique prefix of one,
"last" for the newest, or the path to a session file.

--kind and --pid select events (repeat them, or separate values with
commas); kinds are ` + strings.Join(kinds, ", ") + `.
With --json, one JSON object per event per line, with the field names of
the event model.

Secrets in command lines and environments (API keys, tokens, passwords)
are masked, in both forms; --no-redact shows them as recorded, for root
only.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runEvents(cmd.Context(), opts, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&opts.json, "json", false, "one JSON object per event per line")
	cmd.Flags().StringSliceVar(&opts.kinds, "kind", nil, "only events of this kind (repeatable)")
	cmd.Flags().UintSliceVar(&opts.pids, "pid", nil, "only events of this process id (repeatable)")
	cmd.Flags().BoolVar(&opts.noRedact, "no-redact", false, "show secrets in command lines and environments as recorded (root only)")
	return cmd
}

func runEvents(ctx context.Context, opts *eventsOptions, args []string, stdout, stderr io.Writer) error {
	if len(args) != 1 {
		return &usageError{fmt.Errorf("events needs one SESSION argument")}
	}
	if err := checkNoRedact(opts.noRedact); err != nil {
		return err
	}
	var f session.Filter
	for _, k := range opts.kinds {
		if !event.ValidKind(k) {
			valid := make([]string, len(event.Kinds))
			for i, v := range event.Kinds {
				valid[i] = string(v)
			}
			return &usageError{fmt.Errorf("unknown event kind %q (valid kinds: %s)", k, strings.Join(valid, ", "))}
		}
		f.Kinds = append(f.Kinds, event.Kind(k))
	}
	for _, p := range opts.pids {
		if p > math.MaxUint32 {
			return &usageError{fmt.Errorf("--pid %d is not a process id", p)}
		}
		f.PIDs = append(f.PIDs, uint32(p))
	}
	home, err := stores.Home()
	if err != nil {
		return err
	}
	path, err := session.Resolve(home, args[0])
	if err != nil {
		return err
	}
	r, err := session.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	m := r.Meta()
	id := textsafe.Line(m.ID)
	switch {
	case m.InProgress:
		fmt.Fprintf(stderr, "polygraph: note: session %s is still being recorded; events up to the last flush are shown\n", id)
	case !m.CleanClose:
		fmt.Fprintf(stderr, "polygraph: warning: session %s was not closed cleanly (polygraph was killed or crashed); events up to the last flush are shown\n", id)
	}
	if n := lostTotal(m.Lost); n > 0 {
		fmt.Fprintf(stderr, "polygraph: warning: %s lost while recording (%s); the timeline has gaps\n", human.Count(n, "event was", "events were"), textsafe.Line(lostDetail(m.Lost)))
	}

	out := bufio.NewWriterSize(stdout, 64<<10)
	var emit func(*event.Event) error
	if opts.json {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		emit = func(ev *event.Event) error { return enc.Encode(ev) }
	} else {
		var line []byte
		emit = func(ev *event.Event) error {
			line = appendTimelineLine(line[:0], m.StartedAt, ev)
			_, err := out.Write(line)
			return err
		}
	}
	err = r.EventsContext(ctx, f, func(ev *event.Event) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !opts.noRedact {
			ev = redact.Event(ev)
		}
		if err := emit(ev); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := flushOut(out); err != nil {
		return err
	}
	// The verdict on the file is known only once every event was read;
	// a filtered read checks the whole file too.
	switch r.Meta().Integrity {
	case session.IntegrityModified:
		fmt.Fprintf(stderr, "polygraph: warning: session %s modified after recording: its hash chain or seal does not match\n", id)
	case session.IntegrityDamaged:
		fmt.Fprintf(stderr, "polygraph: warning: session %s is damaged: the events it could not read are not shown\n", id)
	}
	return nil
}

// appendTimelineLine appends one line of the readable timeline: seconds
// since the session started, pid, comm, kind and the kind's details, as in
// "    0.012   4242 npm             open     /home/dev/.npmrc read ENOENT".
func appendTimelineLine(b []byte, start time.Time, ev *event.Event) []byte {
	rel := time.Duration(0)
	if !start.IsZero() && !ev.TS.IsZero() {
		rel = ev.TS.Sub(start)
	}
	b = fmt.Appendf(b, "%9.3f %6d %-15s %-8s ", rel.Seconds(), ev.PID, sanitizeLine(ev.Comm), ev.Kind)
	b = append(b, eventDetails(ev)...)
	// Trailing spaces when a kind has no details are noise in diffs.
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return append(b, '\n')
}

// eventDetails renders the fields that matter for ev's kind.
func eventDetails(ev *event.Event) string {
	var parts []string
	add := func(s ...string) { parts = append(parts, s...) }
	path := func(p string, truncated bool) string {
		s := quoteWord(p)
		if truncated {
			s += "…"
		}
		return s
	}
	switch ev.Kind {
	case event.KindExec:
		add(path(ev.Path, ev.PathTruncated))
		if len(ev.Argv()) > 0 {
			argv := quoteArgv(ev.Argv())
			if ev.ArgvTruncated() {
				argv += " …(argv truncated)"
			}
			add("argv:", argv)
		}
		if ev.Cwd() != "" {
			add("cwd:", quoteWord(ev.Cwd()))
		}
		if ev.UID() != nil {
			add("uid:", strconv.FormatUint(uint64(*ev.UID()), 10))
		}
		add(resultText(ev, false))
	case event.KindFork:
		add("child", strconv.FormatUint(uint64(ev.ChildPID()), 10))
	case event.KindExit:
		if ev.Signal() != 0 {
			add("killed by", signalName(ev.Signal()))
		} else if ev.ExitCode() != nil {
			add("code", strconv.Itoa(*ev.ExitCode()))
		}
		if ev.DurationNS() > 0 {
			add("after", roundDuration(time.Duration(ev.DurationNS())))
		}
		if ev.CPUNS() > 0 {
			add("cpu", roundDuration(time.Duration(ev.CPUNS())))
		}
		if ev.MaxRSSKB() > 0 {
			add("rss", human.Bytes(ev.MaxRSSKB()<<10))
		}
	case event.KindOpen:
		add(path(ev.Path, ev.PathTruncated))
		if ev.Access != "" {
			add(ev.Access)
		}
		if ev.Object != nil && ev.Object.Repeats > 0 {
			// the sum of the image's repeats of an open recorded earlier
			add(fmt.Sprintf("again ×%d (counted in the kernel, the last at this time)", ev.Object.Repeats))
			break
		}
		add(resultText(ev, true))
	case event.KindRename, event.KindLink:
		add(path(ev.Path, ev.PathTruncated), "->", quoteWord(ev.Path2), resultText(ev, false))
	case event.KindUnlink, event.KindMkdir, event.KindChmod:
		add(path(ev.Path, ev.PathTruncated))
		if ev.Mode != nil {
			add(fmt.Sprintf("mode %04o", *ev.Mode))
		}
		add(resultText(ev, false))
	case event.KindHandle:
		add(path(ev.Path, ev.PathTruncated), resultText(ev, false))
	case event.KindPeer:
		add(path(ev.Path, ev.PathTruncated), "other end", ev.Access, "by", fmt.Sprintf("%d %s", ev.PeerPID(), quoteWord(ev.PeerExe())))
	case event.KindInject, event.KindMemRead, event.KindSignal, event.KindBPF:
		add(ev.Method())
		if ev.TargetPID() != 0 {
			add("pid", strconv.FormatUint(uint64(ev.TargetPID()), 10))
		}
		if ev.TargetExe() != "" {
			add(quoteWord(ev.TargetExe()))
		}
		if in := ev.TargetInTree(); in != nil && !*in {
			add("(outside the tree)")
		}
		if ev.Adopted() {
			add("(adopted)")
		}
		if ev.Signo() != 0 {
			add("signal", strconv.Itoa(ev.Signo()))
		}
		add(ev.BPFCmd(), resultText(ev, false))
	case event.KindKey:
		add(ev.KeyOp())
		if ev.KeySerial() != 0 {
			add("key", strconv.FormatInt(int64(ev.KeySerial()), 10))
		}
		if ev.KeyType() != "" || ev.KeyDesc() != "" {
			add(sanitizeLine(ev.KeyType()) + ":" + quoteWord(ev.KeyDesc()))
		}
		if ev.KeyRing() != 0 {
			add("keyring", strconv.FormatInt(int64(ev.KeyRing()), 10))
		}
		if ev.KeyBytes() > 0 {
			add(human.Bytes(uint64(ev.KeyBytes())), "of payload")
		}
		add(resultText(ev, false))
	case event.KindConnect, event.KindBind, event.KindAccept, event.KindSend:
		add(peer(ev))
		if ev.PeerPID() != 0 {
			add(fmt.Sprintf("peer %d %s", ev.PeerPID(), quoteWord(ev.PeerExe())))
		}
		if ev.Host() != "" {
			add("(" + sanitizeLine(ev.Host()) + ")")
		}
		if ev.Proto() != "" {
			add(ev.Proto())
		}
		add(resultText(ev, ev.Kind == event.KindAccept))
	case event.KindDNS:
		add(sanitizeLine(ev.QName()))
		if ev.QType() != "" {
			add(ev.QType())
		}
		if len(ev.Answers()) > 0 {
			add("->", sanitizeLine(strings.Join(ev.Answers(), ", ")))
		}
	case event.KindNet:
		add(peer(ev))
		if ev.Host() != "" {
			add("(" + sanitizeLine(ev.Host()) + ")")
		}
		add("sent", human.Bytes(ev.BytesSent()), "recv", human.Bytes(ev.BytesRecv()))
	case event.KindMount:
		add(ev.MountOp())
		if ev.FSType() != "" {
			add("type", sanitizeLine(ev.FSType()))
		}
		if ev.Path2 != "" {
			add(quoteWord(ev.Path2), "->")
		}
		if fd := ev.MountFD(); fd != nil {
			add("fd", strconv.Itoa(int(*fd)))
			if ev.Path != "" {
				add("->")
			}
		}
		if ev.Path != "" {
			add(path(ev.Path, ev.PathTruncated))
		}
		if ev.MountData() != "" {
			add(quoteWord(ev.MountData()))
		}
		if ev.Flags != nil && *ev.Flags != 0 {
			add(fmt.Sprintf("flags %#x", *ev.Flags))
		}
		add(resultText(ev, ev.MountOp() == "open_tree" || ev.MountOp() == "fsopen" || ev.MountOp() == "fsmount"))
	case event.KindUring:
		add(ev.RingOp())
		if ev.Path != "" {
			add(path(ev.Path, ev.PathTruncated))
		}
		if ev.Addr() != "" {
			add(peer(ev))
		}
		if ev.RingOps() > 0 {
			add("total", human.Count(ev.RingOps(), "op,", "ops,"), human.Bytes(ev.RingBytes()))
		}
		add(resultText(ev, ev.RingOp() == "setup" || ev.RingOp() == "socket"))
	}
	if ev.Kind != event.KindUring && ev.Via() != "" {
		add("via", ev.Via(), ev.RingOp())
	}
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, " ")
}

// peer renders a socket address: host:port, [v6]:port, or a unix path.
func peer(ev *event.Event) string {
	if ev.Family() == "unix" || ev.Port() == 0 && ev.Family() != "ipv4" && ev.Family() != "ipv6" {
		if ev.Addr() == "" {
			return "-"
		}
		return quoteWord(ev.Addr())
	}
	return net.JoinHostPort(ev.Addr(), strconv.Itoa(int(ev.Port())))
}

// resultText renders a syscall result: the errno name for a failure,
// "fd N" for calls that return a descriptor, "" for plain success.
func resultText(ev *event.Event, fd bool) string {
	if ev.Result == nil {
		return ""
	}
	r := *ev.Result
	switch {
	case r < 0:
		return errnoName(-r)
	case fd:
		return "fd " + strconv.FormatInt(r, 10)
	case r == 0:
		return ""
	default:
		return "= " + strconv.FormatInt(r, 10)
	}
}

// errnoName is "ENOENT" for 2, "errno N" for numbers without a name.
func errnoName(n int64) string {
	if n > 0 && n < 4096 {
		if name := unix.ErrnoName(syscall.Errno(n)); name != "" {
			return name
		}
	}
	return "errno " + strconv.FormatInt(n, 10)
}

// signalName is "SIGKILL" for 9, "signal N" for numbers without a name.
func signalName(n int) string {
	if n > 0 && n < 128 {
		if name := unix.SignalName(syscall.Signal(n)); name != "" {
			return name
		}
	}
	return "signal " + strconv.Itoa(n)
}

// roundDuration prints d to a sensible precision: 1.234s, 15ms, 2m3s.
func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// checkNoRedact refuses --no-redact to anyone but root: the secrets it
// shows were the traced command's, and a session in the sudo store is
// readable by the user who ran it, who may not be the one who passed them.
func checkNoRedact(noRedact bool) error {
	if noRedact && os.Geteuid() != 0 {
		return &usageError{fmt.Errorf("--no-redact shows secrets as recorded and is for root only")}
	}
	return nil
}

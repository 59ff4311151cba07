package report

import (
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/human"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/textsafe"
)

// Summary accumulates the headline facts of a session from its events.
// Observe it with every event, in order; it keeps bounded state (sets of
// paths and peers, not events).
type Summary struct {
	Session   string   `json:"session"`
	Path      string   `json:"path"`
	Command   []string `json:"command"`
	ExitCode  *int     `json:"exit_code,omitempty"`
	Signal    int      `json:"signal,omitempty"`
	Duration  string   `json:"duration"`
	Processes int      `json:"processes"` // processes started (forks) plus the root
	Execs     int      `json:"execs"`
	// Programs counts execs by program path.
	Programs     map[string]int      `json:"programs"`
	FilesWritten []string            `json:"files_written"`
	FilesRead    int                 `json:"files_read"` // distinct paths opened for reading
	FailedOpens  int                 `json:"failed_opens"`
	Hosts        []string            `json:"hosts"` // peers connected to, addr:port
	DNS          []string            `json:"dns"`   // names queried
	BytesSent    uint64              `json:"bytes_sent"`
	BytesRecv    uint64              `json:"bytes_recv"`
	Lost         map[string]uint64   `json:"lost"`
	LostTotal    uint64              `json:"lost_total"`
	LeftRunning  []manifest.Leftover `json:"left_running"`
	Unavailable  []string            `json:"unavailable,omitempty"`
	// Repeats are the guarded files opened again and again
	// (manifest.Meta.Repeats).
	Repeats []manifest.Repeat `json:"guarded_repeats,omitempty"`
	// Isolation is what an isolated run (run --isolate) enforced, refused
	// and used (isolation.go).
	Isolation   *manifest.Isolation `json:"isolation,omitempty"`
	Events      uint64              `json:"events"`
	rootPID     uint32
	written     map[string]bool
	read        map[string]bool
	hosts       map[string]bool
	dns         map[string]bool
	first, last time.Time
}

// NewSummary starts a summary for the tree rooted at rootPID (0 if unknown).
func NewSummary(rootPID uint32) *Summary {
	return &Summary{rootPID: rootPID, Programs: map[string]int{}, written: map[string]bool{},
		read: map[string]bool{}, hosts: map[string]bool{}, dns: map[string]bool{}}
}

// Observe adds one event.
func (s *Summary) Observe(e *event.Event) {
	s.Events++
	if s.first.IsZero() {
		s.first = e.TS
	}
	s.last = e.TS
	ok := !e.Failed()
	switch e.Kind {
	case event.KindFork:
		s.Processes++
	case event.KindExec:
		s.Execs++
		s.Programs[e.Path]++
	case event.KindExit:
		if e.PID == s.rootPID {
			s.ExitCode, s.Signal = e.ExitCode(), e.Signal()
		}
	case event.KindOpen:
		if !ok {
			s.FailedOpens++
		} else if strings.Contains(e.Access, "write") || strings.Contains(e.Access, "create") {
			if !isPseudo(e.Path) {
				s.written[e.Path] = true
			}
		} else if !s.read[e.Path] { // a lookup first: most reads repeat a path, and an insert costs more
			s.read[e.Path] = true
		}
	case event.KindRename, event.KindLink:
		if ok {
			if e.Kind == event.KindRename {
				s.written[e.Path2] = true
			} else {
				s.written[e.Path] = true
			}
		}
	case event.KindConnect:
		if e.Family() == "ipv4" || e.Family() == "ipv6" {
			if ok || e.Result != nil && *e.Result == -115 { // EINPROGRESS: a non-blocking connect
				s.hosts[net.JoinHostPort(e.Addr(), strconv.Itoa(int(e.Port())))] = true
			}
		}
	case event.KindDNS:
		if e.QName() != "" {
			s.dns[e.QName()] = true
		}
	case event.KindNet:
		s.BytesSent += e.BytesSent()
		s.BytesRecv += e.BytesRecv()
	}
}

func isPseudo(p string) bool {
	return strings.HasPrefix(p, "/dev/") || strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Finish completes the summary with what only the end of a session knows.
func (s *Summary) Finish(meta manifest.Meta, left []manifest.Leftover, exitCode *int) {
	s.Session, s.Path, s.Command = meta.ID, meta.Path, meta.Command
	if exitCode != nil {
		s.ExitCode = exitCode
	}
	end := meta.EndedAt
	if end.IsZero() {
		end = s.last
	}
	if !meta.StartedAt.IsZero() && !end.IsZero() {
		s.Duration = end.Sub(meta.StartedAt).Round(time.Millisecond).String()
	}
	s.Processes++ // the root
	s.FilesWritten = sortedKeys(s.written)
	s.FilesRead = len(s.read)
	s.Hosts = sortedKeys(s.hosts)
	s.DNS = sortedKeys(s.dns)
	s.Lost = meta.Lost
	s.LostTotal = 0
	for _, n := range meta.Lost {
		s.LostTotal += n
	}
	s.LeftRunning = left
	s.Unavailable = meta.Unavailable
	s.Repeats = meta.Repeats
	s.Isolation = meta.Isolation
	if s.FilesWritten == nil {
		s.FilesWritten = []string{}
	}
	if s.Hosts == nil {
		s.Hosts = []string{}
	}
	if s.DNS == nil {
		s.DNS = []string{}
	}
	if s.LeftRunning == nil {
		s.LeftRunning = []manifest.Leftover{}
	}
}

// listed prints at most max items of a list, then how many more.
func listed(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s, … %d more", strings.Join(items[:max], ", "), len(items)-max)
}

// oneLine keeps a command on one screen line: newlines shown as \n, and
// at most max runes. It is not escaping: what it returns goes through
// textsafe.Line or %q.
// quoted is oneLine in double quotes, a quote inside escaped: the text
// is escaped once, for the terminal, not again as a Go string.
func quoted(s string, max int) string {
	return `"` + oneLine(strings.ReplaceAll(s, `"`, `\"`), max) + `"`
}

func oneLine(s string, max int) string {
	s = textsafe.Line(s)
	if r := []rune(s); len(r) > max {
		return string(r[:max-1]) + "…"
	}
	return s
}

// WriteText writes the one-screen summary.
func (s *Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "polygraph: session %s\n", textsafe.Line(s.Session))
	fmt.Fprintf(&b, "  file       %s\n", textsafe.Line(s.Path))
	status := "unknown"
	switch {
	case s.Signal != 0:
		status = fmt.Sprintf("killed by signal %d", s.Signal)
	case s.ExitCode != nil:
		status = fmt.Sprintf("exit %d", *s.ExitCode)
	}
	fmt.Fprintf(&b, "  command    %s  (%s, %s)\n", textsafe.Line(oneLine(strings.Join(s.Command, " "), 100)), status, s.Duration)
	progs := make([]string, 0, len(s.Programs))
	for p := range s.Programs {
		progs = append(progs, p)
	}
	sort.Slice(progs, func(i, j int) bool {
		if s.Programs[progs[i]] != s.Programs[progs[j]] {
			return s.Programs[progs[i]] > s.Programs[progs[j]]
		}
		return progs[i] < progs[j]
	})
	for i, p := range progs {
		progs[i] = fmt.Sprintf("%s×%d", textsafe.Line(p), s.Programs[p])
	}
	if len(progs) > 0 {
		fmt.Fprintf(&b, "  processes  %d started, %d execs: %s\n", s.Processes, s.Execs, listed(progs, 5))
	} else {
		fmt.Fprintf(&b, "  processes  %d started, no execs\n", s.Processes)
	}
	fmt.Fprintf(&b, "  files      %d written, %d read, %d failed opens\n", len(s.FilesWritten), s.FilesRead, s.FailedOpens)
	for i, f := range s.FilesWritten {
		if i == 8 {
			fmt.Fprintf(&b, "             … %d more\n", len(s.FilesWritten)-8)
			break
		}
		fmt.Fprintf(&b, "             %s\n", textsafe.Line(f))
	}
	net := "none"
	if len(s.Hosts) > 0 {
		net = listed(textsafe.Lines(s.Hosts), 6)
	}
	fmt.Fprintf(&b, "  network    %s (sent %s, received %s)\n", net, human.Bytes(s.BytesSent), human.Bytes(s.BytesRecv))
	if len(s.DNS) > 0 {
		fmt.Fprintf(&b, "  dns        %s\n", listed(textsafe.Lines(s.DNS), 6))
	}
	fmt.Fprintf(&b, "  events     %d recorded, %d lost\n", s.Events, s.LostTotal)
	if len(s.LeftRunning) > 0 {
		fmt.Fprintf(&b, "  left running (still alive when tracing stopped):\n")
		for _, l := range s.LeftRunning {
			fmt.Fprintf(&b, "             pid %d  %s\n", l.PID, textsafe.Line(strings.Join(l.Argv, " ")))
		}
	}
	if len(s.Unavailable) > 0 {
		fmt.Fprintf(&b, "  not recorded on this kernel: %s\n", strings.Join(s.Unavailable, "; "))
	}
	if len(s.Repeats) > 0 {
		var parts []string
		for _, r := range s.Repeats {
			parts = append(parts, fmt.Sprintf("%s ×%d", textsafe.Line(r.Path), r.Count))
		}
		fmt.Fprintf(&b, "  guarded files opened again by the same processes (with the ordinary records, so execs kept their priority): %s\n", listed(parts, 4))
	}
	writeIsolation(&b, s.Isolation)
	_, err := io.WriteString(w, b.String())
	return err
}

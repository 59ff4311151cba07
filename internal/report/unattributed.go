package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// ProcessGroup is the unattributed activity of one process: what the
// reader sees first of what no tool call explains, one line a process
// instead of one a event. The agent's own process is one group too, the
// last, marked Agent: its stray opens of its own HOME are many and rarely
// the point.
type ProcessGroup struct {
	PID uint32
	// Command is the process's command line (its first exec's, or its
	// comm when it ran none that was recorded).
	Command string
	// Agent marks the agent's own process (correlate's AgentExecIDs).
	Agent bool
	// AfterCall is the tool call whose process tree this is, when its
	// events came after the call returned.
	AfterCall string
	Events    []*event.Event
	First     time.Time
	// Kinds counts the events by kind; Reads, Writes and Connects are
	// the distinct paths and peers, in first-seen order.
	Kinds                        map[event.Kind]int
	Reads, Writes, Connects, DNS []string
	// Exit is the process's exit event among them, if any.
	Exit *event.Event
}

// groupUnattributed groups the unattributed events by process (the
// lineage process of their image, else their pid), in the order of each
// group's first event, the agent's own last.
func groupUnattributed(attr *correlate.Result) []ProcessGroup {
	if attr == nil || len(attr.Unattributed) == 0 {
		return nil
	}
	agentImages := map[string]bool{}
	for _, id := range attr.AgentExecIDs {
		agentImages[id] = true
	}
	type key struct {
		proc int
		pid  uint32
	}
	at := map[key]int{}
	var groups []ProcessGroup
	for _, e := range attr.Unattributed {
		k := key{proc: -1, pid: e.PID}
		var command string
		if attr.Tree != nil {
			if im := attr.Tree.Image(e.ExecID); im != nil {
				k = key{proc: im.Process.Index}
				command = processCommand(attr, im.Process)
			}
		}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, ProcessGroup{PID: e.PID, Command: command, First: e.TS, Kinds: map[event.Kind]int{}})
		}
		g := &groups[i]
		g.Events = append(g.Events, e)
		g.Kinds[e.Kind]++
		if agentImages[e.ExecID] {
			g.Agent = true
		}
		if a := attr.Of(e.Seq); a != nil && a.AfterReturn && g.AfterCall == "" {
			g.AfterCall = a.ToolCallID
		}
		switch {
		case e.Kind == event.KindExec && g.Command == "":
			g.Command = strings.Join(e.Argv(), " ")
		case e.Kind == event.KindExit:
			g.Exit = e
		case e.Kind == event.KindOpen && !e.Failed() && !e.IsWrite():
			g.Reads = appendNew(g.Reads, e.Path)
		case e.Kind.IsFile() && !e.Failed() && e.IsWrite():
			p := e.Path
			if e.Kind == event.KindRename {
				p = e.Path2
			}
			g.Writes = appendNew(g.Writes, p)
		case e.Kind == event.KindConnect:
			g.Connects = appendNew(g.Connects, peerText(e))
		case e.Kind == event.KindDNS:
			g.DNS = appendNew(g.DNS, e.QName())
		}
	}
	for i := range groups {
		if groups[i].Command == "" {
			groups[i].Command = groups[i].Events[0].Comm
		}
	}
	slices.SortStableFunc(groups, func(a, b ProcessGroup) int {
		switch {
		case a.Agent == b.Agent:
			return 0
		case a.Agent:
			return 1
		}
		return -1
	})
	return groups
}

// processCommand names a process by what it ran: its first exec, else
// (a fork that ran nothing of its own) the program it was forked from.
func processCommand(attr *correlate.Result, p *lineage.Process) string {
	x := attr.Tree.ExecOf(p.Top().ID)
	if execs := p.Execs(); len(execs) > 0 {
		x = execs[0]
	}
	if x == nil || len(x.Argv()) == 0 {
		return ""
	}
	return execCommand(x, nil)
}

// appendNew appends s to list unless it is there already.
func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// peerText names a connect's peer: host (addr:port), [v6]:port, or a Unix
// socket's path.
func peerText(c *event.Event) string {
	s := fmt.Sprintf("%s:%d", c.Addr(), c.Port())
	switch c.Family() {
	case "ipv6":
		s = fmt.Sprintf("[%s]:%d", c.Addr(), c.Port())
	case "unix":
		s = c.Addr()
	}
	if c.Host() != "" {
		s = c.Host() + " (" + s + ")"
	}
	return s
}

// Summary is the group in a line: its events by kind, what it read,
// wrote and connected to, and how it ended.
func (g *ProcessGroup) Summary() string {
	var parts []string
	if g.Agent {
		parts = append(parts, "the agent's own activity no tool call explains")
	}
	if g.AfterCall != "" {
		parts = append(parts, "after tool call "+g.AfterCall+" returned")
	}
	if len(g.Reads) > 0 {
		parts = append(parts, "read "+readsText(g.Reads, 3))
	}
	if len(g.Writes) > 0 {
		parts = append(parts, "wrote "+listed(g.Writes, 3))
	}
	if len(g.Connects) > 0 {
		parts = append(parts, "connected to "+listed(g.Connects, 3))
	}
	if len(g.DNS) > 0 {
		parts = append(parts, "looked up "+listed(g.DNS, 3))
	}
	if e := g.Exit; e != nil {
		switch {
		case e.Signal() != 0:
			parts = append(parts, fmt.Sprintf("killed by signal %d", e.Signal()))
		case e.ExitCode() != nil:
			parts = append(parts, fmt.Sprintf("exit %d", *e.ExitCode()))
		}
	}
	return strings.Join(parts, "; ")
}

// KindCounts is the group's events by kind, most first: "3 open, 1 exec".
func (g *ProcessGroup) KindCounts() string {
	kinds := make([]event.Kind, 0, len(g.Kinds))
	for k := range g.Kinds {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b event.Kind) int {
		if g.Kinds[a] != g.Kinds[b] {
			return g.Kinds[b] - g.Kinds[a]
		}
		return strings.Compare(string(a), string(b))
	})
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%d %s", g.Kinds[k], k)
	}
	return strings.Join(parts, ", ")
}

// systemPrefixes are where the files every program opens live: the
// loader's cache, shared libraries, locales, /proc, /sys and /dev. A
// list of what a command read puts them last and counts them, so the
// files that say something come first.
var systemPrefixes = []string{"/usr/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/bin/", "/sbin/", "/etc/ld.so.",
	"/proc/", "/sys/", "/dev/"}

// isSystemFile reports whether p is a file every program opens.
func isSystemFile(p string) bool {
	for _, s := range systemPrefixes {
		if strings.HasPrefix(p, s) {
			return true
		}
	}
	return false
}

// splitSystem parts paths into the files that say something and the
// system files, keeping their order.
func splitSystem(paths []string) (own, system []string) {
	for _, p := range paths {
		if isSystemFile(p) {
			system = append(system, p)
		} else {
			own = append(own, p)
		}
	}
	return own, system
}

// readsText lists what was read, at most max of the files that say
// something, then how many system files.
func readsText(paths []string, max int) string {
	own, system := splitSystem(paths)
	var parts []string
	if len(own) > 0 {
		parts = append(parts, listed(own, max))
	}
	switch len(system) {
	case 0:
	case 1:
		parts = append(parts, "1 system file")
	default:
		parts = append(parts, fmt.Sprintf("%d system files", len(system)))
	}
	return strings.Join(parts, ", ")
}

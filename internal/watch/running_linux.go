package watch

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/procfs"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/sensor"
	"github.com/polygraph/polygraph/internal/session"
)

// joinRunning records the agents already running when watch starts, as
// attach would: each topmost agent process and its descendants are
// tracked from now, in a session of their own. What they did before is
// not recorded. It runs before the sink starts, so the maps are its own.
func (w *watcher) joinRunning() {
	procs := procfs.ReadTable()
	parent, children := procs.Parent, procs.Children
	isAgent := func(pid int) (*agent.Profile, []string, bool) {
		exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		p, ok := agent.Executable(exe, argv)
		return p, argv, ok
	}
	for pid, pp := range parent {
		p, argv, ok := isAgent(pid)
		if !ok || pid == os.Getpid() {
			continue
		}
		if _, _, up := isAgent(pp); up {
			continue // inside another agent's tree: that one's root takes it
		}
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		sw, err := session.Create(w.o.Home, session.Meta{Mode: "watch", Command: argv, Cwd: cwd, Homes: w.homes, Hostname: w.host,
			Kernel: w.kernel, RootPID: pid, StartedAt: time.Now(), Unavailable: w.s.Unavailable()})
		if err != nil {
			slog.Warn("watch: cannot record running agent", "agent", p.Name, "pid", pid, "error", err)
			continue
		}
		w.openIDs[sw.Meta().ID] = true
		t := &tree{w: sw, root: uint32(pid), pids: map[uint32]bool{}, agent: p.Name}
		t.check = w.startCheck(pid, cwd, sw)
		for todo := []int{pid}; len(todo) > 0; todo = todo[1:] {
			q := todo[0]
			todo = append(todo, children[q]...)
			t.pids[uint32(q)] = true
			w.trees[uint32(q)] = t
			if start, err := sensor.StartTimeNS(q); err == nil {
				_ = w.s.Track(uint32(q), start)
			}
		}
		slog.Info("watch: joined running agent", "agent", p.Name, "pid", pid, "processes", len(t.pids), "session", sw.Meta().ID)
	}
}

package watch

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/analysis"
	"github.com/polygraph/polygraph/internal/procfs"
	"github.com/polygraph/polygraph/internal/record"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/sensor"
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
		home, _ := sensor.ProcEnv(uint32(pid), "HOME")
		meta := record.NewMeta("watch", home, w.s.Unavailable())
		meta.Command, meta.Cwd, meta.RootPID, meta.StartedAt = argv, cwd, pid, time.Now()
		rec, err := w.record(meta, procPATH(pid), analysis.TranscriptAuto)
		if err != nil {
			slog.Warn("watch: cannot record running agent", "agent", p.Name, "pid", pid, "error", err)
			continue
		}
		t := &tree{recording: rec, root: uint32(pid), pids: map[uint32]bool{}, agent: p.Name}
		for todo := []int{pid}; len(todo) > 0; todo = todo[1:] {
			q := todo[0]
			todo = append(todo, children[q]...)
			t.pids[uint32(q)] = true
			w.trees[uint32(q)] = t
			if start, err := sensor.StartTimeNS(q); err == nil {
				_ = w.s.Track(uint32(q), start)
			}
		}
		slog.Info("watch: joined running agent", "agent", p.Name, "pid", pid, "processes", len(t.pids), "session", rec.w.Meta().ID)
	}
}

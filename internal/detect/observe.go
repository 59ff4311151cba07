package detect

import (
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/agent"
	"github.com/polygraph/polygraph/internal/baseline"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/manifest"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// Observing a session
//
// A baseline and an allowlist policy learn what sessions did in the terms
// the rules judge them in: the same events (the agent's own bookkeeping
// and API traffic left out), the same destinations (peerOf, allowed), the
// same program names (policy.ProgramNames) and the same normalised paths
// (policy.Normalise). So Observe lives here, beside the rules that read
// its output back: baseline-deviation, unexpected-program and
// unexpected-path.

// Observe returns what session in did, per tool kind, for a baseline or
// an allowlist policy.
func Observe(in Input) *baseline.Sample {
	return newFacts(in).observe()
}

// maxDirDepth is how many levels below the workspace, the home or / a
// directory keeps: deeper ones (a dependency tree's) say little more.
const maxDirDepth = 3

// tempDirs hold per-run names (mktemp's): a file under one counts as
// under "the temporary directory", whatever its name.
var tempDirs = []string{"/tmp/", "/var/tmp/", "/dev/shm/", "/run/user/"}

// observe is Observe.
func (s *facts) observe() *baseline.Sample {
	smp := &baseline.Sample{Session: s.in.Meta.ID, Kinds: map[string]*baseline.Activity{}, Unallowed: baseline.Seen{}, AgentShellPrograms: baseline.Seen{}}
	smp.Agent, smp.Version = s.agentName()
	act := func(kind string) *baseline.Activity {
		a := smp.Kinds[kind]
		if a == nil {
			a = baseline.NewActivity()
			smp.Kinds[kind] = a
		}
		return a
	}
	callExecs := map[string][]time.Time{}
	dirs := dirCache{}
	for i, e := range s.events {
		f := &s.byEvent[i]
		if f.flags&fOwn != 0 {
			if f.flags&fExec != 0 && s.ranByShell(e) {
				if names := policy.ProgramNames(e.Path, e.Argv()); len(names) > 0 && !s.pol.AgentProgram(names) {
					smp.AgentShellPrograms.Add(names[0], e.Seq)
				}
			}
			continue
		}
		call := s.callOf(e)
		kind := s.kindOf(call)
		switch {
		case f.flags&fExec != 0:
			if names := policy.ProgramNames(e.Path, e.Argv()); len(names) > 0 {
				act(kind).Programs.Add(names[0], e.Seq)
			}
			if call != "" {
				callExecs[call] = append(callExecs[call], e.TS)
			}
		case f.flags&(fEgress|fNetSent) != 0:
			if s.internalLoopback(e) {
				continue // a server of the tree's own, on whatever port it got
			}
			p := s.peerOf(e)
			dest := destination(e, p)
			a := act(kind)
			a.Hosts.Add(dest, e.Seq)
			if f.flags&fNetSent != 0 {
				a.BytesOut[dest] += e.BytesSent()
			}
			if !s.allowed(e, p) {
				smp.Unallowed.Add(dest, e.Seq)
			}
		case f.path >= 0:
			s.observeFile(act, kind, i, f, dirs)
		}
	}
	if s.in.Transcript == nil {
		return smp
	}
	for _, c := range s.in.Transcript.ToolCalls {
		a := act(s.kindOf(c.ID))
		a.Calls++
		ts := callExecs[c.ID]
		a.Procs = append(a.Procs, len(ts))
		a.Burst = append(a.Burst, burst(ts, time.Second))
	}
	return smp
}

// shells are the program names (policy.ProgramNames) of the shells whose
// children ranByShell reports.
var shells = []string{"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"}

// ranByShell reports whether exec event e began a process a shell forked:
// for the agent's own processes, what its shells' startup files (the
// host's /etc/profile, the user's ~/.bashrc) and its snapshot scripts run.
func (s *facts) ranByShell(e *event.Event) bool {
	im := s.tree.Image(e.ExecID)
	if im == nil || im.Process == nil {
		return false
	}
	// A subshell ($(…), a pipeline's side) is a fork that has not
	// exec'd: the shell all the same, its parent's program.
	p := im.Process.Parent
	for n := 0; p != nil && p.Exec == nil && n < 64; n++ {
		if p.Process == nil {
			return false
		}
		p = p.Process.Parent
	}
	if p == nil || p.Exec == nil {
		return false
	}
	names := policy.ProgramNames(p.Exec.Path, p.Exec.Argv())
	return len(names) > 0 && slices.Contains(shells, names[0])
}

// dirCache keeps observedDir's answers by path id and home (an index in
// homes): a session opens the same few thousand paths over and over.
type dirCache map[[2]int32]struct {
	dir string
	ok  bool
}

// dir is observedDir of the path with id, for a process whose HOME is
// homes[home].
func (c dirCache) dir(s *facts, id, home int32) (string, bool) {
	key := [2]int32{id, home}
	v, seen := c[key]
	if !seen {
		v.dir, v.ok = s.observedDir(s.paths.strs[id], home)
		c[key] = v
	}
	return v.dir, v.ok
}

// observeFile takes file event events[i], with fact f, into the sample.
// Paths are read against the HOME the event's process had (matchOf,
// homeOf), as the rules read them: an agent run with HOME overridden
// reads ~/.ssh/id_rsa all the same, and a baseline that saw only the
// override's absolute path would neither know it as a credential path
// nor match it in the next session's other override.
func (s *facts) observeFile(act func(string) *baseline.Activity, kind string, i int, f *fact, dirs dirCache) {
	e := s.events[i]
	home := s.homeOf(e)
	if f.flags&fRead != 0 {
		_, sensitive := s.matchOf(setSensitive, i, f.path)
		if _, config := s.matchOf(setAgentConfig, i, f.path); sensitive || config {
			act(kind).Sensitive.Add(s.normalise(e.Path, home), e.Seq)
		}
		if d, ok := dirs.dir(s, f.path, home); ok {
			act(kind).Reads.Add(d, e.Seq)
		}
	}
	if f.written >= 0 {
		if d, ok := dirs.dir(s, f.written, home); ok {
			act(kind).Writes.Add(d, e.Seq)
		}
	}
}

// agentName is AgentOf the session.
func (s *facts) agentName() (name, version string) { return AgentOf(s.in.Transcript, s.in.Meta) }

// AgentOf names a session's agent, as baselines are kept: the
// transcript's agent and version, else the profile (internal/agent) of
// the traced command, else "unknown".
func AgentOf(t *transcript.Transcript, meta manifest.Meta) (name, version string) {
	if t != nil && t.Agent != "" {
		return t.Agent, t.Version
	}
	if c := agent.Launched(meta.Command); len(c) > 0 {
		if p, ok := agent.Executable(c[0], c); ok {
			return p.Name, ""
		}
	}
	return "unknown", ""
}

// kindOf is the tool kind of call, baseline.KindNone for none.
func (s *facts) kindOf(call string) string {
	if c := s.calls[call]; c != nil && c.Kind != "" {
		return string(c.Kind)
	}
	return baseline.KindNone
}

// normalise is policy.Normalise in the session's workspace and, for a
// process whose HOME was homes[home], that home; a path outside it is
// tried against the session's home.
func (s *facts) normalise(p string, home int32) string {
	if home > 0 && int(home) < len(s.homes) {
		if n := policy.Normalise(p, s.in.Meta.Cwd, s.homes[home]); !strings.HasPrefix(n, "/") {
			return n
		}
	}
	return policy.Normalise(p, s.in.Meta.Cwd, s.home)
}

// observedDir is the directory of path p as a baseline and an allowlist
// keep it, for a process whose HOME was homes[home]: normalised, at most
// maxDirDepth levels deep, any temporary directory's content as DIR/*.
// ok is false for the system directories.
func (s *facts) observedDir(p string, home int32) (string, bool) {
	n := s.normalise(p, home)
	if strings.HasPrefix(n, "/") {
		if systemRead(n) {
			return "", false
		}
		for _, t := range tempDirs {
			if strings.HasPrefix(n, t) {
				return t + "*", true
			}
		}
	}
	if n == "." || n == "~" {
		return n, true // the workspace or home directory itself, listed
	}
	anchor, rest := "", n
	switch {
	case strings.HasPrefix(n, "./"), strings.HasPrefix(n, "~/"):
		anchor, rest = n[:2], n[2:]
	case strings.HasPrefix(n, "/"):
		anchor, rest = "/", n[1:]
	}
	// path.Dir would clean "./" away: the anchor stays apart.
	comps := strings.Split(rest, "/")
	comps = comps[:min(len(comps)-1, maxDirDepth)]
	d := anchor + strings.Join(comps, "/")
	switch d {
	case "./", "~/":
		d = d[:1]
	case "":
		d = "/"
	}
	return d, true
}

// destination names where a connect or net event went: host:port, with
// the name when known.
func destination(e *event.Event, p peer) string {
	h := p.host
	if h == "" {
		h = e.Addr()
	}
	return net.JoinHostPort(h, strconv.Itoa(int(e.Port())))
}

// burst is the most of times (in any order) within one window.
func burst(times []time.Time, window time.Duration) int {
	ts := slices.Clone(times)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	best, j := 0, 0
	for i := range ts {
		for ts[i].Sub(ts[j]) >= window {
			j++
		}
		best = max(best, i-j+1)
	}
	return best
}

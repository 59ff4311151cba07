package detect

import (
	"github.com/polygraph/polygraph/internal/policy"
)

// A pathList is a path list of the policy the rules ask about. The facts
// ask it about each distinct path once, when a rule first asks. A rule
// that needs a list of its own declares it beside itself with
// newPathList: nothing else in the package names it.
type pathList struct {
	n   int // its index in a pathIndex's tables
	ask func(s *facts, path, home string) (policy.PathRule, bool)
}

// numPathLists counts the path lists declared.
var numPathLists int

// newPathList declares a path list asked with ask, which sees the facts
// (their policy, their workspace) and the home the path is read against.
// Call it only to initialise a package-level variable.
func newPathList(ask func(s *facts, path, home string) (policy.PathRule, bool)) *pathList {
	l := &pathList{n: numPathLists, ask: ask}
	numPathLists++
	return l
}

// newPathSet declares a path list whose entries say nothing but that they
// match.
func newPathSet(has func(s *facts, path, home string) bool) *pathList {
	return newPathList(func(s *facts, path, home string) (policy.PathRule, bool) {
		return policy.PathRule{}, has(s, path, home)
	})
}

// policyList is a path list of the policy, asked as it is.
func policyList(ask func(p *policy.Policy, path, home string) (policy.PathRule, bool)) *pathList {
	return newPathList(func(s *facts, path, home string) (policy.PathRule, bool) { return ask(s.pol, path, home) })
}

// policySet is a yes-or-no path list of the policy, asked as it is.
func policySet(has func(p *policy.Policy, path, home string) bool) *pathList {
	return newPathSet(func(s *facts, path, home string) bool { return has(s.pol, path, home) })
}

// The path lists more than one rule asks about. Noise is the policy's
// noise outside the workspace, and inside it only the caches the policy
// names at any depth (workspaceNoise).
var (
	setSensitive   = policyList((*policy.Policy).Sensitive)
	setAgentConfig = policyList((*policy.Policy).AgentConfig)
	setTamper      = policyList((*policy.Policy).Tamper)
	setTranscript  = policyList((*policy.Policy).Transcript)
	setPersistence = policyList((*policy.Policy).Persistence)
	setPrivilege   = policyList((*policy.Policy).Privilege)
	setNoise       = newPathSet((*facts).noise)
	setSystem      = newPathSet(func(_ *facts, p, _ string) bool { return systemRead(p) })
)

// pathIndex numbers the distinct paths of a session and keeps, per path,
// what each path list of the policy said of it.
type pathIndex struct {
	ids  map[string]int32
	strs []string // by id
	// verdicts[list][id] is 0 before the list was asked about the path,
	// -1 for no match, n > 0 for rules[list][n-1].
	verdicts [][]int32
	rules    [][]policy.PathRule
	// byHome holds the verdicts against the other homes (matchOf), which
	// few sessions have.
	byHome map[homeVerdict]int32
}

func newPathIndex() pathIndex {
	return pathIndex{ids: map[string]int32{}, verdicts: make([][]int32, numPathLists), rules: make([][]policy.PathRule, numPathLists)}
}

// pathID returns the id of path p, -1 for a path the session did not
// name and for "" (which no list matches).
func (s *facts) pathID(p string) int32 {
	if id, ok := s.paths.ids[p]; ok {
		return id
	}
	return -1
}

// addPath returns the id of path p, numbering it if it is new; -1 for "".
// newFacts numbers the session's paths; a rule may add those a call named
// (callAttempts), to its goroutine's own numbering (forWorker).
func (s *facts) addPath(p string) int32 {
	if p == "" {
		return -1
	}
	id, ok := s.paths.ids[p]
	if !ok {
		id = int32(len(s.paths.strs))
		s.paths.ids[p] = id
		s.paths.strs = append(s.paths.strs, p)
	}
	return id
}

// match returns the entry of path list l that the path with id matches.
func (s *facts) match(l *pathList, id int32) (policy.PathRule, bool) {
	if id < 0 {
		return policy.PathRule{}, false
	}
	x := &s.paths
	v := x.verdicts[l.n]
	if int(id) >= len(v) {
		v = append(v, make([]int32, len(x.strs)-len(v))...)
		x.verdicts[l.n] = v
	}
	switch n := v[id]; {
	case n > 0:
		return x.rules[l.n][n-1], true
	case n < 0:
		return policy.PathRule{}, false
	}
	r, ok := l.ask(s, x.strs[id], s.home)
	if !ok {
		v[id] = -1
		return policy.PathRule{}, false
	}
	x.rules[l.n] = append(x.rules[l.n], r)
	v[id] = int32(len(x.rules[l.n]))
	return r, true
}

// matchOf is match for the path of events[i], read against the session's
// home and, when it matches nothing there, against the HOME the event's
// process had (homeOf): a credential file of whichever home the program
// reads as "~"; then against the account home the path lies in, if any
// (meta.Homes: a credential file of that account, whatever HOME the
// reader set). Every /home/NAME and /root count as homes anyway.
func (s *facts) matchOf(l *pathList, i int, id int32) (policy.PathRule, bool) {
	if r, ok := s.match(l, id); ok || id < 0 || len(s.homes) < 2 {
		return r, ok
	}
	h := s.homeOf(s.events[i])
	if h > 0 {
		if r, ok := s.matchHome(l, id, h); ok {
			return r, true
		}
	}
	if a := s.accountHome(id); a > 0 && a != h {
		return s.matchHome(l, id, a)
	}
	return policy.PathRule{}, false
}

// matchHome is match for the path with id read against homes[h].
func (s *facts) matchHome(l *pathList, id, h int32) (policy.PathRule, bool) {
	key := homeVerdict{list: l.n, path: id, home: h}
	x := &s.paths
	if n, ok := x.byHome[key]; ok {
		if n < 0 {
			return policy.PathRule{}, false
		}
		return x.rules[l.n][n-1], true
	}
	if x.byHome == nil {
		x.byHome = map[homeVerdict]int32{}
	}
	r, ok := l.ask(s, x.strs[id], s.homes[h])
	if !ok {
		x.byHome[key] = -1
		return policy.PathRule{}, false
	}
	x.rules[l.n] = append(x.rules[l.n], r)
	x.byHome[key] = int32(len(x.rules[l.n]))
	return r, true
}

// homeVerdict keys what a path list said of a path read against one of
// the session's other homes.
type homeVerdict struct {
	list       int
	path, home int32
}

// is reports whether the path with id is in path list l.
func (s *facts) is(l *pathList, id int32) bool {
	_, ok := s.match(l, id)
	return ok
}

// A commandSet is a command list of the policy the rules match exec
// events against; like a pathList, a rule that needs its own declares it
// beside itself.
type commandSet struct {
	n     int // its index in facts.commands
	match func(p *policy.Policy, argv []string) (string, bool)
	// resolved: match the program the kernel ran (the exec's path) in
	// place of argv[0], which the caller chose.
	resolved bool
}

// numCommandSets counts the command sets declared.
var numCommandSets int

// newCommandSet declares a command set matched with match. Call it only
// to initialise a package-level variable.
func newCommandSet(match func(p *policy.Policy, argv []string) (string, bool)) *commandSet {
	c := &commandSet{n: numCommandSets, match: match}
	numCommandSets++
	return c
}

// newResolvedCommandSet declares a command set matched, with match, on
// the program the kernel ran and argv[1:]: `exec -a pytest echo` is echo.
func newResolvedCommandSet(match func(p *policy.Policy, argv []string) (string, bool)) *commandSet {
	c := newCommandSet(match)
	c.resolved = true
	return c
}

// runs reports whether the exec event numbered n runs a command of set.
// A claim rule asks again for every claim.
func (s *facts) runs(set *commandSet, n int32) bool {
	c := s.commands[set.n]
	if c == nil {
		c = make([]int8, len(s.execs))
		s.commands[set.n] = c
	}
	if c[n] == 0 {
		c[n] = -1
		e := s.events[s.execs[n]]
		argv := e.Argv()
		if set.resolved && len(argv) > 0 && e.Path != "" {
			argv = append([]string{e.Path}, argv[1:]...)
		}
		if _, ok := set.match(s.pol, argv); ok {
			c[n] = 1
		}
	}
	return c[n] > 0
}

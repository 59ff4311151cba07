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
	ask func(p *policy.Policy, path, home string) (policy.PathRule, bool)
}

// numPathLists counts the path lists declared.
var numPathLists int

// newPathList declares a path list asked with ask. Call it only to
// initialise a package-level variable.
func newPathList(ask func(p *policy.Policy, path, home string) (policy.PathRule, bool)) *pathList {
	l := &pathList{n: numPathLists, ask: ask}
	numPathLists++
	return l
}

// newPathSet declares a path list whose entries say nothing but that they
// match.
func newPathSet(has func(p *policy.Policy, path, home string) bool) *pathList {
	return newPathList(func(p *policy.Policy, path, home string) (policy.PathRule, bool) {
		return policy.PathRule{}, has(p, path, home)
	})
}

// The path lists more than one rule asks about.
var (
	setSensitive   = newPathList((*policy.Policy).Sensitive)
	setAgentConfig = newPathList((*policy.Policy).AgentConfig)
	setTamper      = newPathList((*policy.Policy).Tamper)
	setNoise       = newPathSet((*policy.Policy).Noise)
	setSystem      = newPathSet(func(_ *policy.Policy, p, _ string) bool { return systemRead(p) })
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
// Only newFacts adds paths.
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
	r, ok := l.ask(s.pol, x.strs[id], s.home)
	if !ok {
		v[id] = -1
		return policy.PathRule{}, false
	}
	x.rules[l.n] = append(x.rules[l.n], r)
	v[id] = int32(len(x.rules[l.n]))
	return r, true
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
		if _, ok := set.match(s.pol, s.events[s.execs[n]].Argv); ok {
			c[n] = 1
		}
	}
	return c[n] > 0
}

package detect

import (
	"cmp"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// A session holds up to millions of events, and nearly every rule walks
// them all. Each event is half a kilobyte somewhere in memory, and most
// rules ask the same few questions of it (is it a read, what did it write,
// is it the agent's own), then look its path up in a policy list. So
// learn answers those questions once, into a dense table of facts,
// and numbers the distinct paths (a few thousand, opened over and over):
// the rules walk the table and touch an event only when its facts make it
// a candidate, and each policy list is asked about each path once.

// fact is what the rules ask of one event.
type fact struct {
	path int32 // the id of the event's path for file events; -1 for none
	// written is the id of the path the event wrote, created or moved a
	// file to, if it succeeded: an open's asking to write or create, a
	// rename's new name. -1 when it wrote nothing.
	written int32
	flags   factFlags
}

// factFlags are the yes-or-no facts of an event.
type factFlags uint16

const (
	fExec         factFlags = 1 << iota // an exec
	fRead                               // an open that succeeded, asking to read
	fRemoved                            // removed(e) != "" (it is the event's path)
	fCreated                            // a rename, or an open that asked to create
	fEgress                             // isEgress
	fNetSent                            // a net event with bytes sent
	fOwn                                // agentOwn
	fLate                               // attributed to a call, after the call returned
	fUnattributed                       // attributed to nothing
)

// bySeq orders events by seq.
func bySeq(x, y *event.Event) int { return cmp.Compare(x.Seq, y.Seq) }

// change is an event that changed a file, or tried to (unlink, rename,
// mkdir, link, an open asking to write or create), as the claim rules,
// which walk them for every claim, see it.
type change struct {
	i  int32     // index into events
	ts time.Time // the event's time
	ok bool      // succeeded
	// edited, created and deleted are the ids of the path the event
	// changed the way a claim of that kind says, -1 for none: what it
	// wrote or moved a file to (edited); that, or what a mkdir or link
	// made (created); what it removed or moved away (deleted).
	edited, created, deleted int32
}

// of returns the id of the path the change changed the way a claim of
// kind says, -1 for none.
func (ch *change) of(kind transcript.ClaimKind) int32 {
	switch kind {
	case transcript.ClaimDeleted:
		return ch.deleted
	case transcript.ClaimCreated:
		return ch.created
	}
	return ch.edited
}

// learn builds the process tree and fills the facts (but for fOwn
// without attribution, which needs the whole tree), the exec and
// file-change lists and the network indexes, in one walk over the events;
// the events are sorted by seq first if they are not.
//
// The caller's slice serves as it is unless it needs sorting: then the
// analysis works on a copy.
func (a *analysis) learn() {
	if !a.walk() {
		a.events, a.ownEvents = slices.Clone(a.events), true
		slices.SortStableFunc(a.events, bySeq)
		a.walk()
	}
	slices.SortFunc(a.acceptsLo, func(x, y time.Time) int { return x.Compare(y) })
	a.execsInOrder = inTimeOrder(len(a.execAt), func(n int) time.Time { return a.execAt[n] })
	a.changesInOrder = inTimeOrder(len(a.changes), func(n int) time.Time { return a.changes[n].ts })
}

// walk does learn's walk, from scratch. It stops, reporting false, at an
// event out of seq order.
func (a *analysis) walk() bool {
	a.procs = &procs{byID: map[string]*proc{}}
	a.facts = make([]fact, len(a.events))
	a.execs, a.execAt, a.execCall, a.execNums, a.changes = nil, nil, nil, nil, nil
	a.paths = pathIndex{ids: map[string]int32{}}
	a.dnsByPID, a.answers, a.binds, a.acceptsLo = map[uint32][]*event.Event{}, map[netip.Addr]*event.Event{}, map[uint16]bool{}, nil
	// The access mode last seen and what it asks for: there are a handful.
	var access string
	var reads, writes, creates bool
	for i, e := range a.events {
		if i > 0 && e.Seq < a.events[i-1].Seq {
			return false
		}
		f := fact{path: -1, written: -1}
		var call string
		if a.attr != nil {
			at := a.attr.at(e.Seq)
			switch {
			case at == nil: // attribution's default
				f.flags |= fUnattributed
			case at.ToolCallID != "":
				call = at.ToolCallID
				if at.AfterReturn {
					f.flags |= fLate
				}
			case at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping:
				f.flags |= fOwn
			case at.Reason == correlate.ReasonUnattributed:
				f.flags |= fUnattributed
			}
		}
		a.procs.add(int32(i), e)
		switch e.Kind {
		case event.KindExec:
			f.flags |= fExec
			a.execNums = append(a.execNums, int32(len(a.execs)))
			a.execs = append(a.execs, int32(i))
			a.execAt = append(a.execAt, e.TS)
			a.execCall = append(a.execCall, call)
		case event.KindOpen, event.KindRename, event.KindUnlink, event.KindMkdir, event.KindChmod, event.KindLink:
			f.path = a.pathID(e.Path)
			if e.Access != access {
				access = e.Access
				reads, writes, creates = strings.Contains(access, "read"), strings.Contains(access, "write"), strings.Contains(access, "create")
			}
			open := e.Kind == event.KindOpen
			ok := succeeded(e)
			wt := int32(-1) // what it writes or moves a file to, whether or not it succeeds
			switch {
			case e.Kind == event.KindRename:
				wt = a.pathID(e.Path2)
			case open && (writes || creates):
				wt = f.path
			}
			if ok {
				f.written = wt
				if open && reads {
					f.flags |= fRead
				}
				if removed(e) != "" {
					f.flags |= fRemoved
				}
			}
			if e.Kind == event.KindRename || open && creates {
				f.flags |= fCreated
			}
			if e.Kind != event.KindChmod && (e.Kind != event.KindOpen || wt >= 0) {
				ch := change{i: int32(i), ts: e.TS, ok: ok, edited: wt, created: wt, deleted: -1}
				switch e.Kind {
				case event.KindMkdir, event.KindLink:
					ch.created = f.path
				case event.KindUnlink, event.KindRename:
					ch.deleted = f.path
				}
				a.changes = append(a.changes, ch)
			}
		case event.KindConnect:
			if isEgress(e) {
				f.flags |= fEgress
			}
		case event.KindNet:
			if e.BytesSent != 0 {
				f.flags |= fNetSent
			}
		case event.KindDNS:
			a.dnsByPID[e.PID] = append(a.dnsByPID[e.PID], e)
			for _, ans := range e.Answers {
				words := strings.Fields(ans)
				if len(words) == 0 {
					continue
				}
				if ip, err := netip.ParseAddr(words[len(words)-1]); err == nil {
					a.answers[ip.Unmap()] = e
				}
			}
		case event.KindBind:
			if !e.Failed() && e.Port != 0 {
				a.binds[e.Port] = true
			}
		case event.KindAccept:
			if !e.Failed() && isLoopback(e.Addr) {
				a.acceptsLo = append(a.acceptsLo, e.TS)
			}
		}
		a.facts[i] = f
	}
	return true
}

// inTimeOrder reports whether the times at(0) … at(n-1) are all set and
// never go back.
func inTimeOrder(n int, at func(int) time.Time) bool {
	for i := range n {
		if at(i).IsZero() || i > 0 && at(i).Before(at(i-1)) {
			return false
		}
	}
	return true
}

// pathIndex numbers the distinct paths of a session and keeps, per path,
// what each path list of the policy said of it.
type pathIndex struct {
	ids  map[string]int32
	strs []string // by id
	// verdicts[set][id] is 0 before the set was asked about the path, -1
	// for no match, n > 0 for rules[set][n-1].
	verdicts [numSets][]int32
	rules    [numSets][]policy.PathRule
}

// The path lists the rules ask about.
const (
	setSensitive = iota
	setAgentConfig
	setTamper
	setNoise
	setTestFile
	setArtifact
	setSystem // systemRead
	numSets
)

// pathID returns the id of path p, -1 for "" (which no list matches).
func (a *analysis) pathID(p string) int32 {
	if p == "" {
		return -1
	}
	id, ok := a.paths.ids[p]
	if !ok {
		id = int32(len(a.paths.strs))
		a.paths.ids[p] = id
		a.paths.strs = append(a.paths.strs, p)
	}
	return id
}

// match returns the entry of path list set that the path with id matches.
func (a *analysis) match(set int, id int32) (policy.PathRule, bool) {
	if id < 0 {
		return policy.PathRule{}, false
	}
	x := &a.paths
	v := x.verdicts[set]
	if int(id) >= len(v) {
		v = append(v, make([]int32, len(x.strs)-len(v))...)
		x.verdicts[set] = v
	}
	switch n := v[id]; {
	case n > 0:
		return x.rules[set][n-1], true
	case n < 0:
		return policy.PathRule{}, false
	}
	r, ok := a.ask(set, x.strs[id])
	if !ok {
		v[id] = -1
		return policy.PathRule{}, false
	}
	x.rules[set] = append(x.rules[set], r)
	v[id] = int32(len(x.rules[set]))
	return r, true
}

// ask asks path list set about p.
func (a *analysis) ask(set int, p string) (policy.PathRule, bool) {
	switch set {
	case setSensitive:
		return a.pol.Sensitive(p, a.home)
	case setAgentConfig:
		return a.pol.AgentConfig(p, a.home)
	case setTamper:
		return a.pol.Tamper(p, a.home)
	case setNoise:
		return policy.PathRule{}, a.pol.Noise(p, a.home)
	case setTestFile:
		return policy.PathRule{}, a.pol.TestFile(p, a.home)
	case setArtifact:
		return policy.PathRule{}, a.pol.Artifact(p, a.home)
	case setSystem:
		return policy.PathRule{}, systemRead(p)
	}
	panic("detect: unknown path list")
}

// is reports whether the path with id is in bool-only path list set.
func (a *analysis) is(set int, id int32) bool {
	_, ok := a.match(set, id)
	return ok
}

// The command sets the rules match exec events against.
const (
	cmdTestRunner = iota
	cmdPackageManager
	cmdPublish
	numCommandSets
)

// runs reports whether the exec event numbered n runs a command of set.
// A claim rule asks again for every claim.
func (a *analysis) runs(set int, n int32) bool {
	c := a.commands[set]
	if c == nil {
		c = make([]int8, len(a.execs))
		a.commands[set] = c
	}
	if c[n] == 0 {
		var ok bool
		switch argv := a.events[a.execs[n]].Argv; set {
		case cmdTestRunner:
			_, ok = a.pol.TestRunner(argv)
		case cmdPackageManager:
			_, ok = a.pol.PackageManager(argv)
		case cmdPublish:
			_, ok = a.pol.Publish(argv)
		}
		c[n] = -1
		if ok {
			c[n] = 1
		}
	}
	return c[n] > 0
}

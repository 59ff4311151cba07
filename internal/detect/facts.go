package detect

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/correlate"
	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/policy"
	"github.com/polygraph/polygraph/internal/transcript"
)

// A session holds up to millions of events, and nearly every rule walks
// them all. Each event is half a kilobyte somewhere in memory, and most
// rules ask the same few questions of it (is it a read, what did it write,
// is it the agent's own), then look its path up in a policy list. So
// newFacts answers those questions once, into a dense table of facts,
// and numbers the distinct paths (a few thousand, opened over and over):
// the rules walk the table and touch an event only when its facts make it
// a candidate, and each policy list is asked about each path once.

// facts are what the rules know of one session: the events in seq order,
// the process tree, the attribution and the per-event table. newFacts
// builds them once, before any rule runs; the rules only read them, so
// they do not depend on which other rules ran before them. (The path
// and command verdicts are memoised on first asking, which no rule can
// tell from asking up front.)
type facts struct {
	in     Input
	pol    *policy.Policy
	home   string
	events []*event.Event // in seq order
	tree   *lineage.Tree

	attr  *attrIndex // nil without attribution
	calls map[string]*transcript.ToolCall
	agent map[string]bool // the agent's own images

	dnsByPID  map[uint32][]*event.Event
	dnsSent   map[pidPeer]bool // peers a process sent a message to that parsed as DNS
	sentTo    map[uint32]bool  // processes with a recorded send (a destination named per message)
	connected map[pidPeer]bool // peers a process connected to (isEgress)
	accepted  map[uint32]bool  // processes that accepted a connection
	answers   map[netip.Addr]*event.Event
	binds     map[uint16]bool
	acceptsLo []time.Time

	// byEvent[i] is what the rules ask of events[i]. execs[n] is the
	// index of the n-th exec event, execAt[n] its time, execCall[n] the
	// tool call it is attributed to; execNums are the numbers 0…n-1, to
	// say "every exec" or "the first k"; changes are the file changes.
	// The claim rules walk those for every claim. execsInOrder and
	// changesInOrder say the lists' times are all set and never go back:
	// what happened before a claim is then where the list starts.
	byEvent        []fact
	execs          []int32
	execAt         []time.Time
	execCall       []string
	execNums       []int32
	changes        []change
	execsInOrder   bool
	changesInOrder bool
	paths          pathIndex
	// binHash is the exec-time hash of each image's program by exec id,
	// from the verdicts (binaryHash): a live session's exec events do not
	// carry it, the stored session's do.
	binHash map[string]string
	// commands caches the command-set verdicts on exec events, by command
	// set and exec number.
	commands [][]int8

	// homes are the session's home (homes[0], meta.Home) and the other
	// HOMEs exec events recorded; imageHome[im.Index] is the one image im
	// ran with (whose.go). writtenAt is the seq of the first successful
	// write of each path written, by path id. workspace are the
	// directories the agent works in; progNames caches programNames by
	// image index.
	homes     []string
	imageHome []int32
	// accountHomes are the indexes in homes of the machine's other homes
	// (meta.Homes: accounts whose home is not /root or /home/NAME), the
	// longest first; accountOf caches, by path id, the one a path lies
	// in (its index in homes; -1 for none, or for a path in the
	// workspace).
	accountHomes []int32
	accountOf    map[int32]int32
	ownHomes     int // homes[:ownHomes] are the session's and the HOMEs execs had
	writtenAt    map[int32]uint64
	// refused maps an event (by index) whose write, rename or link the
	// kernel refused for want of permission to the path id it tried to
	// change: an atomic write's temporary sibling ("f.tmp.123") is read
	// as its target (refusedChange).
	refused map[int32]int32
	// stopped marks the refused entries that are a `mkdir -p` stopped on
	// its way (stoppedWalks), not a call the kernel refused.
	stopped   map[int32]bool
	workspace []string
	progNames [][]string
	// secrets are the credential files known by identity, each with the
	// id of its name, for as long as it stood for it (secrets.go).
	secrets map[fileID][]secretSpan
	// mounts are the mounts that show other trees' files at their
	// targets, mountReads the opens through them of a credential file's
	// other name, by event index (mounts.go).
	mounts     []mountAlias
	mountReads map[int32]mountRead
}

// forWorker returns a copy of s for rules checked on another goroutine:
// the same facts, read-only once built, with memos of its own, which the
// rules fill as they ask (the path lists' verdicts, the command sets',
// the account homes, the program names, the binaries' hashes), and its
// own path numbering, which they extend (callAttempts). Make the copies
// before any rule runs.
func (s *facts) forWorker() *facts {
	w := *s
	w.paths.ids, w.paths.strs = maps.Clone(s.paths.ids), slices.Clip(s.paths.strs)
	w.paths.verdicts = make([][]int32, len(s.paths.verdicts))
	w.paths.rules = make([][]policy.PathRule, len(s.paths.rules))
	w.paths.byHome = nil
	w.commands = make([][]int8, len(s.commands))
	w.accountOf, w.progNames, w.binHash = nil, nil, nil
	return &w
}

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
	fBlocked                            // an egress attempt the isolation refused (blocked.go)
	fFollowed                           // an event of a process outside the tree, followed while it acted for it
)

// newFacts builds the facts of session in.
func newFacts(in Input) *facts {
	s := &facts{in: in, pol: in.Policy, home: in.Meta.Home, events: in.Events,
		calls: map[string]*transcript.ToolCall{}, agent: map[string]bool{}}
	if s.pol == nil {
		s.pol = policy.Default()
	}
	if in.Transcript != nil {
		for _, c := range in.Transcript.ToolCalls {
			s.calls[c.ID] = c
		}
	}
	if r := in.Attribution; r != nil {
		s.attr = newAttrIndex(&r.Attributions)
		for _, ca := range r.Calls {
			if ca != nil && ca.Call != nil {
				if _, ok := s.calls[ca.Call.ID]; !ok {
					s.calls[ca.Call.ID] = ca.Call
				}
			}
		}
		for _, id := range r.AgentExecIDs {
			s.agent[id] = true
		}
	}
	s.learn()
	s.learnHomes()
	s.learnWorkspace()
	s.learnSecrets()
	s.learnMounts()
	s.stoppedWalks() // programNames: after the workspace is known
	if in.Attribution == nil && in.Meta.RootPID != 0 {
		s.traceAgent(uint32(in.Meta.RootPID))
	}
	s.dropAgentFollows()
	if s.attr == nil {
		for id := range s.agent {
			if p := s.tree.Image(id); p != nil {
				for _, i := range p.Events {
					s.byEvent[i].flags |= fOwn
				}
			}
		}
	}
	return s
}

// dropAgentFollows leaves out of the rules what a process outside the tree
// did when the agent itself reached it (not a tool call: its editor's
// sockets, another running instance of it, a file it shares with one):
// with a transcript that names tool calls, the agent's own channels are its
// business, as its bookkeeping is. The events of the images such a follow
// event started (and what they forked and ran) become the agent's own, with
// no other fact. Without tool calls (an unknown agent, a script) every
// follow counts: the agent's images are then all the tree has.
func (s *facts) dropAgentFollows() {
	if s.in.Transcript == nil || len(s.in.Transcript.ToolCalls) == 0 {
		return
	}
	for _, e := range s.events {
		if e.Kind != event.KindFollow || !s.agent[e.TargetExecID()] {
			continue
		}
		for _, im := range s.tree.Subtree(e.ExecID) {
			for _, j := range im.Events {
				s.byEvent[j] = fact{path: -1, written: -1, flags: fFollowed | fOwn}
			}
		}
	}
}

// weakFollow reports whether follow event e followed its process because
// it opened or ran a file the tree wrote. That is no request: an editor,
// a language server, an indexer, a backup, another polygraph, sudo in a
// concurrent session open what the agent wrote as a matter of course, and
// do their own reads, work and traffic after (an honest run's sudo read
// /etc/shadow that way). Such a process is recorded (its events are in the
// session, in the timeline of the call whose file it opened) and judged
// by no rule but escaped-tree's flow test: a secret it read, then bytes it
// sent over the network (a watcher re-running the script the tree
// rewrote, a dev server reloading the module and serving what it
// returns). A message or a FIFO is a request, and all the process did
// then is judged.
func weakFollow(e *event.Event) bool {
	return e.Method() == "file" || e.Method() == "exec"
}

// followedAt reports whether events[i] is a followed process's (an
// outside process acting for the tree): the rules judge its reads and its
// traffic, escaped-tree all it did, and no other rule what else it did
// (its bpf(2) calls, signals, injections, mounts, mode changes), which
// are its own work: a concurrent polygraph reading a file the tree wrote
// loads its programs.
func (s *facts) followedAt(i int) bool { return s.byEvent[i].flags&fFollowed != 0 }

// traceAgent marks the agent's images without a transcript: the agent is
// taken to be the command run started (the images of the root pid) and
// the agent programs it starts directly (node codex.js → codex), with
// their forks up to the point they exec something else.
func (s *facts) traceAgent(root uint32) {
	var queue []*lineage.Image
	for _, p := range s.tree.Images() {
		if p.PID == root {
			s.agent[p.ID] = true
			queue = append(queue, p)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, kids := range [2][]*lineage.Image{p.Next, p.Children} {
			for _, c := range kids {
				if s.agent[c.ID] || c.Exec != nil && !s.pol.AgentProgram(s.programNames(c.ID)) {
					continue
				}
				s.agent[c.ID] = true
				queue = append(queue, c)
			}
		}
	}
}

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
// the events are put in seq order first if they are not (event.InSeqOrder).
// The process tree is the one attribution built, when there is one.
func (s *facts) learn() {
	if r := s.in.Attribution; r != nil && r.Tree != nil {
		s.events, s.tree = r.Events, r.Tree
	} else {
		s.events, _ = event.InSeqOrder(s.events)
	}
	s.walk()
	slices.SortFunc(s.acceptsLo, func(x, y time.Time) int { return x.Compare(y) })
	s.execsInOrder = inTimeOrder(len(s.execAt), func(n int) time.Time { return s.execAt[n] })
	s.changesInOrder = inTimeOrder(len(s.changes), func(n int) time.Time { return s.changes[n].ts })
}

// walk does learn's walk over events in seq order, building the process
// tree unless learn was handed one.
func (s *facts) walk() {
	var lb *lineage.Builder
	if s.tree == nil {
		lb = lineage.NewBuilder()
	}
	s.byEvent = make([]fact, len(s.events))
	s.execs, s.execAt, s.execCall, s.execNums, s.changes = nil, nil, nil, nil, nil
	s.paths = newPathIndex()
	s.writtenAt = map[int32]uint64{}
	s.refused, s.stopped = map[int32]int32{}, map[int32]bool{}
	s.commands = make([][]int8, numCommandSets)
	s.dnsByPID, s.answers, s.binds, s.acceptsLo = map[uint32][]*event.Event{}, map[netip.Addr]*event.Event{}, map[uint16]bool{}, nil
	s.dnsSent, s.connected, s.accepted = map[pidPeer]bool{}, map[pidPeer]bool{}, map[uint32]bool{}
	s.sentTo = map[uint32]bool{}
	var mode accessMode
	// The images of followed processes (outside the tree, traced while
	// they act for it: a follow event starts one), and the images they
	// fork and execute.
	followed := map[string]bool{}
	// The images followed because they opened or ran a file the tree
	// wrote (weakFollow), with what they fork and execute: only their
	// reads are judged.
	weak := map[string]bool{}
	for i, e := range s.events {
		f := fact{path: -1, written: -1}
		var call string
		if s.attr != nil {
			call, f.flags = attributedTo(s.attr.get(e.Seq))
		}
		switch {
		case e.Kind == event.KindFollow:
			followed[e.ExecID] = true
			weak[e.ExecID] = weakFollow(e)
		case followed[e.ExecID]:
		case e.Kind == event.KindExec && e.ParentExecID != "" && followed[e.ParentExecID]:
			followed[e.ExecID], weak[e.ExecID] = true, weak[e.ParentExecID]
		}
		if followed[e.ExecID] {
			if e.Kind == event.KindFork && e.ChildExecID() != "" {
				followed[e.ChildExecID()], weak[e.ChildExecID()] = true, weak[e.ExecID]
			}
			// What a followed process wrote and ran is its own work
			// (a journal, a cache, its helpers): the rules judge its
			// reads and its traffic; escaped-tree, all it did.
			f.flags |= fFollowed
			if weak[e.ExecID] {
				// recorded, judged only by escaped-tree's flow test
				// (weakFollow); the follow event keeps its attribution's
				// fOwn alone: whether the agent itself reached it
				if e.Kind != event.KindFollow {
					f.flags |= fOwn
				}
				if e.Kind == event.KindOpen && succeeded(e) {
					s.addPath(e.Path) // weakSecretRead asks the lists about it
				}
			}
			if weak[e.ExecID] || e.Kind != event.KindOpen && e.Kind != event.KindConnect && e.Kind != event.KindNet &&
				e.Kind != event.KindDNS && e.Kind != event.KindSend {
				if lb != nil {
					lb.Add(int32(i), e)
				}
				s.byEvent[i] = f
				continue
			}
		}
		if lb != nil {
			lb.Add(int32(i), e)
		}
		switch e.Kind {
		case event.KindExec:
			f.flags |= fExec
			s.execNums = append(s.execNums, int32(len(s.execs)))
			s.execs = append(s.execs, int32(i))
			s.execAt = append(s.execAt, e.TS)
			s.execCall = append(s.execCall, call)
		case event.KindOpen, event.KindRename, event.KindUnlink, event.KindMkdir, event.KindChmod, event.KindLink,
			event.KindChown, event.KindXattr:
			s.fileFact(int32(i), e, &f, &mode)
			if f.flags&fFollowed != 0 {
				f.written, f.flags = -1, f.flags&^(fCreated|fRemoved)
			}
		case event.KindConnect:
			if isEgress(e) {
				f.flags |= fEgress
				s.connected[peerKey(e)] = true
			} else if s.blockedConnect(e) {
				f.flags |= fEgress | fBlocked
			}
		case event.KindNet:
			if e.BytesSent() != 0 {
				f.flags |= fNetSent
			}
		case event.KindDNS, event.KindBind, event.KindAccept:
			s.netIndex(e)
		case event.KindSend:
			s.sentTo[e.PID] = true
		}
		s.byEvent[i] = f
	}
	if lb != nil {
		s.tree = lb.Tree()
	}
}

// attributedTo returns the tool call of attribution at (!ok: the
// attribution's default, unattributed) and the flags it sets.
func attributedTo(at correlate.Attribution, ok bool) (call string, flags factFlags) {
	switch {
	case !ok:
		flags |= fUnattributed
	case at.ToolCallID != "":
		call = at.ToolCallID
		if at.AfterReturn {
			flags |= fLate
		}
	case at.Reason == correlate.ReasonAgentAPI || at.Reason == correlate.ReasonAgentBookkeeping:
		flags |= fOwn
	case at.Reason == correlate.ReasonUnattributed:
		flags |= fUnattributed
	}
	return call, flags
}

// accessMode is the access mode a walk saw last and what it asks for:
// there are a handful, and most events repeat the one before.
type accessMode struct {
	access                 string
	reads, writes, creates bool
}

func (m *accessMode) set(access string) {
	if access != m.access {
		m.access = access
		m.reads, m.writes, m.creates = strings.Contains(access, "read"), strings.Contains(access, "write"), strings.Contains(access, "create")
	}
}

// fileFact fills f, the fact of file event events[i], e, and records the
// file change it makes, if any.
func (s *facts) fileFact(i int32, e *event.Event, f *fact, mode *accessMode) {
	f.path = s.addPath(e.Path)
	if e.Kind == event.KindLink {
		s.addPath(moveSource(e)) // storeMoves asks what it took
	}
	mode.set(e.Access)
	open := e.Kind == event.KindOpen
	ok := succeeded(e)
	wt := int32(-1) // what it writes or moves a file to, whether or not it succeeds
	switch {
	case e.Kind == event.KindRename:
		wt = s.addPath(e.Path2)
	case open && (mode.writes || mode.creates):
		wt = f.path
	}
	if ok {
		f.written = wt
		if _, seen := s.writtenAt[wt]; wt >= 0 && !seen {
			s.writtenAt[wt] = e.Seq
		}
		if open && mode.reads {
			f.flags |= fRead
		}
		if removed(e) != "" {
			f.flags |= fRemoved
		}
	}
	if !ok && wt >= 0 && refusedErrno(*e.Result, s.paths.strs[wt]) {
		if t := atomicTarget(s.paths.strs[wt]); t != "" {
			wt = s.addPath(t)
		}
		s.refused[i] = wt
	}
	if e.Kind == event.KindRename || open && mode.creates {
		f.flags |= fCreated
	}
	if !metadataOnly(e.Kind) && (e.Kind != event.KindOpen || wt >= 0) {
		ch := change{i: i, ts: e.TS, ok: ok, edited: wt, created: wt, deleted: -1}
		switch e.Kind {
		case event.KindMkdir, event.KindLink:
			ch.created = f.path
		case event.KindUnlink, event.KindRename:
			ch.deleted = f.path
		}
		s.changes = append(s.changes, ch)
	}
}

// refusedErrno reports whether a write to p that failed with -res was
// refused, not merely impossible: for want of permission (EACCES,
// EPERM), by a read-only mount (EROFS), or, for the kernel's settings
// (/proc/sys, /sys), which no write creates, because the mount that
// holds the setting is not there in the writer's namespace (ENOENT: an
// isolated tree's binfmt_misc).
func refusedErrno(res int64, p string) bool {
	switch res {
	case -13, -1, -30:
		return true
	case -2:
		return strings.HasPrefix(p, "/proc/sys/") || strings.HasPrefix(p, "/sys/")
	}
	return false
}

// metadataOnly reports whether kind changes a file's metadata (mode,
// owner, extended attributes), not what it holds or where it is: no
// claim of an edit, creation or deletion stands on it.
func metadataOnly(kind event.Kind) bool {
	return kind == event.KindChmod || kind == event.KindChown || kind == event.KindXattr
}

// netIndex takes a dns, bind or accept event into the network indexes.
func (s *facts) netIndex(e *event.Event) {
	switch e.Kind {
	case event.KindDNS:
		s.dnsByPID[e.PID] = append(s.dnsByPID[e.PID], e)
		if e.QName() != "" {
			s.dnsSent[peerKey(e)] = true
		}
		for _, ans := range e.Answers() {
			words := strings.Fields(ans)
			if len(words) == 0 {
				continue
			}
			if ip, err := netip.ParseAddr(words[len(words)-1]); err == nil {
				s.answers[ip.Unmap()] = e
			}
		}
	case event.KindBind:
		if !e.Failed() && e.Port() != 0 {
			s.binds[e.Port()] = true
		}
	case event.KindAccept:
		if !e.Failed() {
			s.accepted[e.PID] = true
		}
		if !e.Failed() && isLoopback(e.Addr()) {
			s.acceptsLo = append(s.acceptsLo, e.TS)
		}
	}
}

// eventAt returns the event with seq, nil for none.
func (s *facts) eventAt(seq uint64) *event.Event {
	i, ok := slices.BinarySearchFunc(s.events, seq, func(e *event.Event, seq uint64) int { return cmp.Compare(e.Seq, seq) })
	if !ok {
		return nil
	}
	return s.events[i]
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

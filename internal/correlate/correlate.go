package correlate

import (
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/fdpath"
	"github.com/polygraph/polygraph/internal/session"
	"github.com/polygraph/polygraph/internal/transcript"
)

// DefaultSlack is Options.Slack's default: how far outside a call's
// [started_at, ended_at] window an event may fall and still belong to it.
// It covers the transcript's millisecond timestamps, the agent stamping a
// call before it really starts it and reading its files again right after
// it recorded the result (Claude Code does, within ~20 ms), and scheduling
// delay on a loaded machine.
const DefaultSlack = 500 * time.Millisecond

// Options tune Attribute. The zero value suits a session recorded on the
// machine the agent ran on.
type Options struct {
	// Slack widens every call's window on both sides. 0 means
	// DefaultSlack; a negative value means none.
	Slack time.Duration
	// APIEndpoints name the agent's model API beyond KnownAPIHosts: base
	// URLs ("http://127.0.0.1:8080/v1"), host:port pairs, host names or
	// addresses. Without any, and when the agent's own processes reach no
	// known API host, the peer it exchanged the most bytes with among those
	// it connected to before its first tool call is taken for the API.
	APIEndpoints []string
	// AgentDirs are more directories holding the agent's own files (a
	// CODEX_HOME or CLAUDE_CONFIG_DIR outside the home directory). The
	// transcript's own tree is found without help.
	AgentDirs []string
}

func (o Options) slack() time.Duration {
	switch {
	case o.Slack == 0:
		return DefaultSlack
	case o.Slack < 0:
		return 0
	}
	return o.Slack
}

// ownerKind is who a process acts for.
type ownerKind int

const (
	ownNone   ownerKind = iota // nobody: unattributed
	ownCore                    // the agent itself
	ownHelper                  // something the agent runtime runs for itself
	ownCall                    // a tool call
)

type owner struct {
	kind   ownerKind
	call   *callInfo
	detail string
}

// callInfo is one tool call with what matching needs.
type callInfo struct {
	tc         *transcript.ToolCall
	act        *CallActivity
	start, end time.Time // as the transcript says (end: the result, or the last poll's)
	open       bool      // no result recorded: the window runs to the end of the session
	shell      *cmdMatcher
	paths      pathSet
	hosts      []string // fetch calls: the URLs' hosts
	search     bool
	roots      int
	seenRead   map[string]bool
	seenWrite  map[string]bool
	seenDNS    map[string]bool

	// lead and until are start and end widened by the slack (until only
	// for a closed call), set by index: window checks run per event.
	lead, until time.Time
}

// pathSet is what a call names on disk, resolved to absolute paths.
type pathSet struct {
	exact   []string // files the call names
	dirs    []string // directories it searches or lists: everything inside matches, weakly
	parents []string // directories of the files it writes: the tool opens them too
}

// Attribute attributes every event of a session to the tool call of tr that
// caused it, to the agent's own expected activity, or to nothing.
//
// Lineage first, time second. A shell call owns the process the agent
// spawned for it during its window whose argv carries the command (through
// the agent's wrapper: Claude Code's snapshot-sourcing `bash -c … eval '…'`,
// Codex's process-setup helper and snapshot wrapper, Gemini CLI's
// `bash -c` with its background-pid trap), and that process's whole
// subtree for as long as it lives; what the subtree does after the call's
// result is marked AfterReturn and also listed as unattributed. File events
// of the agent's own process are matched to in-process tools (Read, Write,
// Edit, apply_patch, read_file, …) and to the paths a shell call names, by
// path and window. The agent's connections to its model API, its own
// files (transcript, configuration, credentials, caches, runtime and
// libraries) and the helpers its runtime spawns (shell snapshots, OS and git
// probes) are labelled as expected. Everything else is unattributed and
// listed, never dropped.
//
// tr may be nil: then nothing is attributed to a tool call, and the
// agent's own activity is still classified. events need not be sorted.
func Attribute(events []*event.Event, tr *transcript.Transcript, meta session.Meta, opts Options) *Result {
	a := &attributor{
		slack: opts.slack(),
		meta:  meta,
		res:   &Result{ByCall: map[string]*CallActivity{}, Counts: map[Reason]int{}},
	}
	evs := events
	if !a.scan(evs) { // not in seq order
		evs = append([]*event.Event(nil), events...)
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].Seq < evs[j].Seq })
		a.scan(evs)
	}
	a.calls = a.buildCalls(tr)
	a.index()
	a.decideAll()
	a.env = a.buildEnv(tr, opts)
	a.api = newAPISet(opts.APIEndpoints)
	core := a.coreEvents(a.tree.peers) // all learnDNS and learnDominant look at
	a.api.learnDNS(core)
	a.api.learnDominant(core, a.firstCallStart())
	a.attributeAll(evs)
	a.finish(evs)
	for _, p := range a.tree.procs {
		if p.owner.kind == ownCore || p.owner.kind == ownHelper {
			for _, im := range p.images {
				a.res.AgentExecIDs = append(a.res.AgentExecIDs, im.id)
			}
		}
	}
	return a.res
}

type attributor struct {
	slack    time.Duration
	tree     *tree
	meta     session.Meta
	calls    []*callInfo // transcript order
	byStart  []*callInfo // by start, for callsAt
	env      *env
	api      *apiSet
	rootArgv []string
	res      *Result

	// closedEnd[i] is the latest widened end (until) among the closed
	// calls of byStart[:i+1], zero when there is none; openAt lists the
	// byStart indexes of the open calls, ascending. An open call does not
	// stop callsAt from cutting its search short for the closed ones.
	closedEnd []time.Time
	openAt    []int

	// runs are the events' images; forks are the indexes of the fork
	// events, ascending. scan fills them.
	runs  []run
	forks []int32

	counts [len(reasons)]int // the verdicts by reason
	listed int               // the events to list as unattributed
}

// reasons lists the reasons, for counting them in an array.
var reasons = [...]Reason{ReasonLineage, ReasonInProcess, ReasonAgentAPI, ReasonAgentBookkeeping, ReasonUnattributed}

// buildCalls prepares every tool call for matching, in transcript order.
func (a *attributor) buildCalls(tr *transcript.Transcript) []*callInfo {
	if tr == nil {
		return nil
	}
	byID := map[string]*callInfo{}
	var out []*callInfo
	for _, tc := range tr.ToolCalls {
		if tc == nil {
			continue
		}
		act := &CallActivity{Call: tc, Events: []uint64{}}
		a.res.Calls = append(a.res.Calls, act)
		if tc.ID != "" {
			a.res.ByCall[tc.ID] = act
		}
		ci := &callInfo{tc: tc, act: act, start: tc.StartedAt, end: tc.EndedAt, open: tc.EndedAt.IsZero(),
			seenRead: map[string]bool{}, seenWrite: map[string]bool{}, seenDNS: map[string]bool{}}
		if !ci.open && !ci.start.IsZero() && ci.end.Before(ci.start) {
			ci.start, ci.end = ci.end, ci.start
		}
		cwd := firstNonEmpty(tc.Cwd, tr.Cwd, a.meta.Cwd)
		project := firstNonEmpty(a.meta.Cwd, tr.Cwd)
		home := a.meta.Home
		switch {
		case tc.Kind == transcript.KindShell && !tc.Rejected:
			ci.shell = newCmdMatcher(tc.Command, tc.Argv)
			for _, w := range shellTokens(tc.Command) {
				if p := resolve(w, cwd, home); p != "" && wordPath(w, p, cwd, home) {
					ci.paths.exact = appendNew(ci.paths.exact, p)
				}
			}
		case tc.Kind == transcript.KindSearch:
			ci.search = true
			for _, p := range tc.Paths {
				if r := resolve(p, cwd, home); r != "" {
					ci.paths.dirs = appendNew(ci.paths.dirs, r)
				}
			}
			if len(ci.paths.dirs) == 0 && cwd != "" {
				ci.paths.dirs = []string{cwd}
			}
		case tc.Kind == transcript.KindFetch:
			for _, u := range tc.URLs {
				if h := urlHost(u); h != "" {
					ci.hosts = appendNew(ci.hosts, h)
				}
			}
		}
		if tc.Kind != transcript.KindShell && tc.Kind != transcript.KindSearch {
			for _, p := range tc.Paths {
				if r := resolve(p, cwd, home); r != "" {
					ci.paths.exact = appendNew(ci.paths.exact, r)
					// The tool opens the file's directory too, unless that
					// is the project or the home (or above): agents open
					// those all the time for themselves.
					if d := filepath.Dir(r); !under(project, d) && !under(home, d) {
						ci.paths.parents = appendNew(ci.paths.parents, d)
					}
				}
			}
		}
		if tc.ID != "" {
			byID[tc.ID] = ci
		}
		out = append(out, ci)
	}
	// A background process's later output reaches the transcript through
	// the calls that poll it: its window lasts until the last poll.
	for _, ci := range out {
		if t := byID[ci.tc.Polls]; t != nil && ci.tc.Polls != ci.tc.ID {
			switch {
			case ci.open:
				t.open = true
			case !t.open && ci.end.After(t.end):
				t.end = ci.end
			}
		}
	}
	return out
}

// firstCallStart is when the first tool call started: the model API was
// reached before (the call came from it).
func (a *attributor) firstCallStart() time.Time {
	var first time.Time
	for _, ci := range a.calls {
		if !ci.start.IsZero() && (first.IsZero() || ci.start.Before(first)) {
			first = ci.start
		}
	}
	return first
}

// index widens the calls' windows and sorts the calls by start for
// callsAt.
func (a *attributor) index() {
	for _, ci := range a.calls {
		ci.lead = ci.start.Add(-a.slack)
		if !ci.open {
			ci.until = ci.end.Add(a.slack)
		}
	}
	a.byStart = append([]*callInfo(nil), a.calls...)
	sort.SliceStable(a.byStart, func(i, j int) bool { return a.byStart[i].start.Before(a.byStart[j].start) })
	a.closedEnd = make([]time.Time, len(a.byStart))
	var m time.Time
	for i, ci := range a.byStart {
		switch {
		case ci.open:
			a.openAt = append(a.openAt, i)
		case ci.until.After(m):
			m = ci.until
		}
		a.closedEnd[i] = m
	}
}

// callsAt returns the calls whose window (widened by the slack) holds ts,
// latest start first.
func (a *attributor) callsAt(ts time.Time) []*callInfo {
	hi := sort.Search(len(a.byStart), func(i int) bool { return a.byStart[i].lead.After(ts) })
	var out []*callInfo
	for i := hi - 1; i >= 0; i-- {
		if a.closedEnd[i].IsZero() || ts.After(a.closedEnd[i]) {
			// No closed call started this early is still running; every
			// open one that started by ts is (it started before hi).
			for j := sort.SearchInts(a.openAt, i+1) - 1; j >= 0; j-- {
				out = append(out, a.byStart[a.openAt[j]])
			}
			break
		}
		if a.inWindow(a.byStart[i], ts) {
			out = append(out, a.byStart[i])
		}
	}
	return out
}

// inWindow reports whether ts falls in ci's window widened by the slack.
func (a *attributor) inWindow(ci *callInfo, ts time.Time) bool {
	if !ci.start.IsZero() && ts.Before(ci.lead) {
		return false
	}
	return ci.open || !ts.After(ci.until)
}

// strictlyIn reports whether ts falls in ci's window without slack.
func (a *attributor) strictlyIn(ci *callInfo, ts time.Time) bool {
	return (ci.start.IsZero() || !ts.Before(ci.start)) && (ci.open || !ts.After(ci.end))
}

// afterReturn reports whether ts is after ci's result reached the agent.
func (a *attributor) afterReturn(ci *callInfo, ts time.Time) bool {
	return !ci.open && ts.After(ci.until)
}

// decideAll decides who every process acts for, parents first.
func (a *attributor) decideAll() {
	var root *process
	for _, p := range a.tree.procs {
		if p.parent == nil && (root == nil || (a.meta.RootPID != 0 && p.top().pid == uint32(a.meta.RootPID) && root.top().pid != uint32(a.meta.RootPID))) {
			root = p
		}
	}
	if root != nil {
		if ex := root.execs(); len(ex) > 0 {
			a.rootArgv = ex[0].Argv
		}
	}
	state := map[*process]int{} // 0 undecided, 1 deciding, 2 decided
	var decide func(p *process)
	decide = func(p *process) {
		if state[p] != 0 {
			return
		}
		state[p] = 1
		switch {
		case p == root:
			p.owner = owner{kind: ownCore, detail: "agent"}
		case p.parent == nil || p.parent.proc == nil:
			// A process whose parent was never seen (lost events, or a
			// second root): judge it as if the agent had spawned it.
			p.owner = a.spawned(p, ownCore, "")
		default:
			pp := p.parent.proc
			decide(pp)
			switch pp.owner.kind {
			case ownCall, ownNone:
				p.owner = owner{kind: pp.owner.kind, call: pp.owner.call, detail: pp.owner.detail}
			default:
				p.owner = a.spawned(p, pp.owner.kind, pp.owner.detail)
			}
		}
		state[p] = 2
	}
	for _, p := range a.tree.procs {
		decide(p)
	}
}

// spawned decides a process the agent (or one of its helpers) spawned.
func (a *attributor) spawned(p *process, parent ownerKind, parentDetail string) owner {
	r, detail := processRole(p, a.rootArgv)
	if r == roleHelper && detail == "shell-snapshot" {
		// A snapshot writer never runs a call's command, but its long
		// script may contain a short one.
		return owner{kind: ownHelper, detail: detail}
	}
	if ci := a.matchShell(p); ci != nil {
		return a.own(p, ci, "command")
	}
	if r == roleOther {
		if ci := a.matchWrapped(p); ci != nil {
			return a.own(p, ci, "wrapped-command")
		}
	}
	if ci := a.matchSearch(p); ci != nil {
		return a.own(p, ci, "search-helper")
	}
	switch {
	case r == roleHelper:
		return owner{kind: ownHelper, detail: detail}
	case r == roleCore:
		return owner{kind: ownCore, detail: detail}
	case len(p.execs()) == 0 && parent == ownCore:
		return owner{kind: ownCore, detail: "agent-fork"}
	case parent == ownHelper:
		return owner{kind: ownHelper, detail: parentDetail}
	}
	return owner{kind: ownNone, detail: "no-call"}
}

// own makes p a root process of ci.
func (a *attributor) own(p *process, ci *callInfo, detail string) owner {
	ci.roots++
	if ci.act.RootExecID == "" {
		ci.act.RootExecID = p.top().id
		ci.act.RootExit = p.exitEvent()
	}
	return owner{kind: ownCall, call: ci, detail: detail}
}

// candidate is one call a process might belong to, with how well it fits.
type candidate struct {
	ci     *callInfo
	score  int
	length int
	gap    time.Duration // from the call's start to the exec
}

func (c candidate) better(d candidate) bool {
	switch {
	case d.ci == nil:
		return true
	case c.score != d.score:
		return c.score > d.score
	case c.length != d.length:
		return c.length > d.length
	case (c.ci.roots == 0) != (d.ci.roots == 0):
		return c.ci.roots == 0
	}
	return c.gap < d.gap
}

// matchShell finds the shell call whose command one of p's execs carries,
// within the call's window.
func (a *attributor) matchShell(p *process) *callInfo {
	var best candidate
	for _, im := range p.images {
		e := im.exec
		if e == nil {
			continue
		}
		for _, ci := range a.callsAt(e.TS) {
			if ci.shell == nil {
				continue
			}
			s, l := ci.shell.scoreText(im.argvText())
			if s == matchNone {
				continue
			}
			c := candidate{ci: ci, score: s, length: l, gap: absDur(e.TS.Sub(ci.start))}
			if c.better(best) {
				best = c
			}
		}
	}
	return best.ci
}

// matchWrapped looks below a process nobody knows for a descendant that
// carries a shell call's command: the process is then that call's wrapper.
func (a *attributor) matchWrapped(p *process) *callInfo {
	queue := []*process{p}
	depth := map[*process]int{p: 0}
	for n := 0; len(queue) > 0 && n < 64; n++ {
		q := queue[0]
		queue = queue[1:]
		if q != p {
			if ci := a.matchShell(q); ci != nil {
				for _, im := range q.images {
					if im.exec == nil {
						continue
					}
					if s, _ := ci.shell.scoreText(im.argvText()); s >= matchPayload {
						return ci
					}
				}
			}
		}
		if depth[q] < 3 {
			for _, c := range q.childProcs() {
				depth[c] = depth[q] + 1
				queue = append(queue, c)
			}
		}
	}
	return nil
}

// helperLead is how long before its call's recorded start a search
// helper may start: the agent records the call before it runs it, so only
// timestamp rounding is allowed for.
const helperLead = 10 * time.Millisecond

// searchTool reports whether an exec is a program in-process search tools
// spawn (Claude Code's Grep and Glob run ripgrep; others list files with
// git or find).
func searchTool(e *event.Event) bool {
	if len(e.Argv) == 0 {
		return false
	}
	for _, name := range []string{filepath.Base(e.Argv[0]), filepath.Base(e.Path)} {
		switch name {
		case "rg", "ripgrep", "grep", "find", "fd", "fdfind":
			return true
		case "git":
			for _, a := range e.Argv[1:] {
				if !strings.HasPrefix(a, "-") {
					return a == "ls-files" || a == "grep"
				}
			}
		}
	}
	return false
}

// matchSearch gives a search helper to the search call running when it
// started, preferring one whose path its argv names.
func (a *attributor) matchSearch(p *process) *callInfo {
	var best *callInfo
	bestScore := -1
	for _, e := range p.execs() {
		if !searchTool(e) {
			continue
		}
		for _, ci := range a.callsAt(e.TS) {
			if !ci.search || !ci.start.IsZero() && e.TS.Before(ci.start.Add(-helperLead)) {
				continue
			}
			score := 0
			if a.strictlyIn(ci, e.TS) {
				score++
			}
			for _, d := range ci.paths.dirs {
				for _, arg := range e.Argv[1:] {
					if arg == d || strings.HasPrefix(arg, d+"/") {
						score += 2
					}
				}
			}
			if score > bestScore || score == bestScore && best != nil && ci.start.After(best.start) {
				best, bestScore = ci, score
			}
		}
	}
	return best
}

// buildEnv gathers where the agent keeps its files.
func (a *attributor) buildEnv(tr *transcript.Transcript, opts Options) *env {
	v := &env{home: cleanAbs(a.meta.Home), cwd: cleanAbs(a.meta.Cwd)}
	if tr != nil {
		v.transcript = cleanAbs(tr.Path)
		if d := agentDataDir(v.transcript); d != "" {
			v.agentDirs = append(v.agentDirs, d)
		}
		if v.cwd == "" {
			v.cwd = cleanAbs(tr.Cwd)
		}
	}
	for _, d := range opts.AgentDirs {
		if d = cleanAbs(d); d != "" {
			v.agentDirs = appendNew(v.agentDirs, d)
		}
	}
	var execs []*event.Event
	for _, p := range a.tree.procs {
		if p.owner.kind == ownCore {
			execs = append(execs, p.execs()...)
		}
	}
	v.install = installDirs(execs)
	return v
}

// agentDataDir finds, from a transcript's path, the agent's data
// directory: the parent of the sessions/, projects/ or tmp/ directory the
// transcript lies under ($CODEX_HOME, ~/.claude, ~/.gemini), when its name
// says it is an agent's.
func agentDataDir(path string) string {
	if path == "" {
		return ""
	}
	for d := filepath.Dir(path); d != "/" && d != "."; d = filepath.Dir(d) {
		switch filepath.Base(d) {
		case "sessions", "projects", "tmp":
			parent := filepath.Dir(d)
			if hasAgentToken(filepath.Base(parent)) {
				return parent
			}
		}
	}
	return ""
}

// coreEvents returns those of evs that the agent's own processes made.
func (a *attributor) coreEvents(evs []*event.Event) []*event.Event {
	var out []*event.Event
	for _, e := range evs {
		if im := a.tree.imageOf(e); im != nil && im.proc != nil && im.proc.owner.kind == ownCore {
			out = append(out, e)
		}
	}
	return out
}

// scan walks the events once: it builds the image tree and fills in, for
// every event, what its attribution owes nothing to who acted: its seq and
// the verdict "unattributed" that stands unless someone is found. Most events
// of a session without a transcript need nothing more, and the second
// walk need not read them again. It reports false, having stopped, at an
// event out of seq order.
func (a *attributor) scan(evs []*event.Event) bool {
	a.tree = newTree()
	a.runs, a.forks = nil, nil
	a.res.Attributions = make([]Attribution, len(evs))
	for i, e := range evs {
		if i > 0 && e.Seq < evs[i-1].Seq {
			return false
		}
		if im := a.tree.add(e); i == 0 || im != a.runs[len(a.runs)-1].im {
			a.runs = append(a.runs, run{from: int32(i), im: im})
		}
		if e.Kind == event.KindFork {
			a.forks = append(a.forks, int32(i))
		}
		at := &a.res.Attributions[i]
		at.Seq, at.Reason = e.Seq, ReasonUnattributed
	}
	a.tree.link()
	return true
}

// run is a stretch of consecutive events of one image.
type run struct {
	from int32  // the index of its first event
	im   *image // nil for events without an exec_id
}

// attributeAll decides every event (evs being those scan was given),
// into the attributions scan left.
func (a *attributor) attributeAll(evs []*event.Event) {
	runs, forks := a.runs, a.forks
	var im *image
	for i, e := range evs {
		if len(runs) > 0 && runs[0].from == int32(i) {
			im, runs = runs[0].im, runs[1:]
		}
		at := &a.res.Attributions[i]
		fork := len(forks) > 0 && forks[0] == int32(i)
		if fork {
			forks = forks[1:]
		}
		if !fork && (im == nil || im.proc == nil || im.proc.owner.kind == ownNone) {
			// Nobody's: scan said all there is to say but the detail.
			if im != nil && im.proc != nil {
				at.Detail = im.proc.owner.detail
			}
			if at.Detail == "" {
				at.Detail = "no-call"
			}
			a.tally(at)
			continue
		}
		a.attribute(e, im, at, pathsOf(e))
	}
}

// resolution is an event's paths for matching. A path named through a
// descriptor the session never saw opened (fdpath left it as it was)
// has only its tail: path is "" and rest what follows the fd directory,
// which matches a call's file by suffix.
type resolution struct {
	path, rest, path2, rest2 string
}

// pathsOf returns e's paths for matching.
func pathsOf(e *event.Event) resolution {
	var r resolution
	r.path, r.rest = unresolved(e, e.Path)
	r.path2, r.rest2 = unresolved(e, e.Path2)
	return r
}

// unresolved splits p, a path of e, when it is still named through a
// descriptor: "" and the rest after the fd. The descriptor itself
// (/dev/fd/1: a device, not a path) stays p.
func unresolved(e *event.Event, p string) (string, string) {
	if _, rest, ok := fdpath.Split(p, e.PID); ok && rest != "" {
		return "", rest
	}
	return p, ""
}

// attribute decides one event, of image im (nil for none), whose paths
// are r (pathsOf), into at (as scan left it).
func (a *attributor) attribute(e *event.Event, im *image, at *Attribution, r resolution) {
	path, rest, path2, rest2 := r.path, r.rest, r.path2, r.rest2
	var o owner
	if im != nil && im.proc != nil {
		o = im.proc.owner
	}
	// A fork is the start of the child: it belongs to whoever the child acts for.
	if e.Kind == event.KindFork {
		if c := a.tree.images[e.ChildExecID]; c != nil && c.proc != nil {
			o = c.proc.owner
		}
	}

	switch o.kind {
	case ownCall:
		at.Reason, at.ToolCallID, at.Detail = ReasonLineage, o.call.tc.ID, o.detail
		if im != nil && im.exec != nil && e.Kind != event.KindFork && a.wrapper(im) {
			at.Detail = "wrapper" // the agent's sandbox or snapshot wrapper, before it becomes the command
		}
		at.AfterReturn = a.afterReturn(o.call, e.TS)
		a.record(o.call, e, im, path, path2, at.AfterReturn)
	case ownHelper:
		switch {
		case e.Kind.IsNetwork():
			a.network(e, im, at, false)
		default:
			at.Reason, at.Detail = ReasonAgentBookkeeping, o.detail
		}
	case ownCore:
		switch {
		case e.Kind.IsNetwork():
			a.network(e, im, at, true)
		case e.Kind.IsFile():
			if ci := a.inProcess(e, path, rest, path2, rest2); ci != nil {
				at.Reason, at.ToolCallID, at.Detail = ReasonInProcess, ci.tc.ID, "path"
				a.record(ci, e, im, path, path2, false)
				break
			}
			var d string
			switch {
			case e.Kind == event.KindOpen && e.Flags != nil && *e.Flags&unixOTMPFILE != 0:
				d = "temp-file" // an unnamed file in a directory (SQLite's temporaries): nothing outlives it
			case e.Kind == event.KindLink:
				d = a.env.bookkeeping(path2, true) // the new name; the target is only text
			default:
				d = a.env.bookkeeping(path, e.IsWrite())
				if e.Kind == event.KindRename && path2 != "" && a.env.bookkeeping(path2, true) == "" {
					d = "" // moved out of the agent's files, or in from elsewhere
				}
			}
			if d != "" {
				at.Reason, at.Detail = ReasonAgentBookkeeping, d
			} else {
				at.Detail = "agent-file"
			}
		default: // exec, exit
			at.Reason, at.Detail = ReasonAgentBookkeeping, o.detail
		}
	default:
		at.Detail = o.detail
		if at.Detail == "" {
			at.Detail = "no-call"
		}
	}
	a.tally(at)
}

// tally counts a verdict.
func (a *attributor) tally(at *Attribution) {
	for i, r := range reasons {
		if at.Reason == r {
			a.counts[i]++
			break
		}
	}
	if at.AfterReturn {
		a.res.AfterReturn++
	}
	if at.Reason == ReasonUnattributed || at.AfterReturn {
		a.listed++
	}
}

// finish fills in the counts and the list of unattributed events (evs
// being the attributed events, in order), sized to fit: with no
// transcript, that is nearly every event, and the result is kept for as
// long as the report.
func (a *attributor) finish(evs []*event.Event) {
	for i, n := range a.counts {
		if n > 0 {
			a.res.Counts[reasons[i]] = n
		}
	}
	if a.listed == 0 {
		return
	}
	a.res.Unattributed = make([]*event.Event, 0, a.listed)
	for i := range a.res.Attributions {
		if at := &a.res.Attributions[i]; at.Reason == ReasonUnattributed || at.AfterReturn {
			a.res.Unattributed = append(a.res.Unattributed, evs[i])
		}
	}
}

// wrapper reports whether the exec of im is the agent's sandbox or
// snapshot wrapper, which becomes the command it wraps.
func (a *attributor) wrapper(im *image) bool {
	if im.wrapper == 0 {
		im.wrapper = -1
		if r, _ := execRole(im.exec, a.rootArgv); r == roleTransparent {
			im.wrapper = 1
		}
	}
	return im.wrapper > 0
}

// network classifies a network event of the agent's own process (core) or
// of one of its helpers; im is the event's image.
func (a *attributor) network(e *event.Event, im *image, at *Attribution, core bool) {
	if core && (e.Kind == event.KindConnect || e.Kind == event.KindDNS || e.Kind == event.KindNet) {
		if ci := a.fetchCall(e); ci != nil {
			at.Reason, at.ToolCallID, at.Detail = ReasonInProcess, ci.tc.ID, "host"
			a.record(ci, e, im, "", "", false)
			return
		}
	}
	switch {
	case e.Kind == event.KindDNS && a.api.dns(e),
		e.Kind != event.KindDNS && a.api.peer(e) && e.Kind != event.KindBind:
		at.Reason, at.Detail = ReasonAgentAPI, "model-api"
	case e.Family == "unix" && a.env.bookkeeping(e.Addr, e.Kind == event.KindBind) != "":
		at.Reason, at.Detail = ReasonAgentBookkeeping, "local-socket"
	default:
		at.Detail = "agent-network"
	}
}

// fetchCall finds the in-process fetch call whose URL host the event names.
func (a *attributor) fetchCall(e *event.Event) *callInfo {
	names := []string{strings.ToLower(e.Host), strings.ToLower(e.Addr), strings.ToLower(strings.TrimSuffix(e.QName, "."))}
	for _, ci := range a.callsAt(e.TS) {
		if len(ci.hosts) == 0 {
			continue
		}
		for _, h := range ci.hosts {
			for _, n := range names {
				if n != "" && n == h {
					return ci
				}
			}
		}
	}
	return nil
}

// inProcess finds the call whose window holds the event and whose paths
// it touches, best match first.
func (a *attributor) inProcess(e *event.Event, path, rest, path2, rest2 string) *callInfo {
	var best *callInfo
	bestScore, bestStrict := 0, false
	for _, ci := range a.callsAt(e.TS) {
		write := e.IsWrite()
		s := ci.paths.score(path, rest, write)
		if s2 := ci.paths.score(path2, rest2, write); s2 > s {
			s = s2
		}
		if s == 0 {
			continue
		}
		strict := a.strictlyIn(ci, e.TS)
		if s > bestScore || s == bestScore && (strict && !bestStrict || strict == bestStrict && ci.start.After(best.start)) {
			best, bestScore, bestStrict = ci, s, strict
		}
	}
	return best
}

// score rates how p touches what the set names: 3 a named file, 2 one of
// its temporary siblings (an atomic write's "file.tmp.123") or a searched
// directory itself, 1 inside a searched directory or a written file's
// directory. rest is the tail of a /proc/self/fd/N/… path whose directory
// could not be resolved; it matches a named file by suffix. A search does
// not write: writes inside a searched directory do not match it.
func (s *pathSet) score(p, rest string, write bool) int {
	if p == "" && rest == "" {
		return 0
	}
	best := 0
	set := func(n int) {
		if n > best {
			best = n
		}
	}
	var pdir, pbase string
	if p != "" {
		pdir, pbase = filepath.Split(p)
	}
	for _, x := range s.exact {
		switch {
		case p != "" && p == x:
			return 3
		case p != "":
			xdir, xbase := filepath.Split(x)
			if pdir == xdir && tempSibling(pbase, xbase) {
				set(2)
			}
		case rest != "" && restMatches(rest, x):
			set(2)
		}
	}
	if p == "" {
		return best
	}
	for _, d := range s.dirs {
		if write {
			break
		}
		switch {
		case p == d:
			set(2)
		case under(p, d):
			set(1)
		}
	}
	for _, d := range s.parents {
		if p == d {
			set(1)
		}
	}
	return best
}

// restMatches reports whether the tail of an unresolved /proc/self/fd/N/
// path names x, or a temporary sibling of it.
func restMatches(rest, x string) bool {
	if strings.HasSuffix(x, "/"+rest) {
		return true
	}
	rdir, rbase := filepath.Split(rest)
	xdir, xbase := filepath.Split(x)
	return tempSibling(rbase, xbase) && (rdir == "" || strings.HasSuffix(xdir, "/"+rdir))
}

// tempSibling reports whether name is a temporary file for target: an
// atomic write's "target.tmp.123", ".target.swp", "target~".
func tempSibling(name, target string) bool {
	return strings.HasPrefix(name, target+".") || strings.HasPrefix(name, "."+target) || name == target+"~"
}

// record adds the event, of image im, to the call's activity.
func (a *attributor) record(ci *callInfo, e *event.Event, im *image, path, path2 string, late bool) {
	act := ci.act
	act.Events = append(act.Events, e.Seq)
	if late {
		act.Late = append(act.Late, e.Seq)
	}
	addW := func(p string) {
		if p != "" && !ci.seenWrite[p] {
			ci.seenWrite[p] = true
			act.Writes = append(act.Writes, p)
		}
	}
	switch e.Kind {
	case event.KindExec:
		act.Execs = append(act.Execs, e)
	case event.KindExit:
		if act.RootExit == nil && act.RootExecID != "" {
			if im != nil && im.proc != nil && im.proc.top().id == act.RootExecID {
				act.RootExit = e
			}
		}
	case event.KindOpen:
		if e.Failed() {
			break
		}
		if e.IsWrite() {
			addW(path)
		} else if path != "" && !ci.seenRead[path] {
			ci.seenRead[path] = true
			act.Reads = append(act.Reads, path)
		}
	case event.KindRename:
		if !e.Failed() {
			addW(path)
			addW(path2)
		}
	case event.KindLink:
		if !e.Failed() {
			addW(firstNonEmpty(path2, path))
		}
	case event.KindUnlink, event.KindMkdir, event.KindChmod:
		if !e.Failed() {
			addW(path)
		}
	case event.KindConnect:
		act.Connects = append(act.Connects, e)
	case event.KindDNS:
		if q := strings.TrimSuffix(e.QName, "."); q != "" && !ci.seenDNS[q] {
			ci.seenDNS[q] = true
			act.DNS = append(act.DNS, q)
		}
	}
}

// wordPath reports whether a word of a shell command, resolved to p, may
// name a file the agent checks before running the command. Options, the
// working directory, the home and device or kernel files do not.
func wordPath(w, p, cwd, home string) bool {
	if strings.HasPrefix(w, "-") || w == "." || w == ".." || w == "~" || p == cwd || p == home || p == "/" {
		return false
	}
	for _, pre := range []string{"/dev/", "/proc/", "/sys/"} {
		if strings.HasPrefix(p, pre) {
			return false
		}
	}
	return true
}

// unixOTMPFILE is a Linux value the events carry, whatever the platform
// reading them.
const unixOTMPFILE = 0x400000 // __O_TMPFILE (x86, arm64)

// resolve makes p absolute against cwd, expanding a leading ~.
func resolve(p, cwd, home string) string {
	p = strings.TrimSpace(p)
	if p == "" {
		return ""
	}
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if home == "" {
			return ""
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	case !filepath.IsAbs(p):
		if cwd == "" {
			return ""
		}
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

func cleanAbs(p string) string {
	if p == "" || !filepath.IsAbs(p) {
		return ""
	}
	return filepath.Clean(p)
}

func urlHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	u, _, _ = strings.Cut(u, "/")
	if at := strings.LastIndexByte(u, '@'); at >= 0 {
		u = u[at+1:]
	}
	if strings.HasPrefix(u, "[") {
		if j := strings.IndexByte(u, ']'); j > 0 {
			return strings.ToLower(u[1:j])
		}
	}
	if h, _, ok := strings.Cut(u, ":"); ok {
		u = h
	}
	return strings.ToLower(u)
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

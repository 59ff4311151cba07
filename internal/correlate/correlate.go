package correlate

import (
	"net"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
	"github.com/polygraph/polygraph/internal/manifest"
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
	// polygraph's own report gives none: a session does not record the
	// variables (agent.EndpointVars) that would name them.
	APIEndpoints []string
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
// agent's own activity is still classified. events need not be sorted
// (this is the one place the analysis sorts them: the session reader gives
// them in seq order). Their paths are taken as they are: paths named through
// a descriptor were resolved upstream (fdpath), as the session reader does.
func Attribute(events []*event.Event, tr *transcript.Transcript, meta manifest.Meta, opts Options) *Result {
	a := &attributor{
		meta: meta,
		res:  &Result{ByCall: map[string]*CallActivity{}, Counts: map[Reason]int{}},
	}
	evs, _ := event.InSeqOrder(events)
	a.scan(evs)
	calls := prepareCalls(tr, meta, a.res)
	a.calls = newCallIndex(calls, opts.slack())
	a.api = newAPISet(opts.APIEndpoints)
	a.behaviour = a.inferAgent(firstCallStart(calls))
	a.decideAll()
	a.env = a.buildEnv(tr)
	if b := a.behaviour; b.peer != "" {
		a.api.hostPort[b.peer] = true // the agent's own model traffic, found by behaviour
		if h, _, err := net.SplitHostPort(b.peer); err == nil {
			a.api.learned = append(a.api.learned, h)
		}
	}
	core := a.coreEvents(a.peers) // all learnDNS and learnDominant look at
	a.api.learnDNS(core)
	a.api.learnDominant(core, firstCallStart(calls))
	a.attributeAll(evs)
	a.finish(evs)
	for _, p := range a.tree.Processes() {
		if k := a.owners[p.Index].kind; k == ownCore || k == ownHelper {
			for _, im := range p.Images {
				a.res.AgentExecIDs = append(a.res.AgentExecIDs, im.ID)
			}
		}
	}
	return a.res
}

// attributor holds one attribution's state: the image tree with who
// each process acts for beside it, the calls by time, where the agent
// keeps its files and which peer is its API. Its methods live by concern:
// owner.go decides processes, inprocess.go matches the agent's own file
// events by path, peers.go its network events, verdict.go records each
// verdict.
type attributor struct {
	meta     manifest.Meta
	tree     *lineage.Tree
	owners   []owner     // by lineage.Process.Index, set by decideAll
	notes    []imageNote // by lineage.Image.Index
	calls    *callIndex
	env      *env
	api      *apiSet
	rootArgv []string
	res      *Result
	// behaviour is which processes the tree's activity says are the
	// agent (behaviour.go); decideAll takes them for it.
	behaviour behaviour

	// runs are the events' images; forks are the indexes of the fork
	// events, ascending; peers are the connect, net and dns events, in
	// order: what tells the model API apart. scan fills them.
	runs  []run
	forks []int32
	peers []*event.Event

	counts [len(reasons)]int // the verdicts by reason
	listed int               // the events to list as unattributed
}

// reasons lists the reasons, for counting them in an array.
var reasons = [...]Reason{ReasonUnattributed, ReasonLineage, ReasonInProcess, ReasonAgentAPI, ReasonAgentBookkeeping}

// scan walks the events once: it builds the image tree and fills in, for
// every event, what its attribution owes nothing to who acted: the verdict
// "unattributed" that stands unless someone is found (newAttributions). Most events
// of a session without a transcript need nothing more, and the second
// walk need not read them again. It reports false, having stopped, at an
// event out of seq order.
func (a *attributor) scan(evs []*event.Event) {
	b := lineage.NewBuilder()
	a.runs, a.forks, a.peers = nil, nil, nil
	a.res.Attributions = newAttributions(evs) // each unattributed
	for i, e := range evs {
		if im := b.Add(int32(i), e); i == 0 || im != a.runs[len(a.runs)-1].im {
			a.runs = append(a.runs, run{from: int32(i), im: im})
		}
		switch e.Kind {
		case event.KindFork:
			a.forks = append(a.forks, int32(i))
		case event.KindConnect, event.KindNet, event.KindDNS:
			a.peers = append(a.peers, e)
		}
	}
	a.tree = b.Tree()
	a.res.Tree, a.res.Events = a.tree, evs
	a.notes = make([]imageNote, len(a.tree.Images()))
}

// run is a stretch of consecutive events of one image.
type run struct {
	from int32          // the index of its first event
	im   *lineage.Image // nil for events without an exec_id
}

// attributeAll decides every event (evs being those scan was given),
// into the attributions scan left.
func (a *attributor) attributeAll(evs []*event.Event) {
	runs, forks := a.runs, a.forks
	var im *lineage.Image
	for i, e := range evs {
		if len(runs) > 0 && runs[0].from == int32(i) {
			im, runs = runs[0].im, runs[1:]
		}
		at := Attribution{Reason: ReasonUnattributed}
		fork := len(forks) > 0 && forks[0] == int32(i)
		if fork {
			forks = forks[1:]
		}
		if o := a.ownerOf(im); !fork && o.kind == ownNone {
			// Nobody's: scan said all there is to say but the detail.
			at.Detail = o.detail
			if at.Detail == "" {
				at.Detail = "no-call"
			}
			a.tally(&at)
			a.res.Attributions.set(i, &at)
			continue
		}
		a.attribute(e, im, &at, pathsOf(e))
		a.res.Attributions.set(i, &at)
	}
}

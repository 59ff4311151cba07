package correlate

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// Which process is the agent, by what the tree did rather than by what
// its programs are called: the agent is the process that talks to the
// model and starts the tools. It asks the model before it runs anything
// the model asked for, so among the tree's processes it holds the
// session's first model connection (a known or configured model API, else
// the first connection anyone in the tree made), before the first tool
// call the transcript records, and the processes it starts after that
// connection are the tools: a first connection after which its process
// started nothing is taken for the model's only when it is a known API. The processes that started it (a launcher, a
// relaunch from a temporary copy, a node wrapper starting a native
// binary) are the agent re-executing itself, whatever their names and
// command lines. No profile, launcher list or runtime list is needed;
// they remain the fallback when the tree made no connection (an agent
// reaching its model through a Unix socket, a session that never asked).

// behaviour is what the tree's own activity says of which processes are
// the agent (inferAgent).
type behaviour struct {
	// proc is the process that holds the model connection and starts the
	// tools; nil when the activity gave no answer.
	proc *lineage.Process
	// image is the image of proc that made its first connection.
	image *lineage.Image
	// chain marks, by lineage.Process.Index, proc and the processes that
	// started it, up to the tree's top.
	chain []bool
	// peer is the model endpoint as host:port; known says it is a known
	// or configured model API, not the first connection inferred.
	peer  string
	known bool
}

// traffic is one process's network activity, as inferAgent weighs it.
type traffic struct {
	first time.Time         // its first connection or exchange
	im    *lineage.Image    // the image that made it
	known bool              // it reached a known or configured model API
	bytes map[string]uint64 // bytes (and connects) per peer host:port
	early map[string]bool   // the peers it reached before the first tool call
	order []string          // peers in order of first contact
}

// inferAgent finds the agent by behaviour (see above). firstCall is when
// the transcript's first tool call started (zero: no transcript, or no
// call).
func (a *attributor) inferAgent(firstCall time.Time) behaviour {
	if a.meta.Outsiders {
		return behaviour{} // no process of the session is the agent
	}
	procs := a.tree.Processes()
	seen := make([]*traffic, len(procs))
	anyKnown := false
	for _, e := range a.peers {
		key, ok := modelCandidate(e)
		if !ok {
			continue
		}
		im := a.tree.Of(e)
		if im == nil {
			continue
		}
		t := seen[im.Process.Index]
		if t == nil {
			t = &traffic{first: e.TS, im: im, bytes: map[string]uint64{}, early: map[string]bool{}}
			seen[im.Process.Index] = t
		}
		if _, ok := t.bytes[key]; !ok {
			t.order = append(t.order, key)
		}
		t.bytes[key] += 1 + e.BytesSent() + e.BytesRecv()
		if firstCall.IsZero() || e.TS.Before(firstCall) {
			t.early[key] = true
		}
		if a.api.peer(e) {
			t.known, anyKnown = true, true
		}
	}
	// The candidates: the processes that reached a known model API, else
	// any that made a connection; with a transcript, before its first
	// tool call. The earliest that started programs after its first
	// connection is the agent; failing one, the earliest that reached a
	// known model API, when nothing outside its own line ran a program
	// after it (no tool ran). A first connection that started nothing
	// (npm reaching its registry) says nothing of a model.
	// With a transcript whose shell calls' processes are known by their
	// command lines, the agent is one of their ancestors.
	tools := a.toolAncestors()
	candidate := func(p *lineage.Process) bool {
		t := seen[p.Index]
		return t != nil && (!anyKnown || t.known) && (firstCall.IsZero() || t.first.Before(firstCall)) &&
			(tools == nil || tools[p.Index])
	}
	var best, quiet *lineage.Process
	for _, p := range procs {
		if !candidate(p) {
			continue
		}
		t := seen[p.Index]
		if startsAfter(p, t.first) {
			if best == nil || t.first.Before(seen[best.Index].first) {
				best = p
			}
		} else if quiet == nil || t.first.Before(seen[quiet.Index].first) {
			quiet = p
		}
	}
	if best == nil && quiet != nil && anyKnown && !a.ranOutside(quiet, seen[quiet.Index].first) {
		best = quiet
	}
	// The agent starts everything else in the tree: of two candidates
	// one of which started the other (an MCP server the agent launched,
	// reaching its own service before the agent's first model request),
	// the one above is the agent.
	for p := best; p != nil && p.Parent != nil; {
		p = p.Parent.Process
		if candidate(p) && startsAfter(p, seen[p.Index].first) {
			best = p
		}
	}
	if best == nil {
		return behaviour{}
	}
	b := behaviour{proc: best, image: seen[best.Index].im, chain: make([]bool, len(procs)), known: seen[best.Index].known}
	for p := best; p != nil; {
		if b.chain[p.Index] {
			break
		}
		b.chain[p.Index] = true
		if p.Parent == nil {
			break
		}
		p = p.Parent.Process
	}
	if !b.known {
		t := seen[best.Index]
		var w uint64
		for _, k := range t.order {
			if t.early[k] && t.bytes[k] > w {
				b.peer, w = k, t.bytes[k]
			}
		}
	}
	return b
}

// toolAncestors marks, by lineage.Process.Index, the processes above
// (and including) those that carry a shell call's command (matchShell):
// nil when no process does (no transcript, no shell call, none found).
func (a *attributor) toolAncestors() []bool {
	var out []bool
	for _, p := range a.tree.Processes() {
		if a.matchShell(p) == nil {
			continue
		}
		if out == nil {
			out = make([]bool, len(a.tree.Processes()))
		}
		for q := p; q != nil && !out[q.Index]; {
			out[q.Index] = true
			if q.Parent == nil {
				break
			}
			q = q.Parent.Process
		}
	}
	return out
}

// modelCandidate returns the peer (host:port) of a connect or net event
// that may be the model's: an internet or loopback address, not DNS, a
// connection the kernel did not refuse.
func modelCandidate(e *event.Event) (string, bool) {
	if e.Kind != event.KindConnect && e.Kind != event.KindNet || e.Network == nil {
		return "", false
	}
	if e.Family() != "ipv4" && e.Family() != "ipv6" || e.Addr() == "" || e.Port() == 0 || e.Port() == 53 {
		return "", false
	}
	if e.Kind == event.KindConnect && e.Result != nil && *e.Result < 0 && *e.Result != -115 { // -EINPROGRESS: under way
		return "", false
	}
	return net.JoinHostPort(strings.ToLower(e.Addr()), strconv.Itoa(int(e.Port()))), true
}

// startsAfter reports whether p started a program (forked a process that
// exec'd) after t: the tools, which run after the model asked for them.
func startsAfter(p *lineage.Process, t time.Time) bool {
	for _, c := range p.Forked() {
		if ex := c.Execs(); len(ex) > 0 && ex[0].TS.After(t) {
			return true
		}
	}
	return false
}

// ranOutside reports whether a process other than p and those that
// started it ran a program after t.
func (a *attributor) ranOutside(p *lineage.Process, t time.Time) bool {
	line := map[*lineage.Process]bool{}
	for q := p; q != nil && !line[q]; {
		line[q] = true
		if q.Parent == nil {
			break
		}
		q = q.Parent.Process
	}
	for _, q := range a.tree.Processes() {
		if line[q] {
			continue
		}
		for _, e := range q.Execs() {
			if e.TS.After(t) {
				return true
			}
		}
	}
	return false
}

// agentNote says how the agent's processes were found, and where the
// profile's account (the session's root and the relaunches of its
// command line) and the tree's behaviour disagree: behaviour wins.
func (a *attributor) agentNote(root *lineage.Process) (by, note string) {
	b := a.behaviour
	if b.proc == nil {
		if root == nil {
			return "", ""
		}
		return AgentByProfile, "no model connection to find it by: the session's root and the relaunches of its command line"
	}
	var extra []string
	for _, p := range a.tree.Processes() {
		if !b.chain[p.Index] || p == root {
			continue
		}
		if r, _ := processRole(p, a.rootArgv); r != roleCore {
			extra = append(extra, a.tree.Describe(p.Top().ID))
		}
	}
	peer := b.peer
	if b.known {
		peer = "a known model API"
	}
	what := fmt.Sprintf("%s holds the model connection (%s) and starts the tools", a.tree.Describe(b.image.ID), peer)
	switch {
	case root != nil && !b.chain[root.Index]:
		return AgentByBehaviour, what + "; it is not the session's root nor started by it, which the command line alone would have taken for the agent"
	case len(extra) > 0:
		return AgentByBehaviour, what + "; by behaviour alone, not by the command line or a profile: " + strings.Join(extra, ", ")
	}
	return AgentByBoth, what + "; the session's command line says the same"
}

// How the agent's processes were found (Result.AgentBy).
const (
	// AgentByBoth: the tree's behaviour and the session's command line
	// (and profile) agree.
	AgentByBoth = "behaviour+profile"
	// AgentByBehaviour: behaviour found processes the command line
	// would not have: behaviour wins.
	AgentByBehaviour = "behaviour"
	// AgentByProfile: no model connection to go by: the session's root
	// and the relaunches of its command line.
	AgentByProfile = "profile"
)

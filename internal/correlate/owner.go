package correlate

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// ownerKind is who a process acts for.
type ownerKind int

const (
	ownNone   ownerKind = iota // nobody: unattributed
	ownCore                    // the agent itself
	ownHelper                  // something the agent runtime runs for itself
	ownCall                    // a tool call
)

// owner is who a process acts for, and by which rule.
type owner struct {
	kind   ownerKind
	call   *callInfo
	detail string
	// spreads says, of a helper, that the processes it starts are
	// helpers too (helperSpreads).
	spreads bool
}

// imageNote is what attribution caches about one image, beside the tree
// (attributor.notes, by lineage.Image.Index).
type imageNote struct {
	// wrapper caches whether the exec is the agent's sandbox or snapshot
	// wrapper (execRole's roleTransparent): 0 not yet known, 1 yes, -1 no.
	// Every event of a call's process asks.
	wrapper int8
	text    *argvText // the exec's argv for matching, once asked for
}

// ownerOf returns who the process of im acts for (nobody for nil).
func (a *attributor) ownerOf(im *lineage.Image) owner {
	if im == nil {
		return owner{}
	}
	return a.owners[im.Process.Index]
}

// argvText returns the texts of im's exec argv (it has an exec).
func (a *attributor) argvText(im *lineage.Image) *argvText {
	n := &a.notes[im.Index]
	if n.text == nil {
		n.text = newArgvText(im.Exec.Argv())
	}
	return n.text
}

// wrapper reports whether the exec of im is the agent's sandbox or
// snapshot wrapper, which becomes the command it wraps.
func (a *attributor) wrapper(im *lineage.Image) bool {
	n := &a.notes[im.Index]
	if n.wrapper == 0 {
		n.wrapper = -1
		if r, _ := execRole(im.Exec, a.rootArgv); r == roleTransparent {
			n.wrapper = 1
		}
	}
	return n.wrapper > 0
}

// decideAll decides who every process acts for, parents first.
func (a *attributor) decideAll() {
	var root *lineage.Process
	for _, p := range a.tree.Processes() {
		if a.meta.Outsiders {
			break // no process of the session is the agent
		}
		if p.Parent == nil && (root == nil || (a.meta.RootPID != 0 && p.Top().PID == uint32(a.meta.RootPID) && root.Top().PID != uint32(a.meta.RootPID))) {
			root = p
		}
	}
	if root != nil {
		if ex := root.Execs(); len(ex) > 0 {
			a.rootArgv = ex[0].Argv()
		}
	}
	a.res.AgentBy, a.res.AgentNote = a.agentNote(root)
	procs := a.tree.Processes()
	a.owners = make([]owner, len(procs))
	state := make([]int8, len(procs)) // 0 undecided, 1 deciding, 2 decided
	var decide func(p *lineage.Process)
	decide = func(p *lineage.Process) {
		if state[p.Index] != 0 {
			return
		}
		state[p.Index] = 1
		o := &a.owners[p.Index]
		switch {
		case p == root, a.behaviour.chain != nil && a.behaviour.chain[p.Index]:
			// The session's root, and the processes that hold the model
			// connection and start the tools, and those that started
			// them (behaviour.go), whatever their command lines.
			*o = owner{kind: ownCore, detail: "agent"}
		case p.Parent == nil && a.meta.Outsiders:
			*o = owner{kind: ownNone}
		case p.Parent == nil:
			// A process whose parent was never seen (lost events, or a
			// second root): judge it as if the agent had spawned it.
			*o = a.spawned(p, owner{kind: ownCore})
		default:
			pp := p.Parent.Process
			decide(pp)
			switch po := a.owners[pp.Index]; po.kind {
			case ownCall, ownNone:
				*o = po
			default:
				*o = a.spawned(p, po)
			}
		}
		state[p.Index] = 2
	}
	for _, p := range procs {
		decide(p)
	}
}

// spawned decides a process the agent (or one of its helpers), parent,
// spawned.
func (a *attributor) spawned(p *lineage.Process, parent owner) owner {
	r, detail := processRole(p, a.rootArgv)
	if r == roleHelper && detail == "shell-snapshot" {
		// A snapshot writer never runs a call's command, but its long
		// script may contain a short one.
		return owner{kind: ownHelper, detail: detail, spreads: true}
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
		return owner{kind: ownHelper, detail: detail, spreads: helperSpreads(p, detail)}
	case r == roleCore:
		return owner{kind: ownCore, detail: detail}
	case len(p.Execs()) == 0 && parent.kind == ownCore:
		return owner{kind: ownCore, detail: "agent-fork"}
	case len(p.Execs()) == 0 && parent.kind == ownHelper:
		return owner{kind: ownHelper, detail: parent.detail, spreads: parent.spreads} // a fork of the helper is the helper
	case parent.kind == ownHelper && parent.spreads:
		return owner{kind: ownHelper, detail: parent.detail, spreads: true}
	}
	return owner{kind: ownNone, detail: "no-call"}
}

// probeDetails are the helpers execRole knows by their program alone.
var probeDetails = map[string]bool{"system-probe": true, "git-probe": true, "file-index": true, "env-probe": true,
	"version-probe": true, "which": true}

// helperSpreads reports whether the processes helper p starts are its
// own chores too. Those of the agent runtime's wrappers are (a shell
// snapshot sources the rc files, which run what they run); a probe known
// by its program is one program doing one query, and what it starts is
// not the probe, unless it is a system script (lsb_release) whose
// children are the script's work.
func helperSpreads(p *lineage.Process, detail string) bool {
	return !probeDetails[detail] || scriptProbe(p)
}

// own makes p a root process of ci.
func (a *attributor) own(p *lineage.Process, ci *callInfo, detail string) owner {
	ci.roots++
	if ci.act.RootExecID == "" {
		ci.act.RootExecID = p.Top().ID
		ci.act.RootExit = p.ExitEvent()
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
func (a *attributor) matchShell(p *lineage.Process) *callInfo {
	var best candidate
	for _, im := range p.Images {
		e := im.Exec
		if e == nil {
			continue
		}
		for _, ci := range a.calls.at(e.TS) {
			if ci.shell == nil {
				continue
			}
			s, l := ci.shell.scoreText(a.argvText(im))
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
func (a *attributor) matchWrapped(p *lineage.Process) *callInfo {
	queue := []*lineage.Process{p}
	depth := map[*lineage.Process]int{p: 0}
	for n := 0; len(queue) > 0 && n < 64; n++ {
		q := queue[0]
		queue = queue[1:]
		if q != p {
			if ci := a.matchShell(q); ci != nil {
				for _, im := range q.Images {
					if im.Exec == nil {
						continue
					}
					if s, _ := ci.shell.scoreText(a.argvText(im)); s >= matchPayload {
						return ci
					}
				}
			}
		}
		if depth[q] < 3 {
			for _, c := range q.Forked() {
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
	if len(e.Argv()) == 0 {
		return false
	}
	for _, name := range []string{filepath.Base(e.Argv()[0]), filepath.Base(e.Path)} {
		switch name {
		case "rg", "ripgrep", "grep", "find", "fd", "fdfind":
			return true
		case "git":
			for _, a := range e.Argv()[1:] {
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
func (a *attributor) matchSearch(p *lineage.Process) *callInfo {
	var best *callInfo
	bestScore := -1
	for _, e := range p.Execs() {
		if !searchTool(e) {
			continue
		}
		for _, ci := range a.calls.at(e.TS) {
			if !ci.search || !ci.start.IsZero() && e.TS.Before(ci.start.Add(-helperLead)) {
				continue
			}
			score := 0
			if ci.strictlyHolds(e.TS) {
				score++
			}
			for _, d := range ci.paths.dirs {
				for _, arg := range e.Argv()[1:] {
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

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

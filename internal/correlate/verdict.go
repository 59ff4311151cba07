package correlate

import (
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/lineage"
)

// attribute decides one event, of image im (nil for none), whose paths
// are r (pathsOf), into at (as scan left it).
func (a *attributor) attribute(e *event.Event, im *lineage.Image, at *Attribution, r eventPaths) {
	path, rest, path2, rest2 := r.path, r.rest, r.path2, r.rest2
	o := a.ownerOf(im)
	// A fork is the start of the child: it belongs to whoever the child acts for.
	if e.Kind == event.KindFork {
		if c := a.tree.Image(e.ChildExecID()); c != nil {
			o = a.ownerOf(c)
		}
	}

	switch o.kind {
	case ownCall:
		at.Reason, at.ToolCallID, at.Detail = ReasonLineage, o.call.tc.ID, o.detail
		if im != nil && im.Exec != nil && e.Kind != event.KindFork && a.wrapper(im) {
			at.Detail = "wrapper" // the agent's sandbox or snapshot wrapper, before it becomes the command
		}
		at.AfterReturn = o.call.returnedBy(e.TS)
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
				at.Detail = DetailAgentFile
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

// unixOTMPFILE is a Linux value the events carry, whatever the platform
// reading them.
const unixOTMPFILE = 0x400000 // __O_TMPFILE (x86, arm64)

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
	for i, p := range a.res.Attributions.packed {
		if p.reason == 0 || p.late { // 0: ReasonUnattributed (newAttributions)
			a.res.Unattributed = append(a.res.Unattributed, evs[i])
		}
	}
}

// record adds the event, of image im, to the call's activity.
func (a *attributor) record(ci *callInfo, e *event.Event, im *lineage.Image, path, path2 string, late bool) {
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
			if im != nil && im.Process.Top().ID == act.RootExecID {
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
		if q := strings.TrimSuffix(e.QName(), "."); q != "" && !ci.seenDNS[q] {
			ci.seenDNS[q] = true
			act.DNS = append(act.DNS, q)
		}
	}
}

package detect

import (
	"fmt"
	"path"

	"github.com/polygraph/polygraph/internal/event"
)

// Calls aimed at other processes (inject, memread): what process-inject
// and memory-read share.

// perTarget makes the findings of the calls of kind aimed at other
// processes, one per image, target and method; judge gives each its
// severity and title from its first event and whether the target was
// outside the tree.
func perTarget(s *run, kind event.Kind, judge func(e *event.Event, outside bool) (Severity, string)) []Finding {
	type key struct {
		img, method string
		target      uint32
	}
	first := map[key]int{}
	var out []Finding
	for i, e := range s.events {
		if e.Kind != kind || e.Call == nil || s.followedAt(i) {
			continue
		}
		k := key{e.ExecID, e.Method(), e.TargetPID()}
		if i, ok := first[k]; ok {
			out[i].Evidence = append(out[i].Evidence, e.Seq)
			continue
		}
		outside := e.Adopted() || e.TargetInTree() != nil && !*e.TargetInTree()
		sev, title := judge(e, outside)
		call, who := s.actor(e)
		res := "it worked"
		if e.Failed() {
			res = fmt.Sprintf("it failed (%d)", *e.Result)
		}
		detail := fmt.Sprintf("%s called %s on %s: %s.", who, e.Method(), targetText(e), res)
		first[k] = len(out)
		out = append(out, s.finding(sev, title, detail, call, []uint64{e.Seq}, false))
	}
	return out
}

// targetText names the target of an inject or memread event: its pid,
// executable where known, and which side of the tree's edge it was on.
func targetText(e *event.Event) string {
	t := fmt.Sprintf("pid %d", e.TargetPID())
	if e.TargetExe() != "" {
		t += " (" + path.Base(e.TargetExe()) + ")"
	}
	switch in := e.TargetInTree(); {
	case e.TargetNSLocal():
		t += ", numbered in the caller's pid namespace"
	case e.Adopted():
		t += ", outside the tree (traced from then on)"
	case in != nil && *in:
		t += ", in the traced tree"
	case in != nil:
		t += ", outside the tree"
	}
	return t
}

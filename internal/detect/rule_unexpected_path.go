package detect

import (
	"fmt"

	"github.com/polygraph/polygraph/internal/event"
)

func init() {
	register(&Rule{
		ID:         "unexpected-path",
		Scope:      ScopeEvent,
		Kinds:      []event.Kind{event.KindOpen, event.KindRename, event.KindLink, event.KindMkdir, event.KindChmod, event.KindUnlink},
		Summary:    "a file outside the policy's allowed_paths was read or written (only when the policy sets that list)",
		Severity:   SeverityLow,
		Frameworks: Frameworks{ATTACK: []string{"T1005"}, OWASPLLM: []string{"LLM06"}, SAIF: []string{saifRogue}},
		check:      unexpectedPath,
	})
}

// unexpectedPath is the unexpected-path rule: with an allowlist of paths
// (a learned policy's), every file outside it and outside the system
// directories that a tool call or unexplained process read or wrote, one
// finding per directory, access and actor. A path is read against the
// session's home and the HOME the process had (homeOf), as policy learn
// (Observe) wrote it: ~/.codex/… allows an agent's store under a HOME
// override too.
func unexpectedPath(s *run) []Finding {
	if !s.pol.PathsAllowlisted() {
		return nil
	}
	var g groups
	allowed := map[[2]int32]bool{} // by path id and home: paths repeat
	add := func(i int, id int32, how string) {
		e := s.events[i]
		p := s.paths.strs[id]
		h := s.homeOf(e)
		ok, seen := allowed[[2]int32{id, h}]
		if !seen {
			ok = systemRead(p) || s.pol.AllowedPath(p, s.in.Meta.Cwd, s.home) ||
				h > 0 && s.pol.AllowedPath(p, s.in.Meta.Cwd, s.homes[h])
			allowed[[2]int32{id, h}] = ok
		}
		if ok {
			return
		}
		call, who := s.actor(e)
		g.add(how+"\x00"+p+"\x00"+s.actorKey(e), func() *accessGroup {
			return &accessGroup{path: p, who: who, call: call, note: how}
		}, e.Seq)
	}
	for i := range s.byEvent {
		f := &s.byEvent[i]
		if f.flags&fOwn != 0 {
			continue
		}
		if f.flags&fRead != 0 {
			add(i, f.path, "read")
		}
		if f.written >= 0 {
			add(i, f.written, "written")
		}
	}
	var out []Finding
	for _, k := range g.order {
		x := g.m[k]
		detail := fmt.Sprintf("%s was %s by %s; the policy's allowed_paths does not cover it", s.display(x.path), x.note, x.who)
		if len(x.seqs) > 1 {
			detail += fmt.Sprintf(" (%d times)", len(x.seqs))
		}
		out = append(out, s.finding(s.rule.Severity, fmt.Sprintf("Path outside the allowlist %s: %s", x.note, s.display(x.path)),
			detail+".", x.call, capped(x.seqs, 20), false))
	}
	return out
}

package detect

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/polygraph/polygraph/internal/event"
	"github.com/polygraph/polygraph/internal/policy"
)

// Mounts. A mount shows a tree's files under another path: a bind of
// ~/.aws at w/mnt makes w/mnt/credentials the same file (same identity,
// which secretMatch already follows), an overlay whose lower layer is
// ~/.aws shows it as a file of its own device (no identity to follow),
// and under --isolate a bind of the masked ~/.aws shows the empty mask,
// so the read there fails and names nothing the rules know. The mount
// events (mount(2), move_mount, with open_tree, fsopen, fsconfig and
// fsmount tied to them by descriptor) say which trees each target shows:
// an open under a target is read as the same path under each source
// (mountAlias), and a mount whose source is a credential store is an
// attempt on it even when nothing was read through it (storeMounts).
//
// Paths are all the facts have: the events carry no mount namespace, so
// a target is taken to show its sources to every process of the tree
// from the mount until a umount of it. A process outside the namespace
// reading the same path reads the directory underneath; for that to be
// misread it must open a file there whose name under the source is a
// credential file.

// mountAlias is one mount that shows other trees' files at its target.
type mountAlias struct {
	i        int32    // the event that attached it (mount, move_mount), or tried to
	target   string   // where
	sources  []string // the trees (a bind's source, an overlay's layers) whose files show there
	from, to uint64   // seqs: from the attaching event until a umount of the target (to 0: still)
	ok       bool     // the call succeeded
}

// mountRead is an open under a mount's target whose path under one of
// the mount's sources is a credential file (by the sensitive or
// agent-config list).
type mountRead struct {
	alias int32 // the path under the source
	m     int32 // index in facts.mounts
}

// The mount(2) flags the facts read.
const (
	msBind    = 0x1000
	msMove    = 0x2000
	msRemount = 0x20
)

// learnMounts fills s.mounts and s.mountReads, in one walk of the events
// in seq order: after learnHomes (the lists are asked against the homes).
func (s *facts) learnMounts() {
	type fdKey struct {
		pid uint32
		fd  int32
	}
	var ctx, detached map[fdKey][]string // a filesystem context's layers; a detached tree's sources
	for i, e := range s.events {
		if s.followedAt(i) {
			continue // a followed process's mounts are its own (a container runtime's)
		}
		switch e.Kind {
		case event.KindMount:
			if ctx == nil {
				ctx, detached = map[fdKey][]string{}, map[fdKey][]string{}
			}
			var src []string
			switch e.MountOp() {
			case "mount":
				flags := uint32(0)
				if e.Flags != nil {
					flags = *e.Flags
				}
				switch {
				case flags&msRemount != 0:
				case flags&(msBind|msMove) != 0 && e.Path2 != "":
					src = []string{e.Path2}
				default:
					src = e.MountLayers()
				}
			case "move_mount":
				if fd := e.MountFD(); fd != nil {
					src = detached[fdKey{e.PID, *fd}]
				} else if e.Path2 != "" {
					src = []string{e.Path2}
				}
			case "open_tree":
				if !e.Failed() && e.Result != nil && e.Path != "" {
					detached[fdKey{e.PID, int32(*e.Result)}] = s.throughMounts([]string{e.Path}, e.Seq)
				}
			case "fsopen":
				if !e.Failed() && e.Result != nil {
					delete(ctx, fdKey{e.PID, int32(*e.Result)})
				}
			case "fsconfig":
				if fd := e.MountFD(); fd != nil && len(e.MountLayers()) > 0 {
					k := fdKey{e.PID, *fd}
					ctx[k] = append(ctx[k], s.throughMounts(e.MountLayers(), e.Seq)...)
				}
			case "fsmount":
				if fd := e.MountFD(); fd != nil && !e.Failed() && e.Result != nil {
					detached[fdKey{e.PID, int32(*e.Result)}] = ctx[fdKey{e.PID, *fd}]
				}
			case "umount":
				if e.Failed() {
					break
				}
				for n := len(s.mounts) - 1; n >= 0; n-- {
					if m := &s.mounts[n]; m.ok && m.to == 0 && m.target == e.Path {
						m.to = e.Seq
						break
					}
				}
			}
			if len(src) > 0 && e.Path != "" && (e.MountOp() == "mount" || e.MountOp() == "move_mount") {
				src = s.throughMounts(src, e.Seq)
				for _, p := range src {
					s.addPath(p) // storeAt asks the lists about it
				}
				s.mounts = append(s.mounts, mountAlias{i: int32(i), target: e.Path, sources: src, from: e.Seq, ok: !e.Failed()})
			}
		case event.KindOpen:
			if len(s.mounts) > 0 && strings.Contains(e.Access, "read") {
				s.aliasRead(int32(i), e)
			}
		}
	}
}

// throughMounts maps paths under an earlier mount's target to the same
// paths under its sources (a bind of a bind), at seq.
func (s *facts) throughMounts(paths []string, seq uint64) []string {
	var out []string
	for _, p := range paths {
		mapped := false
		for n := len(s.mounts) - 1; n >= 0 && !mapped; n-- {
			m := &s.mounts[n]
			if rest, ok := inside(p, m.target); ok && m.live(seq) {
				for _, src := range m.sources {
					out = append(out, path.Join(src, rest))
				}
				mapped = true
			}
		}
		if !mapped {
			out = append(out, p)
		}
	}
	return out
}

// live reports whether m showed its sources at seq.
func (m *mountAlias) live(seq uint64) bool {
	return m.ok && m.from < seq && (m.to == 0 || seq < m.to)
}

// inside returns what p has after dir, "" for dir itself; ok is false
// for a path outside dir.
func inside(p, dir string) (string, bool) {
	if !under(p, dir) {
		return "", false
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"), true
}

// aliasRead notes open events[i] (asking to read) in s.mountReads when
// its path lies under a live mount's target and the same path under one
// of the mount's sources is a credential file.
func (s *facts) aliasRead(i int32, e *event.Event) {
	for n := len(s.mounts) - 1; n >= 0; n-- {
		m := &s.mounts[n]
		rest, ok := inside(e.Path, m.target)
		if !ok || !m.live(e.Seq) {
			continue
		}
		for _, src := range m.sources {
			id := s.addPath(path.Join(src, rest))
			_, sens := s.matchOf(setSensitive, int(i), id)
			if _, conf := s.matchOf(setAgentConfig, int(i), id); sens || conf {
				if s.mountReads == nil {
					s.mountReads = map[int32]mountRead{}
				}
				s.mountReads[i] = mountRead{alias: id, m: int32(n)}
				return
			}
		}
		return // the innermost mount shadows the ones below it
	}
}

// mountAliasOf returns the id of the credential file events[i] opened
// through a mount, under its source's name.
func (s *facts) mountAliasOf(i int) (int32, bool) {
	r, ok := s.mountReads[int32(i)]
	return r.alias, ok
}

// storeAt returns the credential store source dir is, or lies in, or
// holds: dir itself on the sensitive list (a key file bound elsewhere, a
// directory inside ~/.ssh), dir masked by the isolation (which masks the
// stores' directories), a store's own directory by the policy's
// catalogue (~/.aws, ~/.ssh, ~/.config/gcloud: policy.SensitiveDir), or
// a directory below a home that held a credential file when the session
// began (meta.Secrets: ~/.config/gh holding hosts.yml). A home, a
// directory above the homes, or a base directory everything keeps its
// files in (~/.config, ~/.cache, ~/.local/share: policy.BaseDir) is no
// store, whatever it holds: sandboxes bind those whole.
func (s *facts) storeAt(dir string, i int) (string, bool) {
	id := s.pathID(dir)
	if id >= 0 {
		if _, ok := s.matchOf(setSensitive, i, id); ok {
			return dir, true
		}
	}
	if s.masked(dir) {
		return dir, true
	}
	for _, h := range s.homes {
		if dir == h || strings.HasPrefix(h, dir+"/") || policy.BaseDir(dir, h) {
			return "", false
		}
	}
	for _, h := range s.homes {
		if _, ok := s.pol.SensitiveDir(dir, h); ok {
			return dir, true
		}
	}
	for _, x := range s.in.Meta.Secrets {
		if strings.HasPrefix(x.Path, dir+"/") {
			return dir, true
		}
	}
	return "", false
}

// storeMounts are sensitive-read's findings for the mounts of a
// credential store through which nothing was read: the mount's source is
// a store (storeAt), or a read through it of a credential file failed
// (the isolation masked the store, and the mount showed the empty mask;
// the kernel refused). A mount through which a credential file was read
// is that read's finding. One finding per store and actor, at medium;
// Blocked where the isolation masked the store.
func (s *run) storeMounts() []Finding {
	if len(s.mounts) == 0 {
		return nil
	}
	type group struct {
		store, who, call string
		files            []string
		seqs             []uint64
		blocked, failed  bool
		how              string
	}
	var order []string
	groups := map[string]*group{}
	failed := make([][]int32, len(s.mounts)) // the failed reads through each mount, in seq order
	var read []string                        // the credential files read through any mount, by their own names
	for i := range s.events {
		if r, ok := s.mountReads[int32(i)]; ok {
			if s.byEvent[i].flags&fRead != 0 {
				read = append(read, s.paths.strs[r.alias])
			} else {
				failed[r.m] = append(failed[r.m], int32(i))
			}
		}
	}
	for n := range s.mounts {
		m := &s.mounts[n]
		e := s.events[m.i]
		reads := failed[n]
		if slices.ContainsFunc(read, func(p string) bool {
			return slices.ContainsFunc(m.sources, func(src string) bool { return under(p, src) })
		}) {
			continue // the read's own finding names it (through this mount, or a bind of it)
		}
		store := ""
		for _, src := range m.sources {
			if st, ok := s.storeAt(src, int(m.i)); ok {
				store = st
				break
			}
		}
		if store == "" && len(reads) == 0 {
			continue
		}
		if store == "" {
			store = path.Dir(s.paths.strs[s.mountReads[reads[0]].alias])
		}
		call, who := s.actor(e)
		key := store + "\x00" + s.actorKey(e)
		g := groups[key]
		if g == nil {
			g = &group{store: store, who: who, call: call, how: mountHow(e)}
			groups[key] = g
			order = append(order, key)
		}
		g.seqs = append(g.seqs, e.Seq)
		g.failed = g.failed || !m.ok
		g.blocked = g.blocked || s.masked(store)
		for _, i := range reads {
			alias := s.paths.strs[s.mountReads[i].alias]
			g.seqs = append(g.seqs, s.events[i].Seq)
			g.files = appendNew(g.files, s.display(alias)+" (as "+s.display(s.events[i].Path)+")")
			g.blocked = g.blocked || s.masked(alias)
		}
	}
	var out []Finding
	for _, k := range order {
		g := groups[k]
		detail := fmt.Sprintf("%s was %s by %s, where its files can be read under another name", s.display(g.store), g.how, g.who)
		if g.failed {
			detail += "; the mount failed"
		}
		if len(g.files) > 0 {
			detail += "; the read of " + strings.Join(g.files, ", ") + " failed"
		}
		title := "Credential store mounted: " + s.display(g.store)
		if g.blocked {
			title += " (blocked)"
			detail += "; the isolation masked it, so the mount showed nothing"
		}
		f := s.finding(SeverityMedium, title, detail+".", g.call, capped(g.seqs, 20), false)
		f.Blocked = g.blocked
		out = append(out, f)
	}
	return out
}

// mountHow says how mount event e showed its source: "bind-mounted at
// T", "mounted as an overlay layer at T", "moved to T".
func mountHow(e *event.Event) string {
	switch {
	case e.FSType() == "overlay":
		return "mounted as a layer of an overlay at " + e.Path
	case e.MountOp() == "move_mount" && e.MountFD() != nil:
		return "attached (open_tree or fsmount, move_mount) at " + e.Path
	case e.Flags != nil && *e.Flags&msMove != 0, e.MountOp() == "move_mount":
		return "moved to " + e.Path
	}
	return "bind-mounted at " + e.Path
}

// appendNew appends s to list unless it is there already.
func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

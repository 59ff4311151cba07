// Package lineage is the tree of process images of one session: every
// exec_id the events name, linked to the image it came from (its fork's
// or its execve's parent_exec_id, never pids, which are reused), grouped
// into processes, with the questions attribution and the rules ask of it
// (ancestors, subtree, the exec that gave an image its program, its exit).
//
// It is built once from the events, in seq order, and read-only after:
// each reader keeps its own annotations beside it, in tables indexed by
// Image.Index or Process.Index.
package lineage

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// Image is one process image (one exec_id): what a process ran between a
// fork or execve and the next execve or its exit.
type Image struct {
	ID   string
	PID  uint32
	Comm string // the comm of the first event of the image ("" for a fork child with none)
	// ParentID is the exec_id the events named as the image's origin:
	// the forking image for a fork child, the pre-exec image for an
	// execve. It is kept even when that image never appeared (the shim,
	// lost events); Parent is then nil.
	ParentID string
	Parent   *Image
	Fork     *event.Event // the fork that created the image (in the parent's stream); nil for an exec image or a root
	Exec     *event.Event // the execve that began the image; nil for a fork child that has not exec'd
	Exit     *event.Event
	// Next are the images exec'd from this one (the same process);
	// Children the processes' first images forked from it. Both in order
	// of first appearance.
	Next     []*Image
	Children []*Image
	Process  *Process
	// Index is the image's position in Tree.Images, for side tables.
	Index int
	// Events are the indexes, into the events the tree was built from, of
	// those naming the image as their exec_id, in order.
	Events []int32

	first    uint64       // seq of the first event naming it (its fork's, for a fork child)
	firstOwn *event.Event // the first event naming it as its exec_id
	made     int32        // its place in the order the Builder made the images
	count    int32        // its events, while the Builder notes runs
}

// Process is one pid's life in the tree: the image it was forked (or
// started) as and the images it exec'd after that, in order.
type Process struct {
	Images []*Image
	Parent *Image // the image that forked it; nil for a root
	// Index is the process's position in Tree.Processes, for side tables.
	Index int
}

// Top is the process's first image: the one its parent forked.
func (p *Process) Top() *Image { return p.Images[0] }

// Execs returns the exec events of the process in order.
func (p *Process) Execs() []*event.Event {
	var out []*event.Event
	for _, im := range p.Images {
		if im.Exec != nil {
			out = append(out, im.Exec)
		}
	}
	return out
}

// Forked returns the processes forked from any image of p.
func (p *Process) Forked() []*Process {
	var out []*Process
	for _, im := range p.Images {
		for _, c := range im.Children {
			out = append(out, c.Process)
		}
	}
	return out
}

// ExitEvent returns the process's exit event (carried by its last image
// that has one).
func (p *Process) ExitEvent() *event.Event {
	for i := len(p.Images) - 1; i >= 0; i-- {
		if p.Images[i].Exit != nil {
			return p.Images[i].Exit
		}
	}
	return nil
}

// Tree is the image tree of one session.
type Tree struct {
	byID   map[string]*Image
	images []*Image   // by first appearance
	procs  []*Process // by their first image's first appearance
	last   *Image     // the image Add or Of found last
}

// Build returns the tree of evs, a session's events in seq order.
func Build(evs []*event.Event) *Tree {
	b := NewBuilder()
	for i, e := range evs {
		b.Add(int32(i), e)
	}
	return b.Tree()
}

// Builder builds a Tree from events fed one by one, for a reader that
// walks the events for its own ends at the same time.
//
// While the events come as 0, 1, 2, ... (Add's i), it notes only the
// runs of events of one image, and Tree lays every image's Events out in
// one array: appended to event by event, the lists took three times the
// memory they end up in (12 MiB of a million events' 3.8), left to the
// collector. Events out of that order lay them out at once, and are
// appended from then on.
type Builder struct {
	t    *Tree
	made []*Image // by Image.made
	runs []imageRun
	next int32 // the i of the next event, while laid is false
	laid bool  // the images' Events are laid out
}

// imageRun is events from, from+1, ... up to the next run's, of image
// made (-1: events without an exec_id).
type imageRun struct{ from, made int32 }

// NewBuilder returns a Builder of an empty tree.
func NewBuilder() *Builder { return &Builder{t: &Tree{byID: map[string]*Image{}}} }

// get returns image id, made with e as the first event naming it.
func (b *Builder) get(id string, pid uint32, e *event.Event) *Image {
	t := b.t
	im := t.byID[id]
	if im == nil {
		im = &Image{ID: id, PID: pid, first: e.Seq, made: int32(len(b.made))}
		t.byID[id] = im
		b.made = append(b.made, im)
	}
	return im
}

// note notes event i of image made (-1 for none), or lays the Events out
// when i is out of order; it reports whether they are laid out.
func (b *Builder) note(i, made int32) bool {
	if !b.laid && i != b.next {
		b.layOut()
	}
	if b.laid {
		return true
	}
	if n := len(b.runs); n == 0 || b.runs[n-1].made != made {
		b.runs = append(b.runs, imageRun{from: i, made: made})
	}
	b.next++
	if made >= 0 {
		b.made[made].count++
	}
	return false
}

// layOut gives every image its Events, from the runs, in one array.
func (b *Builder) layOut() {
	if b.laid {
		return
	}
	all := make([]int32, 0, b.next)
	for _, im := range b.made {
		im.Events, all = all[len(all):len(all):len(all)+int(im.count)], all[:len(all)+int(im.count)]
	}
	for k, r := range b.runs {
		if r.made < 0 {
			continue
		}
		end := b.next
		if k+1 < len(b.runs) {
			end = b.runs[k+1].from
		}
		im := b.made[r.made]
		for i := r.from; i < end; i++ {
			im.Events = append(im.Events, i)
		}
	}
	b.runs, b.laid = nil, true
}

// Add takes in the next event, events[i] of the session, in seq order,
// and returns its image (nil for an event without an exec_id). An exec
// names the pre-exec image of the same pid as its parent; a fork names
// the child's first image.
func (b *Builder) Add(i int32, e *event.Event) *Image {
	if e.ExecID == "" {
		b.note(i, -1)
		return nil
	}
	t := b.t
	im := t.last
	if im == nil || im.ID != e.ExecID {
		im = b.get(e.ExecID, e.PID, e)
		t.last = im
	}
	if im.firstOwn == nil {
		im.firstOwn, im.Comm = e, e.Comm
	}
	if b.note(i, im.made) {
		im.Events = append(im.Events, i)
	}
	if im.ParentID == "" {
		im.ParentID = e.ParentExecID
	}
	switch e.Kind {
	case event.KindFork:
		if e.ChildExecID() != "" {
			c := b.get(e.ChildExecID(), e.ChildPID(), e)
			c.ParentID = e.ExecID
			c.Fork = e
		}
	case event.KindExec:
		if im.Exec == nil {
			im.Exec = e
			im.ParentID = e.ParentExecID
		}
	case event.KindExit:
		im.Exit = e
	}
	return im
}

// Tree links every image added to the image it came from, groups them
// into processes and returns the tree. Call it once, after the last Add.
func (b *Builder) Tree() *Tree {
	b.layOut()
	t := b.t
	t.images = make([]*Image, 0, len(t.byID))
	for _, im := range t.byID {
		t.images = append(t.images, im)
	}
	sort.Slice(t.images, func(i, j int) bool {
		if t.images[i].first != t.images[j].first {
			return t.images[i].first < t.images[j].first
		}
		return t.images[i].ID < t.images[j].ID
	})
	for i, im := range t.images {
		im.Index = i
		p := t.byID[im.ParentID]
		if p == nil || p == im {
			continue
		}
		im.Parent = p
		if im.continues() {
			p.Next = append(p.Next, im)
		} else {
			p.Children = append(p.Children, im)
		}
	}
	t.group()
	return t
}

// continues reports whether im is the continuation of its parent's
// process: an execve of the same pid.
func (im *Image) continues() bool {
	return im.Parent != nil && im.Exec != nil && im.Fork == nil && im.Parent.PID == im.PID
}

// group groups the images into processes: a process starts at an image
// that does not continue another's.
func (t *Tree) group() {
	for _, im := range t.images {
		if im.Process != nil || im.continues() {
			continue
		}
		p := &Process{Parent: im.Parent}
		for cur := im; cur != nil; {
			cur.Process = p
			p.Images = append(p.Images, cur)
			if len(cur.Next) == 0 {
				break
			}
			cur = cur.Next[0]
			// A second execve from the same image cannot happen; if the
			// events say so anyway, the extra images start processes of
			// their own below.
		}
		t.procs = append(t.procs, p)
	}
	for _, im := range t.images {
		if im.Process == nil { // an extra exec continuation (see above)
			p := &Process{Parent: im.Parent, Images: []*Image{im}}
			im.Process = p
			t.procs = append(t.procs, p)
		}
	}
	sort.SliceStable(t.procs, func(i, j int) bool { return t.procs[i].Top().first < t.procs[j].Top().first })
	for i, p := range t.procs {
		p.Index = i
	}
}

// Images returns every image, in order of first appearance (Image.Index).
func (t *Tree) Images() []*Image { return t.images }

// Processes returns every process, in order of first appearance
// (Process.Index).
func (t *Tree) Processes() []*Process { return t.procs }

// Image returns image id, nil when no event named it.
func (t *Tree) Image(id string) *Image { return t.byID[id] }

// Of returns the image of e, nil for none. Events come in runs of one
// image: it looks the map up only when the run changes (so a Tree is not
// for concurrent use).
func (t *Tree) Of(e *event.Event) *Image {
	if t.last == nil || t.last.ID != e.ExecID {
		t.last = t.byID[e.ExecID]
	}
	return t.last
}

// Ancestors calls f for each ancestor of image id, nearest first, until f
// returns false. Lost or odd events can describe a cycle: the walk stops
// back at id, and after as many steps as there are images.
func (t *Tree) Ancestors(id string, f func(*Image) bool) {
	im := t.byID[id]
	for n := 0; im != nil && n < len(t.images); n++ {
		im = im.Parent
		if im == nil || im.ID == id || !f(im) {
			return
		}
	}
}

// HasAncestor reports whether any ancestor of image id satisfies f.
func (t *Tree) HasAncestor(id string, f func(*Image) bool) bool {
	found := false
	t.Ancestors(id, func(im *Image) bool {
		found = f(im)
		return !found
	})
	return found
}

// ExecOf returns the exec that gave image id its program: its own, or,
// for a fork child that has not exec'd, its nearest ancestor's.
func (t *Tree) ExecOf(id string) *event.Event {
	if im := t.byID[id]; im != nil && im.Exec != nil {
		return im.Exec
	}
	var found *event.Event
	t.Ancestors(id, func(im *Image) bool {
		found = im.Exec
		return found == nil
	})
	return found
}

// Names returns the program names of image id: those byExec gives for
// the exec of its program (ExecOf), or its comm when none was recorded.
func (t *Tree) Names(id string, byExec func(*event.Event) []string) []string {
	if e := t.ExecOf(id); e != nil {
		return byExec(e)
	}
	if im := t.byID[id]; im != nil && im.Comm != "" {
		return []string{im.Comm}
	}
	return nil
}

// Describe names image id for a person: its command line (cut at 120
// characters) and pid.
func (t *Tree) Describe(id string) string {
	im := t.byID[id]
	if im == nil {
		return "an unknown process"
	}
	cmd := im.Comm
	if e := t.ExecOf(id); e != nil {
		if len(e.Argv()) > 0 {
			cmd = strings.Join(e.Argv(), " ")
		} else {
			cmd = e.Path
		}
	}
	return fmt.Sprintf("`%s` (pid %d)", excerpt(cmd, 120), im.PID)
}

// excerpt is s on one line, cut to n bytes with an ellipsis.
func excerpt(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// Subtree returns image id and every image descending from it (exec'd or
// forked), parents first; nil when no event named id.
func (t *Tree) Subtree(id string) []*Image {
	root := t.byID[id]
	if root == nil {
		return nil
	}
	out := []*Image{root}
	seen := map[*Image]bool{root: true}
	for i := 0; i < len(out); i++ {
		for _, kids := range [2][]*Image{out[i].Next, out[i].Children} {
			for _, c := range kids {
				if !seen[c] {
					seen[c] = true
					out = append(out, c)
				}
			}
		}
	}
	return out
}

// Topmost returns, for the images in set, a map from each to its highest
// ancestor (or itself) that is also in set: the root of the group it
// belongs to.
func (t *Tree) Topmost(set map[string]bool) map[string]string {
	out := make(map[string]string, len(set))
	for id := range set {
		top := id
		t.Ancestors(id, func(im *Image) bool {
			if set[im.ID] {
				top = im.ID
			}
			return true
		})
		out[id] = top
	}
	return out
}

// Duration is how long image id ran, from its exec (or its first event)
// to its exit, or as the exit event says when either time is missing; ok
// is false when it has no exit.
func (t *Tree) Duration(id string) (d time.Duration, ok bool) {
	im := t.byID[id]
	if im == nil || im.Exit == nil {
		return 0, false
	}
	start := im.Exec
	if start == nil {
		start = im.firstOwn
	}
	if start != nil && !start.TS.IsZero() && !im.Exit.TS.IsZero() {
		return im.Exit.TS.Sub(start.TS), true
	}
	return time.Duration(im.Exit.DurationNS()), true
}

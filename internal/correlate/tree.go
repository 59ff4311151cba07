package correlate

import (
	"sort"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// image is one process image (one exec_id): what a process ran between a
// fork or execve and the next execve or its exit.
type image struct {
	id     string
	pid    uint32
	parent *image // the image it came from; nil for a root
	// parentID is the exec_id events named as the parent, kept even when
	// that image never appeared (the shim, lost events).
	parentID string
	fork     *event.Event // the fork that created this image (in the parent's stream)
	exec     *event.Event // the execve that started it; nil for a fork image
	exit     *event.Event
	start    time.Time
	first    uint64 // seq of the first event naming it

	next     []*image // images exec'd from it (same process)
	children []*image // processes forked from it
	proc     *process
}

// process is one pid's life in the tree: the image it was forked (or
// started) as and the images it exec'd after that, in order.
type process struct {
	images []*image
	parent *image // the image that forked it; nil for a root
	owner  owner
}

// top is the process's first image: the one its parent forked.
func (p *process) top() *image { return p.images[0] }

// execs returns the exec events of the process in order.
func (p *process) execs() []*event.Event {
	var out []*event.Event
	for _, im := range p.images {
		if im.exec != nil {
			out = append(out, im.exec)
		}
	}
	return out
}

// childProcs returns the processes forked from any image of p.
func (p *process) childProcs() []*process {
	var out []*process
	for _, im := range p.images {
		for _, c := range im.children {
			out = append(out, c.proc)
		}
	}
	return out
}

// exitEvent returns the process's exit event (carried by its last image).
func (p *process) exitEvent() *event.Event {
	for i := len(p.images) - 1; i >= 0; i-- {
		if p.images[i].exit != nil {
			return p.images[i].exit
		}
	}
	return nil
}

// tree is the image graph of a session.
type tree struct {
	images map[string]*image
	procs  []*process // in order of creation
}

// buildTree links every image named by the events (sorted by seq) to the
// image it came from: exec events name the pre-exec image of the same pid
// as parent, fork events name the child's first image.
func buildTree(events []*event.Event) *tree {
	t := &tree{images: map[string]*image{}}
	get := func(id string, pid uint32, e *event.Event) *image {
		im := t.images[id]
		if im == nil {
			im = &image{id: id, pid: pid, start: e.TS, first: e.Seq}
			t.images[id] = im
		}
		return im
	}
	for _, e := range events {
		if e.ExecID == "" {
			continue
		}
		im := get(e.ExecID, e.PID, e)
		if im.parentID == "" {
			im.parentID = e.ParentExecID
		}
		switch e.Kind {
		case event.KindFork:
			if e.ChildExecID != "" {
				c := get(e.ChildExecID, e.ChildPID, e)
				c.parentID = e.ExecID
				c.fork = e
				c.start = e.TS
			}
		case event.KindExec:
			if im.exec == nil {
				im.exec = e
				im.parentID = e.ParentExecID
			}
		case event.KindExit:
			im.exit = e
		}
	}

	ordered := make([]*image, 0, len(t.images))
	for _, im := range t.images {
		ordered = append(ordered, im)
	}
	sort.Slice(ordered, func(i, j int) bool {
		if ordered[i].first != ordered[j].first {
			return ordered[i].first < ordered[j].first
		}
		return ordered[i].id < ordered[j].id
	})
	for _, im := range ordered {
		p := t.images[im.parentID]
		if p == nil || p == im {
			continue
		}
		im.parent = p
		if im.exec != nil && im.fork == nil && p.pid == im.pid {
			p.next = append(p.next, im)
		} else {
			p.children = append(p.children, im)
		}
	}
	// Group images into processes: a process starts at an image that is
	// not the continuation of another image's execve.
	for _, im := range ordered {
		if im.proc != nil || (im.parent != nil && im.fork == nil && im.exec != nil && im.parent.pid == im.pid) {
			continue
		}
		p := &process{parent: im.parent}
		for cur := im; cur != nil; {
			cur.proc = p
			p.images = append(p.images, cur)
			if len(cur.next) == 0 {
				break
			}
			cur = cur.next[0]
			// A second execve from the same image cannot happen; if the
			// events say so anyway, the extra images start processes of
			// their own below.
		}
		t.procs = append(t.procs, p)
	}
	for _, im := range ordered {
		if im.proc == nil { // an extra exec continuation (see above)
			p := &process{parent: im.parent, images: []*image{im}}
			im.proc = p
			t.procs = append(t.procs, p)
		}
	}
	sort.SliceStable(t.procs, func(i, j int) bool { return t.procs[i].top().first < t.procs[j].top().first })
	return t
}

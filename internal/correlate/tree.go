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

	// wrapper caches whether exec is the agent's sandbox or snapshot
	// wrapper (execRole's roleTransparent): 0 not yet known, 1 yes, -1 no.
	// Every event of a call's process asks.
	wrapper int8
	text    *argvText // exec's argv for matching, once asked for
}

// argvText returns the texts of the image's exec argv (it has an exec).
func (im *image) argvText() *argvText {
	if im.text == nil {
		im.text = newArgvText(im.exec.Argv)
	}
	return im.text
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

// tree is the image graph of a session, built by add and link.
type tree struct {
	images map[string]*image
	procs  []*process // in order of creation
	last   *image     // the image add or imageOf found last
	// peers are the connect, net and dns events, in order: what tells
	// the model API apart, gathered on the way.
	peers []*event.Event
}

func newTree() *tree { return &tree{images: map[string]*image{}} }

// imageOf returns the image of e (nil for none). Events come in runs of
// one image: it looks the map up only when the run changes.
func (t *tree) imageOf(e *event.Event) *image {
	if t.last == nil || t.last.id != e.ExecID {
		t.last = t.images[e.ExecID]
	}
	return t.last
}

// get returns image id, made with e as its first event.
func (t *tree) get(id string, pid uint32, e *event.Event) *image {
	im := t.images[id]
	if im == nil {
		im = &image{id: id, pid: pid, start: e.TS, first: e.Seq}
		t.images[id] = im
	}
	return im
}

// add takes in the next event, in seq order, and returns its image (nil
// for an event without an exec_id). Exec events name the pre-exec image
// of the same pid as parent, fork events name the child's first image.
func (t *tree) add(e *event.Event) *image {
	if e.ExecID == "" {
		return nil
	}
	im := t.last
	if im == nil || im.id != e.ExecID {
		im = t.get(e.ExecID, e.PID, e)
		t.last = im
	}
	if im.parentID == "" {
		im.parentID = e.ParentExecID
	}
	switch e.Kind {
	case event.KindConnect, event.KindNet, event.KindDNS:
		t.peers = append(t.peers, e)
	case event.KindFork:
		if e.ChildExecID != "" {
			c := t.get(e.ChildExecID, e.ChildPID, e)
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
	return im
}

// link links every image added to the image it came from and groups them
// into processes.
func (t *tree) link() {
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
}

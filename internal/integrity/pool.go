package integrity

import (
	"context"
	"sync"
)

// Pool hashes execs off the recorder's event path. Submit only queues the
// request (a channel send, no system call). One opener goroutine opens
// each exec's files in arrival order, as soon as it can, so a file
// deleted a moment later can still be read; a bounded set of workers
// hashes and judges. Nothing blocks the recorder: a full request queue
// refuses the exec; a full hash queue has the opener judge an exec whose
// files are all in the hash cache on the spot (a stat and a few map
// lookups, no reading) and refuse any other. The workers run on threads
// of their own at a lower priority (lowerPriority): the traced command
// comes first.
type Pool struct {
	c       *Checker
	ctx     context.Context
	deliver func(Result)
	reqs    chan Request
	jobs    chan *opened
	opener  sync.WaitGroup
	workers sync.WaitGroup

	mu       sync.RWMutex
	closed   bool
	jobsDone sync.Once
}

// Start runs the opener and workers goroutines over queues of queue
// execs. deliver gets exactly one Result per submitted request, from a
// worker, the opener or, for a refused request, Submit's caller; it must
// be safe for concurrent use and should not block. When ctx ends, queued
// execs are delivered as unavailable without being hashed.
func (c *Checker) Start(ctx context.Context, workers, queue int, deliver func(Result)) *Pool {
	workers, queue = max(workers, 1), max(queue, 1)
	p := &Pool{c: c, ctx: ctx, deliver: deliver, reqs: make(chan Request, queue), jobs: make(chan *opened, queue)}
	p.opener.Add(1)
	go p.open()
	for range workers {
		p.workers.Add(1)
		go p.work()
	}
	return p
}

func (p *Pool) open() {
	defer p.opener.Done()
	for req := range p.reqs {
		o := p.c.open(req)
		select {
		case p.jobs <- o:
			continue
		default:
		}
		if r, ok := p.c.judgeCached(o); ok {
			p.deliver(r)
			continue
		}
		o.close()
		p.deliver(refuse(req, "hash queue full"))
	}
}

func (p *Pool) work() {
	defer p.workers.Done()
	lowerPriority()
	for o := range p.jobs {
		p.deliver(p.c.judge(p.ctx, o))
	}
}

// Submit queues req without blocking. It returns false when the exec
// will not be judged (the request queue is full or the pool closed); its
// unavailable Result has then already been delivered.
func (p *Pool) Submit(req Request) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.deliver(refuse(req, "integrity checking had stopped"))
		return false
	}
	select {
	case p.reqs <- req:
		return true
	default:
		p.deliver(refuse(req, "request queue full"))
		return false
	}
}

// refuse is the Result of an exec that will not be hashed.
func refuse(req Request, reason string) Result {
	return Result{ExecID: req.ExecID, PID: req.PID, Binary: unavailable(RoleBinary, req.Path, "", reason)}
}

// Close stops accepting execs, waits for the queued ones to be delivered
// and merges the session's sightings into the store (Checker.Flush).
func (p *Pool) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.reqs)
	}
	p.mu.Unlock()
	p.opener.Wait()
	p.jobsDone.Do(func() { close(p.jobs) })
	p.workers.Wait()
	return p.c.Flush()
}

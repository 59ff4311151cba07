package integrity

import (
	"context"
	"sync"
)

// Pool hashes execs off the recorder's event path: Submit opens the
// files (an open and a readlink, microseconds) and queues them; a bounded
// set of workers hashes and judges. A full queue never blocks the
// recorder: the exec is judged unavailable instead.
type Pool struct {
	c       *Checker
	ctx     context.Context
	deliver func(Result)
	jobs    chan *opened
	wg      sync.WaitGroup

	mu     sync.RWMutex
	closed bool
}

// Start runs workers goroutines over a queue of queue execs. deliver gets
// exactly one Result per submitted request, from a worker or, for a full
// queue or a closed pool, from Submit's caller; it must be safe for
// concurrent use and should not block. When ctx ends, queued execs are
// delivered as unavailable without being hashed.
func (c *Checker) Start(ctx context.Context, workers, queue int, deliver func(Result)) *Pool {
	if workers < 1 {
		workers = 1
	}
	if queue < 1 {
		queue = 1
	}
	p := &Pool{c: c, ctx: ctx, deliver: deliver, jobs: make(chan *opened, queue)}
	for range workers {
		p.wg.Add(1)
		go p.work()
	}
	return p
}

func (p *Pool) work() {
	defer p.wg.Done()
	for o := range p.jobs {
		p.deliver(p.c.judge(p.ctx, o))
	}
}

// Submit queues req. It returns false when the exec could not be queued
// (the queue is full or the pool closed); its unavailable Result has
// then already been delivered.
func (p *Pool) Submit(req Request) bool {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.deliver(p.refuse(req, "integrity checking had stopped"))
		return false
	}
	o := p.c.open(req)
	select {
	case p.jobs <- o:
		return true
	default:
		o.close()
		p.deliver(p.refuse(req, "hash queue full"))
		return false
	}
}

// refuse is the Result of an exec that will not be hashed.
func (p *Pool) refuse(req Request, reason string) Result {
	r := Result{ExecID: req.ExecID, PID: req.PID, Binary: unavailable(RoleBinary, req.Path, "", reason)}
	return r
}

// Close stops accepting execs, waits for the queued ones to be delivered
// and merges the session's sightings into the store (Checker.Flush).
func (p *Pool) Close() error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.jobs)
	}
	p.mu.Unlock()
	p.wg.Wait()
	return p.c.Flush()
}

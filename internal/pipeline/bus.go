// Package pipeline is the one way a session's events leave the sensor:
// a Bus hands each event to the session's record first (which numbers it)
// and then to every listener: exec integrity, the live analysis, the
// exporters and pages to come. Each queued listener has its own bounded
// queue and goroutine, so a slow or failed listener never stalls the
// recording or the others; what a full queue drops is counted for that
// listener (Lost) and said, never silent. The record itself is not a
// listener that may drop: what it cannot keep up with is the sensor's
// own, counted loss ("queue").
package pipeline

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// Listener takes a session's events in seq order, a batch at a time, on
// a goroutine of its own. Close follows the last batch, once.
type Listener interface {
	Events(batch []*event.Event)
	Close()
}

// Kinds is what a listener that wants only some kinds implements: the
// bus hands it those kinds only (nil: every kind).
type Kinds interface {
	Kinds() []event.Kind
}

// DefaultQueue is a queued listener's capacity in events when Attach is
// given none: about half a second of the highest rate the sensor
// delivered without loss on the bench (docs/bench.md), for 1 MiB of
// pointers.
const DefaultQueue = 1 << 17

// batchLen is how many events travel together: one channel operation
// per batch, not per event.
const batchLen = 256

// FlushEvery bounds how long an event waits in a partial batch before
// its listeners see it.
const FlushEvery = 20 * time.Millisecond

// Bus fans a session's events out. Publish is called from one goroutine
// (the sensor's sink); Attach, Flush, Lost and Close from any.
type Bus struct {
	record func(*event.Event)

	mu     sync.Mutex
	taps   []tap
	queues []*queue
	closed bool
	stop   chan struct{}
	ticker sync.WaitGroup
}

// tap is a listener called on the publishing goroutine: it must not
// block (integrity's submission, which has its own bounded pool).
type tap struct {
	name string
	fn   func(*event.Event)
}

// queue is one queued listener: the batch being filled, the channel to
// its goroutine and what was dropped.
type queue struct {
	name    string
	l       Listener
	kinds   []event.Kind // nil: all
	ch      chan []*event.Event
	cur     []*event.Event
	since   time.Time // when cur got its first event
	dropped atomic.Uint64
	done    chan struct{}
}

// New returns a bus whose every event goes to record first (the session
// writer's Add, which gives it its seq); record may be nil.
func New(record func(*event.Event)) *Bus {
	b := &Bus{record: record, stop: make(chan struct{})}
	b.ticker.Add(1)
	go func() {
		defer b.ticker.Done()
		t := time.NewTicker(FlushEvery)
		defer t.Stop()
		for {
			select {
			case <-b.stop:
				return
			case <-t.C:
				b.Flush()
			}
		}
	}()
	return b
}

// Tap adds fn, called with every event on the publishing goroutine right
// after the record: for listeners whose own submission never blocks.
func (b *Bus) Tap(name string, fn func(*event.Event)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.taps = append(b.taps, tap{name, fn})
}

// Attach adds a queued listener holding up to capacity events (0:
// DefaultQueue) on their way to it. A listener attached after events were
// published sees those that follow.
func (b *Bus) Attach(name string, l Listener, capacity int) {
	if capacity <= 0 {
		capacity = DefaultQueue
	}
	q := &queue{name: name, l: l, ch: make(chan []*event.Event, max(1, capacity/batchLen)), done: make(chan struct{})}
	if k, ok := l.(Kinds); ok {
		q.kinds = k.Kinds()
	}
	go func() {
		defer close(q.done)
		for batch := range q.ch {
			l.Events(batch)
		}
		l.Close()
	}()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		close(q.ch)
		return
	}
	b.queues = append(b.queues, q)
}

// Publish records ev and hands it to every listener. It never waits for
// a listener.
func (b *Bus) Publish(ev *event.Event) {
	if b.record != nil {
		b.record(ev)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	for _, t := range b.taps {
		t.fn(ev)
	}
	for _, q := range b.queues {
		if q.kinds != nil && !slices.Contains(q.kinds, ev.Kind) {
			continue
		}
		if len(q.cur) == 0 {
			q.since = time.Now()
		}
		q.cur = append(q.cur, ev)
		if len(q.cur) >= batchLen {
			q.send()
		}
	}
}

// send hands q's batch to its goroutine, or drops it when the queue is
// full. Called with the bus's lock held.
func (q *queue) send() {
	select {
	case q.ch <- q.cur:
	default:
		if q.dropped.Add(uint64(len(q.cur))) == uint64(len(q.cur)) {
			slog.Warn("pipeline: a listener cannot keep up; dropping its events (the record keeps them)", "listener", q.name)
		}
	}
	q.cur = make([]*event.Event, 0, batchLen)
}

// Flush hands every partial batch on; the bus does so by itself every
// FlushEvery.
func (b *Bus) Flush() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, q := range b.queues {
		if len(q.cur) > 0 {
			q.send()
		}
	}
}

// Lost returns, per queued listener, the events its full queue dropped.
func (b *Bus) Lost() map[string]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]uint64{}
	for _, q := range b.queues {
		if n := q.dropped.Load(); n > 0 {
			out[q.name] = n
		}
	}
	return out
}

// Close hands on the last partial batches, closes every queue and waits
// until each listener has taken what it holds and returned from Close.
// Publish after Close records the event and hands it to no listener.
func (b *Bus) Close() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	for _, q := range b.queues {
		if len(q.cur) > 0 {
			// The last batch waits for room: nothing is published after it.
			q.ch <- q.cur
			q.cur = nil
		}
		close(q.ch)
	}
	b.closed = true
	queues := b.queues
	b.mu.Unlock()
	close(b.stop)
	b.ticker.Wait()
	for _, q := range queues {
		<-q.done
	}
}

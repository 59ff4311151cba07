package pipeline

import (
	"sync"
	"testing"
	"time"

	"github.com/polygraph/polygraph/internal/event"
)

// collector keeps the seqs it was handed; block, while open, holds every
// batch up (a listener that cannot keep up).
type collector struct {
	mu     sync.Mutex
	seqs   []uint64
	block  chan struct{}
	closed bool
}

func (c *collector) Events(batch []*event.Event) {
	if c.block != nil {
		<-c.block
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range batch {
		c.seqs = append(c.seqs, e.Seq)
	}
}

func (c *collector) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
}

type execsOnly struct{ collector }

func (*execsOnly) Kinds() []event.Kind { return []event.Kind{event.KindExec} }

// TestBusSlowListenerStallsNothing: a listener that takes nothing loses
// what its queue cannot hold, counted; the record and a listener that
// keeps up get every event, in order, and publishing never waits.
func TestBusSlowListenerStallsNothing(t *testing.T) {
	var recorded []uint64
	seq := uint64(0)
	b := New(func(e *event.Event) {
		seq++
		e.Seq = seq
		recorded = append(recorded, e.Seq)
	})
	fast, slow := &collector{}, &collector{block: make(chan struct{})}
	execs := &execsOnly{}
	b.Attach("fast", fast, 0)
	b.Attach("slow", slow, 1024)
	b.Attach("execs", execs, 0)
	var tapped int
	b.Tap("count", func(*event.Event) { tapped++ })

	const n = 20000
	start := time.Now()
	for i := range n {
		k := event.KindOpen
		if i%100 == 0 {
			k = event.KindExec
		}
		b.Publish(event.New(k))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("publishing %d events took %s: a listener held the publisher up", n, d)
	}
	lost := b.Lost()["slow"]
	close(slow.block)
	b.Close()

	if len(recorded) != n || tapped != n {
		t.Fatalf("record got %d, tap %d, want %d", len(recorded), tapped, n)
	}
	if len(fast.seqs) != n || !fast.closed {
		t.Fatalf("fast listener got %d events (closed %v), want %d", len(fast.seqs), fast.closed, n)
	}
	for i, s := range fast.seqs {
		if s != uint64(i+1) {
			t.Fatalf("fast listener's event %d has seq %d: out of order", i, s)
		}
	}
	if len(execs.seqs) != n/100 {
		t.Errorf("exec-only listener got %d events, want %d", len(execs.seqs), n/100)
	}
	if lost == 0 {
		t.Fatal("the blocked listener lost nothing: its queue is not bounded")
	}
	if got := uint64(len(slow.seqs)) + b.Lost()["slow"]; got != n {
		t.Errorf("slow listener: %d kept + %d lost = %d, want %d: a loss went uncounted", len(slow.seqs), b.Lost()["slow"], got, n)
	}
	if _, ok := b.Lost()["fast"]; ok {
		t.Error("the listener that kept up is reported as losing events")
	}
}

// TestBusFlushesPartialBatches: an event alone in a batch reaches its
// listener within a few flush periods, without Close.
func TestBusFlushesPartialBatches(t *testing.T) {
	b := New(nil)
	defer b.Close()
	got := make(chan struct{}, 1)
	b.Attach("one", listenerFunc(func([]*event.Event) { got <- struct{}{} }), 0)
	b.Publish(event.New(event.KindExec))
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("a partial batch was never handed on")
	}
}

type listenerFunc func([]*event.Event)

func (f listenerFunc) Events(b []*event.Event) { f(b) }
func (listenerFunc) Close()                    {}

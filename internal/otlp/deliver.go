package otlp

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// Batching and retry.
const (
	// maxRequest bounds one request's body before compression: spooled
	// requests of one signal are sent together up to it (protobuf
	// messages concatenate: their resource lists append).
	maxRequest = 4 << 20
	// The wait between attempts grows from minBackoff to maxBackoff,
	// with jitter, or is what the backend's Retry-After says.
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// deliverer is the one goroutine that sends: it takes the oldest spooled
// requests, sends them, and retries with backoff while the backend is
// down, so Update never waits on the network.
type deliverer struct {
	sp  *spool
	snd *sender
	url string // named in what it logs
	log *slog.Logger

	wake chan struct{}
	stop chan struct{}
	done chan struct{}

	mu      sync.Mutex
	idle    *sync.Cond // broadcast when the spool empties or a send ends
	sending bool
	stats   Stats
	down    bool  // the backend did not answer the last attempt
	lastErr error // why
	logged  map[int]bool
}

func newDeliverer(sp *spool, snd *sender, url string, log *slog.Logger) *deliverer {
	if log == nil {
		log = slog.Default()
	}
	d := &deliverer{sp: sp, snd: snd, url: url, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{}), logged: map[int]bool{}}
	d.idle = sync.NewCond(&d.mu)
	return d
}

// poke wakes the sender: there is something new, or a flush wants it to
// try now rather than at the end of its backoff.
func (d *deliverer) poke() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// run sends until stop is closed.
func (d *deliverer) run() {
	defer close(d.done)
	backoff := time.Duration(0)
	for {
		items := d.sp.next(maxRequest)
		if len(items) == 0 {
			d.mu.Lock()
			d.idle.Broadcast()
			d.mu.Unlock()
			select {
			case <-d.stop:
				return
			case <-d.wake:
				continue
			}
		}
		err := d.send(items)
		var se *sendError
		if err == nil || !errors.As(err, &se) || !se.retry {
			backoff = 0
			continue
		}
		wait := se.retryAfter
		if wait == 0 {
			backoff = min(max(2*backoff, minBackoff), maxBackoff)
			wait = backoff/2 + rand.N(backoff/2+1) // jitter: fleets do not retry in step
		}
		t := time.NewTimer(wait)
		select {
		case <-d.stop:
			t.Stop()
			return
		case <-d.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// send sends one request made of items and settles them: delivered,
// refused for good (dropped, counted), or left for a retry.
func (d *deliverer) send(items []*item) error {
	sig := items[0].sig
	var body []byte
	n := 0
	var loaded []*item
	for _, it := range items {
		b, err := d.sp.load(it)
		if err != nil {
			// Unreadable (removed under us, disk error): nothing to retry.
			d.count(func(s *Stats) { s.counts(sig).Dropped += int64(it.n) })
			d.sp.done([]*item{it})
			continue
		}
		body = append(body, b...)
		n += it.n
		loaded = append(loaded, it)
	}
	if len(loaded) == 0 {
		return nil
	}
	d.mu.Lock()
	d.sending = true
	d.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	wire, rejected, err := d.snd.post(ctx, sig, body)
	stopped := ctx.Err() != nil
	cancel()

	d.mu.Lock()
	defer d.mu.Unlock()
	d.sending = false
	defer d.idle.Broadcast()
	if stopped && err != nil {
		return err // cut short by close: the items stay spooled, untouched
	}
	d.stats.Requests++
	d.stats.WireBytes += int64(wire)
	c := d.stats.counts(sig)
	var se *sendError
	switch {
	case err == nil:
		d.stats.Bytes += int64(len(body))
		delivered := 0
		for _, it := range loaded {
			if d.sp.contains(it) {
				delivered += it.n
			}
		}
		d.sp.done(loaded)
		c.Sent += int64(delivered) - rejected
		c.Dropped += rejected
		if rejected > 0 {
			d.lastErr = errors.New("the backend rejected part of a request (partial success)")
		}
		if d.down {
			d.log.Info("otlp: backend answering again", "endpoint", d.url)
			d.down = false
			d.sp.setDown(false)
		}
	case errors.As(err, &se) && se.retry:
		d.stats.Retries++
		d.lastErr = err
		if !d.down {
			// One line per outage, not one per attempt.
			d.log.Warn("otlp: backend not answering; data waits in the spool and is retried", "endpoint", d.url, "error", err)
			d.down = true
			d.sp.setDown(true)
		}
	default:
		// Refused for good (a bad request, a wrong path, no permission):
		// retrying sends the same bytes to the same answer.
		dropped := 0
		for _, it := range loaded {
			if d.sp.contains(it) {
				dropped += it.n
			}
		}
		d.sp.done(loaded)
		c.Dropped += int64(dropped)
		d.lastErr = err
		status := 0
		if se != nil {
			status = se.status
		}
		if !d.logged[status] {
			d.logged[status] = true
			d.log.Warn("otlp: backend refused data; dropped", "endpoint", d.url, "signal", sig.String(), "error", err)
		}
	}
	return err
}

func (d *deliverer) count(f func(*Stats)) {
	d.mu.Lock()
	f(&d.stats)
	d.mu.Unlock()
}

// flush waits until every spooled request was sent (or refused), or ctx
// ends. It pokes the sender so a backoff does not make it wait.
func (d *deliverer) flush(ctx context.Context) error {
	d.poke()
	stop := context.AfterFunc(ctx, func() {
		d.mu.Lock()
		d.idle.Broadcast()
		d.mu.Unlock()
	})
	defer stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	over := make(chan struct{})
	defer close(over)
	go func() {
		// While flushing, try again every second rather than waiting out
		// a long backoff: a backend that comes back is used at once.
		for {
			select {
			case <-ctx.Done():
				return
			case <-d.done:
				return
			case <-over:
				return
			case <-tick.C:
				d.poke()
			}
		}
	}()
	d.mu.Lock()
	defer d.mu.Unlock()
	for {
		t, l := d.sp.pending()
		if t == 0 && l == 0 && !d.sending {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		d.idle.Wait()
	}
}

// close stops the sender (a request under way is cancelled: its data
// stays spooled).
func (d *deliverer) close() {
	close(d.stop)
	<-d.done
}

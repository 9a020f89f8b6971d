package webhook

import (
	"context"
	"sync"
	"time"
)

// limiter spaces the sink's requests at most rate per second (no burst:
// any second holds at most rate+1 requests), and holds every request back
// until a time a receiver asked for with Retry-After.
type limiter struct {
	interval time.Duration // 0: no rate limit

	mu   sync.Mutex
	next time.Time // the earliest start of the next request by the rate
	hold time.Time // no request starts before it: the receiver asked so
}

func newLimiter(rate float64) *limiter {
	l := &limiter{}
	if rate > 0 {
		l.interval = time.Duration(float64(time.Second) / rate)
	}
	return l
}

// wait blocks until the caller may send a request, and takes its slot.
// A request whose slot has come goes at once, unless pace has ended: so a
// stop lets the requests to a healthy receiver that need not wait go on.
// Any wait, for the rate or for a hold the receiver asked for (a
// Retry-After on a 429 or 503), ends with stop: a batch that rate.limit
// spreads over minutes would otherwise run on after a stop request until
// the drain's deadline. The slot stays taken when the wait is cut short.
func (l *limiter) wait(pace, stop context.Context) error {
	l.mu.Lock()
	now := time.Now()
	at := now
	if l.hold.After(at) {
		at = l.hold
	}
	if l.next.After(at) {
		at = l.next
	}
	if l.interval > 0 {
		l.next = at.Add(l.interval)
	}
	l.mu.Unlock()
	if !at.After(now) {
		return pace.Err()
	}
	return sleep(stop, at.Sub(now))
}

// holdUntil makes every request wait until t.
func (l *limiter) holdUntil(t time.Time) {
	l.mu.Lock()
	if t.After(l.hold) {
		l.hold = t
	}
	l.mu.Unlock()
}

// sleep waits for d, or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

package engine

import (
	"context"
	"math/rand/v2"
	"time"
)

// backoff is exponential backoff with full jitter.
type backoff struct {
	initial, max time.Duration
	attempt      int
}

// next returns the wait before the next attempt: a random duration in
// [d/2, d] where d doubles from initial up to max.
func (b *backoff) next() time.Duration {
	d := b.initial << min(b.attempt, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (b *backoff) reset() { b.attempt = 0 }

// sleep waits d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

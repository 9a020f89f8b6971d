package httptrack

import (
	"sync"
	"time"
)

// limiter is a token bucket per write key: rate events per second, a burst
// of one second's worth (at least one batch may always pass a full
// bucket). A nil limiter, or one with rate 0, lets everything through.
type limiter struct {
	rate float64

	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(rate float64) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{rate: rate, buckets: make(map[string]*bucket)}
}

// take takes n events' worth of tokens for key at now. When there are not
// enough, it takes none and returns how long until there will be.
func (l *limiter) take(key string, n int, now time.Time) (time.Duration, bool) {
	if l == nil {
		return 0, true
	}
	burst := max(l.rate, 1)
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: burst, last: now}
		l.buckets[key] = b
	}
	if dt := now.Sub(b.last).Seconds(); dt > 0 {
		b.tokens = min(burst, b.tokens+dt*l.rate)
		b.last = now
	}
	// A request larger than the burst passes a full bucket and leaves it
	// in debt, so that it is not refused forever.
	need := min(float64(n), burst)
	if b.tokens < need {
		return time.Duration((need - b.tokens) / l.rate * float64(time.Second)), false
	}
	b.tokens -= float64(n)
	return 0, true
}

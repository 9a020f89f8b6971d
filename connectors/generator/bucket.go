package generator

import (
	"math"
	"time"
)

// bucket paces events at a fixed rate. It does not accumulate tokens tick
// by tick: the k-th event since a fixed start is due exactly at
// start + ceil(k/rate), and the number due is computed afresh from the time
// elapsed, so rounding errors never add up and the rate does not drift
// however long the source runs.
//
// A consumer that falls behind by more than burst events (the worker was
// paused, or cannot keep up) has the excess forgiven: those events are
// counted as given, and pacing continues from now without a flood.
type bucket struct {
	rate  float64 // events per second, > 0
	burst uint64  // most events owed at once, >= 1
	start time.Time
	given uint64 // events handed out or forgiven since start
}

// maxOwed bounds the events counted, far beyond anything a source reaches,
// so that the arithmetic cannot overflow.
const maxOwed = 1 << 62

func newBucket(rate float64, burst uint64, start time.Time) *bucket {
	return &bucket{rate: rate, burst: max(burst, 1), start: start}
}

// offset returns how long after start the k-th event is due: ceil(k/rate).
func (b *bucket) offset(k uint64) time.Duration {
	ns := math.Ceil(float64(k) * float64(time.Second) / b.rate)
	if ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}

// owed returns how many events are due by now since start, given or not:
// the largest k whose offset has passed.
func (b *bucket) owed(now time.Time) uint64 {
	elapsed := now.Sub(b.start)
	if elapsed <= 0 {
		return 0
	}
	guess := float64(elapsed) * b.rate / float64(time.Second)
	if guess >= maxOwed {
		return maxOwed
	}
	// The float estimate is off by at most one; settle it with offset, so
	// that owed and dueAt agree exactly.
	k := uint64(guess)
	for k > 0 && b.offset(k) > elapsed {
		k--
	}
	for k < maxOwed && b.offset(k+1) <= elapsed {
		k++
	}
	return k
}

// available returns how many events are due by now and not yet given, at
// most burst.
func (b *bucket) available(now time.Time) uint64 {
	owed := b.owed(now)
	if owed <= b.given {
		return 0
	}
	if n := owed - b.given; n > b.burst {
		b.given += n - b.burst
	}
	return owed - b.given
}

// take records that n events were handed out.
func (b *bucket) take(n uint64) { b.given += n }

// dueAt returns when the i-th event not yet given (from 0) is due.
func (b *bucket) dueAt(i uint64) time.Time {
	return b.start.Add(b.offset(b.given + i + 1))
}

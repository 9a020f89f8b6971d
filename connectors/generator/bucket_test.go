package generator

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestBucket_NoDrift reads at random moments over an hour of fake time and
// checks that the events handed out are exactly those due by the end.
func TestBucket_NoDrift(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for _, rate := range []float64{1000, 333.3, 0.7, 12345.678} {
		b := newBucket(rate, math.MaxUint64, t0)
		now := t0
		var total uint64
		for now.Sub(t0) < time.Hour {
			now = now.Add(time.Duration(r.Int64N(int64(200 * time.Millisecond))))
			n := b.available(now)
			b.take(n)
			total += n
		}
		if want := now.Sub(t0).Seconds() * rate; math.Abs(float64(total)-want) >= 1 {
			t.Errorf("rate %v: %d events in %v, want %.3f", rate, total, now.Sub(t0), want)
		}
	}
}

// TestBucket_DueAt checks that dueAt says exactly when available turns
// positive, so that Read neither wakes too early nor sleeps too long.
func TestBucket_DueAt(t *testing.T) {
	for _, rate := range []float64{1000, 3, 0.3, 333.3, 7777.77, 1e6} {
		b := newBucket(rate, 10, t0)
		for range 1000 {
			due := b.dueAt(0)
			if n := b.available(due.Add(-time.Nanosecond)); n != 0 {
				t.Fatalf("rate %v: %d available 1ns before the next is due at %v", rate, n, due.Sub(t0))
			}
			if n := b.available(due); n != 1 {
				t.Fatalf("rate %v: %d available when the next is due at %v, want 1", rate, n, due.Sub(t0))
			}
			if got, want := b.dueAt(1).Sub(due).Seconds(), 1/rate; math.Abs(got-want) > 2e-9 {
				t.Fatalf("rate %v: events %vs apart, want %vs", rate, got, want)
			}
			b.take(1)
		}
	}
}

func TestBucket_Burst(t *testing.T) {
	b := newBucket(1000, 500, t0)
	now := t0.Add(10 * time.Second)
	if n := b.available(now); n != 500 {
		t.Fatalf("available after a 10s pause = %d, want the burst of 500", n)
	}
	b.take(500)
	if n := b.available(now); n != 0 {
		t.Errorf("available right after the burst = %d, want 0", n)
	}
	if n := b.available(now.Add(time.Millisecond)); n != 1 {
		t.Errorf("available 1ms after the burst = %d, want 1", n)
	}
	if n := b.available(t0.Add(-time.Second)); n != 0 {
		t.Errorf("available before the start = %d, want 0", n)
	}
}

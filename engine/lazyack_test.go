package engine

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// lazySource is a durSource that reads a batch every 5 ms and says
// whether it acks lazily (connect.LazyAcker).
type lazySource struct {
	durSource
	lazy bool
}

var _ connect.LazyAcker = (*lazySource)(nil)

func (s *lazySource) AcksLazily() bool { return s.lazy }

func (s *lazySource) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-time.After(5 * time.Millisecond):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s.durSource.Read(ctx)
}

// TestSource_LazyAckerSkipsEagerStores reads batches one at a time, so the
// window is empty after each: an eager committer stores (and acks) each
// position, a lazy acker's positions are stored once per
// sourcePositionInterval; either way every batch hears Durable first and
// the last position is acked.
func TestSource_LazyAckerSkipsEagerStores(t *testing.T) {
	const batches = 40 // 5 ms apart: at least 200 ms, one position interval
	for _, tt := range []struct {
		name      string
		lazy      bool
		minStores int
		maxStores int
	}{
		{name: "eager", lazy: false, minStores: batches / 4, maxStores: batches},
		// At most one store per interval, one at the start and one after
		// the last batch; the bound grows when a loaded machine reads slower.
		{name: "lazy", lazy: true, minStores: 1, maxStores: -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stores atomic.Int32
			testHookBeforePositionStore = func(string, connect.Position) error {
				stores.Add(1)
				return nil
			}
			t.Cleanup(func() { testHookBeforePositionStore = nil })
			st := &durState{batches: batches}
			start := time.Now()
			startDurable(t, func() connect.Source { return &lazySource{durSource: durSource{st: st}, lazy: tt.lazy} })
			waitFor(t, "the last position to be acked", func() bool {
				_, _, events := st.snapshot()
				return slices.Contains(events, durEvent{run: 1, kind: "ack", n: batches})
			})
			elapsed := time.Since(start)
			_, _, events := st.snapshot()
			if tt.maxStores < 0 {
				tt.maxStores = min(batches/2, int(elapsed/sourcePositionInterval)+2)
			}
			if d, _ := checkDurableOrder(t, events, 1, true); d != batches {
				t.Errorf("last Durable %d, want %d", d, batches)
			}
			if n := int(stores.Load()); n < tt.minStores || n > tt.maxStores {
				t.Errorf("%d position stores for %d batches, want %d to %d", n, batches, tt.minStores, tt.maxStores)
			}
		})
	}
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// durEvent is one Durable or Ack call a durSource saw.
type durEvent struct {
	run  int    // which instance (1 for the first Open)
	kind string // "durable" or "ack"
	n    int    // the position's n
}

// durState is what the instances of a durSource share with the test.
type durState struct {
	batches int           // how many batches each instance reads, one positioned record each
	gate    chan struct{} // when set, reads after the first wait for it
	inCall  atomic.Bool   // a Durable or Ack call is running
	overlap atomic.Bool   // two calls ran at once

	mu        sync.Mutex
	opens     int
	positions []string // cfg.Position at each Open
	events    []durEvent
}

func (st *durState) snapshot() (opens int, positions []string, events []durEvent) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.opens, slices.Clone(st.positions), slices.Clone(st.events)
}

// durSource implements connect.DurableNotifier and records its Durable and
// Ack calls.
type durSource struct {
	st    *durState
	run   int
	reads int
}

var _ connect.DurableNotifier = (*durSource)(nil)

func (s *durSource) Open(ctx context.Context, cfg connect.Config) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.opens++
	s.run = s.st.opens
	s.st.positions = append(s.st.positions, string(cfg.Position))
	return nil
}

func (s *durSource) Read(ctx context.Context) ([]connect.Record, error) {
	s.reads++
	if s.reads > s.st.batches {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if s.reads > 1 && s.st.gate != nil {
		select {
		case <-s.st.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	n := s.reads
	return []connect.Record{{Key: fmt.Appendf(nil, "k%d", n), Value: fmt.Appendf(nil, `{"seq":%d}`, n), Position: fmt.Appendf(nil, `{"n":%d}`, n)}}, nil
}

func (s *durSource) note(kind string, pos connect.Position) error {
	if !s.st.inCall.CompareAndSwap(false, true) {
		s.st.overlap.Store(true)
	}
	defer s.st.inCall.Store(false)
	var p struct{ N int }
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.events = append(s.st.events, durEvent{run: s.run, kind: kind, n: p.N})
	return nil
}

func (s *durSource) Durable(ctx context.Context, pos connect.Position) error {
	return s.note("durable", pos)
}

func (s *durSource) Ack(ctx context.Context, pos connect.Position) error {
	return s.note("ack", pos)
}

func (s *durSource) Close(ctx context.Context) error { return nil }

// durTailSource is a durSource that also implements connect.TailRecoverer.
type durTailSource struct{ durSource }

var _ connect.TailRecoverer = (*durTailSource)(nil)

func (s *durTailSource) TailTopics() []string { return []string{""} }

func (s *durTailSource) RecoverTail(ctx context.Context, recs []connect.Record) error { return nil }

// startDurable runs a worker on an embedded log with one source connector
// "src" made by newSource.
func startDurable(t *testing.T, newSource func() connect.Source) *Worker {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b := NewEmbedded(l, logger)
	ctx := t.Context()
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "dursrc", Kind: connect.KindSource, Version: "test", NewSource: newSource})
	w, err := NewWorker(ctx, Options{Backend: b, Connectors: reg, Logger: logger,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	})
	if err := w.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "dursrc", Topic: "dur"}, ""); err != nil {
		t.Fatal(err)
	}
	return w
}

// checkDurableOrder checks the calls of one instance: Durable and Ack
// each in increasing order, and each Ack(n) after a Durable(m ≥ n) when
// needDurable; it returns the last Durable and Ack positions (0: none).
func checkDurableOrder(t *testing.T, events []durEvent, run int, needDurable bool) (lastDurable, lastAck int) {
	t.Helper()
	for _, e := range events {
		if e.run != run {
			continue
		}
		switch e.kind {
		case "durable":
			if e.n <= lastDurable {
				t.Errorf("run %d: Durable(%d) after Durable(%d): not in order (calls %v)", run, e.n, lastDurable, events)
			}
			lastDurable = e.n
		case "ack":
			if e.n <= lastAck {
				t.Errorf("run %d: Ack(%d) after Ack(%d): not in order (calls %v)", run, e.n, lastAck, events)
			}
			if needDurable && lastDurable < e.n {
				t.Errorf("run %d: Ack(%d) before Durable of a position at or after it (last Durable %d; calls %v)", run, e.n, lastDurable, events)
			}
			lastAck = e.n
		}
	}
	return lastDurable, lastAck
}

// TestSource_DurableBeforeAck checks that a DurableNotifier hears of every
// durable position before it is acked, in order, never concurrently with
// Ack, and that the last position is announced and acked.
func TestSource_DurableBeforeAck(t *testing.T) {
	const batches = 200
	st := &durState{batches: batches}
	startDurable(t, func() connect.Source { return &durSource{st: st} })
	waitFor(t, "the last position to be acked", func() bool {
		_, _, events := st.snapshot()
		return len(events) > 0 && events[len(events)-1] == durEvent{run: 1, kind: "ack", n: batches}
	})
	opens, _, events := st.snapshot()
	if opens != 1 {
		t.Fatalf("source opened %d times, want 1 (calls %v)", opens, events)
	}
	if d, a := checkDurableOrder(t, events, 1, true); d != batches || a != batches {
		t.Errorf("last Durable %d, last Ack %d; want %d and %d", d, a, batches, batches)
	}
	if st.overlap.Load() {
		t.Error("Durable and Ack ran concurrently")
	}
}

// TestSource_DurableBeforePositionStore blocks the position store of the
// first batch, as a slow offsets topic would: Durable still arrives and
// Ack does not. The store then fails, as a crash there would leave it:
// the position was never acked nor stored, and the restarted task starts
// from nothing.
func TestSource_DurableBeforePositionStore(t *testing.T) {
	st := &durState{batches: 1}
	release := make(chan struct{})
	var crashed sync.Once
	crash := errors.New("simulated crash between the append and the position store")
	testHookBeforePositionStore = func(connector string, pos connect.Position) error {
		var err error
		crashed.Do(func() {
			<-release
			err = crash
		})
		return err
	}
	t.Cleanup(func() { testHookBeforePositionStore = nil })
	defer close(release) // stops the hook if the test fails before
	startDurable(t, func() connect.Source { return &durSource{st: st} })

	waitFor(t, "Durable of the first batch", func() bool {
		_, _, events := st.snapshot()
		return len(events) > 0
	})
	// The committer that calls Ack is the one blocked in the store: no
	// Ack can come until the hook returns.
	_, _, events := st.snapshot()
	if want := []durEvent{{run: 1, kind: "durable", n: 1}}; !slices.Equal(events, want) {
		t.Fatalf("calls while the position store is blocked: %v, want %v", events, want)
	}
	release <- struct{}{} // the hook returns its error: the task fails

	waitFor(t, "the restarted task to ack", func() bool {
		_, _, events := st.snapshot()
		return slices.Contains(events, durEvent{run: 2, kind: "ack", n: 1})
	})
	_, positions, events := st.snapshot()
	if len(positions) < 2 || positions[0] != "" || positions[1] != "" {
		t.Fatalf("positions at Open %q: want none twice (the first store failed)", positions)
	}
	for _, e := range events {
		if e.run == 1 && e.kind == "ack" {
			t.Fatalf("the failed task acked %d although its position store failed (calls %v)", e.n, events)
		}
	}
	checkDurableOrder(t, events, 2, true)
}

// TestSource_DurableWithTailRecoverer checks that a source that also
// recovers its tail hears of durable records only once a position with
// the log offsets is stored: on a first start, the first batch is acked
// without a Durable (a crash before that store would leave no tail to hand
// over), the later ones are announced before their Ack.
func TestSource_DurableWithTailRecoverer(t *testing.T) {
	st := &durState{batches: 3, gate: make(chan struct{})}
	startDurable(t, func() connect.Source { return &durTailSource{durSource{st: st}} })
	waitFor(t, "the first ack", func() bool {
		_, _, events := st.snapshot()
		return len(events) > 0
	})
	close(st.gate)
	waitFor(t, "the last position to be acked", func() bool {
		_, _, events := st.snapshot()
		return slices.Contains(events, durEvent{run: 1, kind: "ack", n: 3})
	})
	_, _, events := st.snapshot()
	if events[0] != (durEvent{run: 1, kind: "ack", n: 1}) {
		t.Fatalf("first call %v, want Ack(1) with no Durable before the first store (calls %v)", events[0], events)
	}
	if d, _ := checkDurableOrder(t, events[1:], 1, true); d != 3 {
		t.Errorf("last Durable %d, want 3 (calls %v)", d, events)
	}
}

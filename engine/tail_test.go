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
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// tailState is what the instances of a tailSource share with the test.
type tailState struct {
	mu        sync.Mutex
	opens     int
	positions []string         // cfg.Position at each Open
	recovered []connect.Record // every record handed to RecoverTail
	acked     int
	reads     int // Read calls of the latest instance
	ackedA    chan struct{}
	midDone   chan struct{}
}

// tailSource writes two batches on its first run: A (seq 1..10, the
// position on 8), then, once A's position is acked and the test has appended other writers'
// records, B (seq 11..20). Later runs only wait: they exist to be handed
// the tail.
type tailSource struct {
	st    *tailState
	first bool
	reads int
}

var _ connect.TailRecoverer = (*tailSource)(nil)

func (s *tailSource) Open(ctx context.Context, cfg connect.Config) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.opens++
	s.st.reads = 0
	s.st.positions = append(s.st.positions, string(cfg.Position))
	s.first = cfg.Position == nil
	return nil
}

func (s *tailSource) TailTopics() []string { return []string{"tail"} }

func (s *tailSource) RecoverTail(ctx context.Context, recs []connect.Record) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	for _, r := range recs {
		s.st.recovered = append(s.st.recovered, r.Clone())
	}
	return nil
}

// seqBatch returns records seq from..to, the one at posAt carrying the
// position.
func seqBatch(from, to, posAt int) []connect.Record {
	var out []connect.Record
	for n := from; n <= to; n++ {
		r := connect.Record{Key: fmt.Appendf(nil, "k%d", n), Value: fmt.Appendf(nil, `{"seq":%d}`, n)}
		if n == posAt {
			r.Position = fmt.Appendf(nil, `{"n":%d}`, n)
		}
		out = append(out, r)
	}
	return out
}

func (s *tailSource) Read(ctx context.Context) ([]connect.Record, error) {
	s.st.mu.Lock()
	s.st.reads++
	s.st.mu.Unlock()
	s.reads++
	switch {
	case s.first && s.reads == 1:
		return seqBatch(1, 10, 8), nil // 9 and 10 come after the position
	case s.first && s.reads == 2:
		for _, ch := range []chan struct{}{s.st.ackedA, s.st.midDone} {
			select {
			case <-ch:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return seqBatch(11, 20, 20), nil
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

func (s *tailSource) Ack(ctx context.Context, pos connect.Position) error {
	var p struct{ N int }
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	if s.st.acked < 8 && p.N >= 8 {
		close(s.st.ackedA)
	}
	s.st.acked = max(s.st.acked, p.N)
	return nil
}

func (s *tailSource) Close(ctx context.Context) error { return nil }

// TestSource_TailRecoverer_CrashBeforePositionStore appends batch B and
// fails the task just before B's position is stored, as a crash there
// would leave it. The restarted task must hand the source exactly the
// records after the offsets stored with A's position (seq 8): seq 9 and 10
// (appended with A, after its position), B, and what another writer
// appended after A; not seq 1..8, nor what others wrote before the task
// first started.
func TestSource_TailRecoverer_CrashBeforePositionStore(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := NewEmbedded(l, logger)
	ctx := t.Context()
	if err := b.EnsureTopic(ctx, "tail", 2, nil); err != nil {
		t.Fatal(err)
	}
	other := func(from, to int) {
		t.Helper()
		var recs []connect.Record
		for n := from; n <= to; n++ {
			recs = append(recs, connect.Record{Topic: "tail", Key: fmt.Appendf(nil, "o%d", n), Value: fmt.Appendf(nil, `{"other":%d}`, n)})
		}
		if err := b.Produce(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	other(1, 3) // before the task ever ran: never part of its tail

	st := &tailState{ackedA: make(chan struct{}), midDone: make(chan struct{})}
	var crashed sync.Once
	crash := errors.New("simulated crash between the append and the position store")
	testHookBeforePositionStore = func(connector string, pos connect.Position) error {
		if string(pos) != `{"n":20}` {
			return nil
		}
		err := error(nil)
		crashed.Do(func() { err = crash })
		return err
	}
	t.Cleanup(func() { testHookBeforePositionStore = nil })

	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "tailsrc", Kind: connect.KindSource, Version: "test",
		NewSource: func() connect.Source { return &tailSource{st: st} }})
	w, err := NewWorker(ctx, Options{Backend: b, Connectors: reg, Logger: logger,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	}()
	if err := w.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "tailsrc", Topic: "tail"}, ""); err != nil {
		t.Fatal(err)
	}
	<-st.ackedA
	// After A's position (and its offsets) were stored, the topic grows a
	// partition: its records, the other writer's and B's, are tail too,
	// though the stored offsets do not name it.
	if err := l.CreatePartitions("tail", 3); err != nil {
		t.Fatal(err)
	}
	other(4, 7)
	close(st.midDone)

	waitFor(t, "the restarted task to read", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.opens >= 2 && st.reads > 0
	})
	st.mu.Lock()
	positions, recovered, opens := slices.Clone(st.positions), slices.Clone(st.recovered), st.opens
	st.mu.Unlock()
	if opens != 2 || positions[0] != "" || positions[1] != `{"n":8}` {
		t.Fatalf("opens %d with positions %q; want 2: none, then {\"n\":8}", opens, positions)
	}

	var got []string
	last := map[int32]int64{}
	inNew := 0
	for _, r := range recovered {
		if r.Partition == 2 {
			inNew++
		}
		got = append(got, string(r.Value))
		if r.Topic != "tail" {
			t.Errorf("recovered record %s has topic %q", r.Value, r.Topic)
		}
		if prev, ok := last[r.Partition]; ok && r.Offset <= prev {
			t.Errorf("partition %d: offset %d after %d", r.Partition, r.Offset, prev)
		}
		last[r.Partition] = r.Offset
	}
	var want []string
	for n := 4; n <= 7; n++ {
		want = append(want, fmt.Sprintf(`{"other":%d}`, n))
	}
	for n := 9; n <= 20; n++ {
		want = append(want, fmt.Sprintf(`{"seq":%d}`, n))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("recovered tail:\n got %q\nwant %q", got, want)
	}
	if inNew == 0 {
		t.Fatal("no recovered record was in the partition added after the stored offsets: the test does not cover it")
	}
	// The records really are in the log: B was durable, only its
	// position was not stored.
	if pos := w.offsets.Get("", "src"); string(pos) != `{"n":8}` {
		t.Fatalf("stored position %s, want {\"n\":8}", pos)
	}
}

// TestOffsetStore_Tail checks that the tail header is stored and loaded,
// and that a position without one (an older worker's, or one set through
// the REST API) loads with no tail.
func TestOffsetStore_Tail(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	dir := t.TempDir()
	open := func() (*tlog.Log, *OffsetStore) {
		t.Helper()
		l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		s, err := OpenOffsetStore(t.Context(), NewEmbedded(l, logger))
		if err != nil {
			l.Close()
			t.Fatal(err)
		}
		return l, s
	}
	tail := []PartitionOffset{{Topic: "a", Partition: 0, Offset: 5}, {Topic: "a", Partition: 1, Offset: 0}}
	l, s := open()
	if err := s.Put(t.Context(), "p", "old", connect.Position(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWithTail(t.Context(), "p", "new", connect.Position(`{"n":2}`), tail); err != nil {
		t.Fatal(err)
	}
	if err := s.PutWithTail(t.Context(), "p", "moved", connect.Position(`{"n":3}`), tail); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "p", "moved", connect.Position(`{"n":4}`)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l, s = open()
	defer l.Close()
	if got := s.Tail("p", "old"); got != nil || string(s.Get("p", "old")) != `{"n":1}` {
		t.Errorf("old: position %s, tail %v; want {\"n\":1} and none", s.Get("p", "old"), got)
	}
	if got := s.Tail("p", "new"); !slices.Equal(got, tail) || string(s.Get("p", "new")) != `{"n":2}` {
		t.Errorf("new: position %s, tail %v; want {\"n\":2} and %v", s.Get("p", "new"), got, tail)
	}
	if got := s.Tail("p", "moved"); got != nil || string(s.Get("p", "moved")) != `{"n":4}` {
		t.Errorf("moved: position %s, tail %v; want {\"n\":4} and none (a later position without a tail)", s.Get("p", "moved"), got)
	}
}

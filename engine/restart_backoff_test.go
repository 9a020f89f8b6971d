package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// flappySource fails Open failOpens times, then reads nothing for runFor
// and fails Read; it records when each Open began and the Read failed.
type flappySource struct{ st *flappyState }

type flappyState struct {
	runFor time.Duration

	mu        sync.Mutex
	failOpens int
	opens     []time.Time
	readFail  time.Time // when the healthy run failed
	running   time.Time // when the healthy run began
}

func (s *flappySource) Open(ctx context.Context, cfg connect.Config) error {
	s.st.mu.Lock()
	defer s.st.mu.Unlock()
	s.st.opens = append(s.st.opens, time.Now())
	if s.st.failOpens > 0 {
		s.st.failOpens--
		return errors.New("connection refused")
	}
	if s.st.running.IsZero() {
		s.st.running = time.Now()
	}
	return nil
}

func (s *flappySource) Read(ctx context.Context) ([]connect.Record, error) {
	s.st.mu.Lock()
	until, failed := s.st.running.Add(s.st.runFor), !s.st.readFail.IsZero()
	s.st.mu.Unlock()
	if failed {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(time.Until(until)):
	}
	s.st.mu.Lock()
	s.st.readFail = time.Now()
	s.st.mu.Unlock()
	return nil, errors.New("connection lost")
}

func (s *flappySource) Ack(context.Context, connect.Position) error { return nil }
func (s *flappySource) Close(context.Context) error                 { return nil }

// A failure after the task ran for at least the longest backoff starts a
// new series: the restart comes after the shortest wait, not after the
// longest one that the earlier failures in a row had reached.
func TestWorker_RestartBackoffStartsAgainAfterAHealthyRun(t *testing.T) {
	const initial, max = 5 * time.Millisecond, 300 * time.Millisecond
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	st := &flappyState{failOpens: 8, runFor: max + 100*time.Millisecond}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "flappy", Kind: connect.KindSource, Version: "test",
		NewSource: func() connect.Source { return &flappySource{st: st} }})
	w, err := NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Connectors: reg, Logger: logger,
		RestartBackoffInitial: initial, RestartBackoffMax: max})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	if err := w.Start(t.Context(), ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "flappy", Topic: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the open after the healthy run failed", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return len(st.opens) == 10
	})
	st.mu.Lock()
	defer st.mu.Unlock()
	// The eight failures in a row reached the longest wait: at least max/2.
	if gap := st.opens[8].Sub(st.opens[7]); gap < max/2 {
		t.Fatalf("wait after 8 failures in a row %v, want at least %v", gap, max/2)
	}
	// After the healthy run, the shortest wait (at most initial, plus
	// scheduling) instead of one between max/2 and max.
	if gap := st.opens[9].Sub(st.readFail); gap >= max/2 {
		t.Fatalf("restart %v after a failure that followed a healthy run of %v, want the shortest backoff (%v)", gap, st.runFor, initial)
	}
}

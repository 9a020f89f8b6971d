package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// dropOnFailSink is a Flusher whose Flush, when it fails, drops what it
// buffered (a failed upload discards its part file): the task fails, and
// per connect.Flusher the records not covered by a successful Flush are
// not committed and are written again after the restart.
type dropOnFailSink struct {
	mu               *sync.Mutex
	pending, durable *[]connect.Record
	flushes          *int
}

func (s *dropOnFailSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *dropOnFailSink) Write(ctx context.Context, recs []connect.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		*s.pending = append(*s.pending, r.Clone())
	}
	return nil
}
func (s *dropOnFailSink) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.flushes++
	if *s.flushes == 1 {
		*s.pending = nil // the upload failed: its buffer is gone
		return errors.New("upload failed")
	}
	*s.durable = append(*s.durable, *s.pending...)
	*s.pending = nil
	return nil
}
func (s *dropOnFailSink) Close(ctx context.Context) error { return nil }

// After a Flush fails, the worker must not commit the offsets of the
// records that Flush was to make durable: the task fails and they are to
// be written again. deliver's deferred final flush calls Flush a second
// time on the way out and commits them when it succeeds, so records the
// sink never made durable are skipped for good.
func TestReviewEng_FailedFlushIsNotCommittedByTheFinalFlush(t *testing.T) {
	old := flushInterval
	flushInterval = 100 * time.Millisecond
	defer func() { flushInterval = old }()
	h := newHarness(t, t.TempDir())
	var pending, durable []connect.Record
	flushes := 0
	h.worker.Registry().MustRegister(connect.Connector{Name: "drop", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink {
			return &dropOnFailSink{mu: &h.mu, pending: &pending, durable: &durable, flushes: &flushes}
		}})
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]tlog.Record, 50)
	for i := range recs {
		recs[i] = tlog.Record{Value: []byte{byte('a' + i%26)}}
	}
	if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "lake", Kind: connect.KindSink, Connector: "drop", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
	// Every record must become durable in the end: after the failed
	// flush the task restarts and writes them again.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		n := len(durable)
		h.mu.Unlock()
		if n == 50 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	off, _ := h.log.Groups().CommittedOffset("lake", "in", 0)
	h.mu.Lock()
	defer h.mu.Unlock()
	t.Fatalf("%d of 50 records durable after %d flushes, yet the group committed offset %d: the records of the failed flush are lost", len(durable), flushes, off)
}

// keep the imports used by later tests in this file
var (
	_ = errors.New
	_ sync.Mutex
	_ atomic.Int32
	_ = time.Second
	_ context.Context
)

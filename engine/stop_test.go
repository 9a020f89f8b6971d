package engine

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// downSink fails every Write with a retryable error until up is set, then
// keeps what it is given.
type downSink struct {
	up     *atomic.Bool
	writes *atomic.Int32
	got    *atomic.Int32
}

func (s *downSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *downSink) Write(ctx context.Context, recs []connect.Record) error {
	s.writes.Add(1)
	if !s.up.Load() {
		return connect.Retryable(errors.New("receiver down"))
	}
	s.got.Add(int32(len(recs)))
	return nil
}
func (s *downSink) Close(ctx context.Context) error { return nil }

// TestWorker_StopEndsTheWorkersRetryWait: a stop during the worker's own
// backoff between retried Writes returns at once, commits nothing, and is
// not a task failure; after a resume the batch is delivered.
func TestWorker_StopEndsTheWorkersRetryWait(t *testing.T) {
	h := newHarness(t, t.TempDir())
	var up atomic.Bool
	var writes, got atomic.Int32
	h.worker.Registry().MustRegister(connect.Connector{Name: "down", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &downSink{up: &up, writes: &writes, got: &got} }})
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]tlog.Record, 10)
	for i := range recs {
		recs[i] = tlog.Record{Value: []byte(strconv.Itoa(i))}
	}
	if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	spec := ConnectorSpec{Name: "hook", Kind: connect.KindSink, Connector: "down", Topics: []string{"in"},
		Errors: ErrorPolicy{Retries: -1, BackoffInitial: 10 * time.Second, BackoffMax: 10 * time.Second}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a failed write", func() bool { return writes.Load() >= 1 })
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	start := time.Now()
	if err := h.worker.Stop(sctx, "hook"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop took %s", d)
	}
	if off, ok := h.log.Groups().CommittedOffset("hook", "in", 0); ok && off > 0 {
		t.Errorf("offset %d committed, nothing was delivered", off)
	}
	mfs, err := h.worker.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			if mf.GetName() == "tributary_connector_task_failures_total" && m.GetCounter().GetValue() != 0 {
				t.Errorf("%v task failures counted for a stop", m.GetCounter().GetValue())
			}
		}
	}
	up.Store(true)
	if err := h.worker.Resume("hook"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "delivery and commit after the resume", func() bool {
		off, ok := h.log.Groups().CommittedOffset("hook", "in", 0)
		return ok && off == 10 && got.Load() >= 10
	})
}

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

// renameTopic is a sink-side transform that routes every record to
// another topic, as Kafka's RegexRouter does in front of a JDBC sink
// (topic → table name).
type renameTopic struct{ to string }

func (t renameTopic) Apply(r connect.Record) ([]connect.Record, error) {
	r.Topic = t.to
	r.Value = append([]byte(nil), r.Value...)
	return []connect.Record{r}, nil
}

// A record the sink refuses (TASK_PUT) after a transform that changed its
// topic is dead-lettered with __connect.errors.topic naming the topic it
// was read from, as Kafka Connect's DeadLetterQueueReporter does (it uses
// the original consumer record) and as docs/pipelines.md promises
// ("headers naming the original topic, partition, offset").
func TestReviewEng_DeadLetterHeadersNameTheTopicReadAfterASinkTransform(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	h.worker.opts.Transforms = func(typ string, cfg map[string]string) (Transformer, error) {
		return renameTopic{to: "orders_table"}, nil
	}
	if err := h.log.CreateTopic("cdc.public.orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.Append(ctx, "cdc.public.orders", 0, []tlog.Record{{Value: []byte(`"ok"`)}, {Value: []byte(`"poison"`)}}); err != nil {
		t.Fatal(err)
	}
	spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"cdc.public.orders"},
		Transforms: []TransformSpec{{Type: "route", Config: map[string]string{}}},
		Errors:     ErrorPolicy{Tolerance: "all", DeadLetterTopic: "dlq"}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a dead letter", func() bool {
		_, end, err := h.log.Offsets("dlq", 0)
		return err == nil && end >= 1
	})
	res, err := h.log.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hdr := map[string]string{}
	for _, hh := range res.Records[0].Headers {
		hdr[hh.Key] = string(hh.Value)
	}
	if got := hdr["__connect.errors.topic"]; got != "cdc.public.orders" {
		t.Errorf("__connect.errors.topic = %q, want the topic the record was read from, cdc.public.orders", got)
	}
	if got := hdr["__connect.errors.offset"]; got != "1" {
		t.Errorf("__connect.errors.offset = %q, want 1", got)
	}
}

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

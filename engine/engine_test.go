package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// countSource emits {"n":N} records, N from 1, with position {"n":N}.
type countSource struct {
	next, max int
	acked     *[]int
	mu        *sync.Mutex
}

func (s *countSource) Open(ctx context.Context, cfg connect.Config) error {
	s.next = 1
	if cfg.Position != nil {
		var p struct{ N int }
		if err := json.Unmarshal(cfg.Position, &p); err != nil {
			return err
		}
		s.next = p.N + 1
	}
	max, _ := cfg.Int("max")
	s.max = int(max)
	return nil
}

func (s *countSource) Read(ctx context.Context) ([]connect.Record, error) {
	if s.next > s.max {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
			return nil, nil
		}
	}
	var out []connect.Record
	for i := 0; i < 10 && s.next <= s.max; i++ {
		v := fmt.Sprintf(`{"n":%d}`, s.next)
		out = append(out, connect.Record{Key: []byte(strconv.Itoa(s.next % 7)), Value: []byte(v), Position: connect.Position(v)})
		s.next++
	}
	return out, nil
}

func (s *countSource) Ack(ctx context.Context, pos connect.Position) error {
	var p struct{ N int }
	_ = json.Unmarshal(pos, &p)
	s.mu.Lock()
	*s.acked = append(*s.acked, p.N)
	s.mu.Unlock()
	return nil
}

func (s *countSource) Close(ctx context.Context) error { return nil }

func (s *countSource) Report() connect.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	return connect.Report{Phase: "counting", Progress: []connect.Progress{{Name: "numbers", Done: int64(len(*s.acked)), Total: int64(s.max), Unit: "batches"}},
		Gauges: map[string]float64{"backlog_records": 3}}
}

// memSink collects values; values containing "poison" fail as bad records.
type memSink struct {
	mu   *sync.Mutex
	got  *[]connect.Record
	fail *int // fail the next N writes with a retryable error
}

func (s *memSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *memSink) Write(ctx context.Context, recs []connect.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *s.fail > 0 {
		*s.fail--
		return connect.Retryable(errors.New("receiver busy"))
	}
	for i, r := range recs {
		if string(r.Value) == `"poison"` {
			return connect.BadRecordAt(i, errors.New("cannot deliver poison"))
		}
		*s.got = append(*s.got, r.Clone())
	}
	return nil
}
func (s *memSink) Close(ctx context.Context) error { return nil }

type harness struct {
	log    *tlog.Log
	worker *Worker
	mu     sync.Mutex
	acked  []int
	got    []connect.Record
	fail   int
}

func newHarness(t *testing.T, dir string) *harness {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger, NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{log: l}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "count", Kind: connect.KindSource, Version: "test",
		Spec:      connect.Spec{Params: []connect.Param{{Name: "max", Type: connect.TypeInt, Default: "100", Description: "how many"}}},
		NewSource: func() connect.Source { return &countSource{acked: &h.acked, mu: &h.mu} }})
	reg.MustRegister(connect.Connector{Name: "mem", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &memSink{mu: &h.mu, got: &h.got, fail: &h.fail} }})
	w, err := NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Connectors: reg, Logger: logger,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h.worker = w
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	return h
}

func (h *harness) received() []connect.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]connect.Record(nil), h.got...)
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWorker_SourceToSink_EndToEnd(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers", Config: map[string]string{"max": "200"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "200 records at the sink", func() bool { return len(h.received()) >= 200 })
	seen := map[string]bool{}
	for _, r := range h.received() {
		seen[string(r.Value)] = true
	}
	for n := 1; n <= 200; n++ {
		if !seen[fmt.Sprintf(`{"n":%d}`, n)] {
			t.Fatalf("record %d never reached the sink", n)
		}
	}
	// The source position is stored and acked.
	waitFor(t, "ack of 200", func() bool {
		h.mu.Lock()
		defer h.mu.Unlock()
		return len(h.acked) > 0 && h.acked[len(h.acked)-1] == 200
	})
	offs, err := h.worker.Offsets(ctx, "src")
	if err != nil || len(offs) != 1 {
		t.Fatalf("source offsets = %v, %v", offs, err)
	}
	// The sink group committed to the end.
	waitFor(t, "group lag 0", func() bool {
		lags, err := h.log.Groups().Describe("dst")
		if err != nil {
			return false
		}
		for _, l := range lags {
			if l.Lag != 0 {
				return false
			}
		}
		return len(lags) == 3 // every partition of the auto-created topic
	})
	st, _ := h.worker.Status("dst")
	if st.State != StateRunning || len(st.Tasks) != 1 || st.Tasks[0].State != StateRunning {
		t.Fatalf("status = %+v", st)
	}
	// The source reports progress: in its status and on /metrics.
	st, _ = h.worker.Status("src")
	if rep := st.Tasks[0].Report; rep == nil || rep.Phase != "counting" || len(rep.Progress) != 1 || rep.Progress[0].Total != 200 {
		t.Fatalf("source report = %+v", st.Tasks[0].Report)
	}
	mfs, err := h.worker.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, mf := range mfs {
		found[mf.GetName()] = true
	}
	for _, name := range []string{"tributary_connector_progress_done", "tributary_connector_progress_total", "tributary_connector_backlog_records", "tributary_connector_records_written_total"} {
		if !found[name] {
			t.Errorf("metric %s missing from /metrics", name)
		}
	}
}

func TestWorker_PoisonRecordsGoToDeadLetterTopic(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	var recs []tlog.Record
	for i := 0; i < 20; i++ {
		v := fmt.Sprintf(`{"i":%d}`, i)
		if i%5 == 0 {
			v = `"poison"`
		}
		recs = append(recs, tlog.Record{Value: []byte(v)})
	}
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	h.fail = 2 // two retryable failures first
	spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"},
		Errors: ErrorPolicy{Tolerance: "all", Retries: 5, BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond, DeadLetterTopic: "dlq"}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "16 good records", func() bool { return len(h.received()) == 16 })
	waitFor(t, "4 dead letters", func() bool {
		_, end, err := h.log.Offsets("dlq", 0)
		return err == nil && end == 4
	})
	res, err := h.log.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res.Records {
		hdr := map[string]string{}
		for _, hh := range r.Headers {
			hdr[hh.Key] = string(hh.Value)
		}
		if hdr["__connect.errors.topic"] != "in" || hdr["__connect.errors.offset"] != strconv.Itoa(i*5) ||
			hdr["__connect.errors.connector.name"] != "dst" || hdr["__connect.errors.exception.message"] == "" || hdr["__connect.errors.partition"] != "0" {
			t.Fatalf("dead letter %d headers = %v", i, hdr)
		}
	}
}

func TestWorker_PauseResumeAndOffsetsPatch(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendN := func(from, n int) {
		var recs []tlog.Record
		for i := from; i < from+n; i++ {
			recs = append(recs, tlog.Record{Value: []byte(strconv.Itoa(i))})
		}
		if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
			t.Fatal(err)
		}
	}
	appendN(0, 10)
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "10 records", func() bool { return len(h.received()) == 10 })
	if err := h.worker.Pause("dst"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "PAUSED", func() bool { st, _ := h.worker.Status("dst"); return st.Tasks[0].State == StatePaused })
	appendN(10, 10)
	time.Sleep(300 * time.Millisecond)
	if n := len(h.received()); n != 10 {
		t.Fatalf("paused sink received %d records, want 10", n)
	}
	if err := h.worker.Resume("dst"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "20 records after resume", func() bool { return len(h.received()) == 20 })

	// Offsets can only change while stopped.
	patch := []OffsetEntry{{Partition: map[string]any{"kafka_topic": "in", "kafka_partition": float64(0)}, Offset: map[string]any{"kafka_offset": float64(5)}}}
	if err := h.worker.AlterOffsets(ctx, "dst", patch); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("AlterOffsets while running = %v, want ErrBadRequest", err)
	}
	if err := h.worker.Stop(ctx, "dst"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.worker.Status("dst"); st.State != StateStopped || len(st.Tasks) != 0 {
		t.Fatalf("stopped status = %+v", st)
	}
	if err := h.worker.AlterOffsets(ctx, "dst", patch); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Resume("dst"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "replay from offset 5", func() bool { return len(h.received()) == 35 })
	if got := string(h.received()[20].Value); got != "5" {
		t.Fatalf("first replayed record = %s, want 5", got)
	}
}

func TestWorker_FailedTaskRestartsWithTrace(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.Append(ctx, "in", 0, []tlog.Record{{Value: []byte(`"poison"`)}, {Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	// Tolerance none: the poison record fails the task, again and again.
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "FAILED with trace", func() bool {
		st, _ := h.worker.Status("dst")
		return len(st.Tasks) == 1 && (st.Tasks[0].State == StateFailed || st.Tasks[0].State == StateRestarting) && st.Tasks[0].Trace != ""
	})
	st, _ := h.worker.Status("dst")
	if st.State != StateRunning {
		t.Fatalf("connector state = %s, want RUNNING (only the task fails)", st.State)
	}
	if len(h.received()) != 0 {
		t.Fatalf("records after the poison one were delivered")
	}
}

// bufSink is a Flusher: Write buffers, Flush makes durable.
type bufSink struct {
	mu               *sync.Mutex
	pending, durable *[]connect.Record
	flushes          *int
}

func (s *bufSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *bufSink) Write(ctx context.Context, recs []connect.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		*s.pending = append(*s.pending, r.Clone())
	}
	return nil
}
func (s *bufSink) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.durable = append(*s.durable, *s.pending...)
	*s.pending = nil
	*s.flushes++
	return nil
}
func (s *bufSink) Close(ctx context.Context) error { return nil }

func TestWorker_FlusherCommitsOnlyFlushedOffsets(t *testing.T) {
	old := flushInterval
	flushInterval = 300 * time.Millisecond
	defer func() { flushInterval = old }()
	h := newHarness(t, t.TempDir())
	var pending, durable []connect.Record
	flushes := 0
	h.worker.Registry().MustRegister(connect.Connector{Name: "buf", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink {
			return &bufSink{mu: &h.mu, pending: &pending, durable: &durable, flushes: &flushes}
		}})
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]tlog.Record, 50)
	for i := range recs {
		recs[i] = tlog.Record{Value: []byte(strconv.Itoa(i))}
	}
	if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "lake", Kind: connect.KindSink, Connector: "buf", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
	// Written but not flushed: nothing is committed yet.
	waitFor(t, "records written", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(pending)+len(durable) == 50 })
	h.mu.Lock()
	if flushes == 0 {
		if off, ok := h.log.Groups().CommittedOffset("lake", "in", 0); ok && off > 0 {
			h.mu.Unlock()
			t.Fatalf("offset %d committed before any Flush", off)
		}
	}
	h.mu.Unlock()
	waitFor(t, "flush and commit", func() bool {
		off, ok := h.log.Groups().CommittedOffset("lake", "in", 0)
		return ok && off == 50
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(durable) != 50 || flushes < 1 {
		t.Fatalf("durable %d, flushes %d", len(durable), flushes)
	}
}

// dropOnFailSink is a Flusher whose first Flush fails and drops what it
// buffered (a failed upload discards its part file); later Flushes
// succeed. Per connect.Flusher, the records not covered by a successful
// Flush are not committed and are written again after the restart.
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

// After a Flush fails, the task commits nothing more: the final flush on
// the way out must not call Flush again and, when that one succeeds,
// commit the offsets of records the failed Flush dropped. The restarted
// task writes them again, so in the end every record is durable.
func TestWorker_FlusherCommitsNothingAfterAFailedFlush(t *testing.T) {
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
		recs[i] = tlog.Record{Value: []byte(strconv.Itoa(i))}
	}
	if _, err := h.log.Append(ctx, "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "lake", Kind: connect.KindSink, Connector: "drop", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
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

// TestWorker_StoppedConnectorIdles checks that the supervisor of a stopped
// connector waits for a request instead of spinning: setting the task's
// state to the one it has must not wake it again.
func TestWorker_StoppedConnectorIdles(t *testing.T) {
	h := newHarness(t, t.TempDir())
	if err := h.worker.Start(t.Context(), ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "out"}, StateStopped); err != nil {
		t.Fatal(err)
	}
	r, err := h.worker.runner("src")
	if err != nil {
		t.Fatal(err)
	}
	changed := func() chan struct{} {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.changed
	}
	waitFor(t, "the task to be stopped", func() bool { return r.taskStateIs(StateStopped) })
	before := changed()
	time.Sleep(50 * time.Millisecond)
	if changed() != before {
		t.Fatal("the stopped connector's state keeps changing: its supervisor spins")
	}
}

// TestWorker_SinkReadsAddedPartitions checks that a running sink reads the
// partitions added to its topic, from their start.
func TestWorker_SinkReadsAddedPartitions(t *testing.T) {
	old := partitionCheckInterval
	partitionCheckInterval = 20 * time.Millisecond
	defer func() { partitionCheckInterval = old }()
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendTo := func(p int32, vals ...string) {
		t.Helper()
		var recs []tlog.Record
		for _, v := range vals {
			recs = append(recs, tlog.Record{Value: []byte(v)})
		}
		if _, err := h.log.Append(ctx, "in", p, recs); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(0, "1", "2")
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first partition's records", func() bool { return len(h.received()) == 2 })
	if err := h.log.CreatePartitions("in", 3); err != nil {
		t.Fatal(err)
	}
	appendTo(2, "3", "4") // possibly before the consumer sees the partition: read from its start
	appendTo(1, "5")
	waitFor(t, "the added partitions' records", func() bool { return len(h.received()) == 5 })
	got := map[string]int32{}
	for _, r := range h.received() {
		got[string(r.Value)] = r.Partition
	}
	if got["3"] != 2 || got["4"] != 2 || got["5"] != 1 {
		t.Errorf("records by partition = %v", got)
	}
}

// Two pipelines, one after the other in one worker, each have a source
// named "src": the second, which never stored a position, starts at the
// beginning, not at the position the first stored under its own pipeline.
func TestWorker_SameNamedSourcesOfTwoPipelinesKeepTheirOwnPositions(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	p1 := ConnectorSpec{Pipeline: "p1", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "one", Config: map[string]string{"max": "50"}}
	if err := h.worker.Start(ctx, p1, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p1's source to store position 50", func() bool { return string(h.worker.offsets.Get("p1", "src")) == `{"n":50}` })
	if err := h.worker.Delete(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	p2 := ConnectorSpec{Pipeline: "p2", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "two", Config: map[string]string{"max": "30"}}
	if err := h.worker.Start(ctx, p2, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p2's source to store position 30", func() bool { return string(h.worker.offsets.Get("p2", "src")) == `{"n":30}` })
	var n int
	if err := h.worker.opts.Backend.ReadAll(ctx, "two", func(connect.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 30 {
		t.Fatalf("p2's source wrote %d records to its topic, want 30: it resumed from the position p1's source stored", n)
	}
	if got := string(h.worker.offsets.Get("p1", "src")); got != `{"n":50}` {
		t.Fatalf("p1's position is %s after p2's source ran, want {\"n\":50}", got)
	}
}

// The embedded log's _tributary.offsets was altered to cleanup.policy
// delete: the worker refuses to start, as the log would delete the
// sources' positions once older than its retention, and says how to fix
// it; once fixed, it starts.
func TestWorker_RefusesAnOffsetsTopicThatIsNotCompacted(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic(OffsetsTopic, 1, map[string]string{"cleanup.policy": "delete"}); err != nil {
		t.Fatal(err)
	}
	_, err = NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Logger: logger})
	want := "topic _tributary.offsets has cleanup.policy=delete, but it must be compact alone"
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "tributary topics alter _tributary.offsets --config cleanup.policy=compact") {
		t.Fatalf("NewWorker: %v, want an error with %q and how to fix it", err, want)
	}
	if err := l.AlterTopicConfig(OffsetsTopic, map[string]string{"cleanup.policy": "compact"}, nil); err != nil {
		t.Fatal(err)
	}
	w, err := NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Logger: logger})
	if err != nil {
		t.Fatalf("NewWorker after the fix: %v", err)
	}
	w.Shutdown(t.Context())
}

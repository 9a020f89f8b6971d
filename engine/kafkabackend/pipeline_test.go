package kafkabackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The pipeline suite: the same worker scenarios run on every log backend —
// the embedded one, and the kafka backend on each Kafka implementation
// (clusterKinds). Everything is checked through engine.Backend itself, so a
// scenario means the same on each.

// suiteTarget is a log backend under test: newBackend returns a fresh
// backend instance on one shared log or cluster (one per worker).
type suiteTarget struct {
	name       string
	newBackend func(t *testing.T) engine.Backend
	// groups is true when sinks are consumer-group members that share
	// partitions across workers (the kafka backend).
	groups bool
	// enforceRetention removes now the records that the topics' retention
	// settings let go.
	enforceRetention func()
	// compact compacts now the topics whose cleanup.policy says so.
	compact func(ctx context.Context)
}

func suiteTargets() []struct {
	name  string
	start func(t *testing.T) *suiteTarget
} {
	out := []struct {
		name  string
		start func(t *testing.T) *suiteTarget
	}{{"embedded", startEmbedded}}
	for _, k := range clusterKinds {
		out = append(out, struct {
			name  string
			start func(t *testing.T) *suiteTarget
		}{"kafka-" + k.name, func(t *testing.T) *suiteTarget {
			c := k.start(t)
			return &suiteTarget{name: "kafka-" + k.name, groups: true,
				newBackend:       func(t *testing.T) engine.Backend { return c.backend(t) },
				enforceRetention: c.enforceRetention, compact: c.compact}
		}})
	}
	return out
}

func startEmbedded(t *testing.T) *suiteTarget {
	t.Helper()
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet(), NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return &suiteTarget{name: "embedded", newBackend: func(*testing.T) engine.Backend { return engine.NewEmbedded(l, quiet()) },
		enforceRetention: l.EnforceRetention, compact: l.Compact}
}

// forEachBackend runs test as a subtest on every backend.
func forEachBackend(t *testing.T, test func(t *testing.T, st *suiteTarget)) {
	for _, k := range suiteTargets() {
		t.Run(k.name, func(t *testing.T) { test(t, k.start(t)) })
	}
}

// countSource emits {"n":N} records, N from 1 to max, position {"n":N};
// with pace set (ms), it waits that long before each batch of 10.
type countSource struct {
	next, max int
	pace      time.Duration
	wt        *workerUnderTest
}

func (s *countSource) Open(ctx context.Context, cfg connect.Config) error {
	s.wt.mu.Lock()
	s.wt.sourceOpens++
	s.wt.mu.Unlock()
	s.next = 1
	if cfg.Position != nil {
		var p struct{ N int }
		if err := json.Unmarshal(cfg.Position, &p); err != nil {
			return err
		}
		s.next = p.N + 1
	}
	m, _ := cfg.Int("max")
	s.max = int(m)
	pace, _ := cfg.Int("pace")
	s.pace = time.Duration(pace) * time.Millisecond
	return nil
}

func (s *countSource) Read(ctx context.Context) ([]connect.Record, error) {
	s.wt.mu.Lock()
	broken := s.wt.failRead
	s.wt.mu.Unlock()
	if broken {
		return nil, connect.Permanent(errors.New("count source broken by the test"))
	}
	if s.next > s.max {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
			return nil, nil
		}
	}
	if s.pace > 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(s.pace):
		}
	}
	var out []connect.Record
	for i := 0; i < 10 && s.next <= s.max; i++ {
		v := fmt.Sprintf(`{"n":%d}`, s.next)
		out = append(out, connect.Record{Key: []byte(strconv.Itoa(s.next % 7)), Value: []byte(v), Position: connect.Position(v)})
		s.next++
	}
	s.wt.mu.Lock()
	s.wt.read = max(s.wt.read, s.next-1)
	s.wt.mu.Unlock()
	return out, nil
}

func (s *countSource) Ack(ctx context.Context, pos connect.Position) error {
	var p struct{ N int }
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	s.wt.mu.Lock()
	s.wt.acked = p.N
	s.wt.mu.Unlock()
	return nil
}

func (s *countSource) Close(ctx context.Context) error { return s.wt.passGate(ctx) }

// tailSource is countSource that wants to see the tail of its topic
// (connect.TailRecoverer).
type tailSource struct{ countSource }

func (s *tailSource) TailTopics() []string { return []string{""} }

func (s *tailSource) RecoverTail(ctx context.Context, recs []connect.Record) error {
	s.wt.mu.Lock()
	defer s.wt.mu.Unlock()
	for _, r := range recs {
		s.wt.recovered = append(s.wt.recovered, r.Clone())
	}
	return nil
}

// memSink keeps what it is given; `"poison"` values are bad records, and
// the first wt.fail writes fail with a retryable error.
type memSink struct{ wt *workerUnderTest }

func (s *memSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *memSink) Write(ctx context.Context, recs []connect.Record) error {
	if err := s.wt.passGate(ctx); err != nil {
		return err
	}
	s.wt.mu.Lock()
	defer s.wt.mu.Unlock()
	if s.wt.fail > 0 {
		s.wt.fail--
		return connect.Retryable(errors.New("receiver busy"))
	}
	for i, r := range recs {
		if string(r.Value) == `"poison"` {
			return connect.BadRecordAt(i, errors.New("cannot deliver poison"))
		}
		s.wt.got = append(s.wt.got, r.Clone())
	}
	return nil
}
func (s *memSink) Close(ctx context.Context) error { return nil }

// bufSink is a Flusher: Write buffers, Flush makes durable.
type bufSink struct{ wt *workerUnderTest }

func (s *bufSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *bufSink) Write(ctx context.Context, recs []connect.Record) error {
	s.wt.mu.Lock()
	defer s.wt.mu.Unlock()
	for _, r := range recs {
		s.wt.pending = append(s.wt.pending, r.Clone())
	}
	return nil
}
func (s *bufSink) Flush(ctx context.Context) error {
	s.wt.mu.Lock()
	defer s.wt.mu.Unlock()
	s.wt.got = append(s.wt.got, s.wt.pending...)
	s.wt.pending = nil
	s.wt.flushes++
	return nil
}
func (s *bufSink) Close(ctx context.Context) error { return nil }

// openerSink counts its Opens, which fail for good while wt.failOpen is
// set; it takes every record and keeps none.
type openerSink struct{ wt *workerUnderTest }

func (s *openerSink) Open(ctx context.Context, cfg connect.Config) error {
	s.wt.mu.Lock()
	defer s.wt.mu.Unlock()
	s.wt.opens++
	if s.wt.failOpen {
		return connect.Permanent(errors.New("the sink's receiver is gone (the test says so)"))
	}
	return nil
}
func (s *openerSink) Write(ctx context.Context, recs []connect.Record) error { return nil }
func (s *openerSink) Close(ctx context.Context) error                        { return nil }

type workerUnderTest struct {
	w *engine.Worker
	b engine.Backend

	mu      sync.Mutex // guards the fields below
	got     []connect.Record
	pending []connect.Record
	acked   int
	read    int // the highest n countSource's Read returned
	fail    int
	// recovered holds what tailSource's RecoverTail was handed.
	recovered []connect.Record
	flushes   int
	// opens counts openerSink's Opens; while failOpen is set they fail
	// with a permanent error.
	opens    int
	failOpen bool
	// sourceOpens counts countSource's Opens; while failRead is set its
	// Reads fail with a permanent error.
	sourceOpens int
	failRead    bool
	// gate, while set, holds memSink's Writes and countSource's Close
	// until it is closed (or their context ends); gated counts the calls
	// it has held.
	gate  chan struct{}
	gated int
}

// passGate waits while the worker's gate is set and open.
func (wt *workerUnderTest) passGate(ctx context.Context) error {
	wt.mu.Lock()
	gate := wt.gate
	if gate != nil {
		wt.gated++
	}
	wt.mu.Unlock()
	if gate == nil {
		return nil
	}
	select {
	case <-gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// holdAt sets the worker's gate and returns the function that opens it,
// which the test's cleanup calls too (before the worker shuts down).
func (wt *workerUnderTest) holdAt(t *testing.T) (open func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	wt.set(func(wt *workerUnderTest) { wt.gate = gate })
	t.Cleanup(open)
	return open
}

// heldCalls returns how many calls the gate has held.
func (wt *workerUnderTest) heldCalls() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.gated
}

func (wt *workerUnderTest) received() []connect.Record {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]connect.Record(nil), wt.got...)
}

// lastRead returns the highest n a count source of the worker read.
func (wt *workerUnderTest) lastRead() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.read
}

func (wt *workerUnderTest) lastAcked() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.acked
}

func newWorker(t *testing.T, b engine.Backend, id string) *workerUnderTest {
	t.Helper()
	wt := &workerUnderTest{b: b}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "count", Kind: connect.KindSource, Version: "test",
		Spec: connect.Spec{Params: []connect.Param{{Name: "max", Type: connect.TypeInt, Default: "100", Description: "how many"},
			{Name: "pace", Type: connect.TypeInt, Default: "0", Description: "ms before each batch of 10"}}},
		NewSource: func() connect.Source { return &countSource{wt: wt} }})
	reg.MustRegister(connect.Connector{Name: "tail", Kind: connect.KindSource, Version: "test",
		Spec:      connect.Spec{Params: []connect.Param{{Name: "max", Type: connect.TypeInt, Default: "100", Description: "how many"}}},
		NewSource: func() connect.Source { return &tailSource{countSource{wt: wt}} }})
	reg.MustRegister(connect.Connector{Name: "mem", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &memSink{wt: wt} }})
	reg.MustRegister(connect.Connector{Name: "buf", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &bufSink{wt: wt} }})
	reg.MustRegister(connect.Connector{Name: "opener", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &openerSink{wt: wt} }})
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: b, Connectors: reg, Logger: quiet(), WorkerID: id,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	wt.w = w
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	return wt
}

func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// produceValues appends values to partition 0 of a one-partition topic.
func produceValues(t *testing.T, b engine.Backend, topic string, values ...string) {
	t.Helper()
	if err := b.EnsureTopic(t.Context(), topic, 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]connect.Record, len(values))
	for i, v := range values {
		recs[i] = connect.Record{Topic: topic, Value: []byte(v)}
	}
	if err := b.Produce(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
}

// committed returns a group's committed offset of topic/partition.
func committed(t *testing.T, b engine.Backend, group, topic string, p int32) (int64, bool) {
	t.Helper()
	offs, err := b.GroupOffsets(t.Context(), group)
	if err != nil {
		return 0, false
	}
	for _, o := range offs {
		if o.Topic == topic && o.Partition == p {
			return o.Offset, true
		}
	}
	return 0, false
}

// committedToEnd reports whether a group committed every partition of a
// topic up to its end.
func committedToEnd(t *testing.T, b engine.Backend, group, topic string) bool {
	t.Helper()
	bounds, err := b.EndOffsets(t.Context(), topic)
	if err != nil || len(bounds) == 0 {
		return false
	}
	for _, pb := range bounds {
		off, ok := committed(t, b, group, topic, pb.Partition)
		if pb.End > pb.Start && (!ok || off != pb.End) {
			return false
		}
	}
	return true
}

func values(recs []connect.Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		out[string(r.Value)]++
	}
	return out
}

func TestPipeline_SourceToSink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers",
			Config: map[string]string{"max": "200"}}, ""); err != nil {
			t.Fatal(err)
		}
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "200 records at the sink", 20*time.Second, func() bool { return len(values(wt.received())) == 200 })
		seen := values(wt.received())
		for n := 1; n <= 200; n++ {
			if seen[fmt.Sprintf(`{"n":%d}`, n)] == 0 {
				t.Fatalf("record %d never reached the sink", n)
			}
		}
		waitFor(t, "ack of 200", 10*time.Second, func() bool { return wt.lastAcked() == 200 })
		offs, err := wt.w.Offsets(ctx, "src")
		if err != nil || len(offs) != 1 {
			t.Fatalf("source offsets = %v, %v", offs, err)
		}
		if got, _ := json.Marshal(offs[0].Offset); string(got) != `{"n":200}` {
			t.Fatalf("stored source position %s, want {\"n\":200}", got)
		}
		bounds, err := wt.b.EndOffsets(ctx, "numbers")
		if err != nil || len(bounds) != 3 {
			t.Fatalf("topic numbers: %v partitions, %v (want 3, the log's default)", bounds, err)
		}
		waitFor(t, "the sink group committed to the end", 10*time.Second, func() bool { return committedToEnd(t, wt.b, "dst", "numbers") })
		st2, _ := wt.w.Status("dst")
		if st2.State != engine.StateRunning || len(st2.Tasks) != 1 || st2.Tasks[0].State != engine.StateRunning {
			t.Fatalf("status = %+v", st2)
		}
	})
}

func TestPipeline_PoisonRecordsGoToDeadLetterTopic(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		var vals []string
		for i := range 20 {
			v := fmt.Sprintf(`{"i":%d}`, i)
			if i%5 == 0 {
				v = `"poison"`
			}
			vals = append(vals, v)
		}
		produceValues(t, wt.b, "in", vals...)
		wt.mu.Lock()
		wt.fail = 2 // two retryable failures first
		wt.mu.Unlock()
		spec := engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"},
			Errors: engine.ErrorPolicy{Tolerance: "all", Retries: 5, BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond, DeadLetterTopic: "dlq"}}
		if err := wt.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "16 good records", 10*time.Second, func() bool { return len(wt.received()) == 16 })
		var dead []connect.Record
		waitFor(t, "4 dead letters", 10*time.Second, func() bool {
			dead = dead[:0]
			err := wt.b.ReadAll(ctx, "dlq", func(r connect.Record) error { dead = append(dead, r.Clone()); return nil })
			return err == nil && len(dead) == 4
		})
		for i, r := range dead {
			hdr := map[string]string{}
			for _, hh := range r.Headers {
				hdr[hh.Key] = string(hh.Value)
			}
			if string(r.Value) != `"poison"` || hdr["__connect.errors.topic"] != "in" || hdr["__connect.errors.offset"] != strconv.Itoa(i*5) ||
				hdr["__connect.errors.connector.name"] != "dst" || hdr["__connect.errors.exception.message"] == "" || hdr["__connect.errors.partition"] != "0" {
				t.Fatalf("dead letter %d: value %s headers %v", i, r.Value, hdr)
			}
		}
		waitFor(t, "commit past the poison records", 10*time.Second, func() bool { return committedToEnd(t, wt.b, "dst", "in") })
	})
}

func TestPipeline_PauseResumeAndOffsetsPatch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		appendN := func(from, n int) {
			var vals []string
			for i := from; i < from+n; i++ {
				vals = append(vals, strconv.Itoa(i))
			}
			produceValues(t, wt.b, "in", vals...)
		}
		appendN(0, 10)
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "10 records", 10*time.Second, func() bool { return len(wt.received()) == 10 })
		if err := wt.w.Pause("dst"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "PAUSED", 10*time.Second, func() bool { s, _ := wt.w.Status("dst"); return s.Tasks[0].State == engine.StatePaused })
		appendN(10, 10)
		time.Sleep(300 * time.Millisecond) // a paused sink must not pick them up meanwhile
		if n := len(wt.received()); n != 10 {
			t.Fatalf("paused sink received %d records, want 10", n)
		}
		if err := wt.w.Resume("dst"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "20 records after resume", 10*time.Second, func() bool { return len(wt.received()) == 20 })
		waitFor(t, "commit of 20", 10*time.Second, func() bool { off, ok := committed(t, wt.b, "dst", "in", 0); return ok && off == 20 })

		patch := []engine.OffsetEntry{{Partition: map[string]any{"kafka_topic": "in", "kafka_partition": float64(0)}, Offset: map[string]any{"kafka_offset": float64(5)}}}
		if err := wt.w.AlterOffsets(ctx, "dst", patch); !errors.Is(err, engine.ErrBadRequest) {
			t.Fatalf("AlterOffsets while running = %v, want ErrBadRequest", err)
		}
		if err := wt.w.Stop(ctx, "dst"); err != nil {
			t.Fatal(err)
		}
		if s, _ := wt.w.Status("dst"); s.State != engine.StateStopped || len(s.Tasks) != 0 {
			t.Fatalf("stopped status = %+v", s)
		}
		if err := wt.w.AlterOffsets(ctx, "dst", patch); err != nil {
			t.Fatalf("AlterOffsets of a stopped sink: %v", err)
		}
		if off, ok := committed(t, wt.b, "dst", "in", 0); !ok || off != 5 {
			t.Fatalf("committed after the patch: %d %v, want 5", off, ok)
		}
		if err := wt.w.Resume("dst"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "replay from offset 5", 10*time.Second, func() bool { return len(wt.received()) == 35 })
		if got := string(wt.received()[20].Value); got != "5" {
			t.Fatalf("first replayed record = %s, want 5", got)
		}
	})
}

func TestPipeline_FailedTaskRestartsWithTrace(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		produceValues(t, wt.b, "in", `"poison"`, "1")
		// Tolerance none: the poison record fails the task, again and again.
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "FAILED with trace", 10*time.Second, func() bool {
			s, _ := wt.w.Status("dst")
			return len(s.Tasks) == 1 && (s.Tasks[0].State == engine.StateFailed || s.Tasks[0].State == engine.StateRestarting) && s.Tasks[0].Trace != ""
		})
		if s, _ := wt.w.Status("dst"); s.State != engine.StateRunning {
			t.Fatalf("connector state = %s, want RUNNING (only the task fails)", s.State)
		}
		if n := len(wt.received()); n != 0 {
			t.Fatalf("%d records after the poison one were delivered", n)
		}
		if off, ok := committed(t, wt.b, "dst", "in", 0); ok && off != 0 {
			t.Fatalf("offset %d committed past a record that was never delivered", off)
		}
	})
}

// A Flusher sink's offsets are committed only once flushed: nothing before
// the first Flush, everything after the flush that pausing it makes.
func TestPipeline_FlusherCommitsOnlyFlushedOffsets(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		vals := make([]string, 50)
		for i := range vals {
			vals[i] = strconv.Itoa(i)
		}
		produceValues(t, wt.b, "in", vals...)
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "lake", Kind: connect.KindSink, Connector: "buf", Topics: []string{"in"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "records written", 10*time.Second, func() bool {
			wt.mu.Lock()
			defer wt.mu.Unlock()
			return len(wt.pending)+len(wt.got) == 50
		})
		wt.mu.Lock()
		flushed := wt.flushes
		wt.mu.Unlock()
		if off, ok := committed(t, wt.b, "lake", "in", 0); flushed == 0 && ok && off > 0 {
			t.Fatalf("offset %d committed before any Flush", off)
		}
		if err := wt.w.Pause("lake"); err != nil { // flushes, then commits
			t.Fatal(err)
		}
		waitFor(t, "flush and commit", 15*time.Second, func() bool { off, ok := committed(t, wt.b, "lake", "in", 0); return ok && off == 50 })
		wt.mu.Lock()
		defer wt.mu.Unlock()
		if len(wt.got) != 50 || wt.flushes < 1 {
			t.Fatalf("durable %d, flushes %d", len(wt.got), wt.flushes)
		}
	})
}

// A new worker (a new backend instance) resumes a source from the position
// stored in the offsets topic: nothing twice, nothing missing.
func TestPipeline_SourceResumesFromStoredPosition(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		ctx := t.Context()
		w1 := newWorker(t, st.newBackend(t), "w1")
		spec := engine.ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers", Config: map[string]string{"max": "50"}}
		if err := w1.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ack of 50", 10*time.Second, func() bool { return w1.lastAcked() == 50 })
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w1.w.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		w2 := newWorker(t, st.newBackend(t), "w2")
		spec.Config = map[string]string{"max": "80"}
		if err := w2.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ack of 80", 10*time.Second, func() bool { return w2.lastAcked() == 80 })
		var all []connect.Record
		if err := w2.b.ReadAll(ctx, "numbers", func(r connect.Record) error { all = append(all, r.Clone()); return nil }); err != nil {
			t.Fatal(err)
		}
		seen := values(all)
		for n := 1; n <= 80; n++ {
			if c := seen[fmt.Sprintf(`{"n":%d}`, n)]; c != 1 {
				t.Fatalf("record %d is in the topic %d times, want once (%d records in all)", n, c, len(all))
			}
		}
	})
}

// Two workers run the same sink: they share its partitions through the
// group, every record is delivered, and the group commits to the end. Only
// the kafka backend's sinks are group members.
func TestPipeline_WorkersShareASink(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		if !st.groups {
			t.Skip("the embedded backend's sinks read every partition; sharing is the kafka backend's")
		}
		ctx := t.Context()
		w1 := newWorker(t, st.newBackend(t), "w1")
		w2 := newWorker(t, st.newBackend(t), "w2")
		if err := w1.b.EnsureTopic(ctx, "numbers", 4, nil); err != nil {
			t.Fatal(err)
		}
		sink := engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}
		for _, w := range []*workerUnderTest{w1, w2} {
			if err := w.w.Start(ctx, sink, ""); err != nil {
				t.Fatal(err)
			}
		}
		// Both members are in before data flows, so both get partitions.
		adm := w1.b.(*Backend).adm
		waitFor(t, "two members in the sink group", 15*time.Second, func() bool {
			d, err := adm.DescribeGroups(ctx, "dst")
			if err != nil || d["dst"].State != "Stable" || len(d["dst"].Members) != 2 {
				return false
			}
			for _, m := range d["dst"].Members {
				if a, ok := m.Assigned.AsConsumer(); !ok || len(a.Topics) == 0 {
					return false
				}
			}
			return true
		})
		const n = 400
		if err := w1.w.Start(ctx, engine.ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers",
			Config: map[string]string{"max": strconv.Itoa(n)}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "every record at a sink", 20*time.Second, func() bool {
			return len(values(append(w1.received(), w2.received()...))) == n
		})
		if len(w1.received()) == 0 || len(w2.received()) == 0 {
			t.Fatalf("one worker did all the work: w1 %d, w2 %d records", len(w1.received()), len(w2.received()))
		}
		waitFor(t, "the group committed to the end", 10*time.Second, func() bool { return committedToEnd(t, w1.b, "dst", "numbers") })

		// w2 leaves: w1 takes over its partitions and reads what follows.
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w2.w.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		before := len(values(w1.received()))
		if err := w1.w.Stop(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		spec, _ := w1.w.Spec("src")
		spec.Config = map[string]string{"max": strconv.Itoa(2 * n)}
		if _, err := w1.w.Replace(ctx, spec); err != nil {
			t.Fatal(err)
		}
		if err := w1.w.Resume("src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "w1 reads every partition after w2 left", 20*time.Second, func() bool {
			return len(values(w1.received())) >= before+n
		})
		waitFor(t, "the group committed to the end again", 10*time.Second, func() bool { return committedToEnd(t, w1.b, "dst", "numbers") })
	})
}

// rangeReader returns b as an engine.RangeReader; every backend under test
// is one.
func rangeReader(t *testing.T, b engine.Backend) engine.RangeReader {
	t.Helper()
	rr, ok := b.(engine.RangeReader)
	if !ok {
		t.Fatalf("%T does not implement engine.RangeReader", b)
	}
	return rr
}

// rangeRecord is record n of the range tests: key, value, header and
// timestamp all derive from n.
func rangeRecord(topic string, n int, value []byte) connect.Record {
	if value == nil {
		value = fmt.Appendf(nil, "v%d", n)
	}
	return connect.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", n), Value: value,
		Headers:   []connect.Header{{Key: "n", Value: []byte(strconv.Itoa(n))}},
		Timestamp: time.UnixMilli(1_700_000_000_000 + int64(n))}
}

// produceRange creates a one-partition topic and appends records 0..n-1 in
// batches of batch records (one produce call each).
func produceRange(t *testing.T, b engine.Backend, topic string, config map[string]string, n, batch int, value func(int) []byte) {
	t.Helper()
	if err := b.EnsureTopic(t.Context(), topic, 1, config); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += batch {
		var recs []connect.Record
		for j := i; j < min(i+batch, n); j++ {
			var v []byte
			if value != nil {
				v = value(j)
			}
			recs = append(recs, rangeRecord(topic, j, v))
		}
		if err := b.Produce(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
	}
}

// readRange collects ReadRange's records, checking that no batch is empty.
func readRange(t *testing.T, rr engine.RangeReader, topic string, from, to int64) (recs []connect.Record, batches int) {
	t.Helper()
	err := rr.ReadRange(t.Context(), topic, 0, from, to, func(b []connect.Record) error {
		if len(b) == 0 {
			t.Error("ReadRange called fn with no records")
		}
		batches++
		for _, r := range b {
			recs = append(recs, r.Clone())
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ReadRange(%s, %d, %d): %v", topic, from, to, err)
	}
	return recs, batches
}

// checkRange fails unless recs are exactly records first..last-1 of the
// range tests, in order, every field set.
func checkRange(t *testing.T, recs []connect.Record, topic string, first, last int) {
	t.Helper()
	if len(recs) != last-first {
		t.Fatalf("got %d records, want offsets %d..%d (%d)", len(recs), first, last-1, last-first)
	}
	for i, r := range recs {
		n := first + i
		want := rangeRecord(topic, n, nil)
		if r.Topic != topic || r.Partition != 0 || r.Offset != int64(n) {
			t.Fatalf("record %d is %s/%d@%d, want %s/0@%d", i, r.Topic, r.Partition, r.Offset, topic, n)
		}
		if string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) || !r.Timestamp.Equal(want.Timestamp) {
			t.Fatalf("record at %d: key %q value %q time %v, want %q %q %v", n, r.Key, r.Value, r.Timestamp, want.Key, want.Value, want.Timestamp)
		}
		if len(r.Headers) != 1 || r.Headers[0].Key != "n" || string(r.Headers[0].Value) != strconv.Itoa(n) {
			t.Fatalf("record at %d has headers %v, want n=%d", n, r.Headers, n)
		}
	}
}

// ReadRange, which the worker's tail recovery needs (engine.RangeReader):
// the same answers on every backend.
func TestPipeline_ReadRange(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		b := st.newBackend(t)
		rr := rangeReader(t, b)
		produceRange(t, b, "range", nil, 30, 10, nil)

		t.Run("inside", func(t *testing.T) {
			recs, _ := readRange(t, rr, "range", 5, 17)
			checkRange(t, recs, "range", 5, 17)
			recs, _ = readRange(t, rr, "range", 0, 30)
			checkRange(t, recs, "range", 0, 30)
		})
		t.Run("beyond the end", func(t *testing.T) {
			recs, _ := readRange(t, rr, "range", 25, 1000)
			checkRange(t, recs, "range", 25, 30)
			recs, _ = readRange(t, rr, "range", 30, 40)
			checkRange(t, recs, "range", 30, 30)
		})
		t.Run("starting beyond the end", func(t *testing.T) {
			recs, _ := readRange(t, rr, "range", 500, 600)
			checkRange(t, recs, "range", 30, 30)
		})
		t.Run("empty", func(t *testing.T) {
			for _, r := range [][2]int64{{7, 7}, {9, 3}} {
				recs, batches := readRange(t, rr, "range", r[0], r[1])
				if len(recs) != 0 || batches != 0 {
					t.Fatalf("ReadRange(%d, %d) called fn %d times with %d records, want none", r[0], r[1], batches, len(recs))
				}
			}
		})
		t.Run("fn error stops", func(t *testing.T) {
			stop := errors.New("stop here")
			calls := 0
			err := rr.ReadRange(t.Context(), "range", 0, 0, 30, func([]connect.Record) error { calls++; return stop })
			if !errors.Is(err, stop) || calls != 1 {
				t.Fatalf("ReadRange returned %v after %d calls, want %v after 1", err, calls, stop)
			}
		})
		t.Run("cancelled", func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			calls := 0
			err := rr.ReadRange(ctx, "range", 0, 0, 30, func([]connect.Record) error { calls++; return nil })
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("ReadRange on a cancelled context returned %v after %d calls, want context.Canceled", err, calls)
			}
		})
		t.Run("unknown topic", func(t *testing.T) {
			err := rr.ReadRange(t.Context(), "no-such-topic", 0, 0, 10, func([]connect.Record) error {
				t.Error("fn called for a topic that does not exist")
				return nil
			})
			if err == nil {
				t.Fatal("ReadRange of a topic that does not exist returned no error")
			}
		})
	})
}

// Big records come a bounded batch (about a megabyte) at a time.
func TestPipeline_ReadRangeBoundedBatches(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		b := st.newBackend(t)
		rr := rangeReader(t, b)
		const size = 128 << 10
		big := func(n int) []byte { return fmt.Appendf(make([]byte, 0, size), "v%d%0*d", n, size-12, 0) }
		produceRange(t, b, "bigrange", nil, 24, 4, big) // 3 MiB in 512 KiB produce calls
		var got int
		err := rr.ReadRange(t.Context(), "bigrange", 0, 0, 24, func(recs []connect.Record) error {
			var bytes int
			for _, r := range recs {
				if want := big(got); r.Offset != int64(got) || string(r.Value) != string(want) {
					t.Fatalf("record %d has offset %d and a different value", got, r.Offset)
				}
				bytes += len(r.Value)
				got++
			}
			if bytes > 2<<20 {
				t.Fatalf("fn was handed %d bytes at once, want about a megabyte", bytes)
			}
			return nil
		})
		if err != nil || got != 24 {
			t.Fatalf("ReadRange: %d records, %v; want 24", got, err)
		}
	})
}

// Records that retention removed are skipped: a range that starts below
// the log start begins at it.
func TestPipeline_ReadRangeBelowLogStart(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		b := st.newBackend(t)
		rr := rangeReader(t, b)
		// Small segments, and retention keeping only the newest.
		produceRange(t, b, "trimmed", map[string]string{"segment.bytes": "100", "retention.bytes": "1"}, 30, 10, nil)
		st.enforceRetention()
		bounds, err := b.EndOffsets(t.Context(), "trimmed")
		if err != nil {
			t.Fatal(err)
		}
		start := bounds[0].Start
		if start <= 0 || bounds[0].End != 30 {
			t.Fatalf("after retention the partition spans [%d, %d), want a start above 0 and end 30", start, bounds[0].End)
		}
		recs, _ := readRange(t, rr, "trimmed", 0, 100)
		checkRange(t, recs, "trimmed", int(start), 30)
		recs, _ = readRange(t, rr, "trimmed", 0, start)
		checkRange(t, recs, "trimmed", int(start), int(start))
	})
}

// Compaction leaves gaps in the offsets (overwritten values, tombstones
// removed): ReadRange returns what is left, in order, and ends.
func TestPipeline_ReadRangeCompactedGaps(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		ctx := t.Context()
		b := st.newBackend(t)
		rr := rangeReader(t, b)
		topic := "compacted"
		if err := b.EnsureTopic(ctx, topic, 1, map[string]string{"cleanup.policy": "compact", "delete.retention.ms": "0",
			"segment.bytes": "100", "min.cleanable.dirty.ratio": "0"}); err != nil {
			t.Fatal(err)
		}
		// Offsets 0..9: keys k0..k4 twice; 10..14: tombstones of k0..k4.
		var produced []connect.Record
		for i := range 15 {
			r := connect.Record{Topic: topic, Key: fmt.Appendf(nil, "k%d", i%5), Value: fmt.Appendf(nil, "v%d", i)}
			if i >= 10 {
				r.Value = nil
			}
			if err := b.Produce(ctx, []connect.Record{r}); err != nil {
				t.Fatal(err)
			}
			produced = append(produced, r)
		}
		st.compact(ctx)
		var got []connect.Record
		err := rr.ReadRange(ctx, topic, 0, 0, 15, func(recs []connect.Record) error {
			for _, r := range recs {
				got = append(got, r.Clone())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) == 15 {
			t.Fatalf("compaction removed nothing; the test needs gaps")
		}
		last := int64(-1)
		for _, r := range got {
			if r.Offset <= last || r.Offset >= 15 {
				t.Fatalf("offsets out of order or range: %d after %d", r.Offset, last)
			}
			last = r.Offset
			if want := produced[r.Offset]; string(r.Key) != string(want.Key) || string(r.Value) != string(want.Value) {
				t.Fatalf("record at %d is %q=%q, want %q=%q", r.Offset, r.Key, r.Value, want.Key, want.Value)
			}
		}
	})
}

// A source that implements connect.TailRecoverer is handed, when it starts
// again, the records that reached its topic after the log offsets stored
// with its last position: here records another writer appended while the
// worker was down (the engine's own tests make the crash between append
// and position store, with a hook this package cannot reach).
func TestPipeline_SourceRecoversItsTail(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		ctx := t.Context()
		w1 := newWorker(t, st.newBackend(t), "w1")
		spec := engine.ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "tail", Topic: "tailed", Config: map[string]string{"max": "30"}}
		if err := w1.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "ack of 30", 10*time.Second, func() bool { return w1.lastAcked() == 30 })
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := w1.w.Shutdown(sctx); err != nil {
			t.Fatal(err)
		}
		w1.mu.Lock()
		if len(w1.recovered) != 0 {
			t.Fatalf("the first start recovered %d records, want none (no stored position)", len(w1.recovered))
		}
		w1.mu.Unlock()

		b := st.newBackend(t)
		other := []connect.Record{
			{Topic: "tailed", Key: []byte("x1"), Value: []byte("other-1")},
			{Topic: "tailed", Key: []byte("x2"), Value: []byte("other-2")},
			{Topic: "tailed", Key: []byte("x3"), Value: []byte("other-3")},
		}
		if err := b.Produce(ctx, other); err != nil {
			t.Fatal(err)
		}
		w2 := newWorker(t, b, "w2")
		if err := w2.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the recovered tail", 10*time.Second, func() bool {
			w2.mu.Lock()
			defer w2.mu.Unlock()
			return len(w2.recovered) >= len(other)
		})
		w2.mu.Lock()
		got := append([]connect.Record(nil), w2.recovered...)
		w2.mu.Unlock()
		if len(got) != len(other) {
			t.Fatalf("recovered %d records, want the %d appended after the stored position", len(got), len(other))
		}
		want := map[string]connect.Record{}
		for _, r := range other {
			want[string(r.Value)] = r
		}
		for _, r := range got {
			o, ok := want[string(r.Value)]
			if !ok || r.Topic != "tailed" || r.Partition != o.Partition || r.Offset != o.Offset || string(r.Key) != string(o.Key) {
				t.Fatalf("recovered %s/%d@%d %q=%q, want one of the records appended after the stored position", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
			}
			delete(want, string(r.Value))
		}
	})
}

// The sink's consumer loses its group session, as after a GC pause or a
// SIGSTOP longer than the session timeout: the coordinator answers its
// next heartbeat UNKNOWN_MEMBER_ID (kfake, told to answer so once). kgo
// handles this on its own: it calls OnPartitionsLost, rejoins and resumes
// from the committed offsets, and hands Poll an informational
// ErrGroupSession ("not worth restarting the client for"). The sink task
// carries on, as a Kafka Connect sink task does, rather than FAIL (and
// have the runner restart it, leaving and joining the group again), and
// goes on receiving records.
func TestPipeline_SinkCarriesOnAfterALostGroupSession(t *testing.T) {
	c := startKfake(t)
	ctx := t.Context()
	wt := newWorker(t, c.backend(t), "w1")
	produceValues(t, wt.b, "numbers", `"a"`, `"b"`, `"c"`)
	if err := wt.w.Start(ctx, engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the three records at the sink", 10*time.Second, func() bool { return len(wt.received()) == 3 })
	var expired atomic.Bool
	c.fake.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if expired.Swap(true) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	start := time.Now()
	var failed string
	for time.Since(start) < 4*time.Second && failed == "" {
		st, err := wt.w.Status("dst")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateFailed {
			failed = st.Tasks[0].Trace
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !expired.Load() {
		t.Fatal("no heartbeat was answered UNKNOWN_MEMBER_ID")
	}
	if failed != "" {
		t.Fatalf("the sink task FAILED on a lost group session kgo rejoins by itself: %s", failed)
	}
	produceValues(t, wt.b, "numbers", `"d"`)
	waitFor(t, "the record produced after the lost session at the sink", 10*time.Second, func() bool {
		for _, r := range wt.received() {
			if string(r.Value) == `"d"` {
				return true
			}
		}
		return false
	})
}

// TestPipeline_TopicsRegexReadsTopicsCreatedLater: a sink whose topics
// regex matches no topic yet runs with nothing assigned (as Kafka Connect's
// topics.regex sink does), then reads the matching topics created after it
// started, on every backend; internal topics, topics the regex does not
// match and the sink's own dead-letter topic stay unread.
func TestPipeline_TopicsRegexReadsTopicsCreatedLater(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		produceValues(t, wt.b, "events.dlq", "dead")
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", TopicsRegex: `events\..*`,
			Errors: engine.ErrorPolicy{DeadLetterTopic: "events.dlq"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the sink task RUNNING while no topic matches", 10*time.Second, func() bool {
			s, err := wt.w.Status("dst")
			return err == nil && len(s.Tasks) == 1 && s.Tasks[0].State == engine.StateRunning
		})
		produceValues(t, wt.b, "other", "unmatched")
		produceValues(t, wt.b, "events.a", "a1", "a2")
		produceValues(t, wt.b, "events.b", "b1")
		waitFor(t, "the records of events.a and events.b", 20*time.Second, func() bool { return len(values(wt.received())) >= 3 })
		if got := values(wt.received()); len(got) != 3 || got["a1"] != 1 || got["a2"] != 1 || got["b1"] != 1 {
			t.Fatalf("sink received %v, want a1, a2 and b1", got)
		}
		s, _ := wt.w.Status("dst")
		if s.Tasks[0].State != engine.StateRunning || s.Tasks[0].Trace != "" {
			t.Fatalf("status = %+v, want the task RUNNING without a trace", s)
		}
	})
}

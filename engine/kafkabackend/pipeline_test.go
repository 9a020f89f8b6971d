package kafkabackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
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
				newBackend: func(t *testing.T) engine.Backend { return c.backend(t) }}
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
	return &suiteTarget{name: "embedded", newBackend: func(*testing.T) engine.Backend { return engine.NewEmbedded(l, quiet()) }}
}

// forEachBackend runs test as a subtest on every backend.
func forEachBackend(t *testing.T, test func(t *testing.T, st *suiteTarget)) {
	for _, k := range suiteTargets() {
		t.Run(k.name, func(t *testing.T) { test(t, k.start(t)) })
	}
}

// countSource emits {"n":N} records, N from 1 to max, position {"n":N}.
type countSource struct {
	next, max int
	wt        *workerUnderTest
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
	m, _ := cfg.Int("max")
	s.max = int(m)
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
	if err := json.Unmarshal(pos, &p); err != nil {
		return err
	}
	s.wt.mu.Lock()
	s.wt.acked = p.N
	s.wt.mu.Unlock()
	return nil
}

func (s *countSource) Close(ctx context.Context) error { return nil }

// memSink keeps what it is given; `"poison"` values are bad records, and
// the first wt.fail writes fail with a retryable error.
type memSink struct{ wt *workerUnderTest }

func (s *memSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *memSink) Write(ctx context.Context, recs []connect.Record) error {
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

type workerUnderTest struct {
	w *engine.Worker
	b engine.Backend

	mu      sync.Mutex // guards the fields below
	got     []connect.Record
	pending []connect.Record
	acked   int
	fail    int
	flushes int
}

func (wt *workerUnderTest) received() []connect.Record {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return append([]connect.Record(nil), wt.got...)
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
		Spec:      connect.Spec{Params: []connect.Param{{Name: "max", Type: connect.TypeInt, Default: "100", Description: "how many"}}},
		NewSource: func() connect.Source { return &countSource{wt: wt} }})
	reg.MustRegister(connect.Connector{Name: "mem", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &memSink{wt: wt} }})
	reg.MustRegister(connect.Connector{Name: "buf", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &bufSink{wt: wt} }})
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

package kafkabackend

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
	"go.uber.org/goleak"
)

// The backend runs against the built-in log's Kafka listener: a real Kafka
// wire implementation, started by the test.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

type cluster struct {
	log  *tlog.Log
	addr string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet(), NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := kafka.Listen(t.Context(), "127.0.0.1:0", l, kafka.Options{
		Logger: quiet(), InitialRebalanceDelay: -1, GroupMinSessionTimeout: 100 * time.Millisecond,
	})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		l.Close()
	})
	return &cluster{log: l, addr: srv.Addr().String()}
}

func (c *cluster) backend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(t.Context(), Options{
		Brokers: []string{c.addr}, Logger: quiet(),
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBackend_TopicsProduceReadOffsets(t *testing.T) {
	c := startCluster(t)
	b := c.backend(t)
	ctx := t.Context()
	if err := b.EnsureTopic(ctx, "orders", 4, map[string]string{"retention.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureTopic(ctx, "orders", 4, nil); err != nil {
		t.Fatalf("ensure an existing topic: %v", err)
	}
	d, err := c.log.DescribeTopic("orders")
	if err != nil || len(d.Partitions) != 4 || d.Overrides["retention.ms"] != "3600000" {
		t.Fatalf("topic as created: %v %+v", err, d)
	}
	var recs []connect.Record
	for i := range 50 {
		recs = append(recs, connect.Record{Topic: "orders", Key: fmt.Appendf(nil, "k%d", i%9), Value: fmt.Appendf(nil, "v%d", i),
			Headers: []connect.Header{{Key: "n", Value: []byte(strconv.Itoa(i))}}})
	}
	if err := b.Produce(ctx, recs); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if want := tlog.KeyPartition(r.Key, 4); r.Partition != want {
			t.Fatalf("key %s on partition %d, want %d as the built-in log puts it", r.Key, r.Partition, want)
		}
	}
	bounds, err := b.EndOffsets(ctx, "orders")
	if err != nil || len(bounds) != 4 {
		t.Fatalf("end offsets: %v %v", bounds, err)
	}
	total := int64(0)
	for _, pb := range bounds {
		total += pb.End - pb.Start
	}
	if total != 50 {
		t.Fatalf("%d records in the topic, want 50", total)
	}
	var read []connect.Record
	if err := b.ReadAll(ctx, "orders", func(r connect.Record) error { read = append(read, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(read) != 50 {
		t.Fatalf("ReadAll read %d records", len(read))
	}
	for i := 1; i < len(read); i++ {
		a, z := read[i-1], read[i]
		if z.Partition < a.Partition || (z.Partition == a.Partition && z.Offset != a.Offset+1) {
			t.Fatalf("ReadAll out of order at %d: %d/%d then %d/%d", i, a.Partition, a.Offset, z.Partition, z.Offset)
		}
	}
	if len(read[0].Headers) != 1 || read[0].Headers[0].Key != "n" {
		t.Fatalf("headers lost: %v", read[0].Headers)
	}
	if err := b.ReadAll(ctx, "no-such-topic", func(connect.Record) error { return nil }); err != nil {
		t.Fatalf("ReadAll of a missing topic: %v", err)
	}

	offs := []engine.PartitionOffset{{Topic: "orders", Partition: 0, Offset: 3}, {Topic: "orders", Partition: 2, Offset: 1}}
	if err := b.CommitGroupOffsets(ctx, "g", offs); err != nil {
		t.Fatal(err)
	}
	got, err := b.GroupOffsets(ctx, "g")
	if err != nil || len(got) != 2 || got[0] != offs[0] || got[1] != offs[1] {
		t.Fatalf("group offsets: %v %v", got, err)
	}
	if off, ok := c.log.Groups().CommittedOffset("g", "orders", 0); !ok || off != 3 {
		t.Fatalf("log has %d %v", off, ok)
	}
	if err := b.DeleteGroup(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteGroup(ctx, "g"); err != nil {
		t.Fatalf("delete a missing group: %v", err)
	}
	if got, err := b.GroupOffsets(ctx, "g"); err != nil || len(got) != 0 {
		t.Fatalf("offsets of a deleted group: %v %v", got, err)
	}
	topics, err := b.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, n := range topics {
		found = found || n == "orders"
	}
	if !found {
		t.Fatalf("ListTopics = %v", topics)
	}
}

// countSource emits {"n":N} records, N from 1 to max, position {"n":N}.
type countSource struct {
	next, max int
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
		out = append(out, connect.Record{Key: []byte(strconv.Itoa(s.next)), Value: []byte(v), Position: connect.Position(v)})
		s.next++
	}
	return out, nil
}

func (s *countSource) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (s *countSource) Close(ctx context.Context) error                     { return nil }

// memSink collects the values it is given.
type memSink struct {
	mu  *sync.Mutex
	got map[string]int
}

func (s *memSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *memSink) Write(ctx context.Context, recs []connect.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range recs {
		s.got[string(r.Value)]++
	}
	return nil
}
func (s *memSink) Close(ctx context.Context) error { return nil }

type workerUnderTest struct {
	w   *engine.Worker
	mu  sync.Mutex
	got map[string]int
}

func (wt *workerUnderTest) received() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return len(wt.got)
}

func newWorker(t *testing.T, b *Backend, id string) *workerUnderTest {
	t.Helper()
	wt := &workerUnderTest{got: map[string]int{}}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "count", Kind: connect.KindSource, Version: "test",
		Spec:      connect.Spec{Params: []connect.Param{{Name: "max", Type: connect.TypeInt, Default: "100", Description: "how many"}}},
		NewSource: func() connect.Source { return &countSource{} }})
	reg.MustRegister(connect.Connector{Name: "mem", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &memSink{mu: &wt.mu, got: wt.got} }})
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

// Two workers run the same sink: they share its partitions through the
// group, every record is delivered, and the group commits to the end.
func TestBackend_WorkersShareASink(t *testing.T) {
	c := startCluster(t)
	ctx := t.Context()
	w1 := newWorker(t, c.backend(t), "w1")
	w2 := newWorker(t, c.backend(t), "w2")
	if err := w1.w.Backend().EnsureTopic(ctx, "numbers", 4, nil); err != nil {
		t.Fatal(err)
	}
	sink := engine.ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}
	for _, w := range []*workerUnderTest{w1, w2} {
		if err := w.w.Start(ctx, sink, ""); err != nil {
			t.Fatal(err)
		}
	}
	// Both members are in before data flows, so both get partitions.
	adm := w1.w.Backend().(*Backend).adm
	waitFor(t, "two members in the sink group", 10*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, "dst")
		return err == nil && d["dst"].State == "Stable" && len(d["dst"].Members) == 2
	})
	const n = 400
	if err := w1.w.Start(ctx, engine.ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers",
		Config: map[string]string{"max": strconv.Itoa(n)}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every record at a sink", 20*time.Second, func() bool {
		seen := map[string]bool{}
		for _, w := range []*workerUnderTest{w1, w2} {
			w.mu.Lock()
			for v := range w.got {
				seen[v] = true
			}
			w.mu.Unlock()
		}
		return len(seen) == n
	})
	if w1.received() == 0 || w2.received() == 0 {
		t.Fatalf("one worker did all the work: w1 %d, w2 %d records", w1.received(), w2.received())
	}
	waitFor(t, "the group committed to the end", 10*time.Second, func() bool {
		lags, err := c.log.Groups().Describe("dst")
		if err != nil || len(lags) != 4 {
			return false
		}
		for _, l := range lags {
			if l.Lag != 0 {
				return false
			}
		}
		return true
	})
	// The source's position went to the offsets topic through the backend.
	offs, err := w1.w.Offsets(ctx, "src")
	if err != nil || len(offs) != 1 {
		t.Fatalf("source offsets: %v %v", offs, err)
	}
}

package kafkabackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kgo"
)

// groupClients returns the client ids of a group's members.
func groupClients(t *testing.T, b engine.Backend, group string) []string {
	t.Helper()
	gs, err := b.(*Backend).adm.DescribeGroups(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range gs[group].Members {
		ids = append(ids, m.ClientID)
	}
	return ids
}

// The offsets tests change a stopped connector's offsets while other
// workers are still leaving its groups: right after a cluster-wide stop,
// and with a member that never leaves.

// answer is an HTTP answer's code and body, or the error of the request.
type answer struct {
	code int
	body string
	err  error
}

// send sends a request with a JSON body (none when body is "") from any
// goroutine.
func send(srv *httptest.Server, method, path, body string) answer {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, srv.URL+path, r)
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, body: string(b), err: err}
}

// produceKeyed appends n records {"n":i} with key i to topic, which the
// keys spread over its partitions.
func produceKeyed(t *testing.T, b engine.Backend, topic string, from, n int) {
	t.Helper()
	recs := make([]connect.Record, n)
	for i := range recs {
		recs[i] = connect.Record{Topic: topic, Key: []byte(strconv.Itoa(from + i)), Value: fmt.Appendf(nil, `{"n":%d}`, from+i)}
	}
	if err := b.Produce(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
}

// Worker b runs the source src (it holds the lease) and part of the sink
// dst's partitions, and is slow to stop both: its sink is in a Write and
// its source's Close is held when the stop comes. A stop through worker a
// returns once a's own tasks stopped; a PATCH of the sink's offsets and a
// DELETE of the source's offsets sent through a right then wait until b
// has left the sink's group and the source's lease, then go through: b's
// own last commit and position are stored before them, not over them. The
// sink resumed starts from the patched offsets, the source from the start.
func TestOffsets_ChangeRightAfterClusterWideStop(t *testing.T) {
	forEachCluster(t, testChangeRightAfterClusterWideStop)
}

func testChangeRightAfterClusterWideStop(t *testing.T, c *cluster) {
	ctx := t.Context()
	a := newWorker(t, c.backend(t), "a")
	b := newWorker(t, c.backend(t), "b")
	if err := a.b.EnsureTopic(ctx, "in", 3, nil); err != nil {
		t.Fatal(err)
	}
	// b starts the source first and keeps its lease (cooperative-sticky).
	if err := b.w.Start(ctx, leaseSpec(1_000_000, 5), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b running the source", 15*time.Second, func() bool {
		s, _ := taskState(t, b, "src")
		return s == engine.StateRunning
	})
	sink := engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}
	for _, w := range []*workerUnderTest{a, b} {
		if err := w.w.Start(ctx, sink, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.w.Start(ctx, leaseSpec(1_000_000, 5), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b acking the source's records", 15*time.Second, func() bool { return b.lastAcked() >= 20 })
	if s, _ := taskState(t, a, "src"); s != engine.StateUnassigned {
		t.Fatalf("a's source task is %s, want UNASSIGNED: b holds the lease", s)
	}

	open := b.holdAt(t)
	produced := 0
	deadline := time.Now().Add(15 * time.Second)
	for b.heldCalls() == 0 { // until b owns a partition and is in a Write
		if time.Now().After(deadline) {
			t.Fatalf("b's sink got no records of the %d produced", produced)
		}
		produceKeyed(t, a.b, "in", produced, 30)
		produced += 30
		waitFor(t, "records reaching the sink", 5*time.Second, func() bool {
			return b.heldCalls() > 0 || len(a.received()) == produced
		})
	}

	// Each worker's sink consumer is named as Kafka Connect names a sink
	// task's (what kafka-consumer-groups.sh --describe shows).
	waitFor(t, "dst's members named connector-consumer-dst-0", 15*time.Second, func() bool {
		ids := groupClients(t, a.b, "dst")
		return len(ids) == 2 && ids[0] == "connector-consumer-dst-0" && ids[1] == ids[0]
	})

	api := restAPI(t, a)
	for _, name := range []string{"dst", "src"} {
		if err := a.w.Stop(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	patch := `{"offsets":[{"partition":{"kafka_topic":"in","kafka_partition":0},"offset":{"kafka_offset":1}},` +
		`{"partition":{"kafka_topic":"in","kafka_partition":1},"offset":{"kafka_offset":1}},` +
		`{"partition":{"kafka_topic":"in","kafka_partition":2},"offset":{"kafka_offset":1}}]}`
	patched, deleted := make(chan answer, 1), make(chan answer, 1)
	go func() { patched <- send(api, http.MethodPatch, "/connectors/dst/offsets", patch) }()
	go func() { deleted <- send(api, http.MethodDelete, "/connectors/src/offsets", "") }()

	// b has seen the stops, and is held in its sink's Write and its
	// source's Close: still in the sink's group and the source's lease.
	waitFor(t, "b applying the stops", 10*time.Second, func() bool {
		return connectorState(t, b, "dst") == engine.StateStopped && connectorState(t, b, "src") == engine.StateStopped
	})
	select {
	case ans := <-patched:
		t.Fatalf("PATCH of dst's offsets answered while b is still in its group: %d %s %v", ans.code, ans.body, ans.err)
	case ans := <-deleted:
		t.Fatalf("DELETE of src's offsets answered while b is still in its lease: %d %s %v", ans.code, ans.body, ans.err)
	default:
	}
	open()
	pa, da := <-patched, <-deleted
	if pa.err != nil || pa.code != http.StatusOK || da.err != nil || da.code != http.StatusOK {
		t.Fatalf("right after the stop, PATCH dst = %d %s %v; DELETE src = %d %s %v; want 200 for both once b has left",
			pa.code, pa.body, pa.err, da.code, da.body, da.err)
	}
	if !allStopped(t, "dst", a, b) || !allStopped(t, "src", a, b) {
		t.Fatal("a connector still has a task after its offsets changed")
	}

	// The patched offsets stand: b's last commit came before them.
	bounds, err := a.b.EndOffsets(ctx, "in")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, pb := range bounds {
		if off, ok := committed(t, a.b, "dst", "in", pb.Partition); !ok || off != 1 {
			t.Fatalf("dst's committed offset of in-%d = %d (%v), want the patched 1", pb.Partition, off, ok)
		}
		want += int(pb.End - 1)
	}
	if got, err := a.w.Offsets(ctx, "src"); err != nil || len(got) != 0 {
		t.Fatalf("src's offsets after the DELETE = %v, %v; want none", got, err)
	}

	// The sink resumed delivers every partition again from offset 1.
	beforeA, beforeB := len(a.received()), len(b.received())
	redelivered := func() []connect.Record {
		return append(a.received()[beforeA:], b.received()[beforeB:]...)
	}
	if err := a.w.ResumeContext(ctx, "dst"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resumed sink delivering from the patched offsets", 15*time.Second, func() bool {
		return len(redelivered()) >= want
	})
	for _, r := range redelivered() {
		if r.Offset < 1 {
			t.Fatalf("the resumed sink delivered %s-%d@%d, below the patched offset 1", r.Topic, r.Partition, r.Offset)
		}
	}
	if n := len(redelivered()); n != want {
		t.Fatalf("the resumed sink delivered %d records, want %d (each partition from offset 1)", n, want)
	}

	// The source resumed starts over: b's last position did not outlive
	// the DELETE.
	if err := a.w.ResumeContext(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resumed source producing from the start again", 15*time.Second, func() bool {
		return topicCounts(t, a.b)[1] == 2
	})
}

// A sink stopped while a consumer outside the workers (a plain franz-go
// client) stays in its group: a PATCH or DELETE of its offsets waits for
// it until the request's context ends, then answers a conflict naming the
// member and what to do. The source's lease likewise, with a worker that
// never leaves it. Once they leave, the changes go through.
func TestOffsets_MemberThatDoesNotLeave(t *testing.T) {
	forEachCluster(t, testMemberThatDoesNotLeave)
}

func testMemberThatDoesNotLeave(t *testing.T, c *cluster) {
	ctx := t.Context()
	a := newWorker(t, c.backend(t), "a")
	produceValues(t, a.b, "in", "1", "2", "3")
	sink := engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"in"}}
	if err := a.w.Start(ctx, sink, ""); err != nil {
		t.Fatal(err)
	}
	if err := a.w.Start(ctx, leaseSpec(1_000_000, 5), ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a running the source, and its sink committed to the end", 15*time.Second, func() bool {
		s, _ := taskState(t, a, "src")
		return s == engine.StateRunning && committedToEnd(t, a.b, "dst", "in")
	})
	intruder, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.ClientID("intruder"),
		kgo.ConsumerGroup("dst"), kgo.ConsumeTopics("in"), kgo.DisableAutoCommit(),
		kgo.SessionTimeout(2*time.Second), kgo.HeartbeatInterval(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	go func() {
		for ctx.Err() == nil && !intruder.PollFetches(ctx).IsClientClosed() {
		}
	}()
	lease, err := c.backend(t).LeaseSource(ctx, "p", "src", "w9")
	if err != nil {
		t.Fatal(err)
	}
	defer lease.Close()
	for _, name := range []string{"dst", "src"} {
		if err := a.w.Stop(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the intruder alone in dst's group and w9 in src's lease", 15*time.Second, func() bool {
		m := groupClients(t, a.b, "dst")
		l := groupClients(t, a.b, LeaseGroup("p", "src"))
		return len(m) == 1 && m[0] == "intruder" && len(l) == 1 && l[0] == "w9"
	})

	sinkPatch := []engine.OffsetEntry{{Partition: map[string]any{"kafka_topic": "in", "kafka_partition": 0}, Offset: map[string]any{"kafka_offset": 1}}}
	srcPatch := []engine.OffsetEntry{{Partition: map[string]any{"pipeline": "p"}, Offset: map[string]any{"n": 7}}}
	for _, tc := range []struct {
		what, member string
		change       func(context.Context) error
	}{
		{"PATCH dst", "intruder ", func(ctx context.Context) error { return a.w.AlterOffsets(ctx, "dst", sinkPatch) }},
		{"DELETE dst", "intruder ", func(ctx context.Context) error { return a.w.ResetOffsets(ctx, "dst") }},
		{"PATCH src", "w9 ", func(ctx context.Context) error { return a.w.AlterOffsets(ctx, "src", srcPatch) }},
		{"DELETE src", "w9 ", func(ctx context.Context) error { return a.w.ResetOffsets(ctx, "src") }},
	} {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		err := tc.change(rctx)
		cancel()
		if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), tc.member) ||
			!strings.Contains(err.Error(), engine.TargetsTopic) || !strings.Contains(err.Error(), "older version") {
			t.Fatalf("%s while %sstays: %v; want a conflict naming it, %s and an older version", tc.what, tc.member, err, engine.TargetsTopic)
		}
	}
	if offs, err := a.w.Offsets(ctx, "dst"); err != nil || len(offs) != 1 || fmt.Sprint(offs[0].Offset) != fmt.Sprint(map[string]any{"kafka_offset": int64(3)}) {
		t.Fatalf("dst's offsets after the refused changes = %v, %v; want in-0 at 3, unchanged", offs, err)
	}

	intruder.Close()
	if err := lease.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.w.AlterOffsets(ctx, "dst", sinkPatch); err != nil {
		t.Fatalf("PATCH dst once the intruder left: %v", err)
	}
	if err := a.w.ResetOffsets(ctx, "src"); err != nil {
		t.Fatalf("DELETE src once w9 left: %v", err)
	}
	if off, ok := committed(t, a.b, "dst", "in", 0); !ok || off != 1 {
		t.Fatalf("dst's committed offset of in-0 = %d (%v), want 1", off, ok)
	}
}

// Two pipelines on one cluster each have a source named "src" (a pipeline
// names its connectors; the lease group, the target state and the offsets
// key all carry the pipeline). Each must resume from its own position: the
// source of p2, which never stored one, starts at the beginning, not at the
// position the source of p1 stored under its own key.
func TestOffsets_SameNamedSourcesOfTwoPipelinesKeepTheirOwnPositions(t *testing.T) {
	c := startListener(t)
	ctx := t.Context()
	w1 := newWorker(t, c.backend(t), "w1")
	spec1 := engine.ConnectorSpec{Pipeline: "p1", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "one",
		Config: map[string]string{"max": "50"}}
	if err := w1.w.Start(ctx, spec1, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p1's source acked 50", 15*time.Second, func() bool { return w1.lastAcked() == 50 })

	w2 := newWorker(t, c.backend(t), "w2")
	spec2 := engine.ConnectorSpec{Pipeline: "p2", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "two",
		Config: map[string]string{"max": "30"}}
	if err := w2.w.Start(ctx, spec2, ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && w2.lastAcked() != 30 {
		time.Sleep(50 * time.Millisecond)
	}
	var n int
	if err := w2.b.ReadAll(ctx, "two", func(connect.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 30 {
		t.Fatalf("p2's source wrote %d records to its topic, want 30 (it read %d): it resumed from the position p1's source stored", n, w2.lastRead())
	}
}

package kafka

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testServer is a log in a temp dir with a listener on a free port.
type testServer struct {
	log  *tlog.Log
	srv  *Server
	addr string
}

func startServer(t *testing.T, opts ...func(*Options)) *testServer {
	t.Helper()
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return serveLog(t, l, opts...)
}

// serveLog starts a listener on l; the test's cleanup closes both.
func serveLog(t *testing.T, l *tlog.Log, opts ...func(*Options)) *testServer {
	t.Helper()
	o := Options{
		Logger:                 quietLogger(),
		InitialRebalanceDelay:  -1,
		GroupMinSessionTimeout: 100 * time.Millisecond,
	}
	for _, f := range opts {
		f(&o)
	}
	srv, err := Listen(t.Context(), "127.0.0.1:0", l, o)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Close(); err != nil {
			t.Errorf("close server: %v", err)
		}
		if err := l.Close(); err != nil {
			t.Errorf("close log: %v", err)
		}
	})
	return &testServer{log: l, srv: srv, addr: srv.Addr().String()}
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

func (ts *testServer) client(t *testing.T, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(ts.addr), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)
	c, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func (ts *testServer) createTopic(t *testing.T, name string, partitions int32, configs map[string]*string) {
	t.Helper()
	adm := kadm.NewClient(ts.client(t))
	resp, err := adm.CreateTopic(t.Context(), partitions, -1, configs, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create topic %s: %v %v", name, err, resp.Err)
	}
}

// consumeN reads n records with a client that is not in a group.
func consumeN(t *testing.T, c *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records before the timeout", len(out), n)
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Fatalf("fetch %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

func TestProduceConsume_Kgo(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "orders", 3, nil)
	prod := ts.client(t, kgo.RequiredAcks(kgo.AllISRAcks()))
	const n = 300
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{
			Topic:   "orders",
			Key:     fmt.Appendf(nil, "key-%d", i%17),
			Value:   fmt.Appendf(nil, "value-%d", i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}},
		})
	}
	if err := prod.ProduceSync(t.Context(), recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	// Keys land where murmur2 says, as with Kafka.
	for _, r := range recs {
		if want := tlog.KeyPartition(r.Key, 3); r.Partition != want {
			t.Fatalf("key %s on partition %d, want %d", r.Key, r.Partition, want)
		}
	}
	// The log reads what the listener appended.
	total := 0
	for p := int32(0); p < 3; p++ {
		res, err := ts.log.Read(t.Context(), "orders", p, 0, tlog.ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		total += len(res.Records)
	}
	if total != n {
		t.Fatalf("log holds %d records, want %d", total, n)
	}
	// And records appended in process are consumed over the wire.
	if err := ts.log.Produce(t.Context(), "orders", []tlog.Record{{Key: []byte("in-process"), Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	cons := ts.client(t, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := consumeN(t, cons, n+1)
	seen := map[string]bool{}
	for _, r := range got {
		seen[string(r.Value)] = true
		if string(r.Key) != "in-process" && (len(r.Headers) != 1 || r.Headers[0].Key != "h") {
			t.Fatalf("record %s lost its header: %v", r.Value, r.Headers)
		}
	}
	for i := range n {
		if !seen[fmt.Sprintf("value-%d", i)] {
			t.Fatalf("value-%d not consumed", i)
		}
	}
	if !seen["x"] {
		t.Fatal("record appended in process not consumed")
	}
}

func TestProduce_AcksZeroAndOne(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "acks", 1, nil)
	for _, acks := range []kgo.Acks{kgo.NoAck(), kgo.LeaderAck()} {
		c := ts.client(t, kgo.RequiredAcks(acks), kgo.DisableIdempotentWrite())
		for i := range 10 {
			if err := c.ProduceSync(t.Context(), &kgo.Record{Topic: "acks", Value: fmt.Appendf(nil, "%d", i)}).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, end, err := ts.log.Offsets("acks", 0)
		if err != nil {
			t.Fatal(err)
		}
		if end == 20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("end offset %d, want 20", end)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestListOffsets_ByTime(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "events", 1, nil)
	c := ts.client(t)
	base := time.UnixMilli(1_700_000_000_000)
	for i := range 10 {
		r := &kgo.Record{Topic: "events", Value: []byte("e"), Timestamp: base.Add(time.Duration(i) * time.Minute)}
		if err := c.ProduceSync(t.Context(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	adm := kadm.NewClient(c)
	check := func(name string, got kadm.ListedOffsets, err error, want int64) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		o, ok := got.Lookup("events", 0)
		if !ok || o.Err != nil {
			t.Fatalf("%s: %v %v", name, ok, o.Err)
		}
		if o.Offset != want {
			t.Fatalf("%s: offset %d, want %d", name, o.Offset, want)
		}
	}
	got, err := adm.ListStartOffsets(t.Context(), "events")
	check("start", got, err, 0)
	got, err = adm.ListEndOffsets(t.Context(), "events")
	check("end", got, err, 10)
	got, err = adm.ListOffsetsAfterMilli(t.Context(), base.Add(3*time.Minute+time.Second).UnixMilli(), "events")
	check("after 3m1s", got, err, 4)
	got, err = adm.ListOffsetsAfterMilli(t.Context(), base.Add(time.Hour).UnixMilli(), "events")
	check("after the end", got, err, 10)

	// A consumer starting at a time reads from there.
	cons := ts.client(t, kgo.ConsumeTopics("events"), kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(base.Add(7*time.Minute).UnixMilli())))
	recs := consumeN(t, cons, 3)
	if recs[0].Offset != 7 {
		t.Fatalf("first offset %d, want 7", recs[0].Offset)
	}
}

// TestListOffsets_MaxTimestamp: ListOffsets v7 (KIP-734) with timestamp -3
// answers the offset and timestamp of the record with the largest
// timestamp, the first of several; an empty partition -1 and -1, no error,
// as Kafka. Below v7, -3 is refused per partition with UNSUPPORTED_VERSION
// (Kafka's timestampMinSupportedVersion). ApiVersions announces v7.
func TestListOffsets_MaxTimestamp(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "mx", 2, nil)
	base := time.UnixMilli(1_700_000_000_000)
	var recs []tlog.Record
	for _, m := range []int{5, 9, 2, 9, 1} {
		recs = append(recs, tlog.Record{Value: []byte("e"), Timestamp: base.Add(time.Duration(m) * time.Minute)})
	}
	if _, err := ts.log.Append(t.Context(), "mx", 0, recs); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	av := do[*kmsg.ApiVersionsResponse](rc, kmsg.NewPtrApiVersionsRequest(), 3)
	for _, k := range av.ApiKeys {
		if k.ApiKey == 2 && k.MaxVersion < 7 {
			t.Fatalf("ApiVersions announces ListOffsets up to v%d, want v7", k.MaxVersion)
		}
	}
	for v := int16(1); v <= 7; v++ {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "mx"
		for _, pt := range [][2]int64{{0, -3}, {1, -3}, {0, -2}, {0, -1}} {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(pt[0]), pt[1], -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		resp := do[*kmsg.ListOffsetsResponse](rc, req, v)
		var got []string
		for _, p := range resp.Topics[0].Partitions {
			got = append(got, fmt.Sprintf("p%d %s offset %d ts %d", p.Partition, codeName(p.ErrorCode), p.Offset, p.Timestamp))
		}
		want := []string{
			fmt.Sprintf("p0 %s offset 1 ts %d", codeName(0), base.Add(9*time.Minute).UnixMilli()),
			fmt.Sprintf("p1 %s offset -1 ts -1", codeName(0)),
			fmt.Sprintf("p0 %s offset 0 ts -1", codeName(0)),
			fmt.Sprintf("p0 %s offset 5 ts -1", codeName(0)),
		}
		if v < 7 {
			unsupported := codeName(kerr.UnsupportedVersion.Code)
			want[0] = fmt.Sprintf("p0 %s offset -1 ts -1", unsupported)
			want[1] = fmt.Sprintf("p1 %s offset -1 ts -1", unsupported)
		}
		if strings.Join(got, "; ") != strings.Join(want, "; ") {
			t.Errorf("ListOffsets v%d:\n got %s\nwant %s", v, strings.Join(got, "; "), strings.Join(want, "; "))
		}
	}
}

func TestFetch_LongPoll(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "poll", 2, nil)
	cons := ts.client(t, kgo.ConsumeTopics("poll"), kgo.FetchMaxWait(3*time.Second))
	done := make(chan []*kgo.Record, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		defer cancel()
		done <- cons.PollFetches(ctx).Records()
	}()
	time.Sleep(300 * time.Millisecond) // the fetch is waiting at the end
	start := time.Now()
	if err := ts.log.Produce(t.Context(), "poll", []tlog.Record{{Key: []byte("k"), Value: []byte("late")}}); err != nil {
		t.Fatal(err)
	}
	recs := <-done
	if len(recs) != 1 || string(recs[0].Value) != "late" {
		t.Fatalf("got %v", recs)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("long poll answered %v after the append; want at once", d)
	}
}

// groupMember is a kgo group consumer that tracks its assignment.
type groupMember struct {
	c        *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
}

func (m *groupMember) partitions() []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for p := range m.assigned {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (ts *testServer) member(t *testing.T, group, topic string) *groupMember {
	m := &groupMember{assigned: map[int32]bool{}}
	m.c = ts.client(t,
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.HeartbeatInterval(100*time.Millisecond), kgo.SessionTimeout(3*time.Second),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, a map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range a[topic] {
				m.assigned[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, r map[string][]int32) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, p := range r[topic] {
				delete(m.assigned, p)
			}
		}),
	)
	return m
}

// pollLoop polls until ctx ends, so the client runs its group loop.
func pollLoop(ctx context.Context, c *kgo.Client, got chan<- *kgo.Record) {
	for ctx.Err() == nil {
		fs := c.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			select {
			case got <- r:
			default:
			}
		})
	}
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

func TestGroup_TwoMembersRebalance(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "jobs", 4, nil)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	got := make(chan *kgo.Record, 1000)

	a := ts.member(t, "workers", "jobs")
	wg.Add(1)
	go func() { defer wg.Done(); pollLoop(ctx, a.c, got) }()
	waitFor(t, "member a owning all 4 partitions", 8*time.Second, func() bool { return len(a.partitions()) == 4 })

	b := ts.member(t, "workers", "jobs")
	bctx, bcancel := context.WithCancel(ctx)
	wg.Add(1)
	go func() { defer wg.Done(); pollLoop(bctx, b.c, got) }()
	waitFor(t, "2+2 partitions after b joined", 8*time.Second, func() bool {
		return len(a.partitions()) == 2 && len(b.partitions()) == 2
	})
	pa, pb := a.partitions(), b.partitions()
	for _, p := range pa {
		for _, q := range pb {
			if p == q {
				t.Fatalf("partition %d assigned to both members: %v %v", p, pa, pb)
			}
		}
	}

	// Members commit with their generation.
	adm := kadm.NewClient(ts.client(t))
	described, err := adm.DescribeGroups(t.Context(), "workers")
	if err != nil {
		t.Fatal(err)
	}
	dg := described["workers"]
	if dg.State != "Stable" || len(dg.Members) != 2 || dg.Protocol == "" {
		t.Fatalf("describe: state %s, %d members, protocol %q", dg.State, len(dg.Members), dg.Protocol)
	}
	if err := a.c.CommitRecords(t.Context(), &kgo.Record{Topic: "jobs", Partition: pa[0], Offset: 4}); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	if off, ok := ts.log.Groups().CommittedOffset("workers", "jobs", pa[0]); !ok || off != 5 {
		t.Fatalf("committed %d %v, want 5", off, ok)
	}
	// A commit from outside the group is refused while it has members.
	resp, err := adm.CommitOffsets(t.Context(), "workers", kadm.Offsets{"jobs": {0: {Topic: "jobs", Partition: 0, At: 1}}})
	if err == nil && resp.Error() == nil {
		t.Fatal("commit from outside an active group was accepted")
	}

	// b leaves: a gets everything back.
	bcancel()
	b.c.Close()
	waitFor(t, "a owning all 4 partitions after b left", 8*time.Second, func() bool { return len(a.partitions()) == 4 })
}

// TestMetadata_AutoCreate: a metadata request for an unknown topic that
// allows auto-creation creates it, unless the listener disables it
// (log.kafka.auto_create_topics: false): then the answer is
// UNKNOWN_TOPIC_OR_PARTITION and no topic appears.
func TestMetadata_AutoCreate(t *testing.T) {
	for _, disabled := range []bool{false, true} {
		ts := startServer(t, func(o *Options) { o.DisableAutoCreate = disabled })
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("nosuch")
		req.Topics = append(req.Topics, rt)
		req.AllowAutoTopicCreation = true
		resp, err := req.RequestWith(t.Context(), ts.client(t))
		if err != nil {
			t.Fatal(err)
		}
		_, perr := ts.log.Partitions("nosuch")
		created := perr == nil
		code := resp.Topics[0].ErrorCode
		if created == disabled || (disabled && code != kerr.UnknownTopicOrPartition.Code) {
			t.Errorf("disabled=%v: created %v, error code %d", disabled, created, code)
		}
	}
}

// TestInternalTopic_ClientsCannotCreateOrAppend: a client can neither
// make __consumer_offsets by asking for it (the first commit makes it,
// compacted; one made by auto-create would keep commits only for
// retention.ms) nor write to it (its records there could move any group's
// offsets): Kafka answers INVALID_TOPIC_EXCEPTION to a produce to an
// internal topic, and so does the listener.
func TestInternalTopic_ClientsCannotCreateOrAppend(t *testing.T) {
	ts := startServer(t)
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(tlog.OffsetsTopic)
	req.Topics = append(req.Topics, rt)
	req.AllowAutoTopicCreation = true
	resp, err := req.RequestWith(t.Context(), ts.client(t))
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.Topics[0].ErrorCode; code != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("metadata for %s before any commit: error code %d, want UNKNOWN_TOPIC_OR_PARTITION", tlog.OffsetsTopic, code)
	}
	if _, err := ts.log.Partitions(tlog.OffsetsTopic); err == nil {
		t.Fatalf("asking for %s made it", tlog.OffsetsTopic)
	}

	// Once a group has committed, the topic exists: produce is refused.
	ts.createTopic(t, "t", 1, nil)
	if err := ts.log.Groups().Commit(t.Context(), "g", []tlog.OffsetCommit{{Topic: "t", Partition: 0, Offset: 7}}); err != nil {
		t.Fatal(err)
	}
	c := ts.client(t, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordRetries(1))
	err = c.ProduceSync(t.Context(), &kgo.Record{Topic: tlog.OffsetsTopic, Partition: 0, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.InvalidTopicException) {
		t.Fatalf("produce to %s: %v, want INVALID_TOPIC_EXCEPTION", tlog.OffsetsTopic, err)
	}
	if off, _ := ts.log.Groups().CommittedOffset("g", "t", 0); off != 7 {
		t.Fatalf("group g's committed offset = %d after the refused produce, want 7", off)
	}
}

package kafkabackend

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"
)

// The backend runs against two independent Kafka wire implementations,
// both started by the test: the built-in log's Kafka listener (log/kafka)
// and franz-go's kfake cluster (three brokers). The pipeline suite in
// pipeline_test.go also runs against the embedded backend, so both backends
// pass the same tests.

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// cluster is a running Kafka implementation.
type cluster struct {
	name  string
	addrs []string
	log   *tlog.Log      // the log behind the listener; nil for kfake
	fake  *kfake.Cluster // the kfake cluster; nil for the listener
}

// compact compacts now the topics whose cleanup.policy says so.
func (c *cluster) compact(ctx context.Context) {
	if c.fake != nil {
		c.fake.Compact()
		return
	}
	c.log.Compact(ctx)
}

// enforceRetention removes now the records that the topics' retention
// settings let go.
func (c *cluster) enforceRetention() {
	if c.fake != nil {
		c.fake.ApplyRetention()
		return
	}
	c.log.EnforceRetention()
}

// clusterKinds are the Kafka implementations every backend test runs on.
var clusterKinds = []struct {
	name  string
	start func(t *testing.T) *cluster
}{
	{"listener", startListener},
	{"kfake", startKfake},
}

func startListener(t *testing.T) *cluster {
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
	return &cluster{name: "listener", log: l, addrs: []string{srv.Addr().String()}}
}

func startKfake(t *testing.T) *cluster {
	t.Helper()
	c, err := kfake.NewCluster(
		kfake.NumBrokers(3),
		kfake.DefaultNumPartitions(3),
		kfake.AllowAutoTopicCreation(),
		kfake.GroupMinSessionTimeout(100*time.Millisecond),
	)
	if err != nil {
		t.Fatalf("start kfake cluster: %v", err)
	}
	t.Cleanup(c.Close)
	return &cluster{name: "kfake", addrs: c.ListenAddrs(), fake: c}
}

// forEachCluster runs test as a subtest on every Kafka implementation.
func forEachCluster(t *testing.T, test func(t *testing.T, c *cluster)) {
	for _, k := range clusterKinds {
		t.Run(k.name, func(t *testing.T) { test(t, k.start(t)) })
	}
}

func (c *cluster) backend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(t.Context(), Options{
		Brokers: c.addrs, Logger: quiet(),
		SessionTimeout: 2 * time.Second, HeartbeatInterval: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBackend_TopicsProduceReadOffsets(t *testing.T) {
	forEachCluster(t, testTopicsProduceReadOffsets)
}

func testTopicsProduceReadOffsets(t *testing.T, c *cluster) {
	b := c.backend(t)
	ctx := t.Context()
	if err := b.EnsureTopic(ctx, "orders", 4, map[string]string{"retention.ms": "3600000"}); err != nil {
		t.Fatal(err)
	}
	if err := b.EnsureTopic(ctx, "orders", 4, nil); err != nil {
		t.Fatalf("ensure an existing topic: %v", err)
	}
	td, err := b.adm.ListTopics(ctx, "orders")
	if err != nil || len(td["orders"].Partitions) != 4 {
		t.Fatalf("topic as created: %v %+v", err, td)
	}
	rcs, err := b.adm.DescribeTopicConfigs(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := rcs.On("orders", nil); err != nil || !hasConfig(v.Configs, "retention.ms", "3600000") {
		t.Fatalf("configs of the created topic: %v %+v", err, v)
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
	if c.log != nil {
		if off, ok := c.log.Groups().CommittedOffset("g", "orders", 0); !ok || off != 3 {
			t.Fatalf("log has %d %v", off, ok)
		}
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

func hasConfig(cs []kadm.Config, key, value string) bool {
	for _, c := range cs {
		if c.Key == key && c.Value != nil && *c.Value == value {
			return true
		}
	}
	return false
}

func TestSplitBrokers(t *testing.T) {
	got := splitBrokers([]string{"a:1, b:2", "", "c:3,"})
	if want := []string{"a:1", "b:2", "c:3"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("splitBrokers = %q, want %q", got, want)
	}
	if _, err := New(t.Context(), Options{Brokers: []string{" , "}}); err == nil {
		t.Fatal("New without brokers succeeded")
	}
}

// TestBackend_ClusterID: the backend knows the id of the cluster it
// connected to (the REST API's GET / shows it as kafka_cluster_id).
func TestBackend_ClusterID(t *testing.T) {
	c := startListener(t)
	if got, want := c.backend(t).ClusterID(), c.log.ClusterID(); got != want || got == "" {
		t.Fatalf("ClusterID() = %q, want the listener's %q", got, want)
	}
}

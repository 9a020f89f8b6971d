package iceberg

import (
	"fmt"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine/transform"
)

// A sink-side route transform (Kafka's RegexRouter, docs/transforms.md:
// "On a sink, it changes only the topic the sink is given") that merges
// two sharded topics into one name hands the sink records whose
// (topic, partition, offset) coincide although they are different records
// of the log. The sink keys its exactly-once bookkeeping (Sink.seen, the
// snapshot summary's offsets) on those post-transform coordinates, so the
// second shard's records are silently dropped as "already buffered": no
// error, no dead letter, the group offsets are committed past them.
func TestReviewSinks_RouteMergingTopics_DropsRecords(t *testing.T) {
	route, err := transform.Builtin().New("route", map[string]string{
		"regex": `shop[0-9]+\.orders`, "replacement": "shop.orders",
	})
	if err != nil {
		t.Fatal(err)
	}
	// What the worker polls: 5 records of each shard's partition 0.
	var polled []connect.Record
	for _, shard := range []string{"shop1.orders", "shop2.orders"} {
		for o := int64(0); o < 5; o++ {
			polled = append(polled, rec(shard, 0, o, fmt.Sprintf(`{"shard":%q,"o":%d}`, shard, o)))
		}
	}
	// What the worker hands the sink after the sink's transforms
	// (engine/sink_task.go, deliverBatch).
	var out []connect.Record
	for _, r := range polled {
		got, err := route.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, got...)
	}

	e := newEnv(t, nil)
	s := e.open(t)
	write(t, s, out[:5]...) // shop1's batch
	write(t, s, out[5:]...) // shop2's batch: Write returns nil
	flush(t, s)

	got := e.rows(t, "shop.orders", "o")
	if len(got) != len(polled) {
		t.Errorf("table has %d rows, want %d (one per polled record): %v", len(got), len(polled), got)
	}
}

package iceberg

import (
	"errors"
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

// A JSON field with an empty name is buffered as a new column without a
// word from Write; the commit then fails (iceberg-go refuses a schema
// field without a name), as a task failure, not a bad record. The task
// restarts, is handed the same record again, and fails again: one such
// record stops the pipeline for good, errors.tolerance: all and a
// dead-letter topic notwithstanding, and the good records around it never
// reach the table (DESIGN.md: bad input gets a clear error naming what and
// where, and nothing already accepted is lost). Worse, the failed create
// leaves the table registered with metadata that cannot be loaded, so the
// next task fails at loadTable on any record of that table.
func TestReviewSinks_EmptyFieldName_PoisonsEveryCommit(t *testing.T) {
	e := newEnv(t, nil)
	recs := []connect.Record{
		rec("web.clicks", 0, 0, `{"user":"a"}`),
		rec("web.clicks", 0, 1, `{"user":"b","":1}`),
		rec("web.clicks", 0, 2, `{"user":"c"}`),
	}
	for attempt := 1; attempt <= 3; attempt++ { // the task restarts, the worker redelivers
		s := e.open(t)
		err := s.Write(t.Context(), recs)
		var bad *connect.BadRecordError
		if errors.As(err, &bad) {
			if bad.Index != 1 {
				t.Fatalf("Write = %v, want BadRecordAt(1)", err)
			}
			// The worker dead-letters it and writes the rest.
			write(t, s, recs[2:]...)
			flush(t, s)
			return
		}
		if err != nil {
			// The failed create left the table in the catalog with
			// metadata no one can load: every later task fails here,
			// whatever its records.
			t.Errorf("attempt %d: Write = %v", attempt, err)
			s.Close(t.Context())
			continue
		}
		if err := s.Flush(t.Context()); err != nil {
			t.Errorf("attempt %d: Write accepted every record, then Flush = %v", attempt, err)
			s.Close(t.Context())
			continue
		}
		return
	}
}

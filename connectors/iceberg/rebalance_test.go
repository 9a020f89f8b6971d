package iceberg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// Two tasks of one sink write one table, and a partition moves between
// them while both run (a consumer-group rebalance does not restart a
// task). Task B loaded the table before task A committed records of
// partition 1 that the group offsets do not cover yet (A then died); when
// partition 1 comes back to B, B is given those records again. B must not
// write them a second time: its commit notices that the table holds
// offsets of a partition it buffered that it did not know of, and fails,
// so that the task restarts and skips them.
func TestSink_PartitionMovedBetweenTasks_NoDuplicates(t *testing.T) {
	e := newEnv(t, map[string]string{"commit.records": "1000000"})
	r := func(p int32, o int64) connect.Record {
		return rec("orders", p, o, fmt.Sprintf(`{"p":%d,"o":%d}`, p, o))
	}
	b := e.open(t)
	write(t, b, r(1, 0))
	flush(t, b) // B loads (creates) the table; the group commits p1 past 0

	a := e.open(t)
	write(t, a, r(1, 1), r(1, 2), r(1, 3)) // p1 moved to A
	flush(t, a)                            // the table holds p1 up to 3; A dies before the group commit

	// p1 is back at B, from the group offset (1), with a new record.
	write(t, b, r(1, 1), r(1, 2), r(1, 3), r(1, 4))
	err := b.Flush(t.Context())
	if err == nil {
		t.Fatal("Flush of a task whose buffered partition another task committed meanwhile succeeded; want an error that restarts the task")
	}
	if !strings.Contains(err.Error(), "orders/1") {
		t.Errorf("error %q does not name the partition", err)
	}
	// The restarted task gets the same records and skips what the table holds.
	b2 := e.open(t)
	write(t, b2, r(1, 1), r(1, 2), r(1, 3), r(1, 4))
	flush(t, b2)

	got := e.rows(t, "default.orders", "_offset")
	if len(got) != 5 {
		t.Fatalf("table has %d rows, want 5 (offsets 0..4 once each): %v", len(got), got)
	}
	for i, row := range got {
		if fmt.Sprint(row["_offset"]) != fmt.Sprint(i) {
			t.Errorf("row %d has offset %v", i, row["_offset"])
		}
	}
}

// A partition that moves cleanly (the other task's records are all below
// what this task buffers) commits without a restart.
func TestSink_PartitionMovedCleanly_NoRestart(t *testing.T) {
	e := newEnv(t, map[string]string{"commit.records": "1000000"})
	r := func(p int32, o int64) connect.Record {
		return rec("orders", p, o, fmt.Sprintf(`{"p":%d,"o":%d}`, p, o))
	}
	b := e.open(t)
	write(t, b, r(1, 0))
	flush(t, b)
	a := e.open(t)
	write(t, a, r(1, 1), r(1, 2))
	flush(t, a) // and the group commits p1 past 2
	write(t, b, r(1, 3), r(1, 4))
	flush(t, b)
	if got := e.rows(t, "default.orders", "_offset"); len(got) != 5 {
		t.Fatalf("table has %d rows, want 5", len(got))
	}
}

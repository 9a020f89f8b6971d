package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// The snapshot pages through a table by key: ORDER BY key, then WHERE
// (key) > (last key as text). ENUM columns sort by their index but compare
// with a string by their label: when the labels are not in index order,
// the next chunk's WHERE skips rows the ORDER BY put after the last key.
func TestReviewCDC_SnapshotEnumKeySkipsRows(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (k enum('b','a','c') NOT NULL PRIMARY KEY, v int)",
		"INSERT INTO t VALUES ('a', 1), ('b', 2), ('c', 3)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "initial_only", "snapshot.chunk.size": "1"}, nil)
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		if len(r) == 0 {
			return false
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		return r[len(r)-1].Position != nil && p.Snapshot == nil
	})
	keys := map[string]bool{}
	for _, e := range decode(t, recs) {
		keys[string(e.Rec.Key)] = true
	}
	for _, k := range []string{`{"k":"a"}`, `{"k":"b"}`, `{"k":"c"}`} {
		if !keys[k] {
			t.Errorf("the snapshot of a table with 3 rows misses the row of key %s:\n%s", k, dump(recs))
		}
	}
}

// Without binlog_row_metadata=FULL, the schema history records, at each
// DDL statement of the binlog, the table's definition read from the server
// when the connector meets the statement: today's, not the one the
// statement made. The docs promise that when that does not fit the older
// rows the connector stops rather than decode wrongly (it compares column
// types with the table map). A rename keeps the types: a connector behind
// the binlog (stopped, then restarted from its position) across
// ADD COLUMN, a row, and a rename of another column records the renamed
// column at the ADD, and silently writes the row under the new name.
func TestReviewCDC_HistoryBehindTwoDDLs(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(10))")
	withGlobal(t, d, "binlog_row_metadata", "MINIMAL")
	dir := t.TempDir()
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "state.dir": dir}, nil)
	d.exec(t, "INSERT INTO t VALUES (1, 'a')")
	recs := readRecords(t, s, 1, 30*time.Second)
	pos := lastPosition(recs)
	if err := s.Ack(t.Context(), pos); err != nil {
		t.Fatal(err)
	}
	s.Close(t.Context())
	// While the source is stopped.
	d.exec(t, "ALTER TABLE t ADD COLUMN x int")
	d.exec(t, "INSERT INTO t VALUES (2, 'b', 5)")
	d.exec(t, "ALTER TABLE t CHANGE COLUMN v w varchar(10)")
	d.exec(t, "INSERT INTO t VALUES (3, 'c', 6)")

	s2 := openSource(t, d, map[string]string{"snapshot.mode": "never", "state.dir": dir}, pos)
	var got []connect.Record
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && len(decode(t, got)) < 2 {
		b, err := s2.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v\nrecords so far:\n%s", err, dump(got))
		}
		got = append(got, b...)
	}
	want := `{"id":2,"v":"b","x":5}` + "\n" + `{"id":3,"w":"c","x":6}`
	if g := strings.Join(afters(t, got), "\n"); g != want {
		t.Fatalf("streamed after a restart behind ADD COLUMN, a row, a rename:\n%s\nwant:\n%s", g, want)
	}
}

package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

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

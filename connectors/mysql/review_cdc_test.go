package mysql

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// A SAVEPOINT inside a transaction is logged as a Query event between the
// transaction's rows events. The streamer takes it for a DDL statement and
// commits there: the transaction is split in two, the first half carries a
// position whose GTID set already holds the whole transaction, and a
// restart from that position skips the second half.
func TestReviewCDC_SavepointSplitsTransaction(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true"}, nil)
	d.exec(t, "BEGIN; INSERT INTO t VALUES (1, 'a'); SAVEPOINT sp1; INSERT INTO t VALUES (2, 'b'); COMMIT")
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		return len(decode(t, r)) >= 2 && strings.HasSuffix(r[len(r)-1].Topic, ".transaction")
	})
	evs := decode(t, recs)
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2:\n%s", len(evs), dump(recs))
	}
	// One transaction: both events carry the same transaction id (the GTID),
	// and only its last record carries a position.
	id0, id1 := evs[0].Ev.Transaction, evs[1].Ev.Transaction
	if id0 == nil || id1 == nil || id0.ID != id1.ID {
		t.Errorf("the two rows of one transaction have transaction blocks %+v and %+v:\n%s", id0, id1, dump(recs))
	}
	var begins int
	for _, r := range recs {
		if strings.HasSuffix(r.Topic, ".transaction") && strings.Contains(string(r.Value), `"BEGIN"`) {
			begins++
		}
	}
	if begins != 1 {
		t.Errorf("%d BEGIN records for one transaction:\n%s", begins, dump(recs))
	}
	// The last position before row 2's record: where a worker that stored
	// it restarts from.
	var pos connect.Position
	for _, r := range recs {
		if string(r.Key) == `{"id":2}` {
			break
		}
		if r.Position != nil {
			pos = r.Position
		}
	}
	if pos != nil {
		s.Close(t.Context())
		s2 := openSource(t, d, map[string]string{"snapshot.mode": "never"}, pos)
		d.exec(t, "INSERT INTO t VALUES (3, 'c')")
		recs2 := readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
			for _, e := range decode(t, r) {
				if e.Ev != nil && string(e.Rec.Key) == `{"id":3}` {
					return true
				}
			}
			return false
		})
		got2 := false
		for _, e := range decode(t, recs2) {
			if e.Ev != nil && string(e.Rec.Key) == `{"id":2}` {
				got2 = true
			}
		}
		if !got2 {
			t.Errorf("a record before row 2 carries position %s, inside the transaction; a restart from it never emits row 2 (lost):\n%s", pos, dump(recs2))
		} else {
			t.Errorf("a record before row 2 carries position %s, inside the transaction", pos)
		}
	}
}

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

// CREATE TABLE … SELECT is logged in ROW format as one transaction: the
// CREATE statement, then the rows events of the rows it copied, then the
// commit. The streamer commits at the CREATE: the rows go out as a
// transaction of their own without the GTID, and a position whose GTID
// set holds the whole transaction precedes them, so a restart from it
// never emits the copied rows.
func TestReviewCDC_CreateTableSelectRowsSplit(t *testing.T) {
	d := newDB(t, "CREATE TABLE src (id int PRIMARY KEY, v text)", "INSERT INTO src VALUES (1, 'a'), (2, 'b')")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	d.exec(t, "CREATE TABLE copy (PRIMARY KEY (id)) ENGINE=InnoDB AS SELECT id, v FROM src")
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return len(decode(t, r)) >= 2 })
	var pos connect.Position
	for _, r := range recs {
		if strings.HasSuffix(r.Topic, ".copy") {
			break
		}
		if r.Position != nil {
			pos = r.Position
		}
	}
	evs := decode(t, recs)
	if g, _ := evs[0].Ev.Source.Extra.Get("gtid"); g == nil {
		t.Errorf("a row copied by CREATE TABLE … SELECT has no gtid: %s", evs[0].Rec.Value)
	}
	if pos != nil {
		t.Errorf("a record before the copied rows carries position %s, whose GTID set holds their transaction:\n%s", pos, dump(recs))
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

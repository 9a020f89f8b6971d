package mysql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestStream_InsertUpdateDelete(t *testing.T) {
	d := newDB(t, "CREATE TABLE items (id int PRIMARY KEY, name varchar(20), qty int)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "topic.prefix": "shop"}, nil)
	d.exec(t, "INSERT INTO items VALUES (1, 'apple', 3)")
	d.exec(t, "UPDATE items SET qty = 4 WHERE id = 1")
	d.exec(t, "DELETE FROM items WHERE id = 1")
	recs := readRecords(t, s, 4, 30*time.Second)
	evs := decode(t, recs)
	topic := "shop." + d.name + ".items"
	type want struct{ op, before, after string }
	wants := []want{
		{"c", `null`, `{"id":1,"name":"apple","qty":3}`},
		{"u", `{"id":1,"name":"apple","qty":3}`, `{"id":1,"name":"apple","qty":4}`},
		{"d", `{"id":1,"name":"apple","qty":4}`, `null`},
		{"", "", ""},
	}
	if len(evs) != len(wants) {
		t.Fatalf("got %d records, want %d:\n%s", len(evs), len(wants), dump(recs))
	}
	for i, w := range wants {
		e := evs[i]
		if e.Rec.Topic != topic || string(e.Rec.Key) != `{"id":1}` {
			t.Errorf("record %d: topic %s key %s", i, e.Rec.Topic, e.Rec.Key)
		}
		if w.op == "" {
			if e.Ev != nil {
				t.Errorf("record %d: want a tombstone, got %s", i, e.Rec.Value)
			}
			continue
		}
		if e.Ev == nil {
			t.Fatalf("record %d: unexpected tombstone", i)
		}
		if string(e.Ev.Op) != w.op || e.Ev.Before.String() != w.before || e.Ev.After.String() != w.after {
			t.Errorf("record %d: op %s before %s after %s, want %s %s %s", i, e.Ev.Op, e.Ev.Before, e.Ev.After, w.op, w.before, w.after)
		}
		src := e.Ev.Source
		if src.Connector != "mysql" || src.Name != "shop" || src.DB != d.name || src.Snapshot != "false" || src.TsMs == 0 {
			t.Errorf("record %d: source %+v", i, src)
		}
		for _, f := range []string{"table", "server_id", "gtid", "file", "pos", "row"} {
			if v, _ := src.Extra.Get(f); v == nil {
				t.Errorf("record %d: source.%s is null: %s", i, f, e.Rec.Value)
			}
		}
	}
	// Positions only at transaction ends (records 0, 1 and the tombstone
	// 3), and at least at the last one of a batch: the last record has one.
	for i, r := range recs {
		if i == 2 && r.Position != nil {
			t.Errorf("record %d: position %s inside a transaction", i, r.Position)
		}
		if i == len(recs)-1 && r.Position == nil {
			t.Errorf("record %d: the last record has no position", i)
		}
		if r.Position != nil {
			p, err := decodePosition(r.Position)
			if err != nil || p.File == "" || p.Pos == 0 || p.GTIDs == "" || p.ServerID != 1 || p.TsSec == 0 {
				t.Errorf("record %d: position %s (%v)", i, r.Position, err)
			}
		}
	}
}

func TestStream_ResumeFromGTIDAndFilePos(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	d.exec(t, "INSERT INTO t VALUES (1, 'a')")
	recs := readRecords(t, s, 1, 30*time.Second)
	pos := lastPosition(recs)
	s.Close(context.Background())
	d.exec(t, "INSERT INTO t VALUES (2, 'b')")
	d.exec(t, "INSERT INTO t VALUES (3, 'c')")

	// From the GTID set.
	s2 := openSource(t, d, nil, pos)
	evs := decode(t, readRecords(t, s2, 2, 30*time.Second))
	if got := evs[0].Ev.After.String() + evs[1].Ev.After.String(); got != `{"id":2,"v":"b"}{"id":3,"v":"c"}` {
		t.Fatalf("resumed from gtids: %s", got)
	}
	expectQuiet(t, s2, 300*time.Millisecond)
	s2.Close(context.Background())

	// From file/pos only.
	p, _ := decodePosition(pos)
	p.GTIDs = ""
	s3 := openSource(t, d, nil, p.encode())
	evs = decode(t, readRecords(t, s3, 2, 30*time.Second))
	if got := evs[0].Ev.After.String() + evs[1].Ev.After.String(); got != `{"id":2,"v":"b"}{"id":3,"v":"c"}` {
		t.Fatalf("resumed from file/pos: %s", got)
	}
}

func TestStream_MultiTableTransaction(t *testing.T) {
	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)", "CREATE TABLE skipped (id int PRIMARY KEY)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true",
		"tables": d.name + ".a," + d.name + ".b"}, nil)
	d.exec(t, "BEGIN; INSERT INTO a VALUES (1); INSERT INTO skipped VALUES (1); INSERT INTO b VALUES (1), (2); INSERT INTO a VALUES (2); COMMIT")
	recs := readRecords(t, s, 6, 30*time.Second)
	if len(recs) != 6 {
		t.Fatalf("got %d records:\n%s", len(recs), dump(recs))
	}
	if !strings.HasSuffix(recs[0].Topic, ".transaction") || !strings.Contains(string(recs[0].Value), `"BEGIN"`) ||
		!strings.HasSuffix(recs[5].Topic, ".transaction") || !strings.Contains(string(recs[5].Value), `"event_count":4`) {
		t.Fatalf("transaction records:\n%s", dump(recs))
	}
	for i, r := range recs {
		if (r.Position != nil) != (i == 5) {
			t.Errorf("record %d: position %s", i, r.Position)
		}
	}
	evs := decode(t, recs)
	var orders []string
	for _, e := range evs {
		tx := e.Ev.Transaction
		if tx == nil || tx.ID == "" {
			t.Fatalf("no transaction block: %s", e.Rec.Value)
		}
		orders = append(orders, e.Ev.Source.Extra[0].Value.(string)+":"+itoa(int(tx.TotalOrder))+"/"+itoa(int(tx.DataCollectionOrder)))
	}
	if got := strings.Join(orders, " "); got != "a:1/1 b:2/1 b:3/2 a:4/2" {
		t.Errorf("orders %s", got)
	}
}

func TestStream_KeyChangeAndHeartbeat(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v int)", "CREATE TABLE other (id int PRIMARY KEY)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + ".t", "heartbeat.interval": "300ms"}, nil)
	d.exec(t, "INSERT INTO t VALUES (1, 1)")
	d.exec(t, "UPDATE t SET id = 2 WHERE id = 1")
	recs := readRecords(t, s, 4, 30*time.Second)
	evs := decode(t, recs)
	var ops []string
	for _, e := range evs {
		if e.Ev == nil {
			ops = append(ops, "tomb")
			continue
		}
		ops = append(ops, string(e.Ev.Op))
	}
	if got := strings.Join(ops, ","); !strings.HasPrefix(got, "c,d,tomb,c") {
		t.Fatalf("ops %s:\n%s", got, dump(recs))
	}
	if v, ok := evs[1].Rec.Header("__debezium.newkey"); !ok || string(v) != `{"id":2}` {
		t.Errorf("newkey header %q", v)
	}
	// Changes of other tables move the heartbeat's position on.
	before, _ := decodePosition(lastPosition(recs))
	d.exec(t, "INSERT INTO other VALUES (1)")
	hb := readUntil(t, s, 10*time.Second, func(r []connect.Record) bool {
		for _, x := range r {
			if strings.HasPrefix(x.Topic, "__debezium-heartbeat.") {
				p, _ := decodePosition(x.Position)
				if p.Pos > before.Pos || p.File != before.File {
					return true
				}
			}
		}
		return false
	})
	for _, r := range hb {
		if !strings.HasPrefix(r.Topic, "__debezium-heartbeat.") {
			t.Errorf("unexpected record %s", r.Value)
		}
	}
}

// TestStream_SavepointKeepsTransactionWhole: SAVEPOINT, ROLLBACK TO
// SAVEPOINT and RELEASE SAVEPOINT are logged as query events between a
// transaction's rows events. They do not end the transaction: it is
// emitted as one (one BEGIN, one transaction id), and no record before its
// last row carries a position (its GTID set would hold the whole
// transaction, and a restart from it would skip the rest).
func TestStream_SavepointKeepsTransactionWhole(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true"}, nil)
	d.exec(t, "BEGIN; INSERT INTO t VALUES (1, 'a'); SAVEPOINT sp1; INSERT INTO t VALUES (2, 'b'); "+
		"SAVEPOINT sp2; INSERT INTO t VALUES (9, 'z'); ROLLBACK TO SAVEPOINT sp2; RELEASE SAVEPOINT sp1; COMMIT")
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

// TestStream_CreateTableSelectIsOneTransaction: CREATE TABLE … SELECT is
// logged in ROW format as one transaction (MariaDB; MySQL from 8.0.21):
// the CREATE statement, the rows events of the rows it copied, the
// commit. The CREATE does not end the transaction: the copied rows carry
// its GTID, and no record before them carries a position (its GTID set
// would hold the whole transaction, and a restart from it would never
// emit the copied rows).
func TestStream_CreateTableSelectIsOneTransaction(t *testing.T) {
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

// TestReport_DebeziumStreamingMetrics: the source reports Debezium's
// streaming and snapshot metrics (CONVENTIONS.md §7) under the gauge names
// of the postgres source (connectors/postgres/report.go): before Open at
// zero, then the rows the snapshot read, the change events and the
// transactions streamed (a transaction of tables not captured counts for
// neither), and how far behind the source the last commit was handled.
func TestReport_DebeziumStreamingMetrics(t *testing.T) {
	g := (&Source{}).Report().Gauges
	for _, k := range []string{"total_number_of_events_seen", "number_of_committed_transactions", "snapshot_rows_scanned"} {
		if v, ok := g[k]; !ok || v != 0 {
			t.Errorf("Report().Gauges[%q] = %v, %v before Open, want 0 (Debezium's metric under its Prometheus name); it has %v", k, v, ok, g)
		}
	}
	if v, ok := g["milliseconds_behind_source"]; ok {
		t.Errorf("milliseconds_behind_source = %v before any transaction, want none", v)
	}

	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v int)", "CREATE TABLE other (id int PRIMARY KEY)",
		"INSERT INTO a SELECT seq, seq FROM seq_1_to_25")
	s := openSource(t, d, map[string]string{"tables": d.name + ".a", "snapshot.chunk.size": "10"}, nil)
	readRecords(t, s, 25, 30*time.Second)
	d.exec(t, "INSERT INTO other VALUES (1)") // not captured
	d.exec(t, "INSERT INTO a VALUES (100, 1), (101, 1)")
	d.exec(t, "UPDATE a SET v = -1 WHERE id <= 3")
	readRecords(t, s, 5, 30*time.Second)
	want := map[string]float64{"snapshot_rows_scanned": 25, "total_number_of_events_seen": 5, "number_of_committed_transactions": 2}
	deadline := time.Now().Add(10 * time.Second)
	for {
		g = s.Report().Gauges
		ok := true
		for k, v := range want {
			ok = ok && g[k] == v
		}
		if behind, known := g["milliseconds_behind_source"]; ok && known && behind >= 0 && behind < 60_000 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gauges %v, want %v and milliseconds_behind_source from 0 to a minute", g, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

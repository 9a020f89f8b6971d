package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestStream_InsertUpdateDelete(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE items (id int PRIMARY KEY, name text, qty int)",
		"CREATE TABLE audit (id int PRIMARY KEY, note text)",
		"ALTER TABLE audit REPLICA IDENTITY FULL",
	)
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "topic.prefix": "shop"}, nil)
	db.exec(t, "INSERT INTO items VALUES (1, 'apple', 3)")
	db.exec(t, "UPDATE items SET qty = 4 WHERE id = 1")
	db.exec(t, "DELETE FROM items WHERE id = 1")
	db.exec(t, "INSERT INTO audit VALUES (7, 'a')")
	db.exec(t, "UPDATE audit SET note = 'b' WHERE id = 7")
	db.exec(t, "DELETE FROM audit WHERE id = 7")
	recs := readRecords(t, s, 8, 30*time.Second)
	evs := decode(t, recs)
	type want struct {
		topic, op, key, before, after string
	}
	wants := []want{
		{"shop.public.items", "c", `{"id":1}`, `null`, `{"id":1,"name":"apple","qty":3}`},
		{"shop.public.items", "u", `{"id":1}`, `null`, `{"id":1,"name":"apple","qty":4}`},
		{"shop.public.items", "d", `{"id":1}`, `{"id":1,"name":null,"qty":null}`, `null`},
		{"shop.public.items", "", `{"id":1}`, "", ""},
		{"shop.public.audit", "c", `{"id":7}`, `null`, `{"id":7,"note":"a"}`},
		{"shop.public.audit", "u", `{"id":7}`, `{"id":7,"note":"a"}`, `{"id":7,"note":"b"}`},
		{"shop.public.audit", "d", `{"id":7}`, `{"id":7,"note":"b"}`, `null`},
		{"shop.public.audit", "", `{"id":7}`, "", ""},
	}
	if len(evs) != len(wants) {
		t.Fatalf("got %d records, want %d:\n%s", len(evs), len(wants), dump(recs))
	}
	for i, w := range wants {
		e := evs[i]
		if e.Rec.Topic != w.topic || string(e.Rec.Key) != w.key {
			t.Errorf("record %d: topic %s key %s, want %s %s", i, e.Rec.Topic, e.Rec.Key, w.topic, w.key)
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
		if src.Connector != "postgresql" || src.Name != "shop" || src.DB != db.name || src.Snapshot != "false" || src.TsMs == 0 {
			t.Errorf("record %d: source %+v", i, src)
		}
		if lsn, _ := src.Extra.Get("lsn"); lsn == nil {
			t.Errorf("record %d: source has no lsn", i)
		}
	}
	// Every transaction here has one change; the position is on its last
	// record (the tombstone for deletes), and positions grow.
	var last uint64
	for i, r := range recs {
		isLast := i == len(recs)-1 || recs[i+1].Value != nil || r.Value == nil
		if strings.Contains(string(r.Value), `"op":"d"`) {
			isLast = false
		}
		if (r.Position != nil) != isLast {
			t.Errorf("record %d: position %s, want one only at a transaction's end", i, r.Position)
		}
		if r.Position != nil {
			p, err := decodePosition(r.Position)
			if err != nil || p.LSN <= last || p.TxID == 0 || p.TsUsec == 0 {
				t.Errorf("record %d: position %s after lsn %d", i, r.Position, last)
			}
			last = p.LSN
		}
	}
}

func TestStream_TransactionAcrossTables(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY)",
		"CREATE TABLE b (id int PRIMARY KEY)",
	)
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true", "tombstones.on.delete": "false"}, nil)
	db.exec(t, "BEGIN; INSERT INTO a VALUES (1); INSERT INTO b VALUES (1); INSERT INTO a VALUES (2); DELETE FROM b WHERE id = 1; COMMIT")
	recs := readRecords(t, s, 6, 30*time.Second)
	if len(recs) != 6 {
		t.Fatalf("got %d records:\n%s", len(recs), dump(recs))
	}
	if recs[0].Topic != "src.transaction" || !strings.Contains(string(recs[0].Value), `"status":"BEGIN"`) {
		t.Errorf("first record %s %s, want BEGIN on src.transaction", recs[0].Topic, recs[0].Value)
	}
	end := recs[5]
	if end.Topic != "src.transaction" || !strings.Contains(string(end.Value), `"status":"END"`) ||
		!strings.Contains(string(end.Value), `"event_count":4,"data_collections":[{"data_collection":"public.a","event_count":2},{"data_collection":"public.b","event_count":2}]`) {
		t.Errorf("last record %s %s, want END with counts", end.Topic, end.Value)
	}
	if end.Position == nil {
		t.Errorf("END has no position")
	}
	evs := decode(t, recs)
	var id string
	wantOrder := [][2]int64{{1, 1}, {2, 1}, {3, 2}, {4, 2}}
	for i, e := range evs {
		tx := e.Ev.Transaction
		if tx == nil {
			t.Fatalf("event %d has no transaction block", i)
		}
		if id == "" {
			id = tx.ID
		}
		if tx.ID != id || tx.TotalOrder != wantOrder[i][0] || tx.DataCollectionOrder != wantOrder[i][1] {
			t.Errorf("event %d: transaction %+v, want id %s order %v", i, tx, id, wantOrder[i])
		}
		if recs[i+1].Position != nil {
			t.Errorf("event %d in the middle of the transaction has a position", i)
		}
	}
	if !strings.Contains(string(recs[0].Value), `"id":"`+id+`"`) {
		t.Errorf("BEGIN %s does not carry id %s", recs[0].Value, id)
	}
}

func TestStream_ToastTruncateAndSchemaChange(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE docs (id int PRIMARY KEY, title text, body text)",
		"CREATE TABLE docs_full (id int PRIMARY KEY, title text, body text)",
		"ALTER TABLE docs_full REPLICA IDENTITY FULL",
		// Store bodies out of line, uncompressed, so they are TOASTed.
		"ALTER TABLE docs ALTER COLUMN body SET STORAGE EXTERNAL",
		"ALTER TABLE docs_full ALTER COLUMN body SET STORAGE EXTERNAL",
	)
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "tombstones.on.delete": "false", "skipped.operations": "none"}, nil)
	big := strings.Repeat("x", 10000)
	db.exec(t, "INSERT INTO docs VALUES (1, 't', $1)", big)
	db.exec(t, "INSERT INTO docs_full VALUES (1, 't', $1)", big)
	db.exec(t, "UPDATE docs SET title = 'u' WHERE id = 1")
	db.exec(t, "UPDATE docs_full SET title = 'u' WHERE id = 1")
	db.exec(t, "TRUNCATE docs")
	db.exec(t, "ALTER TABLE docs ADD COLUMN tags text[]")
	db.exec(t, "INSERT INTO docs VALUES (2, 'n', 'short', '{a,b}')")
	db.exec(t, "ALTER TABLE docs DROP COLUMN title")
	db.exec(t, "INSERT INTO docs VALUES (3, 'short', '{c}')")
	evs := decode(t, readRecords(t, s, 7, 30*time.Second))
	if len(evs) != 7 {
		t.Fatalf("got %d events", len(evs))
	}
	body := func(e event) any { v, _ := e.Ev.After.Get("body"); return v }
	if got := body(evs[0]); got != big {
		t.Errorf("insert body has %d chars, want the full value", len(got.(string)))
	}
	if got := body(evs[2]); got != connect.UnavailableValue {
		t.Errorf("unchanged TOAST under REPLICA IDENTITY DEFAULT = %.40v, want the placeholder", got)
	}
	if got := body(evs[3]); got != big {
		t.Errorf("unchanged TOAST under REPLICA IDENTITY FULL = %.40v, want the value from before", got)
	}
	if e := evs[4]; e.Ev.Op != connect.OpTruncate || e.Rec.Key != nil || e.Ev.Before != nil || e.Ev.After != nil || e.Rec.Topic != "src.public.docs" {
		t.Errorf("truncate event: %s key=%s %s", e.Rec.Topic, e.Rec.Key, e.Rec.Value)
	}
	if got := evs[5].Ev.After.String(); got != `{"id":2,"title":"n","body":"short","tags":["a","b"]}` {
		t.Errorf("after ADD COLUMN: %s", got)
	}
	if got := evs[6].Ev.After.String(); got != `{"id":3,"body":"short","tags":["c"]}` {
		t.Errorf("after DROP COLUMN: %s", got)
	}
}

func TestStream_PrimaryKeyChange(t *testing.T) {
	db := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)")
	s := openSource(t, db, map[string]string{"snapshot.mode": "never"}, nil)
	db.exec(t, "INSERT INTO k VALUES (1, 'a')")
	db.exec(t, "UPDATE k SET id = 2 WHERE id = 1")
	evs := decode(t, readRecords(t, s, 4, 30*time.Second))
	if len(evs) != 4 || evs[1].Ev.Op != connect.OpDelete || evs[2].Ev != nil || evs[3].Ev.Op != connect.OpCreate {
		t.Fatalf("want c, d, tombstone, c; got %d events", len(evs))
	}
	if h, _ := evs[1].Rec.Header("__debezium.newkey"); string(h) != `{"id":2}` {
		t.Errorf("newkey header %s", h)
	}
	if h, _ := evs[3].Rec.Header("__debezium.oldkey"); string(h) != `{"id":1}` {
		t.Errorf("oldkey header %s", h)
	}
	if evs[3].Rec.Position == nil || evs[1].Rec.Position != nil {
		t.Errorf("the position belongs on the last record of the transaction")
	}
}

func TestStream_SchemasEmbedded(t *testing.T) {
	db := newDB(t, "CREATE TABLE e (id bigint PRIMARY KEY, f float8, n numeric(10,2))")
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "schemas": "true"}, nil)
	db.exec(t, "INSERT INTO e VALUES (1, 1.5, 12.34), (2, 'NaN', 'NaN')")
	recs := readRecords(t, s, 2, 30*time.Second)
	if !strings.HasPrefix(string(recs[0].Key), `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"src.public.e.Key"},"payload":{"id":1}}`) {
		t.Errorf("key %s", recs[0].Key)
	}
	for _, r := range recs {
		e, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
		if err != nil {
			t.Fatalf("decode %s: %v", r.Value, err)
		}
		if e.Schema == nil || e.Schema.Row == nil || e.Schema.Row.Name != "src.public.e.Value" {
			t.Errorf("no row schema in %s", r.Value)
		}
	}
	if !strings.Contains(string(recs[1].Value), `"f":"NaN"`) {
		t.Errorf("NaN not written as \"NaN\": %s", recs[1].Value)
	}
}

// TestStream_SkippedOperations checks skipped.operations: by default a
// truncate is not emitted (its event has no key, which a compacted topic
// refuses), and each of c, u, d leaves out its events, the two halves of
// a key change included. A marker insert ends each run, so that an event
// that should have been skipped shows up before it.
func TestStream_SkippedOperations(t *testing.T) {
	for _, tc := range []struct {
		skip string // "" for the default
		want []string
	}{
		// c 1, u 1, key change 1→2 (d, tombstone, c), d 2 (+ tombstone), t, c marker
		{"", []string{"c {1}", "u {1}", "d {1} newkey={2}", "tombstone {1}", "c {2} oldkey={1}", "d {2}", "tombstone {2}", "c {9}"}},
		{"none", []string{"c {1}", "u {1}", "d {1} newkey={2}", "tombstone {1}", "c {2} oldkey={1}", "d {2}", "tombstone {2}", "t", "c {9}"}},
		{"d,u", []string{"c {1}", "c {2} oldkey={1}", "t", "c {9}"}},
		{"c,t", []string{"u {1}", "d {1} newkey={2}", "tombstone {1}", "d {2}", "tombstone {2}"}},
	} {
		name := strings.ReplaceAll(tc.skip, ",", "_")
		if name == "" {
			name = "default"
		}
		t.Run(name, func(t *testing.T) {
			db := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)")
			cfg := map[string]string{"snapshot.mode": "never"}
			if tc.skip != "" {
				cfg["skipped.operations"] = tc.skip
			}
			s := openSource(t, db, cfg, nil)
			db.exec(t, "INSERT INTO k VALUES (1, 'a')")
			db.exec(t, "UPDATE k SET v = 'b' WHERE id = 1")
			db.exec(t, "UPDATE k SET id = 2 WHERE id = 1")
			db.exec(t, "DELETE FROM k WHERE id = 2")
			db.exec(t, "TRUNCATE k")
			db.exec(t, "INSERT INTO k VALUES (9, 'marker')")
			if strings.Contains(tc.skip, "c") {
				db.exec(t, "UPDATE k SET v = 'end' WHERE id = 9") // the marker, when inserts are skipped
				tc.want = append(tc.want, "u {9}")
			}
			var got []string
			for _, e := range decode(t, readRecords(t, s, len(tc.want), 30*time.Second)) {
				key := strings.NewReplacer(`{"id":`, "{").Replace(string(e.Rec.Key))
				var d string
				switch {
				case e.Ev == nil:
					d = "tombstone " + key
				case e.Ev.Op == connect.OpTruncate:
					d = "t" + key // a truncate has no key
				default:
					d = string(e.Ev.Op) + " " + key
				}
				for _, h := range []string{"__debezium.newkey", "__debezium.oldkey"} {
					if v, ok := e.Rec.Header(h); ok {
						d += " " + strings.TrimPrefix(h, "__debezium.") + "=" + strings.NewReplacer(`{"id":`, "{").Replace(string(v))
					}
				}
				got = append(got, d)
			}
			if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
				t.Errorf("skipped.operations=%q:\n got %s\nwant %s", tc.skip, strings.Join(got, "; "), strings.Join(tc.want, "; "))
			}
		})
	}
}

// TestStream_TableRenamedOrDroppedSinceItsChanges streams changes of
// tables that were renamed or dropped after them, as a source that is
// behind (here: stopped) sees them: the table's key is still known (by
// the relation's OID, or from the stream's own description of a table
// that is gone), and the stream does not stop on a name the catalogue no
// longer has.
func TestStream_TableRenamedOrDroppedSinceItsChanges(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE r (id int PRIMARY KEY, v text NOT NULL)",
		"CREATE TYPE gone_t AS ENUM ('x', 'y')",
		"CREATE TABLE gone (id int PRIMARY KEY, v text, e gone_t)",
		"CREATE TABLE rc (id int PRIMARY KEY, v text)",
		"CREATE TABLE marker (id int PRIMARY KEY)",
	)
	cfg := map[string]string{"snapshot.mode": "never", "tombstones.on.delete": "false"}
	openSource(t, db, cfg, nil).Close(t.Context())
	db.exec(t, "INSERT INTO rc VALUES (7, 'k')")
	db.exec(t, "ALTER TABLE rc RENAME COLUMN id TO rid")
	db.exec(t, "INSERT INTO r VALUES (1, 'a')")
	db.exec(t, "INSERT INTO gone VALUES (2, 'b', 'y')")
	db.exec(t, "ALTER TABLE r RENAME TO r2")
	db.exec(t, "DROP TABLE gone")
	db.exec(t, "DROP TYPE gone_t")
	db.exec(t, "INSERT INTO r2 VALUES (3, 'c')")
	db.exec(t, "INSERT INTO marker VALUES (-1)")
	s := openSource(t, db, cfg, nil)
	recs := readUntil(t, s, 30*time.Second, untilMarker("marker"))
	var got []string
	for _, e := range decode(t, recs) {
		got = append(got, e.Rec.Topic+" "+string(e.Rec.Key)+" "+e.Ev.After.String())
	}
	want := []string{
		`src.public.rc {"id":7} {"id":7,"v":"k"}`,
		`src.public.r {"id":1} {"id":1,"v":"a"}`,
		`src.public.gone {"id":2} {"id":2,"v":"b","e":"y"}`,
		`src.public.r2 {"id":3} {"id":3,"v":"c"}`,
		`src.public.marker {"id":-1} {"id":-1}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestStream_ShortWalSenderTimeout_SlowReader: while Read is slow to take
// records, the runner waits to hand them over and reads nothing from the
// server, so it must keep confirming on its own, well within the server's
// wal_sender_timeout (here 2s, set for the connection), or the server ends
// the stream ("terminating walsender process due to replication timeout").
func TestStream_ShortWalSenderTimeout_SlowReader(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)")
	dsn := db.dsn + "&options=" + "-c%20wal_sender_timeout%3D2s"
	s, err := tryOpenSource(t, dsn, map[string]string{"snapshot.mode": "never", "batch.size": "1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	db.exec(t, "INSERT INTO a SELECT g FROM generate_series(1, 20) g")
	time.Sleep(4 * time.Second) // the runner's hand-over is full: it waits
	db.exec(t, "INSERT INTO a VALUES (-1)")
	recs := readUntil(t, s, 30*time.Second, untilMarker("a"))
	if len(recs) != 21 {
		t.Fatalf("got %d records, want 21", len(recs))
	}
}

func TestParseGUCDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{"60s": time.Minute, "0": 0, "500ms": 500 * time.Millisecond, "2min": 2 * time.Minute, "1h": time.Hour, "250": 250 * time.Millisecond} {
		if got, err := parseGUCDuration(in); err != nil || got != want {
			t.Errorf("parseGUCDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := parseGUCDuration("soon"); err == nil {
		t.Errorf("parseGUCDuration(soon) did not fail")
	}
}

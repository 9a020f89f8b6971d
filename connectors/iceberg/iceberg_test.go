package iceberg

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine/transform"
)

func TestConnector_Registered(t *testing.T) {
	c, err := connect.Default().Lookup(connect.KindSink, Name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name || c.Description == "" || c.NewSink == nil {
		t.Errorf("registered connector = %+v", c)
	}
}

func TestSink_Append_JSON(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	write(t, s,
		rec("web.clicks", 0, 0, `{"user":"a","n":1}`),
		rec("web.clicks", 1, 0, `{"user":"b","n":2,"price":1.5,"tags":["x"],"ctx":{"ip":"1.2.3.4"}}`),
		rec("web.clicks", 0, 1, `{"user":"c","n":null}`),
		rec("web.clicks", 0, 2, ""), // a tombstone: nothing to append
	)
	flush(t, s)
	got := e.rows(t, "web.clicks", "user")
	want := []string{
		`{"_offset":0,"_partition":0,"_timestamp":"2026-01-02T03:04:05Z","_topic":"web.clicks","ctx":null,"n":1,"price":null,"tags":null,"user":"a"}`,
		`{"_offset":0,"_partition":1,"_timestamp":"2026-01-02T03:04:05Z","_topic":"web.clicks","ctx":"{\"ip\":\"1.2.3.4\"}","n":2,"price":1.5,"tags":"[\"x\"]","user":"b"}`,
		`{"_offset":1,"_partition":0,"_timestamp":"2026-01-02T03:04:06Z","_topic":"web.clicks","ctx":null,"n":null,"price":null,"tags":null,"user":"c"}`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d rows, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if js(got[i]) != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, js(got[i]), want[i])
		}
	}
	tbl := e.table(t, "web.clicks")
	snap := tbl.CurrentSnapshot()
	if v := snap.Summary.Properties["tributary.offsets.p.lake"]; v != `{"web.clicks":{"0":1,"1":0}}` {
		t.Errorf("offsets in the snapshot summary = %s", v)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots, want 1 for one flush", n)
	}
	// Column types: JSON integers are long, fractions double.
	sc := tbl.Schema()
	for name, typ := range map[string]string{"n": "long", "price": "double", "user": "string", "_partition": "int", "_offset": "long", "_timestamp": "timestamptz"} {
		f, ok := sc.FindFieldByName(name)
		if !ok || f.Type.String() != typ {
			t.Errorf("column %s: %v, want %s", name, f.Type, typ)
		}
	}
}

// A crash after the table commit and before the worker's group commit:
// the worker redelivers, and the sink skips what the table holds.
func TestSink_ExactlyOnce_AfterRestart(t *testing.T) {
	e := newEnv(t, map[string]string{"commit.records": "1000000"})
	var recs []connect.Record
	for p := int32(0); p < 3; p++ {
		for o := int64(0); o < 20; o++ {
			recs = append(recs, rec("orders", p, o, fmt.Sprintf(`{"p":%d,"o":%d}`, p, o)))
		}
	}
	s := e.open(t)
	write(t, s, recs[:30]...) // p0 0..19, p1 0..9
	flush(t, s)
	write(t, s, recs[30:45]...) // buffered, never flushed: lost in the "crash"
	// The worker never committed its group offsets: a new instance gets
	// everything again, and more.
	s2 := e.open(t)
	write(t, s2, recs...)
	flush(t, s2)
	// And again, from the middle, after a clean flush.
	s3 := e.open(t)
	write(t, s3, recs[10:]...)
	flush(t, s3)

	got := e.rows(t, "default.orders", "_offset")
	if len(got) != len(recs) {
		t.Fatalf("table has %d rows, want %d (each record once)", len(got), len(recs))
	}
	seen := map[string]bool{}
	for _, r := range got {
		k := fmt.Sprint(r["_partition"], "/", r["_offset"])
		if seen[k] {
			t.Errorf("record %s is in the table twice", k)
		}
		seen[k] = true
		if fmt.Sprint(r["p"]) != fmt.Sprint(r["_partition"]) || fmt.Sprint(r["o"]) != fmt.Sprint(r["_offset"]) {
			t.Errorf("row %v does not match its offsets", r)
		}
	}
	if n := len(e.table(t, "default.orders").Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2 (the third flush had nothing new)", n)
	}
}

// routed returns what the worker hands a sink that has a route transform
// (Kafka's RegexRouter, docs/transforms.md: "On a sink, it changes only
// the topic the sink is given") merging shop1.orders and shop2.orders into
// shop.orders: n records of partition 0 of each shard, routed, with the
// coordinates they were read at in their Original fields
// (engine/sink_task.go, deliverBatch).
func routed(t *testing.T, n int64) []connect.Record {
	t.Helper()
	route, err := transform.Builtin().New("route", map[string]string{
		"regex": `shop[0-9]+\.orders`, "replacement": "shop.orders",
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []connect.Record
	for _, shard := range []string{"shop1.orders", "shop2.orders"} {
		for o := int64(0); o < n; o++ {
			polled := rec(shard, 0, o, fmt.Sprintf(`{"shard":%q,"o":%d}`, shard, o))
			got, err := route.Apply(polled)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range got {
				r.OriginalTopic, r.OriginalPartition, r.OriginalOffset = polled.Topic, polled.Partition, polled.Offset
				out = append(out, r)
			}
		}
	}
	return out
}

// TestSink_RouteMergingTopics_KeepsEveryRecord: two records a sink-side
// route gives the same topic, partition and offset are different records
// of the log; the sink keys its exactly-once bookkeeping (what it
// buffered, the snapshot summary's offsets) on where they were read, so
// that the second shard's records are not dropped as "already buffered"
// (they were, silently: no error, no dead letter, and the group offsets
// committed past them), and a restart still writes each record once.
func TestSink_RouteMergingTopics_KeepsEveryRecord(t *testing.T) {
	e := newEnv(t, nil)
	out := routed(t, 5)
	s := e.open(t)
	write(t, s, out[:5]...) // shop1's batch
	write(t, s, out[5:]...) // shop2's batch
	flush(t, s)
	got := e.rows(t, "shop.orders", "o")
	if len(got) != len(out) {
		t.Fatalf("table has %d rows, want %d (one per polled record): %v", len(got), len(out), got)
	}
	// The summary holds the offsets of the topics read.
	summary := e.table(t, "shop.orders").CurrentSnapshot().Summary.Properties[offsetsPrefix+"p.lake"]
	if want := `{"shop1.orders":{"0":4},"shop2.orders":{"0":4}}`; summary != want {
		t.Errorf("snapshot summary offsets %s, want %s", summary, want)
	}
	// A restart that is handed everything again (the group's offsets were
	// not committed) writes nothing twice, and the records after it once.
	more := routed(t, 7)
	s2 := e.open(t)
	write(t, s2, more...)
	flush(t, s2)
	if got := e.rows(t, "shop.orders", "o"); len(got) != len(more) {
		t.Errorf("after the restart the table has %d rows, want %d (each record once)", len(got), len(more))
	}
}

// TestSink_ExactlyOnce_SummaryWrittenBeforeOriginals: a table whose
// summaries were written from records without Original fields (before the
// worker set them; or a sink without transforms, where they are the same)
// still skips what it holds when the records come with them.
func TestSink_ExactlyOnce_SummaryWrittenBeforeOriginals(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	write(t, s, orders(0, 0, 9)...)
	flush(t, s)
	recs := orders(0, 0, 14)
	for i := range recs {
		r := &recs[i]
		r.OriginalTopic, r.OriginalPartition, r.OriginalOffset = r.Topic, r.Partition, r.Offset
	}
	s2 := e.open(t)
	write(t, s2, recs...)
	flush(t, s2)
	if got := e.rows(t, "default.orders", "_offset"); len(got) != 15 {
		t.Errorf("table has %d rows, want 15 (each record once)", len(got))
	}
}

// A batch retried by the worker after a retryable error is not buffered twice.
func TestSink_Write_RetriedBatch(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	recs := []connect.Record{rec("t.a", 0, 5, `{"x":1}`), rec("t.a", 0, 6, `{"x":2}`)}
	write(t, s, recs...)
	write(t, s, recs...)
	flush(t, s)
	if got := e.rows(t, "t.a", "x"); len(got) != 2 {
		t.Errorf("got %d rows, want 2", len(got))
	}
}

func TestSink_Write_BadRecord(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	err := s.Write(t.Context(), []connect.Record{
		rec("t.a", 0, 0, `{"x":1}`),
		rec("t.a", 0, 1, `not json`),
		rec("t.a", 0, 2, `{"x":3}`),
	})
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 1 {
		t.Fatalf("Write = %v, want a bad record at index 1", err)
	}
	if !strings.Contains(err.Error(), "t.a/0@1") || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("error %q should name the record and the problem", err)
	}
	// The worker dead-letters it and writes the rest.
	write(t, s, rec("t.a", 0, 2, `{"x":3}`))
	flush(t, s)
	got := e.rows(t, "t.a", "x")
	if len(got) != 2 || got[0]["x"] != int64(1) || got[1]["x"] != int64(3) {
		t.Errorf("rows = %v, want x=1 and x=3", got)
	}

	// A value that does not fit its column, and an object that is not one.
	for _, v := range []string{`{"x":"text"}`, `[1,2]`, `{"x":1.5}`} {
		err := s.Write(t.Context(), []connect.Record{rec("t.a", 0, 10, v)})
		if !connect.IsBadRecord(err) {
			t.Errorf("Write(%s) = %v, want a bad record", v, err)
		}
	}
}

// TestSink_Write_EmptyFieldName_IsBadRecord: a JSON field with an empty
// name is a bad record (dead-lettered with errors.tolerance all), refused
// before anything reaches the catalog. Buffered as a column, it made the
// commit fail (iceberg-go refuses a schema field without a name) as a task
// failure, on every restart, and the failed create left the table
// registered with metadata that cannot be loaded, failing every later task.
func TestSink_Write_EmptyFieldName_IsBadRecord(t *testing.T) {
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
			if bad.Index != 1 || !strings.Contains(err.Error(), "web.clicks/0@1") || !strings.Contains(err.Error(), "empty name") {
				t.Fatalf("Write = %v, want BadRecordAt(1) naming the record and the empty name", err)
			}
			if pe := new(connect.PermanentError); !errors.As(err, &pe) {
				t.Errorf("Write = %v: not permanent, though the record fails the same every time", err)
			}
			// The worker dead-letters it and writes the rest.
			write(t, s, recs[2:]...)
			flush(t, s)
			if got := e.rows(t, "web.clicks", "user"); len(got) != 2 {
				t.Errorf("rows = %v, want users a and c", got)
			}
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

// TestSink_Upsert_EmptyKeyFieldName_IsBadRecord: a record key object with
// an empty field name, which upsert makes a key column, is a bad record
// too, and the table stays usable.
func TestSink_Upsert_EmptyKeyFieldName_IsBadRecord(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert"})
	s := e.open(t)
	r := rec("crm.users", 0, 0, `{"plan":"free"}`)
	r.Key = []byte(`{"":7}`)
	err := s.Write(t.Context(), []connect.Record{r})
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 0 || !strings.Contains(err.Error(), "empty name") {
		t.Fatalf("Write = %v, want BadRecordAt(0) for the empty key field name", err)
	}
	good := rec("crm.users", 0, 1, `{"id":7,"plan":"free"}`)
	good.Key = []byte(`{"id":7}`)
	write(t, s, good)
	flush(t, s)
	if got := e.rows(t, "crm.users", "id"); len(got) != 1 {
		t.Errorf("rows = %v, want the good record's", got)
	}
}

// Change events with embedded schemas: types from the schema, the table
// name from the source block, _op.
func TestSink_Append_ChangeEvents(t *testing.T) {
	e := newEnv(t, nil)
	s := e.open(t)
	cols := []connect.Schema{
		{Type: connect.SchemaInt32, Field: "id"},
		{Type: connect.SchemaString, Optional: true, Field: "name"},
		{Type: connect.SchemaBytes, Optional: true, Name: connect.LogicalDecimal, Parameters: []connect.SchemaParam{{Key: "scale", Value: "2"}, {Key: "connect.decimal.precision", Value: "10"}}, Field: "amount"},
		{Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalMicroTimestamp, Field: "created"},
		{Type: connect.SchemaInt32, Optional: true, Name: connect.LogicalDate, Field: "day"},
		{Type: connect.SchemaString, Optional: true, Name: connect.LogicalZonedTimestamp, Field: "updated"},
	}
	ts := time.Date(2026, 3, 4, 5, 6, 7, 123456000, time.UTC)
	row := connect.Row{{Name: "id", Value: int64(7)}, {Name: "name", Value: "ann"}, {Name: "amount", Value: []byte{0x04, 0xD2}},
		{Name: "created", Value: ts.UnixMicro()}, {Name: "day", Value: int64(20516)}, {Name: "updated", Value: "2026-03-04T05:06:07.5Z"}}
	r1 := changeRecord(t, "pg.public.customers", cols, connect.OpCreate, nil, row)
	r1.Offset = 0
	r2 := changeRecord(t, "pg.public.customers", cols, connect.OpDelete, row, nil)
	r2.Offset = 1
	write(t, s, r1, r2)
	flush(t, s)
	got := e.rows(t, "public.customers", "_offset")
	if len(got) != 2 {
		t.Fatalf("rows = %v", got)
	}
	want := `{"_offset":0,"_op":"c","_partition":0,"_timestamp":null,"_topic":"pg.public.customers","amount":"12.34","created":"2026-03-04T05:06:07.123456","day":"2026-03-04","id":7,"name":"ann","updated":"2026-03-04T05:06:07.5Z"}`
	if js(got[0]) != want {
		t.Errorf("row:\n got %s\nwant %s", js(got[0]), want)
	}
	if got[1]["_op"] != "d" || got[1]["id"] != int32(7) {
		t.Errorf("delete row = %v", got[1])
	}
	sc := e.table(t, "public.customers").Schema()
	for name, typ := range map[string]string{"id": "int", "amount": "decimal(10, 2)", "created": "timestamp", "day": "date", "updated": "timestamptz"} {
		if f, ok := sc.FindFieldByName(name); !ok || f.Type.String() != typ {
			t.Errorf("column %s: %v, want %s", name, f.Type, typ)
		}
	}
}

// changeRecord encodes a Postgres change event with embedded schemas.
func changeRecord(t *testing.T, topic string, cols []connect.Schema, op connect.Op, before, after connect.Row) connect.Record {
	t.Helper()
	es, err := connect.NewEventSchema(topic, cols, []string{cols[0].Field})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(topic, ".")
	ev := &connect.ChangeEvent{Op: op, Before: before, After: after, Schema: es,
		Source: connect.SourceInfo{Version: "1", Connector: connect.ConnectorPostgres, Name: parts[0], DB: "db", TsMs: 1,
			Extra: connect.Row{{Name: "schema", Value: parts[1]}, {Name: "table", Value: parts[2]}}}}
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	ev.Key = keyRow.Select(cols[0].Field)
	r, err := connect.DebeziumJSON{Schemas: true}.Record(topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestSink_SchemaEvolution(t *testing.T) {
	e := newEnv(t, map[string]string{"metadata.columns": "false"})
	s := e.open(t)
	int32Col := []connect.Schema{{Type: connect.SchemaInt32, Field: "id"}, {Type: connect.SchemaInt32, Optional: true, Field: "qty"}, {Type: connect.SchemaFloat32, Optional: true, Field: "w"}}
	r := changeRecord(t, "pg.s.items", int32Col, connect.OpCreate, nil, connect.Row{{Name: "id", Value: int64(1)}, {Name: "qty", Value: int64(5)}, {Name: "w", Value: 0.5}})
	write(t, s, r)
	flush(t, s)

	// The source widens qty to bigint and w to double, and adds a column.
	wide := []connect.Schema{{Type: connect.SchemaInt32, Field: "id"}, {Type: connect.SchemaInt64, Optional: true, Field: "qty"}, {Type: connect.SchemaFloat64, Optional: true, Field: "w"}, {Type: connect.SchemaString, Optional: true, Field: "note"}}
	r = changeRecord(t, "pg.s.items", wide, connect.OpCreate, nil, connect.Row{{Name: "id", Value: int64(2)}, {Name: "qty", Value: int64(1) << 40}, {Name: "w", Value: 1e300}, {Name: "note", Value: "new"}})
	r.Offset = 1
	write(t, s, r)
	// In the same buffer, an old-shaped record still fits.
	r = changeRecord(t, "pg.s.items", int32Col, connect.OpCreate, nil, connect.Row{{Name: "id", Value: int64(3)}, {Name: "qty", Value: int64(7)}, {Name: "w", Value: 2.0}})
	r.Offset = 2
	write(t, s, r)
	// A type change Iceberg cannot express is a bad record.
	bad := []connect.Schema{{Type: connect.SchemaInt32, Field: "id"}, {Type: connect.SchemaString, Optional: true, Field: "qty"}}
	r = changeRecord(t, "pg.s.items", bad, connect.OpCreate, nil, connect.Row{{Name: "id", Value: int64(4)}, {Name: "qty", Value: "many"}})
	r.Offset = 3
	err := s.Write(t.Context(), []connect.Record{r})
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "can only widen") {
		t.Errorf("Write of a long→string change = %v, want a bad record explaining Iceberg's promotions", err)
	}
	flush(t, s)

	tbl := e.table(t, "s.items")
	sc := tbl.Schema()
	for name, typ := range map[string]string{"id": "int", "qty": "long", "w": "double", "note": "string"} {
		if f, ok := sc.FindFieldByName(name); !ok || f.Type.String() != typ {
			t.Errorf("column %s: %v, want %s", name, f.Type, typ)
		}
	}
	got := e.rows(t, "s.items", "id")
	want := `[{"id":1,"note":null,"qty":5,"w":0.5},{"id":2,"note":"new","qty":1099511627776,"w":1e+300},{"id":3,"note":null,"qty":7,"w":2}]`
	if js(got) != want {
		t.Errorf("rows:\n got %s\nwant %s", js(got), want)
	}
}

func TestSink_PinnedSchema(t *testing.T) {
	e := newEnv(t, map[string]string{"schema": "id long not null,amount decimal(10, 2),ts timestamptz", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s, rec("shop.sales", 0, 0, `{"id":1,"amount":"12.5","ts":"2026-01-02T03:04:05+01:00"}`),
		rec("shop.sales", 0, 1, `{"id":2,"amount":3,"ts":1767225600000}`))
	err := s.Write(t.Context(), []connect.Record{rec("shop.sales", 0, 2, `{"amount":1}`)})
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "required") {
		t.Errorf("a record without the required id: %v", err)
	}
	err = s.Write(t.Context(), []connect.Record{rec("shop.sales", 0, 3, `{"id":3,"amount":"1.234"}`)})
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "digits after the point") {
		t.Errorf("a decimal with too many digits: %v", err)
	}
	flush(t, s)
	got := js(e.rows(t, "shop.sales", "id"))
	want := `[{"amount":"12.5","id":1,"ts":"2026-01-02T02:04:05Z"},{"amount":"3","id":2,"ts":"2026-01-01T00:00:00Z"}]`
	if got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}
}

// upsertModel replays random inserts, updates and deletes (with repeated
// keys inside one commit) and checks the table equals the expected state.
func TestSink_Upsert_RandomModel(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	e := newEnv(t, map[string]string{"mode": "upsert", "commit.records": "1000000"})
	cols := []connect.Schema{{Type: connect.SchemaInt64, Field: "id"}, {Type: connect.SchemaString, Optional: true, Field: "name"}, {Type: connect.SchemaInt32, Optional: true, Field: "qty"}}
	state := map[int64]string{} // id → name
	s := e.open(t)
	var offset int64
	var batch []connect.Record
	restarts := 0
	for range 600 {
		id := rng.Int64N(40)
		_, exists := state[id]
		var r connect.Record
		switch {
		case exists && rng.IntN(3) == 0:
			r = changeRecord(t, "pg.public.stock", cols, connect.OpDelete, connect.Row{{Name: "id", Value: id}, {Name: "name", Value: nil}, {Name: "qty", Value: nil}}, nil)
			delete(state, id)
		default:
			name := fmt.Sprintf("n%d-%d", id, offset)
			op := connect.OpCreate
			if exists {
				op = connect.OpUpdate
			}
			r = changeRecord(t, "pg.public.stock", cols, op, nil, connect.Row{{Name: "id", Value: id}, {Name: "name", Value: name}, {Name: "qty", Value: offset}})
			state[id] = name
		}
		r.Offset = offset
		offset++
		batch = append(batch, r)
		if r.Value != nil && strings.Contains(string(r.Value), `"op":"d"`) {
			tomb := connect.Record{Topic: r.Topic, Key: r.Key, Offset: offset}
			offset++
			batch = append(batch, tomb)
		}
		if rng.IntN(40) == 0 {
			write(t, s, batch...)
			flush(t, s)
			batch = nil
			if rng.IntN(3) == 0 { // restart; the worker redelivers a few
				restarts++
				s = e.open(t)
			}
		}
	}
	write(t, s, batch...)
	flush(t, s)
	t.Logf("%d records, %d restarts", offset, restarts)

	got := e.rows(t, "public.stock", "id")
	if len(got) != len(state) {
		t.Errorf("table has %d rows, want %d", len(got), len(state))
	}
	for _, r := range got {
		id := r["id"].(int64)
		if want, ok := state[id]; !ok || r["name"] != want {
			t.Errorf("row %v, want name %q (present %v)", r, want, ok)
		}
		if !strings.HasSuffix(r["name"].(string), "-"+strconv.Itoa(int(r["qty"].(int32)))) {
			t.Errorf("row %v mixes two versions", r)
		}
	}
	sc := e.table(t, "public.stock").Schema()
	if ids := sc.IdentifierFieldIDs; len(ids) != 1 {
		t.Errorf("identifier fields %v, want [id]", ids)
	} else if n, _ := sc.FindColumnName(ids[0]); n != "id" {
		t.Errorf("identifier field %s, want id", n)
	}
}

// Upsert of plain JSON keyed by key.columns; a tombstone deletes its key.
func TestSink_Upsert_JSONKeyColumns(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert", "key.columns": "user", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s,
		rec("crm.users", 0, 0, `{"user":"a","plan":"free"}`),
		rec("crm.users", 0, 1, `{"user":"b","plan":"free"}`),
	)
	flush(t, s)
	tomb := connect.Record{Topic: "crm.users", Offset: 3, Key: []byte(`{"user":"a"}`)}
	write(t, s, rec("crm.users", 0, 2, `{"user":"b","plan":"pro"}`), tomb, rec("crm.users", 0, 4, `{"user":"c","plan":"free"}`))
	flush(t, s)
	if got, want := js(e.rows(t, "crm.users", "user")), `[{"plan":"pro","user":"b"},{"plan":"free","user":"c"}]`; got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}
	err := s.Write(t.Context(), []connect.Record{rec("crm.users", 0, 5, `{"plan":"x"}`)})
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "key column") {
		t.Errorf("a record without its key: %v", err)
	}
}

func TestSink_Partitioned(t *testing.T) {
	e := newEnv(t, map[string]string{"partition": "day(ts),bucket(4,user_id)", "schema": "ts timestamptz"})
	s := e.open(t)
	var recs []connect.Record
	for i := range 40 {
		recs = append(recs, rec("web.views", 0, int64(i), fmt.Sprintf(`{"ts":"2026-01-%02dT10:00:00Z","user_id":%d}`, 1+i%3, i)))
	}
	write(t, s, recs...)
	flush(t, s)
	tbl := e.table(t, "web.views")
	if got := tbl.Spec().String(); !strings.Contains(got, "ts_day") || !strings.Contains(got, "user_id_bucket") || !strings.Contains(got, "bucket[4]") {
		t.Errorf("partition spec = %s", got)
	}
	if got := len(e.rows(t, "web.views", "user_id")); got != 40 {
		t.Errorf("%d rows, want 40", got)
	}
	files := 0
	filepath.Walk(filepath.Join(e.dir, "warehouse"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && strings.HasSuffix(p, ".parquet") {
			files++
			if !strings.Contains(p, "ts_day=2026-01-0") {
				t.Errorf("data file %s is not under a day partition", p)
			}
		}
		return nil
	})
	if files < 3 {
		t.Errorf("%d data files, want one per partition (at least 3)", files)
	}
	if n := tbl.CurrentSnapshot().Summary.Properties["added-records"]; n != "40" {
		t.Errorf("added-records = %s", n)
	}
}

func TestSink_Partition_MissingColumn(t *testing.T) {
	e := newEnv(t, map[string]string{"partition": "day(when)"})
	s := e.open(t)
	write(t, s, rec("a.b", 0, 0, `{"x":1}`))
	err := s.Flush(t.Context())
	if err == nil || !strings.Contains(err.Error(), `partition source column "when"`) {
		t.Errorf("Flush = %v, want an error naming the missing column", err)
	}
}

func TestSink_Open_BadConfig(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"partition": "week(ts)"}, "unknown transform"},
		{map[string]string{"partition": "bucket(x, id)"}, "positive number"},
		{map[string]string{"schema": "id lng"}, "unknown type"},
		{map[string]string{"table": "{table}"}, "no namespace"},
		{map[string]string{"key.columns": "id"}, "only used in upsert mode"},
		{map[string]string{"catalog.uri": "mysql://x"}, "want sqlite://PATH or postgres://"},
		{map[string]string{"catalog.type": "rest"}, "catalog.type rest wants the REST endpoint"},
		{map[string]string{"commit.records": "0"}, "must be positive"},
		{map[string]string{"expire.retain.last": "0"}, "at least 1"},
		{map[string]string{"compact.min.files": "1"}, "at least 2"},
	} {
		e := newEnv(t, tc.values)
		s := Connector().NewSink()
		err := s.Open(t.Context(), connect.Config{Connector: "x", Values: e.values, Spec: spec()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v) = %v, want %q", tc.values, err, tc.want)
		}
		if err == nil {
			s.Close(t.Context())
		}
	}
}

// A catalog that cannot be reached fails Open with a retryable error.
func TestSink_Open_CatalogDown(t *testing.T) {
	e := newEnv(t, map[string]string{"catalog.uri": "postgres://u:secret@127.0.0.1:1/db?connect_timeout=1"})
	s := Connector().NewSink()
	err := s.Open(t.Context(), connect.Config{Connector: "x", Values: e.values, Spec: spec()})
	if err == nil || !connect.IsRetryable(err) || !strings.Contains(err.Error(), "connect to catalog") {
		t.Fatalf("Open = %v, want a retryable connection error", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error %q shows the password", err)
	}
}

// A warehouse that cannot be written (a full or read-only disk) fails the
// flush with a clear error; what was committed stays intact, and after a
// restart the records land once.
func TestSink_Flush_WarehouseUnwritable(t *testing.T) {
	e := newEnv(t, map[string]string{"metadata.columns": "false"})
	s := e.open(t)
	write(t, s, rec("a.b", 0, 0, `{"x":1}`))
	flush(t, s)
	// A file where the data directory should be stands in for a disk that
	// refuses writes (permissions do not stop root).
	data := filepath.Join(e.dir, "warehouse", "a.db", "b", "data")
	if err := os.Rename(data, data+".aside"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, s, rec("a.b", 0, 1, `{"x":2}`))
	err := s.Flush(t.Context())
	if err == nil || !strings.Contains(err.Error(), "write data files of table a.b") {
		t.Fatalf("Flush = %v, want a write error naming the table", err)
	}
	if err := s.Write(t.Context(), []connect.Record{rec("a.b", 0, 2, `{"x":3}`)}); err == nil {
		t.Error("Write after a failed commit succeeded; the task must restart")
	}
	// The disk is fixed; the task restarts and the worker redelivers.
	if err := os.Remove(data); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(data+".aside", data); err != nil {
		t.Fatal(err)
	}
	if got := js(e.rows(t, "a.b", "x")); got != `[{"x":1}]` {
		t.Errorf("after the failure the table holds %s, want the committed row only", got)
	}
	s2 := e.open(t)
	write(t, s2, rec("a.b", 0, 0, `{"x":1}`), rec("a.b", 0, 1, `{"x":2}`), rec("a.b", 0, 2, `{"x":3}`))
	flush(t, s2)
	if got := js(e.rows(t, "a.b", "x")); got != `[{"x":1},{"x":2},{"x":3}]` {
		t.Errorf("after the restart the table holds %s", got)
	}
}

func TestSink_TableTemplate(t *testing.T) {
	e := newEnv(t, map[string]string{"table": "lake.{topic}"})
	s := e.open(t)
	write(t, s, rec("web.tracking", 0, 0, `{"a":1}`), rec("solo", 0, 0, `{"a":2}`))
	flush(t, s)
	if n := len(e.rows(t, "lake.web_tracking", "a")); n != 1 {
		t.Errorf("lake.web_tracking has %d rows", n)
	}
	if n := len(e.rows(t, "lake.solo", "a")); n != 1 {
		t.Errorf("lake.solo has %d rows", n)
	}
}

// commit.records commits from Write, without waiting for Flush.
func TestSink_CommitRecords(t *testing.T) {
	e := newEnv(t, map[string]string{"commit.records": "3"})
	s := e.open(t)
	write(t, s, rec("a.b", 0, 0, `{"x":1}`), rec("a.b", 0, 1, `{"x":2}`))
	write(t, s, rec("a.b", 0, 2, `{"x":3}`))
	if n := len(e.rows(t, "a.b", "x")); n != 3 {
		t.Errorf("after commit.records, the table has %d rows, want 3", n)
	}
	if rep := s.Report(); rep.Gauges["iceberg_pending_records"] != 0 || rep.Gauges["iceberg_committed_records"] != 3 {
		t.Errorf("report = %v", rep.Gauges)
	}
}

// Snapshot expiry keeps expire.retain.last snapshots; the newest holds the
// offsets, so a restarted sink still writes redelivered records once.
func TestSink_ExpireSnapshots(t *testing.T) {
	e := newEnv(t, map[string]string{"expire.interval": "1ms", "expire.older.than": "0s", "expire.retain.last": "2", "metadata.columns": "false"})
	s := e.open(t)
	var all []connect.Record
	for i := range 6 {
		r := rec("a.b", 0, int64(i), fmt.Sprintf(`{"x":%d}`, i))
		all = append(all, r)
		write(t, s, r)
		flush(t, s)
		time.Sleep(2 * time.Millisecond)
	}
	tbl := e.table(t, "a.b")
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots after expiry, want expire.retain.last = 2", n)
	}
	rep := s.Report()
	if rep.Gauges["iceberg_expired_snapshots"] != 4 || len(rep.Warnings) > 0 {
		t.Errorf("report %v, warnings %q: want 4 expired snapshots", rep.Gauges, rep.Warnings)
	}
	s2 := e.open(t)
	write(t, s2, all...)
	flush(t, s2)
	if got := js(e.rows(t, "a.b", "x")); got != `[{"x":0},{"x":1},{"x":2},{"x":3},{"x":4},{"x":5}]` {
		t.Errorf("after expiry and a restart the table holds %s", got)
	}
}

// Large records commit once commit.bytes are buffered, long before
// commit.records: the sink's memory stays bounded by bytes, not a count.
func TestSink_Write_CommitsAtCommitBytes(t *testing.T) {
	e := newEnv(t, map[string]string{"commit.records": "1000000", "commit.bytes": "1MiB", "commit.interval": "1h"})
	s := e.open(t)
	pad := strings.Repeat("x", 100<<10)
	for o := int64(0); o < 10; o++ { // 1,000 KiB: under 1 MiB
		write(t, s, rec("big", 0, o, fmt.Sprintf(`{"o":%d,"pad":%q}`, o, pad)))
	}
	if n := s.stats.commits.Load(); n != 0 {
		t.Fatalf("%d commits before commit.bytes were buffered, want 0", n)
	}
	write(t, s, rec("big", 0, 10, fmt.Sprintf(`{"o":10,"pad":%q}`, pad))) // 1,100 KiB
	if n := len(e.table(t, "default.big").Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots once commit.bytes were buffered, want 1 (committed without a flush)", n)
	}
	if got := e.rows(t, "default.big", "o"); len(got) != 11 {
		t.Fatalf("table has %d rows, want 11", len(got))
	}
}

package iceberg

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg/internal/restfixture"
)

// Values Postgres change events carry that are not plain column values:
// unchanged TOASTed values, infinities and NaN, truncates.

var toastCols = []connect.Schema{
	{Type: connect.SchemaInt64, Field: "id"},
	{Type: connect.SchemaString, Optional: true, Field: "t"},
	{Type: connect.SchemaString, Optional: true, Field: "big"},
	{Type: connect.SchemaBytes, Optional: true, Field: "blob"},
	{Type: connect.SchemaArray, Optional: true, Items: &connect.Schema{Type: connect.SchemaString}, Field: "tags"},
}

func toastRow(id int64, t string, big, blob, tags any) connect.Row {
	return connect.Row{{Name: "id", Value: id}, {Name: "t", Value: t}, {Name: "big", Value: big}, {Name: "blob", Value: blob}, {Name: "tags", Value: tags}}
}

func at(r connect.Record, offset int64) connect.Record {
	r.Offset = offset
	return r
}

// An update that carries the placeholder for an unchanged TOASTed value
// keeps the key's previous value: from the row buffered for the key, else
// read from the table; when there is none, the record fails, naming the
// table, the column and the fix, and nothing is written over a real value.
func TestSink_Upsert_UnchangedTOAST(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false"})
	const topic = "pg.shop.docs"
	ph := connect.UnavailableValue
	big := func(c string) string { return strings.Repeat(c, 5000) }
	s := e.open(t)
	write(t, s,
		at(changeRecord(t, topic, toastCols, connect.OpCreate, nil, toastRow(29, "S", big("x"), []byte("blob29"), []any{"p"})), 0),
		at(changeRecord(t, topic, toastCols, connect.OpCreate, nil, toastRow(30, "T0", big("q"), []byte("old30"), []any{"old"})), 1),
		at(changeRecord(t, topic, toastCols, connect.OpCreate, nil, toastRow(31, "U", big("z"), nil, nil)), 2),
	)
	flush(t, s)
	// A committed update: the lookup must see it, not the row it replaced.
	write(t, s, at(changeRecord(t, topic, toastCols, connect.OpUpdate, nil, toastRow(30, "T1", big("y"), []byte("blob30"), []any{"a", "b"})), 3))
	flush(t, s)

	// A new task: nothing buffered, so the previous values come from the
	// table, by key (29 and 31 must not leak into 30).
	s = e.open(t)
	write(t, s, at(changeRecord(t, topic, toastCols, connect.OpUpdate, nil, toastRow(30, "T2", ph, []byte(ph), []any{ph})), 4))
	// Within one commit: the row buffered for the key.
	write(t, s,
		at(changeRecord(t, topic, toastCols, connect.OpCreate, nil, toastRow(32, "V1", big("w"), []byte("blob32"), nil)), 5),
		at(changeRecord(t, topic, toastCols, connect.OpUpdate, nil, toastRow(32, "V2", ph, []byte(ph), nil)), 6),
	)
	flush(t, s)

	got := e.rows(t, "shop.docs", "id")
	want := map[int64][4]string{
		29: {"S", big("x"), "blob29", `["p"]`},
		30: {"T2", big("y"), "blob30", `["a","b"]`},
		31: {"U", big("z"), "", ""},
		32: {"V2", big("w"), "blob32", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("rows = %v", got)
	}
	for _, r := range got {
		id := r["id"].(int64)
		w := want[id]
		blob := ""
		if b, ok := r["blob"].([]byte); ok {
			blob = string(b)
		}
		tags, _ := r["tags"].(string)
		if r["t"] != w[0] || r["big"] != w[1] || blob != w[2] || tags != w[3] {
			t.Errorf("row %d = [%v %.10v… %q %v], want [%s %.10s… %q %s]", id, r["t"], r["big"], blob, r["tags"], w[0], w[1], w[2], w[3])
		}
	}

	// A key the sink has no row of: the record fails, and says how to fix it.
	err := s.Write(t.Context(), []connect.Record{at(changeRecord(t, topic, toastCols, connect.OpUpdate, nil, toastRow(99, "X", ph, nil, nil)), 7)})
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 0 {
		t.Fatalf("update of an unknown key with a placeholder: %v, want a bad record at 0", err)
	}
	t.Logf("error: %v", err)
	for _, part := range []string{"shop.docs.big", ph, "REPLICA IDENTITY FULL"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q should contain %q", err, part)
		}
	}
	// After a delete in the same commit there is no previous value either.
	err = s.Write(t.Context(), []connect.Record{
		at(changeRecord(t, topic, toastCols, connect.OpDelete, toastRow(31, "U", nil, nil, nil), nil), 8),
		at(changeRecord(t, topic, toastCols, connect.OpUpdate, nil, toastRow(31, "U2", ph, nil, nil)), 9),
	})
	if !errors.As(err, &bad) || bad.Index != 1 || !strings.Contains(err.Error(), "REPLICA IDENTITY FULL") {
		t.Fatalf("update after a delete with a placeholder: %v, want a bad record at 1", err)
	}
	flush(t, s)
	for _, r := range e.rows(t, "shop.docs", "id") {
		if strings.Contains(js(r), ph) {
			t.Errorf("row %v holds the placeholder", js(r))
		}
		if r["id"] == int64(31) {
			t.Errorf("row 31 should be deleted: %v", r)
		}
	}
}

// The placeholder in the forms Debezium gives the types it treats on
// their own (int[], bigint[] and date[]: its bytes as numbers; uuid[]: its
// name-based UUID; hstore: a JSON object of it) also keeps the key's
// previous value, from the table and from the row buffered for the key.
func TestSink_Upsert_UnchangedTOAST_DebeziumForms(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false"})
	const topic = "pg.shop.forms"
	cols := []connect.Schema{
		{Type: connect.SchemaInt64, Field: "id"},
		{Type: connect.SchemaString, Optional: true, Field: "t"},
		{Type: connect.SchemaArray, Optional: true, Items: &connect.Schema{Type: connect.SchemaInt32, Optional: true}, Field: "nums"},
		{Type: connect.SchemaArray, Optional: true, Items: &connect.Schema{Type: connect.SchemaInt64, Optional: true}, Field: "longs"},
		{Type: connect.SchemaArray, Optional: true, Items: &connect.Schema{Type: connect.SchemaString, Optional: true, Name: connect.LogicalUUID, Version: 1}, Field: "ids"},
		{Type: connect.SchemaString, Optional: true, Name: connect.LogicalJSON, Version: 1, Field: "h"},
	}
	row := func(id int64, t string, nums, longs, ids, h any) connect.Row {
		return connect.Row{{Name: "id", Value: id}, {Name: "t", Value: t}, {Name: "nums", Value: nums}, {Name: "longs", Value: longs}, {Name: "ids", Value: ids}, {Name: "h", Value: h}}
	}
	ph := connect.UnavailableValue
	var phNums []any
	for _, n := range connect.UnavailableNumbers(ph) {
		phNums = append(phNums, n)
	}
	phIDs := []any{connect.UnavailableUUID(ph)}
	phH := connect.UnavailableHstore(ph)
	id1 := "00000000-0000-0000-0000-000000000001"
	s := e.open(t)
	write(t, s,
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(1, "a", []any{int64(1), int64(2)}, []any{int64(3)}, []any{id1}, `{"k":"v"}`)), 0),
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(2, "b", []any{int64(5)}, nil, nil, nil)), 1),
	)
	flush(t, s)
	s = e.open(t)
	write(t, s,
		at(changeRecord(t, topic, cols, connect.OpUpdate, nil, row(1, "a2", phNums, phNums, phIDs, phH)), 2),
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(3, "c", []any{int64(7)}, []any{int64(8)}, []any{id1}, `{"x":"y"}`)), 3),
		at(changeRecord(t, topic, cols, connect.OpUpdate, nil, row(3, "c2", phNums, phNums, phIDs, phH)), 4),
	)
	flush(t, s)
	got := js(e.rows(t, "shop.forms", "id"))
	want := `[{"h":"{\"k\":\"v\"}","id":1,"ids":"[\"` + id1 + `\"]","longs":"[3]","nums":"[1,2]","t":"a2"},` +
		`{"h":null,"id":2,"ids":null,"longs":null,"nums":"[5]","t":"b"},` +
		`{"h":"{\"x\":\"y\"}","id":3,"ids":"[\"` + id1 + `\"]","longs":"[8]","nums":"[7]","t":"c2"}]`
	if got != want {
		t.Errorf("rows =\n%s\nwant\n%s", got, want)
	}
}

// Plain JSON rows (Debezium's ExtractNewRecordState) in upsert mode: the
// placeholder also keeps the previous value.
func TestSink_Upsert_UnchangedTOAST_PlainJSON(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert", "key.columns": "id", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s, rec("crm.notes", 0, 0, `{"id":1,"n":1,"body":"long text"}`), rec("crm.notes", 0, 1, `{"id":2,"n":1,"body":"other"}`))
	flush(t, s)
	s = e.open(t)
	write(t, s, rec("crm.notes", 0, 2, `{"id":1,"n":2,"body":"`+connect.UnavailableValue+`"}`))
	flush(t, s)
	if got, want := js(e.rows(t, "crm.notes", "id")), `[{"body":"long text","id":1,"n":2},{"body":"other","id":2,"n":1}]`; got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}
}

// A null named in the source's header connect.UnavailableColumnsHeader
// (a column whose type cannot hold the placeholder) keeps the previous
// value, as a placeholder does; names may hold commas; a null not named
// stays a null; the header is read only in upsert mode and for live rows;
// a header that is not a JSON array fails the record.
func TestSink_Upsert_UnavailableColumnsHeader(t *testing.T) {
	withHeader := func(r connect.Record, cols ...string) connect.Record {
		r.Headers = append(r.Headers, connect.UnavailableColumns(cols))
		return r
	}
	e := newEnv(t, map[string]string{"mode": "upsert", "key.columns": "id", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s, rec("crm.notes", 0, 0, `{"id":1,"n":1,"vec":"[0.5,1.5]","a,b":2.5,"c":3}`),
		rec("crm.notes", 0, 1, `{"id":2,"n":1,"vec":"[2.5]","a,b":1.5,"c":4}`))
	flush(t, s)
	s = e.open(t) // from the table
	write(t, s, withHeader(rec("crm.notes", 0, 2, `{"id":1,"n":2,"vec":null,"a,b":null,"c":null}`), "vec", "a,b"))
	// From the buffered row, the header's placeholder too.
	write(t, s, withHeader(rec("crm.notes", 0, 3, `{"id":1,"n":3,"vec":"`+connect.UnavailableValue+`","a,b":null,"c":null}`), "vec", "a,b"))
	flush(t, s)
	if got, want := js(e.rows(t, "crm.notes", "id")), `[{"a,b":2.5,"c":null,"id":1,"n":3,"vec":"[0.5,1.5]"},{"a,b":1.5,"c":4,"id":2,"n":1,"vec":"[2.5]"}]`; got != want {
		t.Errorf("rows:\n got %s\nwant %s", got, want)
	}

	err := s.Write(t.Context(), []connect.Record{withHeader(rec("crm.notes", 0, 4, `{"id":9,"n":1,"vec":null}`), "vec")})
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 0 || !strings.Contains(err.Error(), connect.UnavailableColumnsHeader) {
		t.Errorf("a listed column of a key without a row: %v, want a bad record naming the header", err)
	}
	r := rec("crm.notes", 0, 5, `{"id":2,"n":2,"vec":null}`)
	r.Headers = []connect.Header{{Key: connect.UnavailableColumnsHeader, Value: []byte("vec")}}
	if err := s.Write(t.Context(), []connect.Record{r}); !errors.As(err, &bad) || !strings.Contains(err.Error(), "JSON array") {
		t.Errorf("a malformed header: %v, want a bad record", err)
	}
}

// timestamptz 'infinity' and numeric 'NaN' and infinities (in Debezium's
// string forms too, "NAN", "POSITIVE_INFINITY") have no Iceberg value: an
// optional column gets null, with one warning per table and column naming
// the value; a required one fails the record (a bad record: never
// retried), naming table, column, value and the fix. A double's NaN and
// infinities, which Debezium writes as text, are stored as such.
func TestSink_NonFiniteValues(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false", "schema": "amount decimal(10,2)"})
	cols := []connect.Schema{
		{Type: connect.SchemaInt64, Field: "id"},
		{Type: connect.SchemaString, Optional: true, Name: connect.LogicalZonedTimestamp, Field: "ts"},
		{Type: connect.SchemaString, Optional: true, Field: "amount"},
		{Type: connect.SchemaFloat64, Optional: true, Field: "f"},
	}
	// Debezium's schema for an event whose double is not finite.
	nonFinite := append([]connect.Schema(nil), cols...)
	nonFinite[3] = connect.Schema{Type: connect.SchemaString, Optional: true, Field: "f"}
	row := func(id int64, ts, amount string, f any) connect.Row {
		return connect.Row{{Name: "id", Value: id}, {Name: "ts", Value: ts}, {Name: "amount", Value: amount}, {Name: "f", Value: f}}
	}
	const topic = "pg.shop.types"
	var log bytes.Buffer
	s := e.openLogged(t, &log, nil)
	write(t, s,
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(1, "2026-01-02T03:04:05Z", "1.50", 1.5)), 0),
		at(changeRecord(t, topic, nonFinite, connect.OpCreate, nil, row(2, "infinity", "NaN", "NaN")), 1),
		at(changeRecord(t, topic, nonFinite, connect.OpCreate, nil, row(3, "-infinity", "Infinity", "-Infinity")), 2),
		// As the postgres source (and Debezium) write a numeric infinity
		// under decimal.handling.mode=string.
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(4, "2026-01-02T03:04:05Z", "POSITIVE_INFINITY", 2.5)), 3),
	)
	flush(t, s)
	got := e.rows(t, "shop.types", "id")
	if len(got) != 4 {
		t.Fatalf("rows = %v", got)
	}
	if got[3]["amount"] != nil || got[3]["f"] != 2.5 {
		t.Errorf("row 4 = %v, want amount null", got[3])
	}
	if got[0]["ts"] == nil || got[0]["amount"] != "1.5" || got[0]["f"] != 1.5 {
		t.Errorf("row 1 = %v", got[0])
	}
	for i, wantF := range []float64{math.NaN(), math.Inf(-1)} {
		r := got[i+1]
		if r["ts"] != nil || r["amount"] != nil {
			t.Errorf("row %v: ts and amount should be null", r)
		}
		// Arrow marshals NaN and the infinities as text.
		if fmt.Sprint(r["f"]) != fmt.Sprint(wantF) {
			t.Errorf("row %v: f = %v, want %v", r["id"], r["f"], wantF)
		}
	}
	if f, _ := e.table(t, "shop.types").Schema().FindFieldByName("f"); f.Type.String() != "double" {
		t.Errorf("column f is %v, want double", f.Type)
	}
	warns := warnLines(&log)
	t.Logf("warnings: %q", warns)
	if len(warns) != 2 {
		t.Fatalf("warnings = %q, want one for ts and one for amount", warns)
	}
	for _, want := range []string{"shop.types.ts", "shop.types.amount"} {
		n := 0
		for _, w := range warns {
			if strings.Contains(w, want) {
				n++
				if !strings.Contains(w, "infinity") && !strings.Contains(w, "NaN") {
					t.Errorf("warning %q should name the value", w)
				}
			}
		}
		if n != 1 {
			t.Errorf("%d warnings for %s, want 1: %q", n, want, warns)
		}
	}

	// A required column.
	e2 := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false", "schema": "ts timestamptz not null"})
	s2 := e2.open(t)
	err := s2.Write(t.Context(), []connect.Record{
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(1, "2026-01-02T03:04:05Z", "1", 1.0)), 0),
		at(changeRecord(t, topic, cols, connect.OpCreate, nil, row(2, "infinity", "1", 1.0)), 1),
	})
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 1 || connect.IsRetryable(err) {
		t.Fatalf("infinity into a required column: %v, want a bad record at 1", err)
	}
	t.Logf("error: %v", err)
	for _, part := range []string{"shop.types.ts", `"infinity"`, "timestamptz", "required", "make the column optional"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q should contain %q", err, part)
		}
	}
}

func truncateRecord(t *testing.T, topic string, offset int64) connect.Record {
	t.Helper()
	parts := strings.Split(topic, ".")
	ev := &connect.ChangeEvent{Op: connect.OpTruncate,
		Source: connect.SourceInfo{Version: "1", Connector: connect.ConnectorPostgres, Name: parts[0], DB: "db", TsMs: 1,
			Extra: connect.Row{{Name: "schema", Value: parts[1]}, {Name: "table", Value: parts[2]}}}}
	r, err := connect.DebeziumJSON{}.Record(topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	r.Offset = offset
	return r
}

// A truncate in upsert mode removes every row: those committed and those
// buffered before it, not those after it, in the same commit; redelivered,
// it is skipped like any record the table holds.
func TestSink_Upsert_Truncate(t *testing.T) {
	values := map[string]string{"mode": "upsert", "metadata.columns": "false"}
	t.Run("sql", func(t *testing.T) { testTruncate(t, newEnv(t, values)) })
	// A REST catalog that checks each commit's requirements: the truncate's
	// snapshot and the rows' go in one commit.
	t.Run("rest", func(t *testing.T) {
		_, e := startREST(t, restfixture.Options{}, values)
		testTruncate(t, e)
	})
}

func testTruncate(t *testing.T, e *env) {
	const topic = "pg.shop.items"
	cols := []connect.Schema{{Type: connect.SchemaInt64, Field: "id"}, {Type: connect.SchemaString, Optional: true, Field: "name"}}
	item := func(op connect.Op, id int64, name string, offset int64) connect.Record {
		return at(changeRecord(t, topic, cols, op, nil, connect.Row{{Name: "id", Value: id}, {Name: "name", Value: name}}), offset)
	}
	ids := func() string {
		var out []string
		for _, r := range e.rows(t, "shop.items", "id") {
			out = append(out, js(r["id"])+"="+r["name"].(string))
		}
		return strings.Join(out, " ")
	}
	// A truncate before the table exists: nothing to do.
	s := e.open(t)
	write(t, s, truncateRecord(t, topic, 0))
	flush(t, s)

	all := []connect.Record{
		truncateRecord(t, topic, 0),
		item(connect.OpCreate, 1, "a", 1), item(connect.OpCreate, 2, "b", 2), item(connect.OpCreate, 3, "c", 3),
		// One commit: an update, the truncate, rows after it.
		item(connect.OpUpdate, 1, "a2", 4), truncateRecord(t, topic, 5), item(connect.OpCreate, 4, "d", 6), item(connect.OpUpdate, 4, "d2", 7),
		// A commit holding only a truncate.
		truncateRecord(t, topic, 8),
		item(connect.OpCreate, 5, "e", 9),
	}
	write(t, s, all[1:4]...)
	flush(t, s)
	if got := ids(); got != "1=a 2=b 3=c" {
		t.Fatalf("before the truncate: %s", got)
	}
	write(t, s, all[4:8]...)
	flush(t, s)
	if got := ids(); got != "4=d2" {
		t.Errorf("after update, truncate, create, update in one commit: %s, want 4=d2", got)
	}
	write(t, s, all[8])
	flush(t, s)
	if got := ids(); got != "" {
		t.Errorf("after a truncate alone: %s, want no rows", got)
	}
	if off := committedOffsets(e.table(t, "shop.items").Metadata(), "tributary.offsets.p.lake"); off[tp{topic, 0}] != 8 {
		t.Errorf("offsets after the truncate = %v, want %s/0 at 8", off, topic)
	}
	write(t, s, all[9])
	flush(t, s)
	if got := ids(); got != "5=e" {
		t.Errorf("after a create: %s, want 5=e", got)
	}
	// A new task given every record again writes none of them.
	s = e.open(t)
	write(t, s, all...)
	flush(t, s)
	if got := ids(); got != "5=e" {
		t.Errorf("after redelivery: %s, want 5=e", got)
	}
	// Compaction of a table with truncates in its history keeps its rows.
	if _, _, err := s.tables["shop.items"].compact(t.Context()); err != nil {
		t.Fatalf("compact after truncates: %v", err)
	}
	if got := ids(); got != "5=e" {
		t.Errorf("after compaction: %s, want 5=e", got)
	}
	// An unchanged TOASTed value right after a truncate has no previous row.
	err := s.Write(t.Context(), []connect.Record{truncateRecord(t, topic, 10), at(changeRecord(t, topic, cols, connect.OpUpdate, nil, connect.Row{{Name: "id", Value: int64(5)}, {Name: "name", Value: connect.UnavailableValue}}), 11)})
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "REPLICA IDENTITY FULL") {
		t.Errorf("placeholder after a truncate: %v, want a bad record", err)
	}
}

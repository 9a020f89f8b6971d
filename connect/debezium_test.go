package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readGolden returns testdata/name compacted, or nil when the file does not
// exist and missingOK.
func readGolden(t testing.TB, name string, missingOK bool) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if errors.Is(err, os.ErrNotExist) && missingOK {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return buf.Bytes()
}

func postgresSource(tsMicro int64, txID, lsn int64, seq string) SourceInfo {
	s := SourceInfo{
		Version:   "3.0.5.Final",
		Connector: ConnectorPostgres,
		Name:      "dbserver1",
		Snapshot:  SnapshotFalse,
		DB:        "inventory",
		Sequence:  seq,
		Extra: Row{
			{"schema", "public"},
			{"table", "customers"},
			{"txId", txID},
			{"lsn", lsn},
			{"xmin", nil},
		},
	}
	s.SetTime(time.UnixMicro(tsMicro))
	return s
}

func customerColumns() []Schema {
	return []Schema{
		{Field: "id", Type: SchemaInt32},
		{Field: "first_name", Type: SchemaString},
		{Field: "email", Type: SchemaString, Optional: true},
		{Field: "balance", Type: SchemaBytes, Optional: true, Name: LogicalDecimal, Version: 1,
			Parameters: []SchemaParam{{"scale", "2"}, {"connect.decimal.precision", "10"}}},
		{Field: "score", Type: SchemaFloat64, Optional: true},
		{Field: "active", Type: SchemaBoolean, Optional: true, Default: true},
		{Field: "created_at", Type: SchemaInt64, Optional: true, Name: LogicalMicroTimestamp, Version: 1},
		{Field: "updated_at", Type: SchemaString, Optional: true, Name: LogicalZonedTimestamp, Version: 1},
		{Field: "profile", Type: SchemaString, Optional: true, Name: LogicalJSON, Version: 1},
		{Field: "tags", Type: SchemaArray, Optional: true, Items: &Schema{Type: SchemaString, Optional: true}},
	}
}

func postgresCreate(t *testing.T) *ChangeEvent {
	es, err := NewEventSchema("dbserver1.public.customers", customerColumns(), []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	after := Row{
		{"id", int64(1001)},
		{"first_name", "Sally"},
		{"email", "sally.thomas@acme.com"},
		{"balance", []byte{0x04, 0xd2}}, // 12.34 with scale 2
		{"score", 4.5},
		{"active", true},
		{"created_at", int64(1714000000000123)},
		{"updated_at", "2024-04-24T23:06:40.000123Z"},
		{"profile", `{"tier":"gold","note":"<b>&</b>"}`},
		{"tags", []any{"vip", "é", nil}},
	}
	e := &ChangeEvent{
		Op:          OpCreate,
		Key:         after.Select("id"),
		After:       after,
		Source:      postgresSource(1714000000000123, 555, 24023128, `["24023080","24023128"]`),
		Transaction: &Transaction{ID: "555:24023128", TotalOrder: 1, DataCollectionOrder: 1},
		Schema:      es,
	}
	e.SetTime(time.UnixMicro(1714000000142345))
	return e
}

func customerRow(email string, score float64) Row {
	return Row{{"id", int64(1001)}, {"first_name", "Sally"}, {"email", email}, {"score", score}}
}

func postgresUpdate() *ChangeEvent {
	e := &ChangeEvent{
		Op:     OpUpdate,
		Key:    Row{{"id", int64(1001)}},
		Before: customerRow("sally.thomas@acme.com", 4.5),
		After:  customerRow("sally@example.org", 1e10),
		Source: postgresSource(1714000100000000, 556, 24023200, `["24023128","24023200"]`),
	}
	e.SetTime(time.UnixMilli(1714000100020))
	return e
}

func postgresDelete() *ChangeEvent {
	e := &ChangeEvent{
		Op:     OpDelete,
		Key:    Row{{"id", int64(1001)}},
		Before: customerRow("sally@example.org", 0.001),
		Source: postgresSource(1714000200000000, 557, 24023304, `["24023200","24023304"]`),
	}
	e.SetTime(time.UnixMilli(1714000200011))
	return e
}

func postgresTruncate() *ChangeEvent {
	e := &ChangeEvent{
		Op:     OpTruncate,
		Source: postgresSource(1714000300000000, 558, 24023400, `["24023304","24023400"]`),
	}
	e.SetTime(time.UnixMilli(1714000300005))
	return e
}

func postgresMessage() *ChangeEvent {
	src := postgresSource(1714000400000000, 559, 24023480, `["24023400","24023480"]`)
	src.Extra.Set("schema", "")
	src.Extra.Set("table", "")
	return &ChangeEvent{
		Op:      OpMessage,
		Key:     Row{{"prefix", "audit"}},
		Source:  src,
		TsMs:    1714000400003,
		Message: &Message{Prefix: "audit", Content: []byte(`{"user":"admin"}`)},
	}
}

func mysqlCreate(t *testing.T) *ChangeEvent {
	cols := []Schema{
		{Field: "id", Type: SchemaInt32},
		{Field: "first_name", Type: SchemaString},
		{Field: "last_name", Type: SchemaString},
		{Field: "email", Type: SchemaString},
		{Field: "rating", Type: SchemaFloat64, Optional: true},
		{Field: "created", Type: SchemaInt64, Optional: true, Name: LogicalTimestamp, Version: 1},
		{Field: "plan", Type: SchemaString, Optional: true, Name: LogicalEnum, Version: 1,
			Parameters: []SchemaParam{{"allowed", "basic,pro"}}},
	}
	es, err := NewEventSchema("mysql-server-1.inventory.customers", cols, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	const gtid = "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"
	src := SourceInfo{
		Version:   "3.0.5.Final",
		Connector: ConnectorMySQL,
		Name:      "mysql-server-1",
		Snapshot:  SnapshotFalse,
		DB:        "inventory",
		Extra: Row{
			{"table", "customers"},
			{"server_id", int64(223344)},
			{"gtid", gtid},
			{"file", "mysql-bin.000003"},
			{"pos", int64(154)},
			{"row", int64(0)},
			{"thread", int64(7)},
			{"query", nil},
		},
	}
	src.SetTime(time.UnixMilli(1714000500000))
	e := &ChangeEvent{
		Op:  OpCreate,
		Key: Row{{"id", int64(1004)}},
		After: Row{
			{"id", int64(1004)},
			{"first_name", "Anne"},
			{"last_name", "Kretchmar"},
			{"email", "annek@noanswer.org"},
			{"rating", 1e-4},
			{"created", int64(1714000500250)},
			{"plan", "pro"},
		},
		Source:      src,
		Transaction: &Transaction{ID: gtid, TotalOrder: 1, DataCollectionOrder: 1},
		Schema:      es,
	}
	e.SetTime(time.UnixMilli(1714000500842))
	return e
}

// withDecodedSource returns a copy of e whose Schema.Source is what decoding
// Debezium's JSON yields: the schema Debezium writes for the source block.
func withDecodedSource(t *testing.T, e *ChangeEvent) *ChangeEvent {
	t.Helper()
	c := *e
	es := *e.Schema
	src, err := SourceSchema(e.Source)
	if err != nil {
		t.Fatal(err)
	}
	es.Source = &src
	c.Schema = &es
	return &c
}

func TestDebeziumJSON_Golden(t *testing.T) {
	tests := []struct {
		name    string
		schemas bool
		event   func(t *testing.T) *ChangeEvent
	}{
		{"postgres_create", true, postgresCreate},
		{"mysql_create", true, mysqlCreate},
		{"postgres_update", false, func(*testing.T) *ChangeEvent { return postgresUpdate() }},
		{"postgres_delete", false, func(*testing.T) *ChangeEvent { return postgresDelete() }},
		{"postgres_truncate", false, func(*testing.T) *ChangeEvent { return postgresTruncate() }},
		{"postgres_message", false, func(*testing.T) *ChangeEvent { return postgresMessage() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKey := readGolden(t, tt.name+".key.json", true)
			wantValue := readGolden(t, tt.name+".value.json", false)
			e := tt.event(t)
			codec := DebeziumJSON{Schemas: tt.schemas}

			key, value, err := codec.Encode(e)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if !bytes.Equal(key, wantKey) {
				t.Errorf("Encode key:\n got %s\nwant %s", key, wantKey)
			}
			if !bytes.Equal(value, wantValue) {
				t.Errorf("Encode value:\n got %s\nwant %s", value, wantValue)
			}

			got, err := codec.Decode(wantKey, wantValue)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := e
			if tt.schemas {
				want = withDecodedSource(t, e)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode:\n got %s\nwant %s", describeEvent(got), describeEvent(want))
			}
		})
	}
}

// describeEvent renders an event for test failures.
func describeEvent(e *ChangeEvent) string {
	var b strings.Builder
	b.WriteString("op=" + string(e.Op) + " key=" + e.Key.String() + " before=" + e.Before.String() + " after=" + e.After.String())
	src, _ := json.Marshal(e.Source)
	b.WriteString(" source=" + string(src))
	ts, _ := json.Marshal([]any{e.TsMs, e.TsUs, e.TsNs, e.Transaction, e.Message})
	b.WriteString(" ts/tx/msg=" + string(ts))
	if e.Schema != nil {
		s, _ := json.Marshal(e.Schema)
		b.WriteString(" schema=" + string(s))
	}
	return b.String()
}

// TestDebeziumJSON_PayloadSameWithoutSchemas checks that switching schemas
// off only drops the "schema" part: the payload stays byte for byte the same.
func TestDebeziumJSON_PayloadSameWithoutSchemas(t *testing.T) {
	for _, name := range []string{"postgres_create", "mysql_create"} {
		t.Run(name, func(t *testing.T) {
			var golden struct{ Payload json.RawMessage }
			if err := json.Unmarshal(readGolden(t, name+".value.json", false), &golden); err != nil {
				t.Fatal(err)
			}
			e := postgresCreate(t)
			if name == "mysql_create" {
				e = mysqlCreate(t)
			}
			got, err := DebeziumJSON{}.EncodeValue(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, golden.Payload) {
				t.Errorf("EncodeValue without schemas:\n got %s\nwant %s", got, golden.Payload)
			}
		})
	}
}

func TestDebeziumJSON_InferredSchemas(t *testing.T) {
	e := postgresUpdate()
	codec := DebeziumJSON{Schemas: true}
	key, value, err := codec.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	wantKey := `{"schema":{"type":"struct","fields":[{"type":"int64","optional":true,"field":"id"}],"optional":false},"payload":{"id":1001}}`
	if string(key) != wantKey {
		t.Errorf("key:\n got %s\nwant %s", key, wantKey)
	}
	got, err := codec.Decode(key, value)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema == nil || got.Schema.Row == nil || got.Schema.Source == nil || got.Schema.Key == nil {
		t.Fatalf("Decode: schemas missing: %+v", got.Schema)
	}
	if wantRow := `{"type":"struct","fields":[{"type":"int64","optional":true,"field":"id"},{"type":"string","optional":true,"field":"first_name"},{"type":"string","optional":true,"field":"email"},{"type":"double","optional":true,"field":"score"}],"optional":true}`; mustJSON(t, got.Schema.Row) != wantRow {
		t.Errorf("row schema:\n got %s\nwant %s", mustJSON(t, got.Schema.Row), wantRow)
	}
	got.Schema = nil
	if !reflect.DeepEqual(got, e) {
		t.Errorf("Decode:\n got %s\nwant %s", describeEvent(got), describeEvent(e))
	}
	// Encoding the decoded event again gives the same bytes.
	again, err := DebeziumJSON{Schemas: true}.EncodeValue(mustDecode(t, key, value))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, value) {
		t.Errorf("re-encoded:\n got %s\nwant %s", again, value)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func mustDecode(t *testing.T, key, value []byte) *ChangeEvent {
	t.Helper()
	e, err := DebeziumJSON{}.Decode(key, value)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestDebeziumJSON_DecodeLegacy(t *testing.T) {
	// Debezium 0.9 wrote snapshot as a boolean, ts_usec instead of ts_us,
	// no sequence and no transaction; the converter put "schema": null.
	e, err := DebeziumJSON{}.Decode(nil, readGolden(t, "legacy_0.9.value.json", false))
	if err != nil {
		t.Fatal(err)
	}
	if e.Op != OpCreate || e.TsMs != 1601213844598 || e.TsUs != 0 || e.Schema != nil || e.Key != nil {
		t.Errorf("envelope: got op=%q ts_ms=%d ts_us=%d schema=%v key=%v", e.Op, e.TsMs, e.TsUs, e.Schema, e.Key)
	}
	if e.Source.Version != "0.9.5.Final" || e.Source.Snapshot != SnapshotFalse || e.Source.DB != "foo" || e.Source.TsMs != 0 {
		t.Errorf("source: got %+v", e.Source)
	}
	if got, want := e.Source.Extra.Names(), []string{"ts_usec", "txId", "lsn", "schema", "table", "last_snapshot_record", "xmin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("source extras = %v, want %v", got, want)
	}
	if v, _ := e.After.Get("created_at"); v != "2020-09-27T13:37:24.058468Z" {
		t.Errorf("after.created_at = %v", v)
	}
	// It re-encodes in today's shape and decodes to the same event.
	value, err := DebeziumJSON{}.EncodeValue(e)
	if err != nil {
		t.Fatal(err)
	}
	again := mustDecode(t, nil, value)
	if !reflect.DeepEqual(again, e) {
		t.Errorf("round trip:\n got %s\nwant %s", describeEvent(again), describeEvent(e))
	}
}

func TestDebeziumJSON_Tombstone(t *testing.T) {
	e := postgresDelete()
	rec, err := DebeziumJSON{}.Record("dbserver1.public.customers", e)
	if err != nil {
		t.Fatal(err)
	}
	rec.Position = Position(`{"lsn":24023304}`)
	tomb := Tombstone(rec)
	if !tomb.IsTombstone() || rec.IsTombstone() {
		t.Errorf("IsTombstone: tombstone %v, delete %v", tomb.IsTombstone(), rec.IsTombstone())
	}
	if tomb.Topic != rec.Topic || !bytes.Equal(tomb.Key, rec.Key) || tomb.Position.String() != `{"lsn":24023304}` {
		t.Errorf("Tombstone = %+v", tomb)
	}
	for _, value := range [][]byte{nil, {}, []byte(" null "), []byte(`{"schema":{"type":"struct","fields":[]},"payload":null}`)} {
		if _, err := (DebeziumJSON{}).Decode(tomb.Key, value); !errors.Is(err, ErrTombstone) {
			t.Errorf("Decode(key, %q) = %v, want ErrTombstone", value, err)
		}
	}
}

func TestDebeziumJSON_DecodeErrors(t *testing.T) {
	valid := string(readGolden(t, "postgres_update.value.json", false))
	schemaValue := string(readGolden(t, "postgres_create.value.json", false))
	tests := []struct {
		name, key, value, want string
	}{
		{"not JSON", "", `{"op":`, "invalid JSON"},
		{"not an object", "", `[1]`, "want an object, have an array"},
		{"missing op", "", `{"before":null}`, "op is missing"},
		{"unknown op", "", `{"op":"x"}`, `unknown op "x"`},
		{"before not object", "", `{"op":"c","before":5}`, "before: want an object, have a number"},
		{"ts_ms type", "", `{"op":"c","ts_ms":"soon"}`, "ts_ms: want an integer, have a string"},
		{"source type", "", `{"op":"c","source":{"version":5}}`, "source.version: want a string, have a number"},
		{"message missing", "", `{"op":"m"}`, "message is missing"},
		{"key not object", `[1]`, valid, "decode change event key: want an object"},
		{"schema type", "", `{"schema":{"type":"blob"},"payload":{}}`, `unknown type "blob"`},
		{"payload vs schema", "", strings.Replace(schemaValue, `"id":1001`, `"id":"1001"`, 1), "after.id: want an integer for int32, have a string"},
		{"int range", "", strings.Replace(schemaValue, `"id":1001`, `"id":3000000000`, 1), "after.id: 3000000000 is out of range for int32"},
		{"required null", "", strings.Replace(schemaValue, `"first_name":"Sally"`, `"first_name":null`, 1), "after.first_name: null for a required string field"},
		{"bad base64", "", strings.Replace(schemaValue, `"BNI="`, `"!!"`, 1), `after.balance: bytes: "!!" is not base64`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var key []byte
			if tt.key != "" {
				key = []byte(tt.key)
			}
			_, err := DebeziumJSON{}.Decode(key, []byte(tt.value))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Decode error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDebeziumJSON_DecodeDefaults(t *testing.T) {
	// A null for a field with a default takes the default, as in Kafka
	// Connect; so does a field missing from the payload.
	v := string(readGolden(t, "postgres_create.value.json", false))
	v = strings.Replace(v, `"active":true,`, ``, 1)
	e, err := DebeziumJSON{}.Decode(nil, []byte(v))
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := e.After.Get("active"); got != true {
		t.Errorf("after.active = %v, want the default true", got)
	}
}

func TestDebeziumJSON_EncodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		schema bool
		edit   func(e *ChangeEvent)
		want   string
	}{
		{"unknown op", false, func(e *ChangeEvent) { e.Op = "x" }, `unknown op "x"`},
		{"message without content", false, func(e *ChangeEvent) { e.Op = OpMessage }, "needs a Message"},
		{"unsupported value", false, func(e *ChangeEvent) { e.After = Row{{"when", time.Now()}} }, "after.when: unsupported value type time.Time"},
		{"duplicate field", false, func(e *ChangeEvent) { e.After = Row{{"a", 1}, {"a", 2}} }, `after: duplicate field "a"`},
		{"field not in schema", true, func(e *ChangeEvent) { e.After.Set("extra", 1) }, `after: field "extra" is not in the schema`},
		{"wrong type for schema", true, func(e *ChangeEvent) { e.After.Set("id", "1001") }, "after.id: want an integer for int32, have string"},
		{"out of range for schema", true, func(e *ChangeEvent) { e.After.Set("id", int64(1)<<40) }, "after.id: 1099511627776 is out of range for int32"},
		{"required null", true, func(e *ChangeEvent) { e.After.Set("first_name", nil) }, "after.first_name: null for a required string field"},
		{"source extra is common", false, func(e *ChangeEvent) { e.Source.Extra.Set("db", "x") }, `source: duplicate field "db"`},
		{"mixed array with inferred schema", true, func(e *ChangeEvent) { e.Schema = nil; e.After.Set("tags", []any{"a", int64(1)}) }, "after.tags[1]: want a string for string, have int64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := postgresCreate(t)
			if !tt.schema {
				e.Schema = nil
			}
			tt.edit(e)
			_, err := DebeziumJSON{Schemas: tt.schema}.EncodeValue(e)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("EncodeValue error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDebeziumJSON_NullKey(t *testing.T) {
	key, err := DebeziumJSON{Schemas: true}.EncodeKey(postgresTruncate())
	if err != nil || key != nil {
		t.Errorf("EncodeKey(truncate) = %q, %v; want nil, nil", key, err)
	}
	e, err := DebeziumJSON{}.Decode([]byte("null"), readGolden(t, "postgres_truncate.value.json", false))
	if err != nil || e.Key != nil {
		t.Errorf("Decode with null key: key %v, err %v", e.Key, err)
	}
}

func TestNewEventSchema_Errors(t *testing.T) {
	if _, err := NewEventSchema("t", customerColumns(), []string{"nope"}); err == nil || !strings.Contains(err.Error(), `key column "nope"`) {
		t.Errorf("unknown key column: err = %v", err)
	}
	if _, err := NewEventSchema("t", []Schema{{Type: SchemaInt32}}, nil); err == nil {
		t.Error("unnamed column: no error")
	}
	if _, err := NewEventSchema("t", []Schema{{Field: "a", Type: SchemaInt32}, {Field: "a", Type: SchemaString}}, nil); err == nil {
		t.Error("duplicate column: no error")
	}
	es, err := NewEventSchema("t", customerColumns(), nil)
	if err != nil || es.Key != nil {
		t.Errorf("no key columns: key schema %v, err %v", es.Key, err)
	}
}

// oneColumnEvent is a create event of one row, id 1 and column c with the
// given schema and value, with an explicit event schema.
func oneColumnEvent(t *testing.T, col Schema, v any) *ChangeEvent {
	t.Helper()
	col.Field = "c"
	es, err := NewEventSchema("p.s.t", []Schema{{Field: "id", Type: SchemaInt32}, col}, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	e := &ChangeEvent{
		Op:     OpCreate,
		Key:    Row{{"id", int64(1)}},
		After:  Row{{"id", int64(1)}, {"c", v}},
		Source: SourceInfo{Version: "1", Connector: ConnectorPostgres, Name: "p", DB: "d", Snapshot: SnapshotFalse},
		Schema: es,
	}
	e.Source.SetTime(time.UnixMilli(1700000000000))
	return e
}

// A real (float32) column holding its largest value, written with
// schemas as Java writes Float.MAX_VALUE ("3.4028235E38"), decodes again:
// as a float64 that text is a hair above float32's max, and the range is
// checked after rounding to float32.
func TestDebeziumJSON_Float32MaxRoundTrip(t *testing.T) {
	e := oneColumnEvent(t, Schema{Type: SchemaFloat32, Optional: true}, float32(math.MaxFloat32))
	key, value, err := DebeziumJSON{Schemas: true}.Encode(e)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !bytes.Contains(value, []byte(`"c":3.4028235E38`)) {
		t.Errorf("value does not hold c as Java writes Float.MAX_VALUE: %s", value)
	}
	got, err := DebeziumJSON{}.Decode(key, value)
	if err != nil {
		t.Fatalf("Decode of our own output %s: %v", value, err)
	}
	if v, _ := got.After.Get("c"); float32(v.(float64)) != math.MaxFloat32 {
		t.Errorf("c = %v, want %v", v, float32(math.MaxFloat32))
	}
}

// A float64 beyond float32's range under a float (float32) schema is an
// encoding error naming the field, not +Inf written as invalid JSON; and
// such a value in the JSON fails to decode under a float schema.
func TestDebeziumJSON_Float32OutOfRange(t *testing.T) {
	for _, f := range []float64{1e39, -1e39, 0x1p128 - 0x1p103} {
		e := oneColumnEvent(t, Schema{Type: SchemaFloat32, Optional: true}, f)
		_, value, err := DebeziumJSON{Schemas: true}.Encode(e)
		if err == nil {
			t.Errorf("Encode of %v under float: no error, value %s", f, value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "after.c") || !strings.Contains(msg, "out of range for float") {
			t.Errorf("Encode of %v: error %q does not name the field and the range", f, msg)
		}
	}
	// The largest value below the rounding threshold still encodes, as
	// Float.MAX_VALUE.
	e := oneColumnEvent(t, Schema{Type: SchemaFloat32, Optional: true}, math.Nextafter(0x1p128-0x1p103, 0))
	if _, value, err := (DebeziumJSON{Schemas: true}).Encode(e); err != nil || !bytes.Contains(value, []byte(`"c":3.4028235E38`)) {
		t.Errorf("Encode just below the threshold: %v, %s", err, value)
	}
	value := []byte(`{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"float","optional":true,"field":"c"}],"optional":true,"field":"after"},{"type":"string","optional":false,"field":"op"}],"optional":false},"payload":{"after":{"c":3.5E38},"op":"c"}}`)
	if _, err := (DebeziumJSON{}).Decode(nil, value); err == nil || !strings.Contains(err.Error(), "out of range for float") {
		t.Errorf("Decode of 3.5E38 under float: err = %v, want out of range", err)
	}
}

// A value under a float (float32) schema decodes rounded to float32, as
// JsonConverter reads FLOAT32 with floatValue(): decoding a
// JsonConverter-style event with more digits than a float holds, then
// encoding and decoding it again, does not change it.
func TestDebeziumJSON_Float32DecodeRounds(t *testing.T) {
	value := []byte(`{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"float","optional":true,"field":"c"}],"optional":true,"field":"after"},{"type":"string","optional":false,"field":"op"}],"optional":false},"payload":{"after":{"c":16777217},"op":"c"}}`)
	codec := DebeziumJSON{Schemas: true}
	e, err := codec.Decode(nil, value)
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := e.After.Get("c"); v != float64(16777216) {
		t.Errorf("c = %v, want 16777216 (16777217 rounded to float32)", v)
	}
	_, v1, err := codec.Encode(e)
	if err != nil {
		t.Fatal(err)
	}
	e2, err := codec.Decode(nil, v1)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.After, e2.After) {
		t.Errorf("round trip changed after: %s -> %s", e.After, e2.After)
	}
}

// With schemas on and no schema given, an integer beyond int64 (a
// json.Number integer literal, a uint64) is described as a Kafka Connect
// Decimal of scale 0, as Debezium describes BIGINT UNSIGNED in precise
// mode: its exact value survives the round trip, as unscaled bytes.
func TestDebeziumJSON_InferredSchema_IntegerBeyondInt64(t *testing.T) {
	tests := []struct {
		v    any
		want []byte // big-endian two's complement
	}{
		{json.Number("18446744073709551615"), []byte{0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{json.Number("-9223372036854775809"), []byte{0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{uint64(1 << 63), []byte{0, 0x80, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		e := &ChangeEvent{Op: OpCreate, After: Row{{"n", tt.v}},
			Source: SourceInfo{Version: "1", Connector: ConnectorMySQL, Name: "p", DB: "d"}}
		key, value, err := DebeziumJSON{Schemas: true}.Encode(e)
		if err != nil {
			t.Fatalf("Encode %v: %v", tt.v, err)
		}
		got, err := DebeziumJSON{}.Decode(key, value)
		if err != nil {
			t.Fatalf("Decode %s: %v", value, err)
		}
		fs, _ := got.Schema.Row.FieldSchema("n")
		if scale, _ := fs.Param("scale"); fs.Name != LogicalDecimal || scale != "0" {
			t.Errorf("%v: schema %s %q scale %q, want Decimal scale 0", tt.v, fs.Type, fs.Name, scale)
		}
		if v, _ := got.After.Get("n"); !reflect.DeepEqual(v, tt.want) {
			t.Errorf("%v: n = %#v, want %#v (value %s)", tt.v, v, tt.want, value)
		}
	}
}

// The strings "NaN", "Infinity" and "-Infinity" (a source's spelling of
// the non-finite floats, an element of a PostgreSQL float8[]) encode under
// float and double schemas as Jackson writes them, and decode as the
// floats; any other string is refused.
func TestDebeziumJSON_FloatSchemaNonFiniteStrings(t *testing.T) {
	items := &Schema{Type: SchemaFloat64, Optional: true}
	e := oneColumnEvent(t, Schema{Type: SchemaArray, Items: items, Optional: true}, []any{1.5, "NaN", "Infinity", "-Infinity", nil})
	key, value, err := DebeziumJSON{Schemas: true}.Encode(e)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	if !bytes.Contains(value, []byte(`"c":[1.5,"NaN","Infinity","-Infinity",null]`)) {
		t.Errorf("value = %s", value)
	}
	got, err := DebeziumJSON{}.Decode(key, value)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := got.After.Get("c")
	if arr := c.([]any); !math.IsNaN(arr[1].(float64)) || !math.IsInf(arr[2].(float64), 1) || !math.IsInf(arr[3].(float64), -1) {
		t.Errorf("c = %#v", arr)
	}
	e = oneColumnEvent(t, Schema{Type: SchemaFloat32, Optional: true}, "nan")
	if _, _, err := (DebeziumJSON{Schemas: true}).Encode(e); err == nil || !strings.Contains(err.Error(), `have string "nan"`) {
		t.Errorf("Encode of \"nan\" under float: err = %v", err)
	}
}

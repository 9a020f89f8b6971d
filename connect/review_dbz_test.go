package connect

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// reviewDbzEvent is a create event of one row with the given column schema
// and value, with an explicit event schema.
func reviewDbzEvent(t *testing.T, col Schema, v any) *ChangeEvent {
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
// schemas as Java writes Float.MAX_VALUE ("3.4028235E38"), must decode
// again: the codec's own output is rejected as out of range for float.
func TestReviewDbz_Float32MaxRoundTrip(t *testing.T) {
	e := reviewDbzEvent(t, Schema{Type: SchemaFloat32, Optional: true}, float32(math.MaxFloat32))
	key, value, err := DebeziumJSON{Schemas: true}.Encode(e)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := DebeziumJSON{}.Decode(key, value)
	if err != nil {
		t.Fatalf("Decode of our own output %s: %v", value, err)
	}
	if v, _ := got.After.Get("c"); float32(v.(float64)) != math.MaxFloat32 {
		t.Errorf("c = %v, want %v", v, float32(math.MaxFloat32))
	}
}

// A float64 value beyond float32's range under a float (float32) schema
// must be an encoding error, not invalid JSON.
func TestReviewDbz_Float32OverflowInvalidJSON(t *testing.T) {
	e := reviewDbzEvent(t, Schema{Type: SchemaFloat32, Optional: true}, 1e39)
	_, value, err := DebeziumJSON{Schemas: true}.Encode(e)
	if err != nil {
		return // an error is fine
	}
	if !json.Valid(value) {
		t.Fatalf("Encode returned invalid JSON and no error: %s", value)
	}
}

// Row's value model: "anything that would lose its value (an integer
// beyond int64, a float beyond float64) stays a json.Number holding the
// exact text". A number too small for float64 decodes as 0.
func TestReviewDbz_TinyNumberRoundTrip(t *testing.T) {
	for _, n := range []json.Number{"1e-400", "-2.5E-350"} {
		r := Row{{"n", n}}
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Row
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		if v, _ := back.Get("n"); !reflect.DeepEqual(v, n) {
			t.Errorf("%s round-tripped to %#v (%s -> %s)", n, v, b, back)
		}
	}
}

// With schemas on and no schema given, a json.Number integer beyond int64
// is described as a double: the round trip turns it into a rounded float.
func TestReviewDbz_BigIntegerInferredSchemaRoundTrip(t *testing.T) {
	n := json.Number("18446744073709551615")
	e := &ChangeEvent{Op: OpCreate, After: Row{{"n", n}},
		Source: SourceInfo{Version: "1", Connector: ConnectorMySQL, Name: "p", DB: "d"}}
	key, value, err := DebeziumJSON{Schemas: true}.Encode(e)
	if err != nil {
		t.Fatalf("Encode: %v", err)
	}
	got, err := DebeziumJSON{}.Decode(key, value)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if v, _ := got.After.Get("n"); !reflect.DeepEqual(v, n) {
		t.Errorf("n = %#v, want %#v (value %s)", v, n, value)
	}
}

// A value under a float (float32) schema decodes as the float64 of its
// text, unrounded, and encodes rounded to float32: decoding a
// JsonConverter-style event with more digits than a float holds, then
// encoding it, changes the value (the round trip the fuzz test demands).
// JsonConverter reads FLOAT32 with floatValue(): the decoded value should
// be the float32 rounding.
func TestReviewDbz_Float32DecodeNotRounded(t *testing.T) {
	value := []byte(`{"schema":{"type":"struct","fields":[{"type":"struct","fields":[{"type":"float","optional":true,"field":"c"}],"optional":true,"field":"after"},{"type":"string","optional":false,"field":"op"}],"optional":false},"payload":{"after":{"c":16777217},"op":"c"}}`)
	codec := DebeziumJSON{Schemas: true}
	e, err := codec.Decode(nil, value)
	if err != nil {
		t.Fatal(err)
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

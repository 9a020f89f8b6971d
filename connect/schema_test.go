package connect

import (
	"encoding/hex"
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

func TestSchema_JSONRoundTrip(t *testing.T) {
	s := Schema{
		Type: SchemaStruct,
		Name: "srv.public.t.Value",
		Doc:  "a table",
		Fields: []Schema{
			{Field: "id", Type: SchemaInt64},
			{Field: "price", Type: SchemaBytes, Optional: true, Name: LogicalDecimal, Version: 1,
				Parameters: []SchemaParam{{"scale", "2"}, {"connect.decimal.precision", "10"}},
				Default:    []byte{0x00}},
			{Field: "ratio", Type: SchemaFloat32, Optional: true, Default: 0.5},
			{Field: "labels", Type: SchemaMap, Optional: true,
				Keys: &Schema{Type: SchemaString}, Values: &Schema{Type: SchemaInt32, Optional: true}},
			{Field: "points", Type: SchemaMap, Optional: true,
				Keys: &Schema{Type: SchemaInt16}, Values: &Schema{Type: SchemaBoolean}},
			{Field: "tags", Type: SchemaArray, Items: &Schema{Type: SchemaString}, Default: []any{"a"}},
			{Field: "addr", Type: SchemaStruct, Optional: true, Fields: []Schema{{Field: "zip", Type: SchemaString, Default: "00000"}}},
		},
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"struct","fields":[` +
		`{"type":"int64","optional":false,"field":"id"},` +
		`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"default":"AA==","field":"price"},` +
		`{"type":"float","optional":true,"default":0.5,"field":"ratio"},` +
		`{"type":"map","keys":{"type":"string","optional":false},"values":{"type":"int32","optional":true},"optional":true,"field":"labels"},` +
		`{"type":"map","keys":{"type":"int16","optional":false},"values":{"type":"boolean","optional":false},"optional":true,"field":"points"},` +
		`{"type":"array","items":{"type":"string","optional":false},"optional":false,"default":["a"],"field":"tags"},` +
		`{"type":"struct","fields":[{"type":"string","optional":false,"default":"00000","field":"zip"}],"optional":true,"field":"addr"}` +
		`],"optional":false,"name":"srv.public.t.Value","doc":"a table"}`
	if string(b) != want {
		t.Fatalf("Marshal:\n got %s\nwant %s", b, want)
	}
	var back Schema
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, s) {
		t.Errorf("Unmarshal:\n got %#v\nwant %#v", back, s)
	}
	if fs, ok := back.FieldSchema("price"); !ok || fs.Name != LogicalDecimal {
		t.Errorf("FieldSchema(price) = %v, %v", fs, ok)
	}
	if _, ok := back.FieldSchema("nope"); ok {
		t.Error("FieldSchema(nope) found")
	}
	price, _ := back.FieldSchema("price")
	if v, ok := price.Param("scale"); !ok || v != "2" {
		t.Errorf(`Param("scale") = %q, %v`, v, ok)
	}
}

func TestSchema_Values(t *testing.T) {
	// Maps: string keys as an object (a Row), other keys as [key, value] pairs.
	labels := Schema{Type: SchemaMap, Keys: &Schema{Type: SchemaString}, Values: &Schema{Type: SchemaInt32}}
	points := Schema{Type: SchemaMap, Keys: &Schema{Type: SchemaInt16}, Values: &Schema{Type: SchemaString}}
	tests := []struct {
		schema Schema
		value  any
		json   string
	}{
		{labels, Row{{"b", int64(2)}, {"a", int64(1)}}, `{"b":2,"a":1}`},
		{points, []any{[]any{int64(3), "x"}}, `[[3,"x"]]`},
		{Schema{Type: SchemaFloat64}, 12.5, `12.5`},
		{Schema{Type: SchemaFloat64}, 1e21, `1.0E21`},
		{Schema{Type: SchemaBytes}, []byte("hi"), `"aGk="`},
		{Schema{Type: SchemaString, Optional: true, Default: "d"}, nil, `"d"`},
	}
	for _, tt := range tests {
		b, err := appendValue(nil, tt.value, &tt.schema)
		if err != nil {
			t.Errorf("encode %v as %s: %v", tt.value, tt.schema.Type, err)
			continue
		}
		if string(b) != tt.json {
			t.Errorf("encode %v as %s = %s, want %s", tt.value, tt.schema.Type, b, tt.json)
		}
		tree, err := parseJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeValue(tree, &tt.schema)
		if err != nil {
			t.Errorf("decode %s as %s: %v", b, tt.schema.Type, err)
			continue
		}
		want := tt.value
		if want == nil {
			want = tt.schema.Default
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("decode %s as %s = %#v, want %#v", b, tt.schema.Type, got, want)
		}
	}
}

func TestSchema_UnmarshalJSON_Errors(t *testing.T) {
	tests := []struct{ in, want string }{
		{`[]`, "want an object"},
		{`{"optional":true}`, `"type" must be a string`},
		{`{"type":"uuid"}`, `unknown type "uuid"`},
		{`{"type":"struct"}`, `"fields" must be an array`},
		{`{"type":"struct","fields":[{"type":"int32"}]}`, `[0]: struct schema field: "field" must be a string`},
		{`{"type":"struct","fields":[{"type":"int32","field":"a"},{"type":"int32","field":"a"}]}`, `duplicate field "a"`},
		{`{"type":"array"}`, `"items" is missing`},
		{`{"type":"map","keys":{"type":"string"}}`, `"keys" and "values" are required`},
		{`{"type":"string","parameters":{"a":1}}`, `parameter "a" must be a string`},
		{`{"type":"int8","default":300}`, "default: 300 is out of range for int8"},
		{`{"type":"struct","fields":[{"type":"array","items":{"type":"blob"},"field":"x"}]}`, `x.items: schema: unknown type "blob"`},
	}
	for _, tt := range tests {
		var s Schema
		err := json.Unmarshal([]byte(tt.in), &s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Unmarshal(%s) error = %v, want one containing %q", tt.in, err, tt.want)
		}
	}
}

func TestSchema_IgnoresUnknownAndMistypedKeys(t *testing.T) {
	// Like Kafka's JsonConverter: unknown keys are ignored, as are a name,
	// version or doc of the wrong JSON type.
	var s Schema
	if err := json.Unmarshal([]byte(`{"type":"string","name":5,"version":"1","doc":false,"extra":{}}`), &s); err != nil {
		t.Fatal(err)
	}
	if want := (Schema{Type: SchemaString}); !reflect.DeepEqual(s, want) {
		t.Errorf("got %#v, want %#v", s, want)
	}
}

func TestSourceSchema(t *testing.T) {
	src := SourceInfo{Connector: "oracle", Extra: Row{{"scn", "123"}, {"commit_scn", nil}, {"rs_id", int64(1)}}}
	s, err := SourceSchema(src)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "io.debezium.connector.oracle.Source" {
		t.Errorf("Name = %q", s.Name)
	}
	var extra []string
	for _, f := range s.Fields[len(sourceCommon):] {
		extra = append(extra, f.Field+":"+string(f.Type))
	}
	if want := []string{"scn:string", "commit_scn:string", "rs_id:int64"}; !reflect.DeepEqual(extra, want) {
		t.Errorf("extra fields = %v, want %v", extra, want)
	}
	if _, err := SourceSchema(SourceInfo{Extra: Row{{"db", "x"}}}); err == nil {
		t.Error("extra field named like a common one: no error")
	}
}

func TestChangeEvent_Time(t *testing.T) {
	var e ChangeEvent
	if !e.Time().IsZero() {
		t.Errorf("zero event: Time = %v", e.Time())
	}
	e.TsMs = 1714000000142
	if got := e.Time().UnixMilli(); got != 1714000000142 {
		t.Errorf("ms only: Time = %d", got)
	}
	e.TsUs, e.TsNs = 1714000000142345, 1714000000142345678
	if got := e.Time().UnixNano(); got != 1714000000142345678 {
		t.Errorf("with ns: Time = %d", got)
	}
	var s SourceInfo
	s.SetTime(e.Time())
	if s.TsMs != e.TsMs || s.TsUs != e.TsUs || s.TsNs != e.TsNs || !s.Time().Equal(e.Time()) {
		t.Errorf("SourceInfo.SetTime: %+v", s)
	}
}

func TestOp_Valid(t *testing.T) {
	for _, op := range []Op{OpCreate, OpUpdate, OpDelete, OpRead, OpTruncate, OpMessage} {
		if !op.Valid() {
			t.Errorf("%q not valid", op)
		}
	}
	for _, op := range []Op{"", "C", "x", "create"} {
		if op.Valid() {
			t.Errorf("%q valid", op)
		}
	}
}

// TestDecimalBytes_AsJavaToByteArray: DecimalBytes writes Java's
// BigInteger.toByteArray (the fewest bytes: -128 is 80, not ff80), and
// DecimalBig reads it, or any sign-extended form, back.
func TestDecimalBytes_AsJavaToByteArray(t *testing.T) {
	for in, want := range map[int64]string{0: "00", 1: "01", -1: "ff", 127: "7f", 128: "0080", -128: "80", -129: "ff7f",
		255: "00ff", 32767: "7fff", -32768: "8000", -32769: "ff7fff"} {
		got := DecimalBytes(big.NewInt(in))
		if hex.EncodeToString(got) != want {
			t.Errorf("DecimalBytes(%d) = %x, want %s", in, got, want)
		}
		if back := DecimalBig(got); back.Int64() != in {
			t.Errorf("DecimalBig(%x) = %s, want %d", got, back, in)
		}
		if back := DecimalBig(append([]byte{got[0] & 0x80 >> 7 * 0xff}, got...)); back.Int64() != in {
			t.Errorf("DecimalBig of %x sign-extended = %s, want %d", got, back, in)
		}
	}
}

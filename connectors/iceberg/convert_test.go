package iceberg

import (
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ib "github.com/apache/iceberg-go"

	"github.com/tributary-io/tributary/connect"
)

// Times before 1970 with a fraction of a microsecond round down (towards
// the past), as Iceberg's Java writers and time.Time do, not towards 1970.
func TestConvert_NanoTimestampBefore1970(t *testing.T) {
	nano := &connect.Schema{Type: connect.SchemaInt64, Name: connect.LogicalNanoTimestamp}
	for _, tc := range []struct{ in, want int64 }{
		{1500, 1}, {-1500, -2}, {-1000, -1}, {-1, -1}, {0, 0},
	} {
		got, err := convert(tc.in, nano, ib.PrimitiveTypes.TimestampTz)
		if err != nil || got != tc.want {
			t.Errorf("convert(%d ns) = %v, %v; want %d µs", tc.in, got, err, tc.want)
		}
	}
}

// A Debezium VariableScaleDecimal (Postgres numeric without a precision,
// decimal.handling.mode precise) is {"scale":S,"value":<unscaled bytes>}:
// its string column holds the number's text, not the struct's JSON, and a
// column pinned as decimal takes it.
func TestConvert_VariableScaleDecimal(t *testing.T) {
	vsd := &connect.Schema{Type: connect.SchemaStruct, Name: connect.LogicalVariableDecimal, Fields: []connect.Schema{
		{Type: connect.SchemaInt32, Field: "scale"}, {Type: connect.SchemaBytes, Field: "value"}}}
	if got := typeFromConnect(vsd); !got.Equals(ib.PrimitiveTypes.String) {
		t.Fatalf("type %s, want string", got)
	}
	for _, tc := range []struct {
		v    connect.Row
		want string
	}{
		{connect.Row{{Name: "scale", Value: int64(2)}, {Name: "value", Value: []byte{0x30, 0x39}}}, "123.45"}, // 12345
		{connect.Row{{Name: "scale", Value: int64(3)}, {Name: "value", Value: []byte{0xff, 0x85}}}, "-0.123"}, // -123
		{connect.Row{{Name: "scale", Value: int64(0)}, {Name: "value", Value: "AQ=="}}, "1"},                  // base64 text
		{connect.Row{{Name: "scale", Value: json.Number("1")}, {Name: "value", Value: []byte{0x07}}}, "0.7"},  // a number
	} {
		got, err := convert(tc.v, vsd, ib.PrimitiveTypes.String)
		if err != nil || got != tc.want {
			t.Errorf("convert(%v) to string = %v, %v; want %s", tc.v, got, err, tc.want)
		}
	}
	v := connect.Row{{Name: "scale", Value: int64(2)}, {Name: "value", Value: []byte{0x30, 0x39}}}
	got, err := convert(v, vsd, ib.DecimalTypeOf(10, 3))
	if err != nil || got.(decimal128.Num) != decimal128.FromI64(123450) {
		t.Errorf("convert(%v) to decimal(10,3) = %v, %v; want 123.450", v, got, err)
	}
}

// A Decimal whose scale Iceberg's decimal cannot take (negative, as
// PostgreSQL 15's numeric(5,-2); or above its precision) gets a string
// column holding the number's text, not the base64 of its unscaled bytes.
func TestConvert_DecimalOutsideIcebergsScales(t *testing.T) {
	for _, tc := range []struct {
		scale, prec string
		unscaled    []byte
		want        string
	}{
		{"-2", "5", []byte{0x7b}, "12300"},         // 123 × 10^2
		{"-3", "4", []byte{0xff, 0x85}, "-123000"}, // -123 × 10^3
		{"5", "3", []byte{0x7b}, "0.00123"},        // scale above precision
	} {
		s := &connect.Schema{Type: connect.SchemaBytes, Name: connect.LogicalDecimal,
			Parameters: []connect.SchemaParam{{Key: "scale", Value: tc.scale}, {Key: "connect.decimal.precision", Value: tc.prec}}}
		typ := typeFromConnect(s)
		if !typ.Equals(ib.PrimitiveTypes.String) {
			t.Fatalf("scale %s precision %s: type %s, want string", tc.scale, tc.prec, typ)
		}
		got, err := convert(tc.unscaled, s, typ)
		if err != nil || got != tc.want {
			t.Errorf("scale %s, unscaled %x: %v, %v; want %s", tc.scale, tc.unscaled, got, err, tc.want)
		}
	}
	// A column pinned as decimal takes such a value at its own scale.
	s := &connect.Schema{Type: connect.SchemaBytes, Name: connect.LogicalDecimal, Parameters: []connect.SchemaParam{{Key: "scale", Value: "-2"}}}
	got, err := convert([]byte{0x7b}, s, ib.DecimalTypeOf(10, 1))
	if err != nil || got.(decimal128.Num) != decimal128.FromI64(123000) {
		t.Errorf("scale -2, unscaled 7b, to decimal(10,1) = %v, %v; want 12300.0", got, err)
	}
}

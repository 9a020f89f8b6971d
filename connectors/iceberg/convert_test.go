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

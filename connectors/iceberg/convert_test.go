package iceberg

import (
	"testing"

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

package transform

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// format is documented as "the first layout tried on string input", but a
// string of digits is read as an epoch count before format is tried, so a
// digits-only layout (20060102, 20060102150405) never applies and the
// field silently becomes a 1970 timestamp.
func TestReviewPlug_TimestampConvertDigitsOnlyFormat(t *testing.T) {
	tr := mustNew(t, "timestamp_convert", map[string]string{"field": "d", "target.type": "iso8601", "format": "20060102"})
	got, err := tr.Apply(rec(`{"d":"20240501"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []connect.Record{value(rec(""), `{"d":"2024-05-01T00:00:00Z"}`)}
	if !equalRecords(got, want) {
		t.Errorf("Apply:\n got  %s\n want %s", show(got), show(want))
	}
}

package transform

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// A filter on a 64-bit id (a bigint primary key, a snowflake id) must not
// match a different id: equals compares numbers through float64, so ids
// that differ only beyond 2^53 are "equal" and the filter keeps or drops
// records of rows it was not told about.
func TestReviewPlug_FilterEqualsLargeIntegers(t *testing.T) {
	tr := mustNew(t, "filter", map[string]string{"action": "drop", "field": "id", "equals": "1234567890123456789"})
	in := rec(`{"id":1234567890123456788}`)
	got, err := tr.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("filter equals 1234567890123456789 dropped the record of id 1234567890123456788")
	}
	tr = mustNew(t, "filter", map[string]string{"action": "keep", "field": "id", "in": "9007199254740992"})
	if got, _ := tr.Apply(rec(`{"id":9007199254740993}`)); len(got) != 0 {
		t.Errorf("filter in [9007199254740992] kept the record of id 9007199254740993")
	}
}

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

package transform

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestTimestampConvert_Apply(t *testing.T) {
	// 2024-05-01T12:00:00.123Z
	const ms = `1714564800123`
	one := func(in, out string) []connect.Record { return []connect.Record{value(rec(in), out)} }
	cfg := func(target string, kv ...string) map[string]string {
		m := map[string]string{"field": "ts", "target.type": target}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	runApply(t, "timestamp_convert", []applyCase{
		{"ms to iso8601", cfg("iso8601"), rec(`{"ts":` + ms + `,"x":1}`), one("", `{"ts":"2024-05-01T12:00:00.123Z","x":1}`), ""},
		{"ms to string", cfg("string", "format", "2006-01-02 15:04:05.000"), rec(`{"ts":` + ms + `}`), one("", `{"ts":"2024-05-01 12:00:00.123"}`), ""},
		{"ms to unix", cfg("unix"), rec(`{"ts":` + ms + `}`), one("", `{"ts":1714564800}`), ""},
		{"ms to unix_us", cfg("unix_us"), rec(`{"ts":` + ms + `}`), one("", `{"ts":1714564800123000}`), ""},
		{"seconds in", cfg("unix_ms", "input.unit", "s"), rec(`{"ts":1714564800}`), one("", `{"ts":1714564800000}`), ""},
		{"microseconds in", cfg("iso8601", "input.unit", "us"), rec(`{"ts":1714564800123456}`), one("", `{"ts":"2024-05-01T12:00:00.123456Z"}`), ""},
		{"nanoseconds in", cfg("iso8601", "input.unit", "ns"), rec(`{"ts":1714564800123456789}`), one("", `{"ts":"2024-05-01T12:00:00.123456789Z"}`), ""},
		{"fractional seconds", cfg("unix_ms", "input.unit", "s"), rec(`{"ts":1714564800.5}`), one("", `{"ts":1714564800500}`), ""},
		{"negative ms", cfg("iso8601"), rec(`{"ts":-1}`), one("", `{"ts":"1969-12-31T23:59:59.999Z"}`), ""},
		{"string of digits", cfg("iso8601"), rec(`{"ts":"` + ms + `"}`), one("", `{"ts":"2024-05-01T12:00:00.123Z"}`), ""},
		{"RFC 3339 in", cfg("unix_ms"), rec(`{"ts":"2024-05-01T14:00:00.123+02:00"}`), one("", `{"ts":`+ms+`}`), ""},
		{"Debezium ZonedTimestamp", cfg("unix_us"), rec(`{"ts":"2024-05-01T12:00:00.123456Z"}`), one("", `{"ts":1714564800123456}`), ""},
		{"no zone, in timezone", cfg("unix_ms", "timezone", "Europe/Berlin"), rec(`{"ts":"2024-05-01T14:00:00.123"}`), one("", `{"ts":`+ms+`}`), ""},
		{"date only", cfg("unix_ms"), rec(`{"ts":"2024-05-01"}`), one("", `{"ts":1714521600000}`), ""},
		{"own format in", cfg("unix", "format", "02/01/2006 15:04"), rec(`{"ts":"01/05/2024 12:00"}`), one("", `{"ts":1714564800}`), ""},
		{"iso8601 in timezone", cfg("iso8601", "timezone", "Europe/Berlin"), rec(`{"ts":` + ms + `}`), one("", `{"ts":"2024-05-01T14:00:00.123+02:00"}`), ""},
		{"nested", map[string]string{"field": "after.created", "target.type": "iso8601"}, rec(`{"after":{"created":0}}`), one("", `{"after":{"created":"1970-01-01T00:00:00Z"}}`), ""},
		{"null stays", cfg("iso8601"), rec(`{"ts":null}`), one("", `{"ts":null}`), ""},
		{"missing stays", cfg("iso8601"), rec(`{"x":1}`), one("", `{"x":1}`), ""},
		{"tombstone passes", cfg("iso8601"), rec(""), []connect.Record{rec("")}, ""},
		{"boolean", cfg("iso8601"), rec(`{"ts":true}`), nil, "timestamp_convert: field ts: the value is a boolean, want a number or a string"},
		{"unparseable", cfg("unix_ms"), rec(`{"ts":"yesterday"}`), nil, `"yesterday" is not a timestamp in RFC 3339`},
		{"unparseable with format", cfg("unix_ms", "format", "2006"), rec(`{"ts":"soon"}`), nil, `format "2006" or RFC 3339`},
		{"out of range", cfg("iso8601", "input.unit", "s"), rec(`{"ts":999999999999}`), nil, "outside the years 0 to 9999"},
		{"huge", cfg("iso8601", "input.unit", "s"), rec(`{"ts":9223372036854775807}`), nil, "outside the years"},
		{"huge float", cfg("iso8601"), rec(`{"ts":1e300}`), nil, "outside the years"},
		{"not a number", cfg("iso8601"), rec(`{"ts":1e999}`), nil, "is not an epoch count"},
		{"not JSON", cfg("iso8601"), rec(`ts=1`), nil, "timestamp_convert: field ts: the record value is not JSON"},
	})
	runConfig(t, "timestamp_convert", []configCase{
		{"no target", map[string]string{"field": "ts"}, "target.type: required parameter is missing"},
		{"bad target", map[string]string{"field": "ts", "target.type": "Date"}, `"Date" is not one of`},
		{"string without format", map[string]string{"field": "ts", "target.type": "string"}, "target.type string needs format"},
		{"bad unit", map[string]string{"field": "ts", "target.type": "unix", "input.unit": "days"}, `"days" is not one of`},
		{"bad zone", map[string]string{"field": "ts", "target.type": "unix", "timezone": "Mars/Olympus"}, "not a known time zone"},
	})
}

// format is the first layout tried on string input, before a string of
// digits is read as an epoch count: a digits-only layout (20060102,
// 20060102150405) applies, and digits it does not parse are still epochs.
func TestTimestampConvert_DigitsOnlyFormatBeforeEpoch(t *testing.T) {
	tr := mustNew(t, "timestamp_convert", map[string]string{"field": "d", "target.type": "iso8601", "format": "20060102"})
	got, err := tr.Apply(rec(`{"d":"20240501"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []connect.Record{value(rec(""), `{"d":"2024-05-01T00:00:00Z"}`)}
	if !equalRecords(got, want) {
		t.Errorf("Apply:\n got  %s\n want %s", show(got), show(want))
	}
	// Digits that do not fit the layout are still an epoch count.
	got, err = tr.Apply(rec(`{"d":"1714521600000"}`))
	if err != nil {
		t.Fatal(err)
	}
	want = []connect.Record{value(rec(""), `{"d":"2024-05-01T00:00:00Z"}`)}
	if !equalRecords(got, want) {
		t.Errorf("Apply of epoch digits with format 20060102:\n got  %s\n want %s", show(got), show(want))
	}
}

package iceberg

import (
	"strings"
	"testing"
)

// The spec declares the bounds Open enforces, so that pipeline validation
// reports a bad value where it is written instead of the task failing at
// every restart.
func TestSpec_Validate_Bounds(t *testing.T) {
	for _, tc := range []struct{ param, value, want string }{
		{"commit.interval", "-5s", "must be positive"},
		{"commit.interval", "0s", "must be positive"},
		{"commit.records", "0", "must be positive"},
		{"target.file.size", "512KiB", "must be at least 1MiB"},
		{"compact.interval", "-1m", "must be at least 0s"},
		{"compact.min.files", "1", "must be at least 2"},
		{"expire.interval", "-1h", "must be at least 0s"},
		{"expire.older.than", "-1h", "must be at least 0s"},
		{"expire.retain.last", "0", "must be at least 1"},
	} {
		errs := spec().Validate(map[string]string{tc.param: tc.value})
		if len(errs) != 1 || errs[0].Param != tc.param || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("Validate(%s: %s) = %v, want one error with %q", tc.param, tc.value, errs, tc.want)
		}
	}
	if errs := spec().Validate(map[string]string{"compact.interval": "0s", "expire.interval": "0s", "commit.interval": "1s"}); errs != nil {
		t.Errorf("Validate of valid values = %v", errs)
	}
}

// The spec's whole-config check reports what parseOptions refuses.
func TestSpec_Validate_Check(t *testing.T) {
	for _, tc := range []struct {
		values      map[string]string
		param, want string
	}{
		{map[string]string{"partition": "week(ts)"}, "partition", "unknown transform"},
		{map[string]string{"schema": "id lng"}, "schema", "unknown type"},
		{map[string]string{"table": "{table}"}, "table", "no namespace"},
		{map[string]string{"key.columns": "id"}, "key.columns", "only used in upsert mode"},
		{map[string]string{"s3.access.key.id": "AKIA"}, "s3.access.key.id", "go together"},
	} {
		errs := spec().Validate(tc.values)
		if len(errs) != 1 || errs[0].Param != tc.param || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("Validate(%v) = %v, want one %s error with %q", tc.values, errs, tc.param, tc.want)
		}
	}
	if errs := spec().Validate(map[string]string{"mode": "upsert", "key.columns": "id", "partition": "bucket(8, id)", "table": "shop.{table}"}); errs != nil {
		t.Errorf("Validate of a valid config = %v", errs)
	}
}

package webhook

import (
	"strings"
	"testing"
)

// The spec declares the bounds Open enforces, so that pipeline validation
// reports a bad value where it is written instead of the task failing at
// every restart.
func TestSpec_Validate_Bounds(t *testing.T) {
	for _, tc := range []struct{ param, value, want string }{
		{"batch.size", "0", "must be at least 1"},
		{"concurrency", "0", "must be at least 1"},
		{"rate.limit", "-1", "must be at least 0"},
		{"timeout", "0s", "must be positive"},
		{"timeout", "-1s", "must be positive"},
		{"max.attempts", "-1", "must be at least 0"},
		{"max.elapsed", "-1m", "must be at least 0s"},
		{"backoff.initial", "-1ms", "must be at least 0s"},
		{"backoff.max", "-1s", "must be at least 0s"},
	} {
		errs := spec().Validate(map[string]string{"url": "http://x", tc.param: tc.value})
		if len(errs) != 1 || errs[0].Param != tc.param || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("Validate(%s: %s) = %v, want one error with %q", tc.param, tc.value, errs, tc.want)
		}
	}
	if errs := spec().Validate(map[string]string{"url": "http://x", "max.attempts": "0", "rate.limit": "0", "max.elapsed": "0s"}); errs != nil {
		t.Errorf("Validate of valid values = %v", errs)
	}
}

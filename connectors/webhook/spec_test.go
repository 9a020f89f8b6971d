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

// The spec's whole-config check reports what parseSettings refuses, each
// problem at its parameter.
func TestSpec_Validate_Check(t *testing.T) {
	errs := spec().Validate(map[string]string{
		"url":     "https://crm.example.com/{{ .Value.id }",
		"headers": "Authorization Bearer tok",
		"method":  "PO ST",
	})
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	want := []string{"headers: ", "method: ", "url: template: "}
	if len(got) != len(want) {
		t.Fatalf("Validate = %q, want errors for %q", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("error %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
	if errs := spec().Validate(map[string]string{"url": "ftp://x"}); len(errs) != 1 || errs[0].Param != "url" || !strings.Contains(errs[0].Message, "not an http or https URL") {
		t.Errorf("Validate(ftp url) = %v", errs)
	}
	// A value a per-parameter check refuses is reported alone: the whole
	// config is checked only once every value is valid.
	if errs := spec().Validate(map[string]string{"url": "{{", "batch.size": "0"}); len(errs) != 1 || errs[0].Param != "batch.size" {
		t.Errorf("Validate = %v, want only the batch.size error", errs)
	}
	if errs := spec().Validate(map[string]string{"url": "https://x/{{ .Value.id }}", "headers": "Authorization: Bearer {{ .Topic }}"}); errs != nil {
		t.Errorf("Validate of a valid config = %v", errs)
	}
}

package rest

import (
	"strings"
	"testing"
)

// TestREST_Metrics_ExpiredProducers: the log's count of idempotent
// producer states dropped after producer.id.expiration.ms is on /metrics,
// as a counter with its help text.
func TestREST_Metrics_ExpiredProducers(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	l.Metrics().ExpiredProducers.Add(2)
	code, body := call(t, srv, "GET", "/metrics", "")
	for _, want := range []string{
		"# HELP tributary_log_expired_producers_total ",
		"# TYPE tributary_log_expired_producers_total counter",
		"\ntributary_log_expired_producers_total 2\n",
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("metrics = %d, want %q in\n%s", code, want, body)
		}
	}
}

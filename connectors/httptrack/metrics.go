package httptrack

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
var latencyBuckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// metrics counts requests, events and rejections per write key (labelled
// by the key's position in write.keys, never by the key) and keeps a
// latency histogram, served in the Prometheus text format at /metrics.
type metrics struct {
	mu         sync.Mutex
	requests   map[[2]string]uint64 // key, code
	accepted   map[string]uint64    // key
	dups       map[string]uint64    // key
	rejects    map[[2]string]uint64 // key, reason: events, or requests when no event count applies
	buckets    []uint64             // cumulative counts are computed when written
	latencySum float64
	latencyN   uint64
}

func newMetrics() *metrics {
	return &metrics{
		requests: make(map[[2]string]uint64),
		accepted: make(map[string]uint64),
		dups:     make(map[string]uint64),
		rejects:  make(map[[2]string]uint64),
		buckets:  make([]uint64, len(latencyBuckets)+1),
	}
}

func label(key string) string {
	if key == "" {
		return "none"
	}
	return key
}

func (m *metrics) request(key string, code int, d time.Duration) {
	sec := d.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, sec)
	m.mu.Lock()
	m.requests[[2]string{label(key), strconv.Itoa(code)}]++
	m.buckets[i]++
	m.latencySum += sec
	m.latencyN++
	m.mu.Unlock()
}

func (m *metrics) events(key string, accepted, dups int) {
	m.mu.Lock()
	m.accepted[label(key)] += uint64(accepted)
	m.dups[label(key)] += uint64(dups)
	m.mu.Unlock()
}

// rejected counts n rejected events, or one rejected request when n is 0.
func (m *metrics) rejected(key, reason string, n int) {
	m.mu.Lock()
	m.rejects[[2]string{label(key), reason}] += uint64(max(n, 1))
	m.mu.Unlock()
}

func (m *metrics) write(w io.Writer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP tributary_httptrack_requests_total Tracking requests answered, by write key and HTTP status.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_requests_total counter")
	for _, k := range sortedPairs(m.requests) {
		fmt.Fprintf(w, "tributary_httptrack_requests_total{key=%q,code=%q} %d\n", k[0], k[1], m.requests[k])
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_events_total Events accepted (new, handed to the log), by write key.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_events_total counter")
	for _, k := range sortedStrings(m.accepted) {
		fmt.Fprintf(w, "tributary_httptrack_events_total{key=%q} %d\n", k, m.accepted[k])
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_duplicates_total Events dropped as duplicates of a messageId within dedup.window.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_duplicates_total counter")
	for _, k := range sortedStrings(m.dups) {
		fmt.Fprintf(w, "tributary_httptrack_duplicates_total{key=%q} %d\n", k, m.dups[k])
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_rejections_total Rejected events (invalid) or requests (other reasons), by write key and reason.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_rejections_total counter")
	for _, k := range sortedPairs(m.rejects) {
		fmt.Fprintf(w, "tributary_httptrack_rejections_total{key=%q,reason=%q} %d\n", k[0], k[1], m.rejects[k])
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_request_seconds Time from request to answer, durability wait included.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_request_seconds histogram")
	var cum uint64
	for i, le := range latencyBuckets {
		cum += m.buckets[i]
		fmt.Fprintf(w, "tributary_httptrack_request_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	cum += m.buckets[len(latencyBuckets)]
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_sum %g\n", m.latencySum)
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_count %d\n", m.latencyN)
}

func sortedPairs(m map[[2]string]uint64) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int {
		if a[0] != b[0] {
			return compareStrings(a[0], b[0])
		}
		return compareStrings(a[1], b[1])
	})
	return keys
}

func sortedStrings(m map[string]uint64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

package httptrack

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
var latencyBuckets = [...]float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}

// statusCodes are the statuses the tracking paths answer with, in the
// order metrics list them; any other counts as the last slot, "other".
var statusCodes = [...]int{200, 400, 401, 404, 405, 429, 503}

// keyMetrics are the counters of one write key (or of requests without a
// valid key). They are atomics: the request path updates them without a
// lock.
type keyMetrics struct {
	label    string                              // the key's position in write.keys, or "none"
	requests [len(statusCodes) + 1]atomic.Uint64 // by statusCodes index; the last is "other"
	accepted atomic.Uint64                       // events handed to the log
	dups     atomic.Uint64                       // events dropped as duplicates
	rejects  [len(reasonsArr)]atomic.Uint64      // by reasons index: events, or requests when no event count applies
}

// reasonsArr are the rejection reasons, in the order metrics list them.
var reasonsArr = [...]string{reasonAuth, reasonInvalid, reasonTooLarge, reasonRateLimited, reasonBackpressure, reasonTimeout, reasonStopping}

// metrics counts requests, events and rejections per write key (labelled
// by the key's position in write.keys, never by the key) and keeps a
// latency histogram. The source serves them in the Prometheus text format
// at its own /metrics, per key; Report gives the worker the totals.
type metrics struct {
	keys    []*keyMetrics // in write.keys order, then "none"
	none    *keyMetrics
	buckets [len(latencyBuckets) + 1]atomic.Uint64 // not cumulative; the last is +Inf
	sumNs   atomic.Int64
	count   atomic.Uint64 // requests observed, for Report
}

// newMetrics makes the metrics of n write keys, labelled "1".."n".
func newMetrics(n int) *metrics {
	m := &metrics{none: &keyMetrics{label: "none"}}
	for i := range n {
		m.keys = append(m.keys, &keyMetrics{label: strconv.Itoa(i + 1)})
	}
	m.keys = append(m.keys, m.none)
	return m
}

// of returns the counters of the key labelled label ("" for none).
func (m *metrics) of(label string) *keyMetrics {
	if i, err := strconv.Atoi(label); err == nil && i >= 1 && i < len(m.keys) {
		return m.keys[i-1]
	}
	return m.none
}

func codeIndex(code int) int {
	for i, c := range statusCodes {
		if c == code {
			return i
		}
	}
	return len(statusCodes)
}

func reasonIndex(reason string) int {
	for i, r := range reasonsArr {
		if r == reason {
			return i
		}
	}
	panic("httptrack: unknown rejection reason " + reason)
}

func (m *metrics) request(label string, code int, d time.Duration) {
	m.of(label).requests[codeIndex(code)].Add(1)
	i, _ := slices.BinarySearch(latencyBuckets[:], d.Seconds())
	m.buckets[i].Add(1)
	m.sumNs.Add(int64(d))
	m.count.Add(1)
}

func (m *metrics) events(label string, accepted, dups int) {
	k := m.of(label)
	k.accepted.Add(uint64(accepted))
	k.dups.Add(uint64(dups))
}

// rejected counts n rejected events, or one rejected request when n is 0.
func (m *metrics) rejected(label, reason string, n int) {
	m.of(label).rejects[reasonIndex(reason)].Add(uint64(max(n, 1)))
}

// totals are the counters summed over the keys, for Report.
type totals struct {
	requests, ok, accepted, dups uint64
	rejects                      [len(reasonsArr)]uint64
	latencySum                   float64
	latencyCount                 uint64
}

func (m *metrics) totals() totals {
	var t totals
	for _, k := range m.keys {
		for i := range k.requests {
			t.requests += k.requests[i].Load()
		}
		t.ok += k.requests[0].Load()
		t.accepted += k.accepted.Load()
		t.dups += k.dups.Load()
		for i := range k.rejects {
			t.rejects[i] += k.rejects[i].Load()
		}
	}
	t.latencySum = time.Duration(m.sumNs.Load()).Seconds()
	t.latencyCount = m.count.Load()
	return t
}

func (m *metrics) write(w io.Writer) {
	fmt.Fprintln(w, "# HELP tributary_httptrack_requests_total Tracking requests answered, by write key and HTTP status.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_requests_total counter")
	for _, k := range m.keys {
		for i := range k.requests {
			n := k.requests[i].Load()
			code := "other"
			if i < len(statusCodes) {
				code = strconv.Itoa(statusCodes[i])
			}
			if n > 0 || code == "200" {
				fmt.Fprintf(w, "tributary_httptrack_requests_total{key=%q,code=%q} %d\n", k.label, code, n)
			}
		}
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_events_total Events accepted (new, handed to the log), by write key.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_events_total counter")
	for _, k := range m.keys {
		fmt.Fprintf(w, "tributary_httptrack_events_total{key=%q} %d\n", k.label, k.accepted.Load())
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_duplicates_total Events dropped as duplicates of a messageId within dedup.window.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_duplicates_total counter")
	for _, k := range m.keys {
		fmt.Fprintf(w, "tributary_httptrack_duplicates_total{key=%q} %d\n", k.label, k.dups.Load())
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_rejections_total Rejected events (invalid) or requests (other reasons), by write key and reason.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_rejections_total counter")
	for _, k := range m.keys {
		for i, r := range reasonsArr {
			fmt.Fprintf(w, "tributary_httptrack_rejections_total{key=%q,reason=%q} %d\n", k.label, r, k.rejects[i].Load())
		}
	}
	fmt.Fprintln(w, "# HELP tributary_httptrack_request_seconds Time from request to answer, durability wait included.")
	fmt.Fprintln(w, "# TYPE tributary_httptrack_request_seconds histogram")
	var cum uint64
	for i, le := range latencyBuckets {
		cum += m.buckets[i].Load()
		fmt.Fprintf(w, "tributary_httptrack_request_seconds_bucket{le=%q} %d\n", strconv.FormatFloat(le, 'g', -1, 64), cum)
	}
	cum += m.buckets[len(latencyBuckets)].Load()
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_bucket{le=\"+Inf\"} %d\n", cum)
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_sum %g\n", time.Duration(m.sumNs.Load()).Seconds())
	fmt.Fprintf(w, "tributary_httptrack_request_seconds_count %d\n", cum)
}

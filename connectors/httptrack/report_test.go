package httptrack

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestReport checks the counters and the backlog the worker shows for the
// source: totals after accepted, duplicate and rejected requests, then a
// request stuck waiting while the log does not acknowledge.
func TestReport(t *testing.T) {
	if rep := new(Source).Report(); rep.Phase != "" || len(rep.Gauges) != 0 {
		t.Errorf("report before Open: %+v", rep)
	}
	h := start(t, map[string]string{"ack.timeout": "5s", "max.pending.bytes": "1KiB"}, nil)
	msg := `{"userId":"u","event":"E","messageId":"m1"}`
	wantStatus(t, h.post("/v1/track", msg, auth), 200)
	wantStatus(t, h.post("/v1/track", msg, auth), 200) // a duplicate
	wantStatus(t, h.post("/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E"},{"type":"track","userId":"u"}]}`, auth), 400)
	wantStatus(t, h.post("/v1/track", msg, map[string]string{"auth": "nope"}), 401)

	rep := h.src.Report()
	want := map[string]float64{
		"httptrack_requests":              4,
		"httptrack_requests_ok":           2,
		"httptrack_events_accepted":       2,
		"httptrack_events_duplicate":      1,
		"httptrack_rejected_invalid":      1,
		"httptrack_rejected_unauthorized": 1,
		"httptrack_rejected_rate_limited": 0,
		"httptrack_request_seconds_count": 4,
		"httptrack_pending_requests":      0,
		"httptrack_unacked_requests":      0,
		"httptrack_waiting_requests":      0,
		"httptrack_dedup_ids":             1,
	}
	for name, v := range want {
		if got, ok := rep.Gauges[name]; !ok || got != v {
			t.Errorf("gauge %s = %v (present %v), want %v", name, got, ok, v)
		}
	}
	for name := range rep.Gauges {
		if !strings.HasPrefix(name, "httptrack_") || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") != "" {
			t.Errorf("gauge name %q: want httptrack_ and [a-z0-9_]", name)
		}
	}
	if rep.Phase != phaseListening {
		t.Errorf("phase %q, want %q", rep.Phase, phaseListening)
	}
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "state.dir") {
		t.Errorf("warnings %q, want one about state.dir", rep.Warnings)
	}

	// The log stops acknowledging: the next request is read but not
	// durable, and its client waits.
	h.refuse.Store(true)
	done := make(chan answer, 1)
	go func() {
		done <- h.post("/v1/track", `{"userId":"u","event":"E","properties":{"p":"`+strings.Repeat("x", 600)+`"}}`, auth)
	}()
	waitFor(t, "a waiting request", func() bool {
		g := h.src.Report().Gauges
		return g["httptrack_waiting_requests"] == 1 && g["httptrack_unacked_requests"] == 1
	})
	// The worker stops reading: the next request stays pending and fills
	// more than half of max.pending.bytes.
	h.cancel()
	<-h.done
	done2 := make(chan answer, 1)
	go func() {
		done2 <- h.post("/v1/track", `{"userId":"u","event":"E","properties":{"p":"`+strings.Repeat("y", 600)+`"}}`, auth)
	}()
	waitFor(t, "a pending request", func() bool {
		g := h.src.Report().Gauges
		return g["httptrack_pending_requests"] == 1 && g["httptrack_pending_bytes"] > 600
	})
	if w := h.src.Report().Warnings; len(w) != 2 || !strings.Contains(w[1], "max.pending.bytes") {
		t.Errorf("warnings %q, want one about the backlog", w)
	}
	if err := h.src.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan answer{done, done2} {
		if a := <-ch; a.status != 503 {
			t.Errorf("waiting request: %d %s, want 503 on close", a.status, a.raw)
		}
	}
	if rep := h.src.Report(); rep.Phase != phaseStopping {
		t.Errorf("phase after Close %q, want %q", rep.Phase, phaseStopping)
	}
	h.client.CloseIdleConnections()
	h.cancel = nil
}

// TestReport_DedupFull warns when the dedup set is full.
func TestReport_DedupFull(t *testing.T) {
	h := start(t, map[string]string{"dedup.max.ids": "2", "state.dir": t.TempDir()}, nil)
	for _, id := range []string{"a", "b", "c"} {
		wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"`+id+`"}`, auth), 200)
	}
	rep := h.src.Report()
	if len(rep.Warnings) != 1 || !strings.Contains(rep.Warnings[0], "dedup.max.ids") {
		t.Errorf("warnings %q, want one about dedup.max.ids", rep.Warnings)
	}
	if rep.Gauges["httptrack_journal_bytes"] <= 8 {
		t.Errorf("journal bytes %v, want the entries counted", rep.Gauges["httptrack_journal_bytes"])
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

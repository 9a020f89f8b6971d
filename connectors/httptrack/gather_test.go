package httptrack

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// readAsync calls Read in a goroutine and delivers its result.
func readAsync(ctx context.Context, src *Source) <-chan []connect.Record {
	out := make(chan []connect.Record, 1)
	go func() {
		recs, _ := src.Read(ctx)
		out <- recs
	}()
	return out
}

// lastPosition returns the position of the last positioned record.
func lastPosition(t *testing.T, recs []connect.Record) connect.Position {
	t.Helper()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Position != nil {
			return recs[i].Position
		}
	}
	t.Fatalf("none of %d records has a position", len(recs))
	return nil
}

// waitPending waits until n requests wait in the source's queue.
func waitPending(t *testing.T, src *Source, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for src.Report().Gauges["httptrack_pending_requests"] != float64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("%v requests pending, want %d", src.Report().Gauges["httptrack_pending_requests"], n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestRead_GathersWhileInFlight checks that once the worker calls Durable,
// a Read that finds requests while earlier records are not durable yet
// waits for them and then returns every request that arrived meanwhile in
// one batch; that a Read with nothing in flight returns at once; and that
// maxGather bounds the wait.
func TestRead_GathersWhileInFlight(t *testing.T) {
	old := maxGather
	maxGather = time.Hour
	t.Cleanup(func() { maxGather = old })
	h := open(t, nil, nil)
	ctx := t.Context()
	msg := func(id string) string { return `{"userId":"u","event":"E","messageId":"` + id + `"}` }
	answers := make(chan answer, 8)
	post := func(id string) { go func() { answers <- h.post("/v1/track", msg(id), auth) }() }
	wantAnswers := func(n int) {
		t.Helper()
		for range n {
			select {
			case a := <-answers:
				wantStatus(t, a, 200)
			case <-time.After(10 * time.Second):
				t.Fatal("no answer within 10s")
			}
		}
	}

	// Before any Durable, and with nothing in flight: at once.
	post("a")
	recs, err := h.src.Read(ctx)
	if err != nil || len(recs) != 1 {
		t.Fatalf("first read: %d records, %v", len(recs), err)
	}
	if err := h.src.Durable(ctx, lastPosition(t, recs)); err != nil {
		t.Fatal(err)
	}
	wantAnswers(1)

	// Nothing in flight: at once, even though the worker calls Durable.
	post("b")
	var inFlight []connect.Record
	select {
	case inFlight = <-readAsync(ctx, h.src):
	case <-time.After(10 * time.Second):
		t.Fatal("an idle read did not return the request")
	}
	if len(inFlight) != 1 {
		t.Fatalf("read %d records, want 1", len(inFlight))
	}

	// b is in flight: c, d and e are gathered until it is durable.
	for _, id := range []string{"c", "d", "e"} {
		post(id)
	}
	waitPending(t, h.src, 3)
	got := readAsync(ctx, h.src)
	select {
	case recs := <-got:
		t.Fatalf("read returned %d records while b was in flight", len(recs))
	case <-time.After(50 * time.Millisecond):
	}
	if err := h.src.Durable(ctx, lastPosition(t, inFlight)); err != nil {
		t.Fatal(err)
	}
	wantAnswers(1) // b
	select {
	case recs = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the gathering read did not return once b was durable")
	}
	ids := strings.Split(messageIDs(t, recs), ",")
	slices.Sort(ids)
	if got := strings.Join(ids, ","); got != "c,d,e" {
		t.Fatalf("gathered %s, want c,d,e (in any order) in one read", got)
	}

	// c, d, e are in flight and never become durable: maxGather bounds
	// the wait of the next read.
	maxGather = 30 * time.Millisecond
	post("f")
	waitPending(t, h.src, 1)
	t0 := time.Now()
	select {
	case more := <-readAsync(ctx, h.src):
		if len(more) != 1 {
			t.Fatalf("read %d records, want 1", len(more))
		}
		if d := time.Since(t0); d < maxGather {
			t.Errorf("read returned after %s, before maxGather %s while c, d, e were in flight", d, maxGather)
		}
		if err := h.src.Durable(ctx, lastPosition(t, more)); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("maxGather did not end the wait")
	}
	wantAnswers(4) // c, d, e, f
}

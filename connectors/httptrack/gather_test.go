package httptrack

import (
	"context"
	"fmt"
	"slices"
	"strconv"
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
// a Read that finds requests while gatherDepth earlier reads are not
// durable yet waits until the oldest is and then returns every request
// that arrived meanwhile in one batch; that a Read with fewer reads in
// flight returns at once; and that maxGather bounds the wait.
func TestRead_GathersWhileInFlight(t *testing.T) {
	old := maxGather
	maxGather = time.Hour
	t.Cleanup(func() { maxGather = old })
	// b0 is answered while the gathering Read waits to take the queue:
	// it is woken by the next Read (not called here) or by wakeWaiters,
	// every ack.timeout/8.
	h := open(t, map[string]string{"ack.timeout": "2s"}, nil)
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

	// Fewer than gatherDepth reads in flight: at once, even though the
	// worker calls Durable.
	var inFlight [][]connect.Record // the reads not yet durable, oldest first
	for i := range gatherDepth {
		post(fmt.Sprintf("b%d", i))
		select {
		case recs := <-readAsync(ctx, h.src):
			if len(recs) != 1 {
				t.Fatalf("read %d records, want 1", len(recs))
			}
			inFlight = append(inFlight, recs)
		case <-time.After(10 * time.Second):
			t.Fatalf("a read with %d reads in flight did not return the request", i)
		}
	}

	// gatherDepth reads in flight: c, d and e are gathered until the
	// oldest of them is durable.
	for _, id := range []string{"c", "d", "e"} {
		post(id)
	}
	waitPending(t, h.src, 3)
	got := readAsync(ctx, h.src)
	select {
	case recs := <-got:
		t.Fatalf("read returned %d records while %d reads were in flight", len(recs), gatherDepth)
	case <-time.After(50 * time.Millisecond):
	}
	if err := h.src.Durable(ctx, lastPosition(t, inFlight[0])); err != nil {
		t.Fatal(err)
	}
	wantAnswers(1) // b0
	select {
	case recs = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the gathering read did not return once the oldest read was durable")
	}
	ids := strings.Split(messageIDs(t, recs), ",")
	slices.Sort(ids)
	if got := strings.Join(ids, ","); got != "c,d,e" {
		t.Fatalf("gathered %s, want c,d,e (in any order) in one read", got)
	}

	// gatherDepth reads are in flight again and do not become durable:
	// maxGather bounds the wait of the next read.
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
			t.Errorf("read returned after %s, before maxGather %s while %d reads were in flight", d, maxGather, gatherDepth)
		}
		if err := h.src.Durable(ctx, lastPosition(t, more)); err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("maxGather did not end the wait")
	}
	wantAnswers(gatherDepth - 1 + 4) // the other b's, c, d, e, f
}

// TestDurable_WokenByNextRead checks that a request made durable while a
// Read waits to take the queue is answered 200 once the worker calls Read
// again (after appending what that Read returned), and also when the
// worker does not: wakeWaiters wakes it within ack.timeout, never 503.
func TestDurable_WokenByNextRead(t *testing.T) {
	old := maxGather
	maxGather = time.Hour
	t.Cleanup(func() { maxGather = old })
	h := open(t, map[string]string{"ack.timeout": "1s"}, nil)
	ctx := t.Context()
	msg := func(id string) string { return `{"userId":"u","event":"E","messageId":"` + id + `"}` }
	answers := make(chan answer, 4)
	post := func(id string) { go func() { answers <- h.post("/v1/track", msg(id), auth) }() }
	wantAnswer := func(within time.Duration) {
		t.Helper()
		select {
		case a := <-answers:
			wantStatus(t, a, 200)
		case <-time.After(within):
			t.Fatalf("no answer within %s", within)
		}
	}
	// Durable once, so that Read gathers from now on.
	post("x")
	recs, err := h.src.Read(ctx)
	if err != nil || len(recs) != 1 {
		t.Fatalf("first read: %d records, %v", len(recs), err)
	}
	h.src.Durable(ctx, lastPosition(t, recs))
	wantAnswer(10 * time.Second)

	for _, nextRead := range []bool{true, false} {
		post("a" + strconv.FormatBool(nextRead))
		a := <-readAsync(ctx, h.src) // nothing in flight: at once
		post("b" + strconv.FormatBool(nextRead))
		waitPending(t, h.src, 1)
		got := readAsync(ctx, h.src) // gathers: a is in flight
		// Wait until that Read waits to take the queue.
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			h.src.mu.Lock()
			waiting := h.src.takingNext
			h.src.mu.Unlock()
			if waiting {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the second Read does not wait for the first one's records")
			}
		}
		if err := h.src.Durable(ctx, lastPosition(t, a)); err != nil {
			t.Fatal(err)
		}
		b := <-got
		if nextRead {
			rctx, cancel := context.WithCancel(ctx)
			next := readAsync(rctx, h.src)
			wantAnswer(10 * time.Second) // a
			h.src.Durable(ctx, lastPosition(t, b))
			wantAnswer(10 * time.Second) // b
			cancel()
			<-next
		} else {
			wantAnswer(time.Second) // a, woken by wakeWaiters before its ack.timeout
			h.src.Durable(ctx, lastPosition(t, b))
			wantAnswer(10 * time.Second) // b: no Read waits, so at once
		}
	}
}

// TestDurable_WakesOnlyItsWave checks that a Durable closes the wave of
// the requests it answers and not the open one that queued requests wait
// on, and that a request left in the queue by a Read that took part of it
// (read.batch.events) is answered once its own records are durable.
func TestDurable_WakesOnlyItsWave(t *testing.T) {
	h := open(t, map[string]string{"read.batch.events": "1"}, nil)
	ctx := t.Context()
	msg := func(id string) string { return `{"userId":"u","event":"E","messageId":"` + id + `"}` }
	answers := make(chan answer, 8)
	post := func(id string) { go func() { answers <- h.post("/v1/track", msg(id), auth) }() }
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	waveOf := func(seq uint64) <-chan struct{} {
		h.src.mu.Lock()
		defer h.src.mu.Unlock()
		return h.src.waveLocked(seq)
	}
	seqOf := func(recs []connect.Record) uint64 {
		t.Helper()
		seq, err := parsePosition(lastPosition(t, recs))
		if err != nil {
			t.Fatal(err)
		}
		return seq
	}

	post("a") // the first Read opens the source and takes it
	recsA, err := h.src.Read(ctx)
	if err != nil || len(recsA) != 1 {
		t.Fatalf("read a: %d records, %v", len(recsA), err)
	}
	seqA := seqOf(recsA)
	// b and c queue while a is on its way to the disk; one Read takes
	// one of them (read.batch.events 1).
	post("b")
	post("c")
	waitPending(t, h.src, 2)
	waveA, waveBC := waveOf(seqA), waveOf(seqA+1)
	if waveA == waveBC {
		t.Fatal("a, handed to a Read, shares its wave with the requests queued after it")
	}
	if err := h.src.Durable(ctx, lastPosition(t, recsA)); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		wantStatus(t, a, 200)
	case <-time.After(10 * time.Second):
		t.Fatal("a: no answer within 10s of its Durable")
	}
	if !closed(waveA) {
		t.Error("a's wave is still open after its Durable")
	}
	if closed(waveBC) {
		t.Error("the Durable of a woke the requests queued after it")
	}

	recsB, err := h.src.Read(ctx)
	if err != nil || len(recsB) != 1 {
		t.Fatalf("read b: %d records, %v", len(recsB), err)
	}
	recsC, err := h.src.Read(ctx)
	if err != nil || len(recsC) != 1 {
		t.Fatalf("read c: %d records, %v", len(recsC), err)
	}
	if err := h.src.Durable(ctx, lastPosition(t, recsB)); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		wantStatus(t, a, 200)
	case <-time.After(10 * time.Second):
		t.Fatal("b: no answer within 10s of its Durable")
	}
	select {
	case a := <-answers:
		t.Fatalf("c answered %d before its records were durable", a.status)
	case <-time.After(50 * time.Millisecond):
	}
	if err := h.src.Durable(ctx, lastPosition(t, recsC)); err != nil {
		t.Fatal(err)
	}
	select {
	case a := <-answers:
		wantStatus(t, a, 200)
	case <-time.After(10 * time.Second):
		t.Fatal("c: no answer within 10s of its Durable")
	}
	h.src.mu.Lock()
	waves := len(h.src.waves)
	h.src.mu.Unlock()
	if waves != 1 {
		t.Errorf("%d waves left with every request answered, want the open one", waves)
	}
}

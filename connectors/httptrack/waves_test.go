package httptrack

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestWaves_Stress drives the waves that waiting requests sleep on (see
// Source.waves) from every side at once: clients post single events and
// batches (dedup on: with messageIds repeated across requests, so that a
// duplicate waits on an older request's seq in another wave), a reader
// calls Read as the worker does (read.batch.events smaller than some
// requests, so Reads take part of the queue; gathering, since the worker
// calls Durable), and a separate goroutine makes the batches durable after
// random delays, with Durable, Ack or both, sometimes acking one batch
// late and sometimes stalling past ack.timeout (503 not_durable) while the
// queue fills (503 backpressure). It checks that every request is
// answered, 200 or 503 only, that every event answered 200 was made
// durable before the answer, that s.waves stays small, that it shrinks
// back to the open wave once everything is answered, and that Close
// answers the requests still waiting 503.
func TestWaves_Stress(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dedup bool
		state bool
		pos   connect.Position
	}{
		{name: "dedup", dedup: true},
		{name: "dedup-state-restarted", dedup: true, state: true, pos: position(1000)},
		{name: "nodedup-restarted", dedup: false, pos: position(500)},
	} {
		t.Run(tc.name, func(t *testing.T) { stressWaves(t, tc.dedup, tc.state, tc.pos) })
	}
}

func stressWaves(t *testing.T, dedup, state bool, pos connect.Position) {
	values := map[string]string{
		"read.batch.events": "4",
		"ack.timeout":       "150ms",
		"max.pending.bytes": "12KiB",
		"dedup.window":      "0s",
	}
	if dedup {
		values["dedup.window"] = "1h"
	}
	if state {
		values["state.dir"] = t.TempDir()
	}
	h := open(t, values, pos)
	src := h.src
	h.client.Timeout = 5 * time.Second // far past ack.timeout and the ticker: a request never answered

	var (
		durMu   sync.Mutex
		durable = map[string]bool{} // messageIds made durable, before the Durable or Ack that says so
	)
	idOf := func(r connect.Record) string {
		var v struct {
			MessageID string `json:"messageId"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Errorf("record value %q: %v", r.Value, err)
		}
		return v.MessageID
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	batches := make(chan []connect.Record, 3)
	var refuse atomic.Bool // the "log" stops: nothing more becomes durable
	var wg sync.WaitGroup
	wg.Go(func() { // the worker's reading goroutine
		defer close(batches)
		for {
			recs, err := src.Read(ctx)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			if len(recs) == 0 {
				continue
			}
			select {
			case batches <- recs:
			case <-ctx.Done():
				return
			}
		}
	})
	wg.Go(func() { // the log: appends, fsyncs, announces
		rng := rand.New(rand.NewPCG(1, 2))
		var lateAck connect.Position
		for {
			var recs []connect.Record
			if lateAck == nil {
				var ok bool
				if recs, ok = <-batches; !ok {
					return
				}
			} else {
				select {
				case r, ok := <-batches:
					if !ok {
						return
					}
					recs = r
				case <-time.After(2 * time.Millisecond): // idle: the ack comes now
					if err := src.Ack(ctx, lateAck); err != nil {
						t.Errorf("late ack: %v", err)
					}
					lateAck = nil
					continue
				}
			}
			if refuse.Load() {
				continue
			}
			switch n := rng.IntN(100); {
			case n < 2:
				time.Sleep(200 * time.Millisecond) // past ack.timeout
			case n < 30:
				time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
			}
			durMu.Lock()
			for _, r := range recs {
				durable[idOf(r)] = true
			}
			durMu.Unlock()
			p := lastPosition(t, recs)
			if lateAck != nil {
				if err := src.Ack(ctx, lateAck); err != nil {
					t.Errorf("late ack: %v", err)
				}
				lateAck = nil
			}
			var err error
			switch n := rng.IntN(100); {
			case n < 50:
				err = src.Durable(ctx, p)
				if !dedup { // answered on Ack only
					lateAck = p
				}
			case n < 70:
				err = src.Ack(ctx, p)
			case n < 85:
				if err = src.Durable(ctx, p); err == nil {
					err = src.Ack(ctx, p)
				}
			default: // durable now, acked with the next batch
				err = src.Durable(ctx, p)
				lateAck = p
			}
			if err != nil {
				t.Errorf("durable/ack %s: %v", p, err)
			}
		}
	})
	var maxWaves atomic.Int64
	stopSampling := make(chan struct{})
	var sampled sync.WaitGroup
	sampled.Go(func() {
		for {
			select {
			case <-stopSampling:
				return
			case <-time.After(200 * time.Microsecond):
			}
			src.mu.Lock()
			n := int64(len(src.waves))
			src.mu.Unlock()
			if n > maxWaves.Load() {
				maxWaves.Store(n)
			}
		}
	})

	// ids: with dedup, messageIds are drawn from a shared pool, so that
	// many repeat one sent (and perhaps still waiting) in another request;
	// without, every messageId is new (a repeat would be a second record).
	var idSeq atomic.Int64
	newID := func(rng *rand.Rand) string {
		if dedup && rng.IntN(3) == 0 {
			return fmt.Sprintf("m-%d", rng.Int64N(max(idSeq.Load(), 1)))
		}
		return fmt.Sprintf("m-%d", idSeq.Add(1))
	}
	var statuses [600]atomic.Int64
	post := func(rng *rand.Rand) {
		var ids []string
		var path, body string
		if rng.IntN(2) == 0 {
			ids = []string{newID(rng)}
			path, body = "/v1/track", `{"userId":"u","event":"E","messageId":"`+ids[0]+`"}`
		} else {
			var b strings.Builder
			b.WriteString(`{"batch":[`)
			for i := range 1 + rng.IntN(7) {
				ids = append(ids, newID(rng))
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(`{"type":"track","userId":"u","event":"E","messageId":"` + ids[i] + `"}`)
			}
			b.WriteString(`]}`)
			path, body = "/v1/batch", b.String()
		}
		req, err := http.NewRequest(http.MethodPost, h.url+path, strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return
		}
		req.SetBasicAuth(testKey, "")
		resp, err := h.client.Do(req)
		if err != nil {
			t.Errorf("%s: no answer: %v", path, err)
			return
		}
		resp.Body.Close()
		statuses[min(resp.StatusCode, len(statuses)-1)].Add(1)
		switch resp.StatusCode {
		case http.StatusOK:
			durMu.Lock()
			defer durMu.Unlock()
			for _, id := range ids {
				if !durable[id] {
					t.Errorf("%s answered 200 before messageId %s was durable (ids %v)", path, id, ids)
				}
			}
		case http.StatusServiceUnavailable:
		default:
			t.Errorf("%s answered %d", path, resp.StatusCode)
		}
	}

	const clients, perClient = 16, 40
	var posting sync.WaitGroup
	for g := range clients {
		posting.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range perClient {
				post(rng)
				if rng.IntN(4) == 0 {
					time.Sleep(time.Duration(rng.IntN(500)) * time.Microsecond)
				}
			}
		})
	}
	posting.Wait()
	close(stopSampling)
	sampled.Wait()
	if n := maxWaves.Load(); n > 16 {
		t.Errorf("up to %d waves with at most a handful of Reads in flight", n)
	}
	t.Logf("statuses: 200 %d, 503 %d; waves at most %d", statuses[200].Load(), statuses[503].Load(), maxWaves.Load())
	if statuses[200].Load() == 0 {
		t.Error("no request answered 200")
	}

	// Everything answered and durable: the waves shrink back to the open
	// one (at the latest once the reader's next Read wakes the answered).
	deadline := time.Now().Add(5 * time.Second)
	for {
		src.mu.Lock()
		n, queued := len(src.waves), len(src.queue)
		src.mu.Unlock()
		if n == 1 && queued == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waves and %d queued requests left with every request answered", n, queued)
		}
		time.Sleep(time.Millisecond)
	}

	// The log stops: requests wait, and Close answers them 503.
	refuse.Store(true)
	closed := make(chan int, clients)
	for g := range clients {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			req, _ := http.NewRequest(http.MethodPost, h.url+"/v1/track", strings.NewReader(`{"userId":"u","event":"E","messageId":"c-`+newID(rng)+`"}`))
			req.SetBasicAuth(testKey, "")
			resp, err := h.client.Do(req)
			if err != nil {
				closed <- 0
				return
			}
			resp.Body.Close()
			closed <- resp.StatusCode
		}()
	}
	for wait := time.Now().Add(5 * time.Second); src.waiting.Load() < clients/2; {
		if time.Now().After(wait) {
			t.Fatalf("%d requests waiting, want at least %d", src.waiting.Load(), clients/2)
		}
		time.Sleep(100 * time.Microsecond)
	}
	cancel()
	wg.Wait()
	waiting := src.waiting.Load()
	if err := src.Close(context.Background()); err != nil {
		t.Errorf("close: %v", err)
	}
	answered := int64(0)
	for range clients {
		switch code := <-closed; code {
		case 0: // not yet in its handler at Close: its connection was closed
		case http.StatusServiceUnavailable:
			answered++
		default:
			t.Errorf("a request waiting at Close answered %d, want 503", code)
		}
	}
	if answered < waiting {
		t.Errorf("%d requests answered 503 of the %d waiting at Close", answered, waiting)
	}
}

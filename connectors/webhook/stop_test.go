package webhook

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// refusedURL returns the URL of a local port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/x"
}

// TestWrite_StopCutsRetriesShort: a stop request ends a Write whose
// receiver refuses connections at once, with an error the worker reads as
// "stopping", without waiting for max.attempts.
func TestWrite_StopCutsRetriesShort(t *testing.T) {
	s := open(t, map[string]string{"url": refusedURL(t), "backoff.initial": "200ms", "backoff.max": "30s"})
	stop, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	ctx := connect.WithStop(t.Context(), stop)
	time.AfterFunc(300*time.Millisecond, requestStop)
	start := time.Now()
	err := s.Write(ctx, events(keys(20), 40))
	if !connect.IsStopping(err) {
		t.Fatalf("Write = %v, want an error wrapping connect.ErrStopping", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Write returned %s after the stop request", d-300*time.Millisecond)
	}
}

// TestWrite_StopLetsAHealthyWriteFinish: a stop request does not cut short
// requests to a receiver that answers, however slowly.
func TestWrite_StopLetsAHealthyWriteFinish(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		time.Sleep(100 * time.Millisecond)
	})
	s := open(t, map[string]string{"url": rc.srv.URL, "concurrency": "2"})
	stop, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	ctx := connect.WithStop(t.Context(), stop)
	time.AfterFunc(50*time.Millisecond, requestStop)
	recs := events(keys(4), 8)
	if err := s.Write(ctx, recs); err != nil {
		t.Fatalf("Write = %v, want nil: a stop lets a healthy delivery finish", err)
	}
	if got := len(rc.requests()); got != len(recs) {
		t.Errorf("%d requests answered, want %d", got, len(recs))
	}
}

// stopHarness runs the webhook sink in a worker over a log of n records.
type stopHarness struct {
	t      *testing.T
	l      *tlog.Log
	logger *slog.Logger
	n      int
}

func newStopHarness(t *testing.T, n int) *stopHarness {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if err := l.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	var recs []tlog.Record
	for i := range n {
		recs = append(recs, tlog.Record{Key: []byte{byte('a' + i%3)}, Value: []byte(`{"n":1}`)})
	}
	if _, err := l.Append(t.Context(), "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	return &stopHarness{t: t, l: l, logger: logger, n: n}
}

func (h *stopHarness) worker() *engine.Worker {
	reg := connect.NewRegistry()
	reg.MustRegister(Connector())
	w, err := engine.NewWorker(h.t.Context(), engine.Options{Backend: engine.NewEmbedded(h.l, h.logger), Connectors: reg, Logger: h.logger,
		RestartBackoffInitial: 10 * time.Millisecond, RestartBackoffMax: 50 * time.Millisecond})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	return w
}

// spec is the sink with the webhook's default retry settings (10 attempts,
// backoff from 200 ms up to 30 s): without a stop that cuts them short, a
// refused batch takes close to a minute.
func (h *stopHarness) spec(url string) engine.ConnectorSpec {
	return engine.ConnectorSpec{Pipeline: "p", Name: "wh", Kind: connect.KindSink, Connector: Name, Topics: []string{"in"},
		Config: spec().WithDefaults(map[string]string{"url": url})}
}

// committed returns the sink group's committed offset of in/0 (0: none).
func (h *stopHarness) committed(w *engine.Worker) int64 {
	h.t.Helper()
	entries, err := w.Offsets(h.t.Context(), "wh")
	if err != nil {
		h.t.Fatal(err)
	}
	for _, e := range entries {
		if off, ok := e.Offset.(map[string]any)["kafka_offset"].(int64); ok {
			return off
		}
	}
	return 0
}

// waitRetrying waits until the sink has retried a request.
func (h *stopHarness) waitRetrying(w *engine.Worker) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := w.Status("wh")
		if err != nil {
			h.t.Fatal(err)
		}
		if len(st.Tasks) == 1 && st.Tasks[0].Report != nil && st.Tasks[0].Report.Gauges["webhook_retries"] >= 1 {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the sink did not retry within 10s: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// offsetsReceiver answers 200 and keeps the offsets it was sent.
type offsetsReceiver struct {
	*receiver
	mu   sync.Mutex
	seen map[string]bool
}

func newOffsetsReceiver(t *testing.T) *offsetsReceiver {
	or := &offsetsReceiver{seen: map[string]bool{}}
	or.receiver = newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		or.mu.Lock()
		or.seen[r.Header.Get("Idempotency-Key")] = true
		or.mu.Unlock()
	})
	return or
}

// waitAll waits until every record of h's log was delivered to or.
func (h *stopHarness) waitAll(or *offsetsReceiver) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		or.mu.Lock()
		var missing []string
		for i := range h.n {
			if id := "msg_in_0_" + strconv.Itoa(i); !or.seen[id] {
				missing = append(missing, id)
			}
		}
		or.mu.Unlock()
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			h.t.Fatalf("not delivered within 10s: %v", missing)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWorker_StopDeleteShutdown_DoNotWaitForAFailingReceiver is the
// reviewer's case: a webhook sink whose receiver refuses connections.
// Stopping it, deleting it or shutting the worker down returns at once
// (not after max.attempts), commits nothing of the undelivered records,
// and does not fail the task; after a resume (or a new worker) with a
// receiver that answers, every record is delivered.
func TestWorker_StopDeleteShutdown_DoNotWaitForAFailingReceiver(t *testing.T) {
	const n = 12
	for _, how := range []string{"stop", "delete", "shutdown"} {
		t.Run(how, func(t *testing.T) {
			h := newStopHarness(t, n)
			w := h.worker()
			ctx := t.Context()
			if err := w.Start(ctx, h.spec(refusedURL(t)), ""); err != nil {
				t.Fatal(err)
			}
			h.waitRetrying(w)
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			start := time.Now()
			var err error
			switch how {
			case "stop":
				err = w.Stop(sctx, "wh")
			case "delete":
				err = w.Delete(sctx, "wh")
			case "shutdown":
				err = w.Shutdown(sctx) // the drain of SIGTERM
			}
			if err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("%s took %s while the receiver refused", how, d)
			}
			if how == "stop" {
				if got := h.committed(w); got != 0 {
					t.Errorf("committed offset %d after a stop, want none: nothing was delivered", got)
				}
				st, _ := w.Status("wh")
				if st.State != engine.StateStopped {
					t.Errorf("state %s after a stop, want STOPPED", st.State)
				}
			}
			or := newOffsetsReceiver(t)
			switch how {
			case "stop":
				if _, err := w.Replace(ctx, h.spec(or.srv.URL)); err != nil {
					t.Fatal(err)
				}
				if err := w.Resume("wh"); err != nil {
					t.Fatal(err)
				}
			case "delete":
				if err := w.Start(ctx, h.spec(or.srv.URL), ""); err != nil {
					t.Fatal(err)
				}
			case "shutdown":
				w = h.worker()
				if err := w.Start(ctx, h.spec(or.srv.URL), ""); err != nil {
					t.Fatal(err)
				}
			}
			h.waitAll(or)
			deadline := time.Now().Add(10 * time.Second)
			for h.committed(w) != n {
				if time.Now().After(deadline) {
					t.Fatalf("committed %d, want %d", h.committed(w), n)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}

// TestWorker_ShutdownLetsAHealthyWriteFinish: the drain of a shutdown lets
// a Write to a slow but healthy receiver finish and commits it.
func TestWorker_ShutdownLetsAHealthyWriteFinish(t *testing.T) {
	const n = 6
	h := newStopHarness(t, n)
	var mu sync.Mutex
	started := make(chan struct{})
	once := sync.Once{}
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		once.Do(func() { close(started) })
		mu.Lock() // one at a time: the batch takes n × 100 ms
		defer mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	})
	w := h.worker()
	if err := w.Start(t.Context(), h.spec(rc.srv.URL), ""); err != nil {
		t.Fatal(err)
	}
	<-started
	sctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := w.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
	if got := len(rc.requests()); got != n {
		t.Errorf("%d records delivered before the shutdown returned, want %d", got, n)
	}
	if got := h.committed(w); got != n {
		t.Errorf("committed %d, want %d: the healthy batch finished and is committed", got, n)
	}
}

// TestWrite_StopCutsARetryAfterHoldShort: a 429 whose Retry-After reaches
// past max.elapsed fails its record at once, but still holds the sink's
// other requests back for as long as the receiver asked; a stop request
// ends that wait at once, as it ends any wait the receiver asked for.
func TestWrite_StopCutsARetryAfterHoldShort(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(http.StatusTooManyRequests)
	})
	s := open(t, map[string]string{"url": rc.srv.URL, "concurrency": "1", "max.elapsed": "1m"})
	stop, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	ctx, cancel := context.WithTimeout(connect.WithStop(t.Context(), stop), 10*time.Second)
	defer cancel()
	time.AfterFunc(300*time.Millisecond, requestStop)
	start := time.Now()
	err := s.Write(ctx, events(keys(2), 1))
	if !connect.IsStopping(err) {
		t.Fatalf("Write = %v, want an error wrapping connect.ErrStopping", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Write returned %s after the stop request", d-300*time.Millisecond)
	}
}

// TestWrite_StopCutsARateLimitWaitShort: a batch that rate.limit spreads
// over seconds ends at a stop request, as a Retry-After hold does, instead
// of running on to the drain's deadline; nothing of it is committed (the
// error wraps connect.ErrStopping), so it is delivered again later.
func TestWrite_StopCutsARateLimitWaitShort(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, map[string]string{"url": rc.srv.URL, "rate.limit": "2", "concurrency": "4"})
	stop, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	ctx, cancel := context.WithTimeout(connect.WithStop(t.Context(), stop), 20*time.Second)
	defer cancel()
	time.AfterFunc(300*time.Millisecond, requestStop)
	start := time.Now()
	err := s.Write(ctx, events(keys(20), 1)) // 10 s at 2 requests/s
	if !connect.IsStopping(err) {
		t.Fatalf("Write = %v after %s, want an error wrapping connect.ErrStopping", err, time.Since(start))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Write returned %s after the stop request", d-300*time.Millisecond)
	}
	if n := len(rc.requests()); n >= 20 {
		t.Errorf("%d requests sent, want the stop to cut the batch short", n)
	}
}

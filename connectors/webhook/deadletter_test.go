package webhook

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// TestDeadLetter_AttemptsHeaderCountsTheTries runs the sink in a worker
// that dead-letters, and checks that the __connect.errors.attempts header
// of a dead-lettered record says how many requests the sink made for it,
// as its message does: for a retried 5xx (max.attempts) and for a 4xx that
// is not retried.
func TestDeadLetter_AttemptsHeaderCountsTheTries(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status int
		want   string
	}{
		{name: "max.attempts", status: http.StatusInternalServerError, want: "3"},
		{name: "permanent", status: http.StatusBadRequest, want: "1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var requests atomic.Int32
			rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				requests.Add(1)
				w.WriteHeader(tt.status)
				fmt.Fprint(w, "no")
			})
			logger := slog.New(slog.NewTextHandler(io.Discard, nil))
			l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 1})
			if err != nil {
				t.Fatal(err)
			}
			reg := connect.NewRegistry()
			reg.MustRegister(Connector())
			w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger})
			if err != nil {
				l.Close()
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				w.Shutdown(ctx)
				l.Close()
			})
			ctx := t.Context()
			if err := l.CreateTopic("in", 1, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Append(ctx, "in", 0, []tlog.Record{{Key: []byte("a"), Value: []byte(`{"n":1}`)}}); err != nil {
				t.Fatal(err)
			}
			spec := engine.ConnectorSpec{Pipeline: "p", Name: "hook", Kind: connect.KindSink, Connector: Name, Topics: []string{"in"},
				Config: spec().WithDefaults(fast(map[string]string{"url": rc.srv.URL, "max.attempts": "3"})),
				Errors: engine.ErrorPolicy{Tolerance: "all", DeadLetterTopic: "dlq", BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond}}
			if err := w.Start(ctx, spec, ""); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if _, end, err := l.Offsets("dlq", 0); err == nil && end >= 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no dead letter within 10s")
				}
				time.Sleep(5 * time.Millisecond)
			}
			res, err := l.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hdr := map[string]string{}
			for _, h := range res.Records[0].Headers {
				hdr[h.Key] = string(h.Value)
			}
			msg := hdr["__connect.errors.exception.message"]
			if got := hdr["__connect.errors.attempts"]; got != tt.want {
				t.Errorf("__connect.errors.attempts = %q, want %s (message %q)", got, tt.want, msg)
			}
			if got := fmt.Sprint(requests.Load()); got != tt.want {
				t.Errorf("%s requests, want %s", got, tt.want)
			}
			if !strings.Contains(msg, fmt.Sprint(tt.status)) {
				t.Errorf("message %q does not name the status %d", msg, tt.status)
			}
		})
	}
}

// TestWorker_RejectedRecordWithoutTolerance_StaysFailed: with the default
// errors.tolerance none, a record the receiver rejects with a 4xx fails the
// task, which stays FAILED with the receiver's answer as its trace, as
// Kafka Connect leaves it, instead of restarting and sending the same
// rejected request again after every backoff.
func TestWorker_RejectedRecordWithoutTolerance_StaysFailed(t *testing.T) {
	var mu sync.Mutex
	tries := 0
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		tries++
		mu.Unlock()
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"message":"email is not valid"}`)
	})
	h := newStopHarness(t, 1)
	w := h.worker()
	if err := w.Start(t.Context(), h.spec(rc.srv.URL), ""); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := w.Status("wh")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateFailed {
			if !strings.Contains(st.Tasks[0].Trace, "email is not valid") {
				t.Errorf("trace %q does not hold the receiver's answer", st.Tasks[0].Trace)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not fail within 10s: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The harness restarts failed tasks after 10 to 50 ms: a task that
	// restarts would have sent the request again many times by now.
	time.Sleep(500 * time.Millisecond)
	st, _ := w.Status("wh")
	mu.Lock()
	n := tries
	mu.Unlock()
	if n != 1 || st.Tasks[0].State != engine.StateFailed {
		t.Errorf("the receiver was sent the rejected record %d times, and the task is %s; want once, and FAILED", n, st.Tasks[0].State)
	}
	if got := h.committed(w); got != 0 {
		t.Errorf("committed offset %d, want none: the record was not delivered", got)
	}
}

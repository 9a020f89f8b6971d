package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// retryingSink tries each record itself, as the webhook sink does: it
// fails the first record with the number of tries it made, after
// busy calls that fail as a whole with a retryable error.
type retryingSink struct {
	busy  *atomic.Int32
	tries int
}

func (s *retryingSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *retryingSink) Write(ctx context.Context, recs []connect.Record) error {
	if s.busy.Add(-1) >= 0 {
		return connect.Retryable(errors.New("receiver busy"))
	}
	err := fmt.Errorf("gave up after %d attempts (max.attempts): 503 Service Unavailable", s.tries)
	return connect.BadRecordAt(0, connect.WithAttempts(s.tries, err))
}
func (s *retryingSink) Close(ctx context.Context) error { return nil }

func TestWorker_DeadLetterAttemptsCountTheSinksTries(t *testing.T) {
	for _, tt := range []struct {
		busy, tries int
		want        string
	}{
		{busy: 0, tries: 2, want: "2"}, // one Write that tried twice
		{busy: 1, tries: 3, want: "4"}, // one retried Write, then one that tried three times
	} {
		t.Run(fmt.Sprintf("busy%d_tries%d", tt.busy, tt.tries), func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := t.Context()
			busy := new(atomic.Int32)
			busy.Store(int32(tt.busy))
			h.worker.Registry().MustRegister(connect.Connector{Name: "hook", Kind: connect.KindSink, Version: "test",
				NewSink: func() connect.Sink { return &retryingSink{busy: busy, tries: tt.tries} }})
			if err := h.log.CreateTopic("in", 1, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := h.log.Append(ctx, "in", 0, []tlog.Record{{Value: []byte("1")}}); err != nil {
				t.Fatal(err)
			}
			spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "hook", Topics: []string{"in"},
				Errors: ErrorPolicy{Tolerance: "all", Retries: 5, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond, DeadLetterTopic: "dlq"}}
			if err := h.worker.Start(ctx, spec, ""); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "a dead letter", func() bool {
				_, end, err := h.log.Offsets("dlq", 0)
				return err == nil && end >= 1
			})
			res, err := h.log.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			hdr := map[string]string{}
			for _, hh := range res.Records[0].Headers {
				hdr[hh.Key] = string(hh.Value)
			}
			if got := hdr["__connect.errors.attempts"]; got != tt.want {
				t.Fatalf("__connect.errors.attempts = %s, want %s (message %q)", got, tt.want, hdr["__connect.errors.exception.message"])
			}
			if want := "gave up after " + strconv.Itoa(tt.tries) + " attempts"; hdr["__connect.errors.exception.message"][:len(want)] != want {
				t.Fatalf("message = %q", hdr["__connect.errors.exception.message"])
			}
			// The dead-lettered record was not written by the sink. The
			// batch is counted before its offset is committed.
			waitFor(t, "the batch's commit", func() bool {
				off, ok := h.log.Groups().CommittedOffset("dst", "in", 0)
				return ok && off == 1
			})
			if n := metricValue(t, h.worker, "tributary_connector_deadlettered_records_total", "dst", ""); n != 1 {
				t.Errorf("deadlettered_records_total = %v, want 1", n)
			}
			if n := metricValue(t, h.worker, "tributary_connector_records_written_total", "dst", ""); n != 0 {
				t.Errorf("records_written_total = %v after the only record was dead-lettered, want 0", n)
			}
		})
	}
}

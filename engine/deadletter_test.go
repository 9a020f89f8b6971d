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

// routeTransform is a sink-side transform that routes every record to
// another topic and keys it by that topic, as a RegexRouter in front of a
// JDBC sink does (topic → table name). It drops a record whose value is
// "skip" (a filter) and makes copies records of every other one.
type routeTransform struct {
	to     string
	copies int
}

func (t routeTransform) Apply(r connect.Record) ([]connect.Record, error) {
	if string(r.Value) == `"skip"` {
		return nil, nil
	}
	r.Topic = t.to
	r.Key = []byte(t.to)
	r.Value = append([]byte(nil), r.Value...)
	out := make([]connect.Record, t.copies)
	for i := range out {
		out[i] = r.Clone()
	}
	return out, nil
}

// runRouteToDeadLetters starts a sink on topic "cdc.public.orders" behind
// tr that dead-letters what it refuses (memSink refuses "poison"), appends
// vals, and returns the first want dead letters with their headers.
func runRouteToDeadLetters(t *testing.T, tr routeTransform, vals []string, want int) ([]tlog.Record, []map[string]string) {
	t.Helper()
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	h.worker.opts.Transforms = func(typ string, cfg map[string]string) (Transformer, error) { return tr, nil }
	if err := h.log.CreateTopic("cdc.public.orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	recs := make([]tlog.Record, len(vals))
	for i, v := range vals {
		// A source's header must reach the dead letter (a replay of
		// it needs the unavailable columns as much as the first write).
		recs[i] = tlog.Record{Value: []byte(v), Headers: []tlog.Header{{Key: connect.UnavailableColumnsHeader, Value: []byte(`["vec"]`)}}}
	}
	if _, err := h.log.Append(ctx, "cdc.public.orders", 0, recs); err != nil {
		t.Fatal(err)
	}
	spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"cdc.public.orders"},
		Transforms: []TransformSpec{{Type: "route", Config: map[string]string{}}},
		Errors:     ErrorPolicy{Tolerance: "all", DeadLetterTopic: "dlq"}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, fmt.Sprintf("%d dead letters", want), func() bool {
		_, end, err := h.log.Offsets("dlq", 0)
		return err == nil && end >= int64(want)
	})
	res, err := h.log.Read(ctx, "dlq", 0, 0, tlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) < want {
		t.Fatalf("read %d dead letters, want %d", len(res.Records), want)
	}
	var hdrs []map[string]string
	for _, r := range res.Records[:want] {
		hdr := map[string]string{}
		for _, hh := range r.Headers {
			hdr[hh.Key] = string(hh.Value)
		}
		hdrs = append(hdrs, hdr)
	}
	return res.Records[:want], hdrs
}

// A record the sink refuses (TASK_PUT) after a sink transform changed its
// topic and key is dead-lettered as it was read: its headers name the
// topic, partition and offset it was read from, and its key and value are
// the ones read, as Kafka Connect's DeadLetterQueueReporter writes the
// original consumer record and as docs/pipelines.md promises ("headers
// naming the original topic, partition, offset").
func TestWorker_DeadLetterAfterSinkTransformIsTheRecordAsRead(t *testing.T) {
	recs, hdrs := runRouteToDeadLetters(t, routeTransform{to: "orders_table", copies: 1}, []string{`"ok"`, `"poison"`}, 1)
	hdr := hdrs[0]
	if got := hdr["__connect.errors.topic"]; got != "cdc.public.orders" {
		t.Errorf("__connect.errors.topic = %q, want the topic the record was read from, cdc.public.orders", got)
	}
	if got := hdr["__connect.errors.offset"]; got != "1" {
		t.Errorf("__connect.errors.offset = %q, want 1", got)
	}
	if got := hdr["__connect.errors.stage"]; got != "TASK_PUT" {
		t.Errorf("__connect.errors.stage = %q, want TASK_PUT", got)
	}
	if got := hdr[connect.UnavailableColumnsHeader]; got != `["vec"]` {
		t.Errorf("%s = %q, want the header as read, [\"vec\"]", connect.UnavailableColumnsHeader, got)
	}
	if recs[0].Key != nil || string(recs[0].Value) != `"poison"` {
		t.Errorf("dead letter key %q value %q, want the record as read: no key, value \"poison\"", recs[0].Key, recs[0].Value)
	}
}

// When a sink transform drops some records and makes several of others,
// each record the sink refuses is dead-lettered as the polled record it
// came from.
func TestWorker_DeadLetterAfterSinkTransformFanOutNamesItsSource(t *testing.T) {
	_, hdrs := runRouteToDeadLetters(t, routeTransform{to: "orders_table", copies: 2},
		[]string{`"skip"`, `"ok"`, `"skip"`, `"poison"`, `"ok"`, `"poison"`}, 4)
	want := []string{"3", "3", "5", "5"}
	for i, hdr := range hdrs {
		if hdr["__connect.errors.topic"] != "cdc.public.orders" || hdr["__connect.errors.offset"] != want[i] {
			t.Errorf("dead letter %d names %s@%s, want cdc.public.orders@%s", i, hdr["__connect.errors.topic"], hdr["__connect.errors.offset"], want[i])
		}
	}
}

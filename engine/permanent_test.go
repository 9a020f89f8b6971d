package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// setupSource fails Open while broken is set, with err; it counts opens.
type setupSource struct {
	opens  *atomic.Int32
	broken *atomic.Bool
	err    error
}

func (s *setupSource) Open(ctx context.Context, cfg connect.Config) error {
	s.opens.Add(1)
	if s.broken.Load() {
		return s.err
	}
	return nil
}

func (s *setupSource) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(20 * time.Millisecond):
		return nil, nil
	}
}
func (s *setupSource) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (s *setupSource) Close(ctx context.Context) error                     { return nil }

func registerSetupSource(h *harness, name string, err error) (opens *atomic.Int32, broken *atomic.Bool) {
	opens, broken = new(atomic.Int32), new(atomic.Bool)
	broken.Store(true)
	h.worker.Registry().MustRegister(connect.Connector{Name: name, Kind: connect.KindSource, Version: "test",
		NewSource: func() connect.Source { return &setupSource{opens: opens, broken: broken, err: err} }})
	return opens, broken
}

func taskState(t *testing.T, w *Worker, name string) TaskStatus {
	t.Helper()
	st, err := w.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 {
		return TaskStatus{}
	}
	return st.Tasks[0]
}

func TestWorker_PermanentOpenErrorIsNotRestarted(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	// Marked permanent, even under a Retryable marker: retrying cannot cure it.
	cause := connect.Retryable(connect.Permanent(errors.New(`wal_level is "replica", but logical replication needs "logical"`)))
	opens, broken := registerSetupSource(h, "setup", cause)
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "setup", Topic: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "FAILED", func() bool { return taskState(t, h.worker, "src").State == StateFailed })
	// The restart backoff is 10-50 ms: a restart loop would open again
	// several times in this wait.
	time.Sleep(300 * time.Millisecond)
	ts := taskState(t, h.worker, "src")
	if ts.State != StateFailed || !strings.Contains(ts.Trace, "wal_level") {
		t.Fatalf("task = %+v, want FAILED with the error as trace", ts)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("opened %d times, want 1 (no restart after a permanent error)", n)
	}
	// /metrics as the REST status: the connector RUNNING, its task FAILED.
	for _, c := range []struct {
		name, status string
		want         float64
	}{
		{"kafka_connect_connector_status", "RUNNING", 1},
		{"kafka_connect_connector_status", "FAILED", 0},
		{"kafka_connect_connector_task_status", "FAILED", 1},
		{"kafka_connect_connector_task_status", "RUNNING", 0},
	} {
		if got := metricValue(t, h.worker, c.name, "src", c.status); got != c.want {
			t.Errorf("%s{status=%q} = %v, want %v", c.name, c.status, got, c.want)
		}
	}

	// A pause leaves it FAILED; the resume runs it again.
	if err := h.worker.Pause("src"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := opens.Load(); n != 1 {
		t.Fatalf("opened %d times after a pause, want 1", n)
	}
	if err := h.worker.Resume("src"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a second open after the resume", func() bool { return opens.Load() == 2 })
	waitFor(t, "FAILED again", func() bool { return taskState(t, h.worker, "src").State == StateFailed })

	// The user fixes the server and restarts the connector.
	broken.Store(false)
	if err := h.worker.Restart(ctx, "src", true); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "RUNNING after the restart", func() bool { return taskState(t, h.worker, "src").State == StateRunning })
	if n := opens.Load(); n != 3 {
		t.Fatalf("opened %d times, want 3", n)
	}
}

func TestWorker_OtherOpenErrorIsRestarted(t *testing.T) {
	h := newHarness(t, t.TempDir())
	opens, _ := registerSetupSource(h, "flaky", errors.New("connection refused"))
	if err := h.worker.Start(t.Context(), ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "flaky", Topic: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three opens", func() bool { return opens.Load() >= 3 })
}

// permanentSink fails every Write with a permanent error marked Retryable
// too; it counts writes.
type permanentSink struct{ writes *atomic.Int32 }

func (s *permanentSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *permanentSink) Write(ctx context.Context, recs []connect.Record) error {
	s.writes.Add(1)
	return connect.Retryable(connect.Permanent(errors.New(`database "shop" does not exist`)))
}
func (s *permanentSink) Close(ctx context.Context) error { return nil }

func TestWorker_PermanentWriteErrorIsNotRetried(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	writes := new(atomic.Int32)
	h.worker.Registry().MustRegister(connect.Connector{Name: "perm", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &permanentSink{writes: writes} }})
	if err := h.log.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.log.Append(ctx, "in", 0, []tlog.Record{{Value: []byte("1")}}); err != nil {
		t.Fatal(err)
	}
	spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "perm", Topics: []string{"in"},
		Errors: ErrorPolicy{Retries: -1, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "FAILED", func() bool { return taskState(t, h.worker, "dst").State == StateFailed })
	time.Sleep(300 * time.Millisecond)
	if ts := taskState(t, h.worker, "dst"); ts.State != StateFailed || !strings.Contains(ts.Trace, "does not exist") {
		t.Fatalf("task = %+v, want FAILED with the error as trace", ts)
	}
	if n := writes.Load(); n != 1 {
		t.Fatalf("wrote %d times, want 1 (neither retried nor restarted)", n)
	}
}

// metricValue reads a connector's counter or gauge from the worker's
// registry, the series with that status label when status is set; -1 when
// absent.
func metricValue(t *testing.T, w *Worker, name, connector, status string) float64 {
	t.Helper()
	mfs, err := w.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["connector"] != connector || status != "" && labels["status"] != status {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// keylessSource reads one record without a key, then nothing.
type keylessSource struct{ opens *atomic.Int32 }

func (s *keylessSource) Open(ctx context.Context, cfg connect.Config) error {
	s.opens.Add(1)
	return nil
}
func (s *keylessSource) Read(ctx context.Context) ([]connect.Record, error) {
	return []connect.Record{{Value: []byte(`{"op":"t"}`), Position: connect.Position(`{"n":1}`)}}, nil
}
func (s *keylessSource) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (s *keylessSource) Close(ctx context.Context) error                     { return nil }

// TestWorker_CompactedTopicRefusalIsPermanent: a record without a key for
// a compacted topic (a CDC truncate event) fails the task for good, with
// the fix in its trace, instead of restarting on the same record forever.
func TestWorker_CompactedTopicRefusalIsPermanent(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	if err := h.log.CreateTopic("cdc", 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	opens := new(atomic.Int32)
	h.worker.Registry().MustRegister(connect.Connector{Name: "keyless", Kind: connect.KindSource, Version: "test",
		NewSource: func() connect.Source { return &keylessSource{opens: opens} }})
	if err := h.worker.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "keyless", Topic: "cdc"}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "FAILED", func() bool { return taskState(t, h.worker, "src").State == StateFailed })
	time.Sleep(200 * time.Millisecond) // restarts, were there any, come 10-50 ms apart
	ts := taskState(t, h.worker, "src")
	if ts.State != StateFailed || !strings.Contains(ts.Trace, "cleanup.policy=delete") {
		t.Fatalf("task = %+v, want FAILED with the fix in its trace", ts)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("opened %d times, want 1 (no restart on a refusal retrying cannot cure)", n)
	}
}

// badSink reports its first record bad, marked Permanent when permanent
// is set; it counts writes.
type badSink struct {
	writes    *atomic.Int32
	permanent bool
}

func (s *badSink) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (s *badSink) Write(ctx context.Context, recs []connect.Record) error {
	s.writes.Add(1)
	err := errors.New(`column shop.t.ts (timestamptz, required): "infinity" does not fit`)
	if s.permanent {
		err = connect.Permanent(err)
	}
	return connect.BadRecordAt(0, err)
}
func (s *badSink) Close(ctx context.Context) error { return nil }

// TestWorker_PermanentBadRecordWithoutTolerance: with errors tolerance
// none, a bad record the sink marks Permanent leaves the task FAILED
// without restarts (no retry can write it); another bad record fails the
// task, which restarts with backoff as before.
func TestWorker_PermanentBadRecordWithoutTolerance(t *testing.T) {
	for _, permanent := range []bool{true, false} {
		t.Run(fmt.Sprint("permanent=", permanent), func(t *testing.T) {
			h := newHarness(t, t.TempDir())
			ctx := t.Context()
			writes := new(atomic.Int32)
			h.worker.Registry().MustRegister(connect.Connector{Name: "bad", Kind: connect.KindSink, Version: "test",
				NewSink: func() connect.Sink { return &badSink{writes: writes, permanent: permanent} }})
			if err := h.log.CreateTopic("in", 1, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := h.log.Append(ctx, "in", 0, []tlog.Record{{Value: []byte("1")}}); err != nil {
				t.Fatal(err)
			}
			spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "bad", Topics: []string{"in"}}
			if err := h.worker.Start(ctx, spec, ""); err != nil {
				t.Fatal(err)
			}
			if !permanent {
				waitFor(t, "a restart", func() bool { return writes.Load() >= 2 })
				return
			}
			waitFor(t, "FAILED", func() bool { return taskState(t, h.worker, "dst").State == StateFailed })
			time.Sleep(300 * time.Millisecond) // restarts, were there any, come 10-50 ms apart
			if ts := taskState(t, h.worker, "dst"); ts.State != StateFailed || !strings.Contains(ts.Trace, "infinity") {
				t.Fatalf("task = %+v, want FAILED with the record's error", ts)
			}
			if n := writes.Load(); n != 1 {
				t.Fatalf("%d writes, want 1 (no restart)", n)
			}
		})
	}
}

package cdctest

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// openCounter counts the Opens of the source it wraps.
type openCounter struct {
	connect.Source
	opens *atomic.Int32
}

func (s *openCounter) Open(ctx context.Context, cfg connect.Config) error {
	s.opens.Add(1)
	return s.Source.Open(ctx, cfg)
}

// FailsPermanently runs the source connector c as spec in the real worker
// (embedded log, restart backoff 50–200 ms) against a server it cannot
// capture from, and checks that the task ends FAILED with trace in its
// status and is opened once in 2 s: no restart loop. Then it calls fix
// (the user repairs the server), restarts the connector, and waits for the
// task to run, opened a second time.
func FailsPermanently(t testing.TB, c connect.Connector, spec engine.ConnectorSpec, trace string, fix func()) {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	opens := new(atomic.Int32)
	newSource := c.NewSource
	c.NewSource = func() connect.Source { return &openCounter{Source: newSource(), opens: opens} }
	reg := connect.NewRegistry()
	reg.MustRegister(c)
	// A restart loop would open about every 50-200 ms.
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger,
		RestartBackoffInitial: 50 * time.Millisecond, RestartBackoffMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	started := time.Now()
	spec.Kind, spec.Connector = connect.KindSource, c.Name
	if err := w.Start(t.Context(), spec, ""); err != nil {
		t.Fatal(err)
	}
	task := func() engine.TaskStatus {
		st, err := w.Status(spec.Name)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) != 1 {
			return engine.TaskStatus{}
		}
		return st.Tasks[0]
	}
	waitTask := func(what string, cond func(engine.TaskStatus) bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(task()); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; task %+v", what, task())
			}
		}
	}
	waitTask("FAILED", func(ts engine.TaskStatus) bool { return ts.State == engine.StateFailed })
	time.Sleep(2*time.Second - time.Since(started))
	if ts := task(); ts.State != engine.StateFailed || !strings.Contains(ts.Trace, trace) {
		t.Fatalf("task %+v, want FAILED with %q in its trace", ts, trace)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("Open called %d times in 2 s, want 1 (no restart loop)", n)
	}

	fix()
	if err := w.Restart(t.Context(), spec.Name, true); err != nil {
		t.Fatal(err)
	}
	waitTask("RUNNING after the restart", func(ts engine.TaskStatus) bool { return ts.State == engine.StateRunning && opens.Load() == 2 })
}

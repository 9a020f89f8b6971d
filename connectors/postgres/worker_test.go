package postgres

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

// TestWorker_MisconfiguredServerStaysFailed runs the source in the real
// worker on a server it cannot capture from (its user lacks REPLICATION):
// the task ends FAILED with the connector's message as its trace, and is
// not restarted until the user fixes the server and restarts it.
func TestWorker_MisconfiguredServerStaysFailed(t *testing.T) {
	db := newDB(t, "DO $$ BEGIN CREATE ROLE worker_norepl LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
		"ALTER ROLE worker_norepl NOREPLICATION",
		"CREATE TABLE t (id int PRIMARY KEY)", "ALTER TABLE t OWNER TO worker_norepl")
	db.exec(t, "GRANT CREATE ON DATABASE "+db.name+" TO worker_norepl")
	dsn := strings.Replace(db.dsn, "postgres@", "worker_norepl@", 1)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	opens := new(atomic.Int32)
	c := Connector()
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
	err = w.Start(t.Context(), engine.ConnectorSpec{Pipeline: "p", Name: "src", Kind: connect.KindSource, Connector: Name, Topic: "p.{schema}.{table}",
		Config: map[string]string{"dsn": dsn, "slot": "worker_" + db.name, "publication": "worker_pub", "heartbeat.interval": "0", "snapshot.mode": "never"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	task := func() engine.TaskStatus {
		st, err := w.Status("src")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) != 1 {
			return engine.TaskStatus{}
		}
		return st.Tasks[0]
	}
	waitTask := func(what string, cond func(engine.TaskStatus) bool) engine.TaskStatus {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if ts := task(); cond(ts) {
				return ts
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s; task %+v", what, task())
			}
		}
	}
	waitTask("FAILED", func(ts engine.TaskStatus) bool { return ts.State == engine.StateFailed })
	time.Sleep(2*time.Second - time.Since(started))
	ts := task()
	if ts.State != engine.StateFailed || !strings.Contains(ts.Trace, `user "worker_norepl" lacks the REPLICATION attribute`) {
		t.Fatalf("task %+v, want FAILED with the missing REPLICATION in its trace", ts)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("Open called %d times in 2 s, want 1 (no restart loop)", n)
	}

	// The user fixes the role and restarts the connector.
	db.exec(t, "ALTER ROLE worker_norepl REPLICATION")
	if err := w.Restart(t.Context(), "src", true); err != nil {
		t.Fatal(err)
	}
	waitTask("RUNNING after the restart", func(ts engine.TaskStatus) bool { return ts.State == engine.StateRunning && opens.Load() == 2 })
}

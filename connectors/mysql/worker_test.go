package mysql

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
// worker on a server it cannot capture from (its user lacks the
// replication grants): the task ends FAILED with the connector's message
// as its trace, and is not restarted until the user fixes the grants and
// restarts it.
func TestWorker_MisconfiguredServerStaysFailed(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	d.exec(t, "DROP USER IF EXISTS 'worker_norepl'@'%'")
	d.exec(t, "CREATE USER 'worker_norepl'@'%' IDENTIFIED BY 'pw'")
	d.exec(t, "GRANT SELECT ON *.* TO 'worker_norepl'@'%'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS 'worker_norepl'@'%'") })
	dsn := strings.Replace(d.dsn, "root@", "worker_norepl:pw@", 1)

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
	err = w.Start(t.Context(), engine.ConnectorSpec{Pipeline: "perm", Name: "worker_src", Kind: connect.KindSource, Connector: Name, Topic: "perm.{database}.{table}",
		Config: map[string]string{"dsn": dsn, "tables": d.name + ".*", "heartbeat.interval": "0", "snapshot.mode": "never"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	task := func() engine.TaskStatus {
		st, err := w.Status("worker_src")
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
	ts := task()
	if ts.State != engine.StateFailed || !strings.Contains(ts.Trace, "user worker_norepl@% lacks REPLICATION SLAVE and REPLICATION CLIENT") {
		t.Fatalf("task %+v, want FAILED with the missing grants in its trace", ts)
	}
	if n := opens.Load(); n != 1 {
		t.Fatalf("Open called %d times in 2 s, want 1 (no restart loop)", n)
	}

	// The user grants what is missing and restarts the connector.
	d.exec(t, "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'worker_norepl'@'%'")
	if err := w.Restart(t.Context(), "worker_src", true); err != nil {
		t.Fatal(err)
	}
	waitTask("RUNNING after the restart", func(ts engine.TaskStatus) bool { return ts.State == engine.StateRunning && opens.Load() == 2 })
}

package mysql

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/netproxy"
)

// openProxied opens a source on d's tables through a proxy to the test
// server, with connection.dead.timeout 1s and the given settings.
func openProxied(t *testing.T, d *testDB, values map[string]string, adjust func(*Source)) (*Source, *netproxy.Proxy) {
	t.Helper()
	p := netproxy.Start(t, fmt.Sprintf("127.0.0.1:%d", testServer.port))
	v := map[string]string{"dsn": "root@tcp(" + p.Addr() + ")/", "heartbeat.interval": "0", "tables": d.name + ".*",
		"connection.dead.timeout": "1s"}
	for k, x := range values {
		v[k] = x
	}
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	if adjust != nil {
		adjust(s)
	}
	cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(), Values: v}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { closeWithin(t, s, 10*time.Second) })
	return s, p
}

// closeWithin closes s, failing the test when that takes longer than
// limit (a Close stuck on a dead connection would hang the worker's
// restart).
func closeWithin(t *testing.T, s *Source, limit time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { s.Close(context.Background()); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		t.Errorf("Close did not return within %v", limit)
	}
}

// readUntilErr reads s until Read fails and returns the error; a source
// still running at limit fails the test (its context ends then, so a
// Read that hangs cannot hold the test longer either).
func readUntilErr(t *testing.T, s *Source, limit time.Duration) (int, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	n := 0
	for {
		recs, err := s.Read(ctx)
		n += len(recs)
		if ctx.Err() != nil {
			t.Fatalf("the source still runs %v into the network cut (connection.dead.timeout 1s): the dead connection went unnoticed (phase %q)", limit, s.Report().Phase)
		}
		if err != nil {
			return n, err
		}
	}
}

// wantDeadErr checks that err says the network is the likely cause and
// what to do about it, and is not permanent (the worker restarts the task).
func wantDeadErr(t *testing.T, err error) {
	t.Helper()
	t.Logf("error: %v", err)
	for _, want := range []string{"network", "connection.dead.timeout"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not mention %q: %v", want, err)
		}
	}
	if connect.IsPermanent(err) {
		t.Errorf("a dead network fails the task for good: %v", err)
	}
	if connect.IsRetryable(err) {
		// Retryable would make the worker call Read again on a source
		// whose runner has ended, not restart the task.
		t.Errorf("a dead network is marked retryable: %v", err)
	}
}

// TestOpen_DeadNetwork cuts the network before Open: its queries fail
// within about twice connection.dead.timeout instead of hanging the
// worker's start, with the network named as the likely cause.
func TestOpen_DeadNetwork(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	p := netproxy.Start(t, fmt.Sprintf("127.0.0.1:%d", testServer.port))
	p.Hold()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	s := Connector().NewSource().(*Source)
	cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(), Values: map[string]string{
		"dsn": "root@tcp(" + p.Addr() + ")/", "tables": d.name + ".*", "connection.dead.timeout": "1s"}}
	started := time.Now()
	err := s.Open(ctx, cfg)
	if err == nil {
		s.Close(context.Background())
		t.Fatal("Open succeeded through a cut network")
	}
	if ctx.Err() != nil {
		t.Fatalf("Open hung until its context ended: %v", err)
	}
	t.Logf("failed after %v", time.Since(started).Round(time.Millisecond))
	wantDeadErr(t, err)
}

// TestStream_DeadNetwork blackholes the network between the source and
// the server (nothing arrives, nothing is reset) while the stream is idle
// and while rows commit: the stream takes its binlog connection for dead
// after connection.dead.timeout, tries to reconnect (through the same
// blackhole) and, after reconnectFor, fails with an error that says what
// happened, instead of waiting for the kernel (~15 minutes) or forever.
func TestStream_DeadNetwork(t *testing.T) {
	for _, busy := range []bool{false, true} {
		t.Run(map[bool]string{false: "idle", true: "busy"}[busy], func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
			s, p := openProxied(t, d, map[string]string{"snapshot.mode": "never"}, func(s *Source) { s.reconnectFor = 2 * time.Second })
			d.exec(t, "INSERT INTO t VALUES (1)")
			readRecords(t, s, 1, 30*time.Second)
			var stop atomic.Bool
			writing := make(chan struct{})
			if busy {
				go func() {
					defer close(writing)
					for i := 2; !stop.Load(); i++ {
						d.db.Exec(fmt.Sprintf("INSERT INTO t VALUES (%d)", i)) // directly, not through the proxy
						time.Sleep(2 * time.Millisecond)
					}
				}()
				readRecords(t, s, 20, 30*time.Second)
			} else {
				close(writing)
			}
			p.Hold()
			started := time.Now()
			_, err := readUntilErr(t, s, 20*time.Second)
			stop.Store(true)
			<-writing
			t.Logf("failed after %v", time.Since(started).Round(time.Millisecond))
			wantDeadErr(t, err)
		})
	}
}

// TestSnapshot_DeadNetwork blackholes the network in the middle of a
// snapshot: the chunk query waiting for its rows fails after about
// connection.dead.timeout (the server is checked on a new connection,
// which gets no answer either), and Read returns the error.
func TestSnapshot_DeadNetwork(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(40))",
		"SET SESSION max_recursive_iterations = 100000; INSERT INTO t WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 20000) SELECT n, 'some text to make the rows longer' FROM g")
	s, p := openProxied(t, d, map[string]string{"snapshot.mode": "initial_only", "snapshot.chunk.size": "10", "batch.size": "10", "snapshot.workers": "2"}, nil)
	readRecords(t, s, 20, 30*time.Second)
	time.Sleep(200 * time.Millisecond) // the runner fills what Read takes and waits
	p.Hold()
	started := time.Now()
	n, err := readUntilErr(t, s, 20*time.Second)
	t.Logf("failed after %v and %d more records", time.Since(started).Round(time.Millisecond), n)
	if n >= 20000-20 {
		t.Fatalf("the snapshot finished before the network was cut; make the table bigger")
	}
	wantDeadErr(t, err)
}

// TestSnapshot_SlowQueryNotCut: a snapshot chunk query that waits for a
// table lock another session holds for several connection.dead.timeout
// periods is slow, not dead (the server answers on a new connection): it
// is not cut, and the snapshot completes once the lock is released.
func TestSnapshot_SlowQueryNotCut(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)", "INSERT INTO t VALUES (1), (2), (3)")
	lock, err := d.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(t.Context(), "LOCK TABLES t WRITE"); err != nil {
		t.Fatal(err)
	}
	defer lock.ExecContext(context.Background(), "UNLOCK TABLES")
	s, _ := openProxied(t, d, map[string]string{"snapshot.mode": "initial_only"}, nil)

	// The chunk query waits for the lock.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := d.db.QueryRow("SELECT count(*) FROM information_schema.PROCESSLIST WHERE STATE LIKE 'Waiting for table%lock' AND INFO LIKE ?",
			"%"+d.name+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no snapshot query waits for the table lock")
		}
	}
	for end := time.Now().Add(4 * time.Second); time.Now().Before(end); { // four timeouts
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("a query waiting for a lock was cut: %v", err)
		}
		if len(recs) > 0 {
			t.Fatalf("rows of a locked table: %d", len(recs))
		}
	}
	if _, err := lock.ExecContext(t.Context(), "UNLOCK TABLES"); err != nil {
		t.Fatal(err)
	}
	readRecords(t, s, 3, 30*time.Second)
}

// TestWatchedPool_ReusesIdleConnection: a pooled connection idle longer
// than connection.dead.timeout is reused, not discarded by the driver's
// check for a connection the server closed (which fails on a passed read
// deadline).
func TestWatchedPool_ReusesIdleConnection(t *testing.T) {
	d := newDB(t)
	cfg, err := parseDSN(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	db, _, err := openDB(t.Context(), cfg, time.Second, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var first, again int64
	if err := db.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&first); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if err := db.QueryRowContext(t.Context(), "SELECT CONNECTION_ID()").Scan(&again); err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Fatalf("connection %d after an idle period, want %d again: the idle connection was discarded", again, first)
	}
}

// TestIncremental_DeadNetwork cuts the network while an incremental
// snapshot reads its chunks from the stream: the chunk query, made while
// the binlog client waits for the handler, fails after about
// connection.dead.timeout instead of holding the stream forever.
func TestIncremental_DeadNetwork(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(40))", signalDDL,
		"INSERT INTO t SELECT seq, 'some text to make the rows longer' FROM seq_1_to_20000")
	s, p := openProxied(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + ".t",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "10", "batch.size": "10"},
		func(s *Source) { s.reconnectFor = 2 * time.Second })
	d.exec(t, "INSERT INTO debezium_signal VALUES ('sig-1', 'execute-snapshot', ?)",
		fmt.Sprintf(`{"data-collections": ["%s.t"], "type": "incremental"}`, d.name))
	readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		n := 0
		for _, e := range decode(t, r) {
			if e.Ev != nil && e.Ev.Op == connect.OpRead {
				n++
			}
		}
		return n >= 30
	})
	time.Sleep(200 * time.Millisecond) // the stream fills what Read takes and waits
	p.Hold()
	started := time.Now()
	n, err := readUntilErr(t, s, 20*time.Second)
	t.Logf("failed after %v and %d more records", time.Since(started).Round(time.Millisecond), n)
	if n >= 20000-30 {
		t.Fatalf("the incremental snapshot finished before the network was cut; make the table bigger")
	}
	wantDeadErr(t, err)
}

package postgres

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/netproxy"
	"github.com/tributary-io/tributary/internal/syncbuf"
)

// viaProxy is db's DSN through p (the server's settings untouched).
func viaProxy(db *testDB, p *netproxy.Proxy) string {
	return strings.Replace(db.dsn, "127.0.0.1:"+strconv.Itoa(server.port), p.Addr(), 1)
}

// lockTable takes an ACCESS EXCLUSIVE lock on table in a session of its
// own, so that a query reading it waits (alive, just slow) until the
// returned function commits.
func lockTable(t *testing.T, db *testDB, table string) (release func()) {
	t.Helper()
	return openTx(t, db, "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE")
}

// openTx runs stmt in a transaction of a session of its own and leaves the
// transaction open until the returned function (also run at the test's
// end, once) commits it and closes the session.
func openTx(t *testing.T, db *testDB, stmt string) (commit func()) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "BEGIN"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), stmt); err != nil {
		t.Fatal(err)
	}
	done := false
	commit = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.Exec(context.Background(), "COMMIT"); err != nil {
			t.Error(err)
		}
		conn.Close(context.Background())
	}
	t.Cleanup(commit)
	return commit
}

// waitLockWait waits until a query in db (the source's: the test makes
// none) waits for a lock.
func waitLockWait(t *testing.T, db *testDB) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		n := db.queryString(t, `SELECT count(*)::text FROM pg_stat_activity
WHERE datname = current_database() AND wait_event_type = 'Lock'`)
		if n != "0" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no query of the source waits for a lock")
		}
	}
}

// readToError reads s until Read fails, and fails the test if that takes
// longer than limit: on a dead network the source must not hang.
func readToError(t *testing.T, s *Source, limit time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	started := time.Now()
	n := 0
	for {
		recs, err := s.Read(ctx)
		n += len(recs)
		if ctx.Err() != nil {
			t.Fatalf("the source still runs %v into a network partition (wal.receiver.timeout 2s): the dead connection went unnoticed (status %s)", limit, s.Report().Phase)
		}
		if err != nil {
			t.Logf("after %v of partition and %d records: %v", time.Since(started).Round(time.Millisecond), n, err)
			return err
		}
	}
}

// checkDeadErr checks that err says the connection is dead, within what,
// and what to do about it; and that the worker restarts the task on it.
func checkDeadErr(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, errDeadConn) {
		t.Errorf("error %q, want errDeadConn", err)
	}
	for _, want := range []string{"wal.receiver.timeout", "2s", "network"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
	if connect.IsPermanent(err) || connect.IsRetryable(err) {
		t.Errorf("a dead connection is permanent or retryable, not a task restart: %v", err)
	}
}

// TestSnapshot_DeadConnection_Partitioned cuts the network (no FIN, no
// RST) in the middle of the initial snapshot: the snapshot's queries,
// waiting for rows that never come, notice within about
// wal.receiver.timeout (the server does not answer a new connection
// either) and Read fails with errDeadConn, instead of the task hanging
// while it shows RUNNING.
func TestSnapshot_DeadConnection_Partitioned(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, pad text)",
		"INSERT INTO t SELECT g, repeat('x', 300) FROM generate_series(1, 100000) g")
	p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	s, err := tryOpenSource(t, viaProxy(db, p), map[string]string{"snapshot.mode": "initial", "tables": "public.t",
		"wal.receiver.timeout": "2s", "snapshot.chunk.size": "100", "batch.size": "100", "snapshot.workers": "2"},
		func(s *Source) { s.reportEvery = time.Hour }, nil) // only the workers' reads wait on the network
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	readRecords(t, s, 1, 30*time.Second)
	p.Hold()
	checkDeadErr(t, readToError(t, s, 30*time.Second))
}

// TestIncrementalSnapshot_DeadConnection_Partitioned cuts the network
// while an incremental snapshot's chunk query waits for its answer: the
// runner, blocked in that query, would otherwise never come back to the
// replication stream's own dead-connection check.
func TestIncrementalSnapshot_DeadConnection_Partitioned(t *testing.T) {
	p, s, release := startChunkWaitingOnLock(t, nil)
	p.Hold()
	release() // the chunk's rows are sent, and held
	checkDeadErr(t, readToError(t, s, 30*time.Second))
}

// startChunkWaitingOnLock opens a source on a table of 100 rows through a
// proxy (wal.receiver.timeout 2s, chunks of 40 rows) and starts an
// incremental snapshot whose first chunk query waits on a lock another
// session holds until release. adjust, if not nil, adjusts the source
// before it opens. The source closes when the test ends.
func startChunkWaitingOnLock(t *testing.T, adjust func(*Source)) (p *netproxy.Proxy, s *Source, release func()) {
	t.Helper()
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v int)", "INSERT INTO a SELECT g, g FROM generate_series(1, 100) g")
	p = netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	s, err := tryOpenSource(t, viaProxy(db, p), map[string]string{"snapshot.mode": "never", "tables": "public.a",
		"wal.receiver.timeout": "2s", "snapshot.chunk.size": "40"}, adjust, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	release = lockTable(t, db, "a")
	if err := s.ExecuteSnapshot(t.Context(), []string{"public.a"}); err != nil {
		t.Fatal(err)
	}
	waitLockWait(t, db)
	return p, s, release
}

// probeLog returns an adjust hook that logs the source's debug messages,
// and a check that the source probed the server while a query waited
// (and found it alive): without one the test would not test the read
// watch.
func probeLog() (logTo func(*Source), probed func(*testing.T)) {
	log := new(syncbuf.Buffer)
	logTo = func(s *Source) {
		s.logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	probed = func(t *testing.T) {
		t.Helper()
		if !strings.Contains(log.String(), "the server answers a new connection, so it waits on") {
			t.Errorf("no probe while the query waited")
		}
	}
	return logTo, probed
}

// TestSnapshot_SlowQueryNotCut: a snapshot query that waits far longer
// than wal.receiver.timeout on a lock another session holds, the server
// alive and answering, is not taken for dead, in the initial snapshot and
// in an incremental one.
func TestSnapshot_SlowQueryNotCut(t *testing.T) {
	t.Run("initial", func(t *testing.T) {
		db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v int)", "INSERT INTO a SELECT g, g FROM generate_series(1, 100) g")
		logTo, probed := probeLog()
		p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
		release := lockTable(t, db, "a")
		// initial_only: a slot is created only once the transactions
		// running (the lock's) have ended.
		s, err := tryOpenSource(t, viaProxy(db, p), map[string]string{"snapshot.mode": "initial_only", "tables": "public.a",
			"wal.receiver.timeout": "2s", "snapshot.chunk.size": "40"}, logTo, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close(context.Background())
		waitLockWait(t, db)
		expectQuiet(t, s, 7*time.Second) // over three timeouts
		probed(t)
		release()
		readRecords(t, s, 100, 30*time.Second)
	})
	t.Run("incremental", func(t *testing.T) {
		logTo, probed := probeLog()
		_, s, release := startChunkWaitingOnLock(t, logTo)
		expectQuiet(t, s, 7*time.Second)
		probed(t)
		release()
		recs := readUntil(t, s, 30*time.Second, untilIncrementalDone)
		if n := len(ids(t, recs)); n != 100 {
			t.Errorf("%d rows read by the incremental snapshot, want 100", n)
		}
	})
}

// holdXid opens a transaction that holds an xid, in a session of its own:
// a logical replication slot created meanwhile waits for it to end (the
// slot's snapshot needs the transactions running to have finished), alive
// and just slow. The returned function commits it.
func holdXid(t *testing.T, db *testDB) (commit func()) {
	t.Helper()
	return openTx(t, db, "SELECT txid_current()")
}

// openResult is what an Open run in the background returned.
type openResult struct {
	s   *Source
	err error
}

// openAsync opens a source in the background.
func openAsync(t *testing.T, dsn string, values map[string]string, adjust func(*Source)) <-chan openResult {
	done := make(chan openResult, 1)
	go func() {
		s, err := tryOpenSource(t, dsn, values, adjust, nil)
		done <- openResult{s, err}
	}()
	return done
}

// TestOpen_DeadConnection_SlotCreation cuts the network while Open's
// CREATE_REPLICATION_SLOT waits for a running transaction: the replication
// connection's answer never comes, and a new connection to the server
// gets none either, so Open fails with errDeadConn within about twice
// wal.receiver.timeout instead of hanging the task in its start.
func TestOpen_DeadConnection_SlotCreation(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1)")
	commit := holdXid(t, db)
	p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	done := openAsync(t, viaProxy(db, p), map[string]string{"snapshot.mode": "initial", "tables": "public.a",
		"wal.receiver.timeout": "2s"}, nil)
	waitLockWait(t, db) // the slot's creation waits for the transaction
	p.Hold()
	started := time.Now()
	commit() // the slot is created; its answer is held
	select {
	case r := <-done:
		t.Logf("Open failed %v into the partition: %v", time.Since(started).Round(time.Millisecond), r.err)
		if r.err == nil {
			r.s.Close(context.Background())
			t.Fatal("Open succeeded through a network partition")
		}
		checkDeadErr(t, r.err)
	case <-time.After(30 * time.Second):
		p.Close() // ends the Open
		<-done
		t.Fatal("Open still waits for the replication slot 30s into a network partition (wal.receiver.timeout 2s): the dead connection went unnoticed")
	}
}

// TestOpen_SlowSlotCreationNotCut: CREATE_REPLICATION_SLOT waiting far
// longer than wal.receiver.timeout for a long transaction, the server
// alive and answering, is not taken for dead: Open waits, and succeeds
// once the transaction commits.
func TestOpen_SlowSlotCreationNotCut(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "INSERT INTO a VALUES (1)")
	commit := holdXid(t, db)
	logTo, probed := probeLog()
	p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	done := openAsync(t, viaProxy(db, p), map[string]string{"snapshot.mode": "initial", "tables": "public.a",
		"wal.receiver.timeout": "2s"}, logTo)
	waitLockWait(t, db)
	select {
	case r := <-done:
		if r.err == nil {
			r.s.Close(context.Background())
		}
		t.Fatalf("Open returned while the slot's creation waited for a running transaction: %v", r.err)
	case <-time.After(7 * time.Second): // over three timeouts
	}
	probed(t)
	commit()
	var r openResult
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Open still waits 30s after the transaction committed")
	}
	if r.err != nil {
		t.Fatalf("Open: %v", r.err)
	}
	defer r.s.Close(context.Background())
	readRecords(t, r.s, 1, 30*time.Second) // the snapshot's row
	db.exec(t, "INSERT INTO a VALUES (2)")
	if got := ids(t, readRecords(t, r.s, 1, 30*time.Second)); !slices.Equal(got, []int{2}) {
		t.Errorf("streamed %v, want [2]", got)
	}
}

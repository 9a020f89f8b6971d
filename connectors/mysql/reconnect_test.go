package mysql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/netproxy"
)

// withReplUser creates a user with the replication grants for one test,
// so that its binlog dump thread can be told apart from other
// connections, and returns its DSN.
func withReplUser(t *testing.T, d *testDB, user string) string {
	t.Helper()
	d.exec(t, "CREATE USER IF NOT EXISTS '"+user+"'@'%' IDENTIFIED BY 'pw'")
	d.exec(t, "GRANT SELECT, REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO '"+user+"'@'%'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS '" + user + "'@'%'") })
	return strings.Replace(d.dsn, "root@", user+":pw@", 1)
}

// killDump kills the binlog dump thread of user from another session, as
// an administrator (or a failover script) would; it waits until there is
// one to kill and returns its id.
func killDump(t *testing.T, d *testDB, user string, not int64) int64 {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var id int64
		err := d.db.QueryRow("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND LIKE 'Binlog Dump%' AND ID <> ? ORDER BY ID DESC LIMIT 1", user, not).Scan(&id)
		if err == nil {
			d.exec(t, fmt.Sprintf("KILL %d", id))
			return id
		}
		if time.Now().After(deadline) {
			t.Fatalf("no binlog dump thread of %s: %v", user, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStream_ReconnectsAfterDumpThreadKilled kills the source's binlog
// dump thread on the server, between transactions and while a writer
// commits transactions of many rows; the source reconnects by itself from
// the end of the last whole transaction, and every row arrives in order
// (a transaction cut in the middle may come again: at least once).
func TestStream_ReconnectsAfterDumpThreadKilled(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
	dsn := withReplUser(t, d, "recon")
	s, err := tryOpen(t, dsn, withTables(d, map[string]string{"snapshot.mode": "never", "batch.size": "7"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d.exec(t, "INSERT INTO t VALUES (1, 'a')")
	readRecords(t, s, 1, 30*time.Second)

	// Between transactions.
	dump := killDump(t, d, "recon", 0)
	d.exec(t, "INSERT INTO t VALUES (2, 'b')")
	d.exec(t, "INSERT INTO t VALUES (3, 'c')")
	evs := decode(t, readRecords(t, s, 2, 30*time.Second))
	if got := evs[0].Ev.After.String() + evs[1].Ev.After.String(); got != `{"id":2,"v":"b"}{"id":3,"v":"c"}` {
		t.Fatalf("after the reconnect: %s", got)
	}
	if s.Report().Phase != "streaming" {
		t.Errorf("phase %q after the reconnect", s.Report().Phase)
	}

	// While transactions of 40 rows stream, three times; a reader keeps
	// taking records meanwhile.
	r := startReader(t, s)
	done := make(chan error, 1)
	go func() {
		for i := range 30 {
			var b strings.Builder
			b.WriteString("BEGIN;")
			for j := range 40 {
				fmt.Fprintf(&b, "INSERT INTO t VALUES (%d, 'x');", 1000+i*40+j)
			}
			b.WriteString("COMMIT")
			if _, err := d.db.Exec(b.String()); err != nil {
				done <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		done <- nil
	}()
	for i := range 3 {
		r.waitFor(t, func(recs []connect.Record) bool { return len(recs) >= 100*(i+1) })
		dump = killDump(t, d, "recon", dump)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	recs := r.waitFor(t, func(recs []connect.Record) bool {
		return strings.Contains(string(lastValue(recs)), `"id":2199`)
	})
	next, again := 1000, 0
	for _, e := range decode(t, recs) {
		id, _ := e.Ev.After.Get("id")
		n := int(id.(int64))
		switch {
		case n == next:
			next++
		case n < next && n >= 1000 && n%40 == 0:
			// a transaction cut by the kill, delivered again from its start
			again++
			next = n + 1
		default:
			t.Fatalf("row %d after row %d", n, next-1)
		}
		if e.Rec.Position != nil && n%40 != 39 {
			t.Fatalf("row %d carries a position but does not end its transaction", n)
		}
	}
	if next != 2200 {
		t.Fatalf("read up to row %d, want 2199", next-1)
	}
	t.Logf("%d transactions came again after a kill", again)
}

// reader reads a source on a goroutine of its own until the test ends.
type reader struct {
	mu   sync.Mutex
	recs []connect.Record
	err  error
}

func startReader(t *testing.T, s *Source) *reader {
	r := &reader{}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for ctx.Err() == nil {
			recs, err := s.Read(ctx)
			r.mu.Lock()
			r.recs = append(r.recs, recs...)
			if err != nil && ctx.Err() == nil {
				r.err = err
			}
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-stopped })
	return r
}

// waitFor waits until cond holds for the records read so far and returns
// them.
func (r *reader) waitFor(t *testing.T, cond func([]connect.Record) bool) []connect.Record {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		r.mu.Lock()
		recs, err := slices.Clone(r.recs), r.err
		r.mu.Unlock()
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if cond(recs) {
			return recs
		}
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within 30s after %d records", len(recs))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStream_ReconnectRefusedFailsWithHint takes the replication grant
// away and kills the dump thread: reconnecting is refused, which a new
// connection cannot cure, so the source stops with the fix in its error.
func TestStream_ReconnectRefusedFailsWithHint(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	dsn := withReplUser(t, d, "recon2")
	s, err := tryOpen(t, dsn, withTables(d, map[string]string{"snapshot.mode": "never"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d.exec(t, "INSERT INTO t VALUES (1)")
	readRecords(t, s, 1, 30*time.Second)
	d.exec(t, "REVOKE REPLICATION SLAVE ON *.* FROM 'recon2'@'%'")
	killDump(t, d, "recon2", 0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Read(t.Context())
		if err != nil {
			wantErr(t, err, "GRANT REPLICATION SLAVE")
			if connect.IsRetryable(err) {
				t.Errorf("the error is marked retryable: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the source did not stop")
		}
	}
}

// TestStream_GivesUpReconnecting reads the binlog through a TCP proxy and
// then takes the proxy away: every reconnect is refused, and after
// reconnectFor the source stops.
func TestStream_GivesUpReconnecting(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	p := netproxy.Start(t, fmt.Sprintf("127.0.0.1:%d", testServer.port))
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	s.reconnectFor = 500 * time.Millisecond
	cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
		Values: map[string]string{"dsn": "root@tcp(" + p.Addr() + ")/", "heartbeat.interval": "0", "snapshot.mode": "never", "tables": d.name + ".*"}}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d.exec(t, "INSERT INTO t VALUES (1)")
	readRecords(t, s, 1, 30*time.Second)

	p.Close() // drops the connections and refuses new ones
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := s.Read(t.Context())
		if err != nil {
			// Plain words first, what to do, then the client's own text.
			msg := err.Error()
			t.Log(msg)
			want := "could not keep a binlog connection to the server at " + p.Addr() + ": reconnecting failed for 500ms"
			if !strings.HasPrefix(msg, want) {
				t.Errorf("error %q, want it to start with %q", msg, want)
			}
			hint := strings.Index(msg, "check that the server is running")
			raw := strings.Index(msg, "connection refused")
			if hint < 0 || raw < hint {
				t.Errorf("error %q: want the hint, then the client's error", msg)
			}
			if connect.IsRetryable(err) {
				t.Errorf("the error is marked retryable: %v", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the source did not give up")
		}
	}
}

// TestStream_ReconnectsAfterSilentConnection freezes the network between
// the source and the server (nothing arrives, nothing is reset): after
// deadAfter without even a heartbeat the source takes the connection for
// dead and reconnects, and once the network is back the rows written
// meanwhile arrive.
func TestStream_ReconnectsAfterSilentConnection(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	p := netproxy.Start(t, fmt.Sprintf("127.0.0.1:%d", testServer.port))
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	s.deadAfter = 400 * time.Millisecond
	cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
		Values: map[string]string{"dsn": "root@tcp(" + p.Addr() + ")/", "heartbeat.interval": "100ms", "snapshot.mode": "never", "tables": d.name + ".*"}}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	d.exec(t, "INSERT INTO t VALUES (1)")
	readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return len(afters(t, r)) == 1 })

	p.Drop()
	d.exec(t, "INSERT INTO t VALUES (2)")
	d.exec(t, "INSERT INTO t VALUES (3)")
	for deadline := time.Now().Add(1200 * time.Millisecond); time.Now().Before(deadline); {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if got := afters(t, recs); len(got) > 0 {
			t.Fatalf("changes through a frozen network: %s", got)
		}
	}
	p.Restore()
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return len(afters(t, r)) >= 2 })
	if got := strings.Join(afters(t, recs), ""); got != `{"id":2}{"id":3}` {
		t.Fatalf("after the network came back: %s", got)
	}
}

func TestTransient(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true},
		{fmt.Errorf("io.ReadFull(header) failed: %w", mysql.ErrBadConn), true},
		{&mysql.MyError{Code: erConnectionKilled, Message: "Connection was killed"}, true},
		{&mysql.MyError{Code: mysql.ER_SERVER_SHUTDOWN}, true},
		{&mysql.MyError{Code: mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG, Message: "Could not find GTID state"}, false},
		{&mysql.MyError{Code: mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR}, false},
		{errors.New("unknown event type"), false},
	}
	for _, c := range cases {
		if got := transient(c.err); got != c.want {
			t.Errorf("transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

package mysql

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// startWaiting opens a source without a stored position, with the given
// settings, on a goroutine (Open waits with snapshot.mode=never), and
// returns it with a channel that gets Open's error.
func startWaiting(t *testing.T, d *testDB, values map[string]string) (*Source, <-chan error) {
	t.Helper()
	v := withTables(d, map[string]string{"dsn": d.dsn, "heartbeat.interval": "0"})
	for k, x := range values {
		v[k] = x
	}
	s := Connector().NewSource().(*Source)
	s.idle, s.xaPoll = 100*time.Millisecond, 20*time.Millisecond
	cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec()}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	opened, done := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(done)
		opened <- s.Open(t.Context(), cfg)
	}()
	t.Cleanup(func() {
		<-done // Open ends with the test's context at the latest
		s.Close(context.Background())
	})
	return s, opened
}

// readSnapshot reads s until the snapshot's last record.
func readSnapshot(t *testing.T, s *Source) []connect.Record {
	t.Helper()
	return readUntil(t, s, 30*time.Second, func(recs []connect.Record) bool {
		if len(recs) == 0 || recs[len(recs)-1].Position == nil {
			return false
		}
		p, err := decodePosition(recs[len(recs)-1].Position)
		return err == nil && p.Snapshot == nil
	})
}

// waitXAStart waits until s waits for n prepared XA transactions before
// it takes its start position (its xa_start_waiting gauge).
func waitXAStart(t *testing.T, s *Source, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s.Report().Gauges["xa_start_waiting"] != float64(n) {
		if time.Now().After(deadline) {
			t.Fatalf("the source does not wait for %d prepared XA transactions: %+v", n, s.Report())
		}
		time.Sleep(10 * time.Millisecond) // polls the gauge
	}
}

// TestXAStart_CommittedWhileWaiting: an XA transaction prepared in
// another session before the source's first start holds the snapshot
// back; committed while the source waits, its rows are read by the
// snapshot, once, and the stream does not emit them again.
func TestXAStart_CommittedWhileWaiting(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))", "INSERT INTO t VALUES (9, 'old')")
	prepareXA(t, d, "'w1'", "INSERT INTO t VALUES (1, 'xa')", "UPDATE t SET v = 'xa' WHERE id = 9")
	s, opened := startWaiting(t, d, map[string]string{"xa.start.wait": "1m"})
	if err := <-opened; err != nil {
		t.Fatalf("Open: %v", err)
	}
	waitXAStart(t, s, 1)
	xaRun(t, d, "XA COMMIT 'w1'")
	recs := readSnapshot(t, s)
	d.exec(t, "INSERT INTO t VALUES (2, 'after')")
	recs = append(recs, readTo(t, s, 2)...)
	if got, want := changeIDs(t, recs), "r1 r9 c2"; got != want {
		t.Fatalf("changes %q, want %q:\n%s", got, want, dump(recs))
	}
	for _, e := range decode(t, recs) {
		if id, _ := e.Ev.After.Get("id"); id == int64(9) {
			if v, _ := e.Ev.After.Get("v"); v != "xa" {
				t.Errorf("row 9 in the snapshot: %v, want the XA transaction's update", e.Ev.After)
			}
		}
	}
	expectQuiet(t, s, 300*time.Millisecond)
	if g := s.Report().Gauges["xa_start_waiting"]; g != 0 {
		t.Errorf("xa_start_waiting = %v after the start", g)
	}
}

// TestXAStart_RolledBackWhileWaiting: rolled back while the source waits,
// the XA transaction emits nothing.
func TestXAStart_RolledBackWhileWaiting(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))", "INSERT INTO t VALUES (9, 'old')")
	prepareXA(t, d, "'w2'", "INSERT INTO t VALUES (1, 'never')", "UPDATE t SET v = 'never' WHERE id = 9")
	s, opened := startWaiting(t, d, map[string]string{"xa.start.wait": "1m"})
	if err := <-opened; err != nil {
		t.Fatalf("Open: %v", err)
	}
	waitXAStart(t, s, 1)
	xaRun(t, d, "XA ROLLBACK 'w2'")
	recs := readSnapshot(t, s)
	d.exec(t, "INSERT INTO t VALUES (2, 'after')")
	recs = append(recs, readTo(t, s, 2)...)
	if got, want := changeIDs(t, recs), "r9 c2"; got != want {
		t.Fatalf("changes %q, want %q:\n%s", got, want, dump(recs))
	}
	if v, _ := decode(t, recs)[0].Ev.After.Get("v"); v != "old" {
		t.Errorf("row 9: %v, want old", v)
	}
}

// TestXAStart_NeverDecided: a prepared XA transaction left undecided
// for longer than xa.start.wait fails the task for good, naming the
// transaction and the statements that decide it; with a snapshot (the
// runner waits) and without (Open waits).
func TestXAStart_NeverDecided(t *testing.T) {
	for _, mode := range []string{snapshotInitial, snapshotNever} {
		t.Run(mode, func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
			prepareXA(t, d, "'stuck'", "INSERT INTO t VALUES (1)")
			s, opened := startWaiting(t, d, map[string]string{"xa.start.wait": "300ms", "snapshot.mode": mode})
			err := <-opened
			if mode == snapshotInitial {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				for err == nil { // the snapshot emits nothing before the runner fails
					var recs []connect.Record
					if recs, err = s.Read(t.Context()); len(recs) > 0 {
						t.Fatalf("records while a transaction prepared before the start is undecided:\n%s", dump(recs))
					}
				}
			}
			wantErr(t, err, "X'737475636B',X'',1", "XA COMMIT X'737475636B',X'',1 (or XA ROLLBACK X'737475636B',X'',1)", "xa.start.wait")
			wantPermanent(t, err, true)
		})
	}
}

// TestXAStart_NeverModeWaits: with snapshot.mode=never, Open waits for
// the transactions prepared before the position it takes, and streaming
// starts after their outcome: the changes of one committed while Open
// waited were committed before the start, as snapshot.mode=never skips
// (no warning of an XA COMMIT without its prepare), while a transaction
// prepared after the start is held and emitted at its XA COMMIT.
func TestXAStart_NeverModeWaits(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
	prepareXA(t, d, "'n1'", "INSERT INTO t VALUES (1, 'before start')")
	s, opened := startWaiting(t, d, map[string]string{"xa.start.wait": "1m", "snapshot.mode": snapshotNever})
	waitXAStart(t, s, 1)
	select {
	case err := <-opened:
		t.Fatalf("Open returned (%v) while a transaction prepared before its position is undecided", err)
	default:
	}
	xaRun(t, d, "XA COMMIT 'n1'")
	if err := <-opened; err != nil {
		t.Fatalf("Open: %v", err)
	}
	prepareXA(t, d, "'n2'", "INSERT INTO t VALUES (2, 'after start')")
	xaRun(t, d, "XA COMMIT 'n2'", "INSERT INTO t VALUES (3, 'after')")
	if got, want := changeIDs(t, readTo(t, s, 3)), "c2 c3"; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
}

// TestXAStart_PreparedBefore checks which transactions a start position
// has to wait for: those prepared before it and undecided, and those
// prepared before it and committed since (lost to it); not those
// prepared after it, in its binlog file or the next, nor one prepared
// before it and rolled back since.
func TestXAStart_PreparedBefore(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	s := openSource(t, d, map[string]string{"snapshot.mode": snapshotNever, "xa.start.wait": "0"}, nil)
	prepareXA(t, d, "'undecided'", "INSERT INTO t VALUES (1)")
	prepareXA(t, d, "'committed'", "INSERT INTO t VALUES (2)")
	prepareXA(t, d, "'rolledback'", "INSERT INTO t VALUES (3)")
	at, _, err := s.currentPosition(t.Context(), s.db)
	if err != nil {
		t.Fatal(err)
	}
	prepareXA(t, d, "'after'", "INSERT INTO t VALUES (4)")
	xaRun(t, d, "XA COMMIT 'committed'", "XA ROLLBACK 'rolledback'", "FLUSH BINARY LOGS")
	prepareXA(t, d, "'nextfile'", "INSERT INTO t VALUES (5)")
	prepareXA(t, d, "'decided'", "INSERT INTO t VALUES (6)")
	xaRun(t, d, "XA COMMIT 'decided'")
	got, err := s.preparedBefore(t.Context(), at)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{xidString([]byte("committed"), nil, 1), xidString([]byte("undecided"), nil, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("prepared before %s: %q, want %q", at, got, want)
	}
}

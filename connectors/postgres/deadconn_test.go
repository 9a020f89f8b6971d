package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/netproxy"
	tlog "github.com/tributary-io/tributary/log"
)

// proxiedDSN is db's DSN through p, with the server's wal_sender_timeout
// for the connection set to timeout.
func proxiedDSN(db *testDB, p *netproxy.Proxy, timeout string) string {
	dsn := strings.Replace(db.dsn, "127.0.0.1:"+strconv.Itoa(server.port), p.Addr(), 1)
	return dsn + "&options=-c%20wal_sender_timeout%3D" + timeout
}

// ids returns the ids of the change events among recs.
func ids(t *testing.T, recs []connect.Record) []int {
	t.Helper()
	var out []int
	for _, e := range decode(t, recs) {
		if e.Ev == nil || e.Ev.After == nil {
			continue
		}
		id, _ := e.Ev.After.Get("id")
		out = append(out, int(id.(int64)))
	}
	return out
}

// TestStream_DeadConnection_Partitioned partitions the network between
// the source and the server (no FIN, no RST) while rows commit: within
// wal.receiver.timeout the source takes the connection for dead and fails
// with an error the worker restarts the task on (not permanent), instead
// of waiting for the kernel to give up (~15 minutes) while it captures
// nothing; restarted from the acknowledged position once the network is
// back, it delivers every row committed meanwhile. The queries the stream
// makes on its other connection, through the same partition (heartbeats,
// reading the slot's retained WAL), must not hang it either.
func TestStream_DeadConnection_Partitioned(t *testing.T) {
	for _, c := range []struct {
		name        string
		hb          string        // heartbeat.interval
		reportEvery time.Duration // how often the slot's retained WAL is read
		what        string        // what notices the dead connection
		senderWait  string        // the server's wal_sender_timeout
	}{
		{"stream", "0", time.Hour, "receive from slot", "1s"},
		{"heartbeat", "100ms", time.Hour, "write heartbeat", "1s"},
		{"report", "0", 100 * time.Millisecond, "read the slot's retained WAL", "1s"},
		// A longer wal_sender_timeout is the shortest wait.
		{"floor", "0", time.Hour, "receive from slot", "3s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hb := c.hb
			adjust := func(s *Source) { s.reportEvery = c.reportEvery }
			db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
			p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
			dsn := proxiedDSN(db, p, c.senderWait)
			cfg := map[string]string{"snapshot.mode": "never", "tables": "public.t", "heartbeat.interval": hb, "wal.receiver.timeout": "1s"}
			s, err := tryOpenSource(t, dsn, cfg, adjust, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			db.exec(t, "INSERT INTO t VALUES (1)")
			recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return slices.Contains(ids(t, r), 1) })
			acked := lastPosition(recs)
			if err := s.Ack(t.Context(), acked); err != nil {
				t.Fatal(err)
			}

			p.Hold()
			for i := 2; i <= 4; i++ {
				db.exec(t, fmt.Sprintf("INSERT INTO t VALUES (%d)", i)) // committed directly, not through the partition
			}
			started := time.Now()
			var got []int
			for {
				recs, err := s.Read(t.Context())
				got = append(got, ids(t, recs)...)
				if err != nil {
					t.Logf("after %v of partition: %v", time.Since(started).Round(time.Millisecond), err)
					if floor, _ := time.ParseDuration(c.senderWait); time.Since(started) < floor*3/4 {
						t.Errorf("taken for dead after %v, before the server's wal_sender_timeout %v", time.Since(started), floor)
					}
					if connect.IsPermanent(err) {
						t.Errorf("a dead connection fails the task for good: %v", err)
					}
					if connect.IsRetryable(err) {
						// Retryable would make the worker call Read again on a
						// source whose runner has ended, not restart the task.
						t.Errorf("a dead connection is marked retryable: %v", err)
					}
					if !errors.Is(err, errDeadConn) || !strings.HasPrefix(err.Error(), c.what) {
						t.Errorf("error %q, want errDeadConn from %s", err, c.what)
					}
					if !strings.Contains(err.Error(), "wal.receiver.timeout") {
						t.Errorf("the error does not say what to tune: %v", err)
					}
					break
				}
				if time.Since(started) > 30*time.Second {
					t.Fatalf("the source still runs 30s into a network partition (wal.receiver.timeout 1s): the dead connection went unnoticed")
				}
			}
			closed := time.Now()
			s.Close(context.Background())
			t.Logf("Close took %v", time.Since(closed).Round(time.Millisecond))

			// The worker restarts the task from the stored position: here
			// once the network is back.
			p.Restore()
			s2, err := tryOpenSource(t, dsn, cfg, adjust, acked)
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close(context.Background())
			recs = readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
				have := append(slices.Clone(got), ids(t, r)...)
				return slices.Contains(have, 2) && slices.Contains(have, 3) && slices.Contains(have, 4)
			})
			got = append(got, ids(t, recs)...)
			t.Logf("rows after the ack: %v", got)
			for _, id := range got {
				if id < 2 || id > 4 {
					t.Errorf("row %d again: it was acknowledged before the partition", id)
				}
			}
		})
	}
}

// TestStream_DeadConnection_IdleStaysUp: a healthy stream that receives
// nothing for many timeouts (no changes, no heartbeats), or whose runner
// reads nothing from the server while it waits for a slow Read, is not
// taken for dead: the server answers the keepalive requests.
func TestStream_DeadConnection_IdleStaysUp(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	dsn := proxiedDSN(db, p, "2s")
	s, err := tryOpenSource(t, dsn, map[string]string{"snapshot.mode": "never", "tables": "public.t", "heartbeat.interval": "0",
		"wal.receiver.timeout": "2s", "batch.size": "1"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	db.exec(t, "INSERT INTO t VALUES (1)")
	readRecords(t, s, 1, 30*time.Second)
	expectQuiet(t, s, 8*time.Second) // four timeouts of silence

	db.exec(t, "INSERT INTO t SELECT g FROM generate_series(2, 20) g")
	time.Sleep(5 * time.Second) // the runner waits for Read to take its records
	db.exec(t, "INSERT INTO t VALUES (-1)")
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return slices.Contains(ids(t, r), -1) })
	if n := len(ids(t, recs)); n != 20 {
		t.Fatalf("got %d rows, want 20", n)
	}
}

// TestWorker_DeadConnection_RestartsAndLosesNothing runs the source in the
// real worker and partitions the network while rows commit: the worker
// restarts the task (the error is neither permanent nor retryable: a Read
// retried on the same source would only return it again), the new task
// connects once the network is back, and every committed row lands in the
// topic.
func TestWorker_DeadConnection_RestartsAndLosesNothing(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	p := netproxy.Start(t, "127.0.0.1:"+strconv.Itoa(server.port))
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 1})
	if err != nil {
		t.Fatal(err)
	}
	be := engine.NewEmbedded(l, logger)
	c := Connector()
	var opens atomic.Int32
	c.NewSource = func() connect.Source {
		opens.Add(1)
		return &Source{reportEvery: time.Hour} // only the replication connection notices
	}
	reg := connect.NewRegistry()
	reg.MustRegister(c)
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: be, Connectors: reg, Logger: logger,
		RestartBackoffInitial: 50 * time.Millisecond, RestartBackoffMax: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Restore()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	slot := "slot_" + sanitizeIdent(t.Name())
	spec := engine.ConnectorSpec{Pipeline: "p", Name: "src", Kind: connect.KindSource, Connector: Name, Topic: "p.{schema}.{table}",
		Config: map[string]string{"dsn": proxiedDSN(db, p, "1s"), "slot": slot[:min(len(slot), 60)], "snapshot.mode": "never", "tables": "public.t",
			"heartbeat.interval": "0", "wal.receiver.timeout": "1s"}}
	if err := w.Start(t.Context(), spec, ""); err != nil {
		t.Fatal(err)
	}
	inTopic := func() []int {
		var got []int
		err := be.ReadAll(t.Context(), "p.public.t", func(r connect.Record) error {
			ev, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
			if err != nil {
				return err
			}
			id, _ := ev.After.Get("id")
			got = append(got, int(id.(int64)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				st, _ := w.Status("src")
				t.Fatalf("timed out waiting for %s; in the topic: %v; status %+v", what, inTopic(), st)
			}
		}
	}
	// The slot exists once the first task streams: then a row.
	waitUntil("the slot", func() bool {
		return db.queryString(t, "SELECT coalesce((SELECT active::text FROM pg_replication_slots WHERE slot_name = $1), '')", spec.Config["slot"]) == "true"
	})
	db.exec(t, "INSERT INTO t VALUES (1)")
	waitUntil("row 1 in the topic", func() bool { return slices.Contains(inTopic(), 1) })

	p.Hold()
	for i := 2; i <= 4; i++ {
		db.exec(t, fmt.Sprintf("INSERT INTO t VALUES (%d)", i))
	}
	waitUntil("the task restarted", func() bool { return opens.Load() >= 2 })
	p.Restore()
	waitUntil("rows 2 to 4 in the topic", func() bool {
		got := inTopic()
		return slices.Contains(got, 2) && slices.Contains(got, 3) && slices.Contains(got, 4)
	})
	t.Logf("in the topic: %v after %d opens", inTopic(), opens.Load())
}

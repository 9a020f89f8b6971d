//go:build unix

package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/crashtest"
	tlog "github.com/tributary-io/tributary/log"
)

// The end-to-end crash test runs the connector in the real worker, in a
// child process (this test binary, re-executed), writing to the embedded
// log; the parent commits a stream of transactions meanwhile and kills the
// child with SIGKILL at random moments.
const (
	e2eDSNEnv  = "TRIBUTARY_PG_E2E_DSN"  // the child's database
	e2eSeedEnv = "TRIBUTARY_PG_E2E_SEED" // replays the delays and writes of an earlier run
	e2eSource  = "shop"
	e2eTopic   = "shop.public.orders"
	e2eSlot    = "tributary_shop"
	e2eKeys    = 40
)

func e2eLogOptions(dir string, logger *slog.Logger) tlog.Options {
	return tlog.Options{Dir: filepath.Join(dir, "data"), NumPartitions: 3, Logger: logger}
}

// TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder kills a worker
// process running the postgres source into the embedded log several times
// while transactions commit, restarting it each time; at the end, every
// committed change is in the topic, and per key the changes appear in
// commit order (a restart may deliver a suffix again: at-least-once).
func TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder(t *testing.T) {
	crashtest.Child(postgres.E2EChildEnv, func(dir string) error { return startE2EWorker(dir, os.Getenv(e2eDSNEnv)) }) // in the child: runs until killed
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(e2eSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", e2eSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, e2eSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	dsn, conn := postgres.NewTestDB(t,
		"CREATE TABLE orders (id int PRIMARY KEY, v bigint NOT NULL)",
		"ALTER TABLE orders REPLICA IDENTITY FULL", // deletes carry the old v, which names the change
		fmt.Sprintf("INSERT INTO orders SELECT g, g FROM generate_series(1, %d) g", e2eKeys/2),
	)
	w := &e2eWriter{history: map[int][]string{}, live: map[int]bool{}, next: e2eKeys}
	for id := 1; id <= e2eKeys/2; id++ {
		w.history[id] = []string{strconv.Itoa(id)}
		w.live[id] = true
	}
	dir := t.TempDir()

	// The first child snapshots the table; once a heartbeat after the
	// snapshot is confirmed, the snapshot's end is stored, and the writes
	// and the kills begin.
	child := startE2EChild(t, dir, dsn)
	var first string
	waitFor(t, "the slot", func() bool { first = confirmedLSN(t, conn); return first != "" })
	waitFor(t, "the snapshot stored and a heartbeat confirmed", func() bool {
		var moved bool
		err := conn.QueryRow(t.Context(), "SELECT confirmed_flush_lsn > $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1", e2eSlot, first).Scan(&moved)
		return err == nil && moved
	})
	stop := make(chan struct{})
	writeErr := make(chan error, 1)
	go func() { writeErr <- w.run(stop, dsn, rand.New(rand.NewPCG(seed, 1))) }()

	kills, grew := 4, 0
	last := 0
	for run := 1; run <= kills; run++ {
		delay := 300*time.Millisecond + time.Duration(rng.IntN(1200))*time.Millisecond
		time.Sleep(delay)
		child.Kill()
		got, dups := readE2ETopic(t, dir)
		n := 0
		for _, changes := range got {
			n += len(changes)
		}
		if n > last {
			grew++
		}
		last = n
		t.Logf("run %d: SIGKILL %v after start; %d transactions committed, %d changes in the topic (%d repeats)", run, delay, w.committed(), n, dups)
		child = startE2EChild(t, dir, dsn)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	if err := <-writeErr; err != nil {
		child.Kill()
		t.Fatalf("writer: %v", err)
	}
	// The last child catches up: once the slot confirms the end of the
	// WAL, everything committed is durable in the log. The end is where
	// WAL is inserted, not pg_current_wal_lsn(), where it is written: the
	// test server commits without waiting for the flush
	// (synchronous_commit=off), so that lags the last commits by up to a
	// WAL page, and a child killed once the slot passed it had not yet
	// appended them (seen in CI as missing changes, 2026-11-30).
	var end string
	if err := conn.QueryRow(t.Context(), "SELECT pg_current_wal_insert_lsn()::text").Scan(&end); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		var ok bool
		err := conn.QueryRow(t.Context(), "SELECT confirmed_flush_lsn >= $2::pg_lsn FROM pg_replication_slots WHERE slot_name = $1", e2eSlot, end).Scan(&ok)
		if err == nil && ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the slot did not confirm %s within a minute; the worker's log:\n%s", end, child.Stderr())
		}
	}
	child.Kill()

	if grew < 2 {
		t.Errorf("the topic grew in %d of %d killed runs: the children hardly captured anything before being killed", grew, kills)
	}
	got, dups := readE2ETopic(t, dir)
	checked := 0
	for id, want := range w.history {
		if err := sameInCommitOrder(want, got[id]); err != nil {
			t.Errorf("key %d: %v\n  committed: %v\n  topic:     %v", id, err, want, got[id])
		}
		checked += len(want)
	}
	for id := range got {
		if _, ok := w.history[id]; !ok {
			t.Errorf("the topic holds key %d, which was never written", id)
		}
	}
	t.Logf("%d kills: %d transactions, %d changes checked, %d delivered again after restarts", kills, w.committed(), checked, dups)
	if t.Failed() {
		// Say what the last child and the log held, for the next look.
		var confirmed string
		conn.QueryRow(context.Background(), "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", e2eSlot).Scan(&confirmed)
		t.Logf("WAL end %s, slot confirmed %s; the last child's log:\n%s", end, confirmed, child.Stderr())
		logE2EDir(t, dir)
	}
}

// logE2EDir logs the files of the worker's data directory with their
// sizes, and the ends of the topic's partitions as the log opens them.
func logE2EDir(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				t.Logf("  %s %d bytes", path, fi.Size())
			}
		}
		return nil
	})
	l, err := tlog.Open(e2eLogOptions(dir, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Logf("open the log: %v", err)
		return
	}
	defer l.Close()
	n, _ := l.Partitions(e2eTopic)
	for i := range n {
		start, end, err := l.Offsets(e2eTopic, int32(i))
		t.Logf("  %s/%d: offsets %d to %d (%v)", e2eTopic, i, start, end, err)
	}
}

// e2eWriter commits transactions of one to three changes on random keys
// and keeps, per key, the committed changes in commit order: a row's v
// for an insert or update ("17"), "d17" for the delete of the row whose v
// was 17. Every v is unique, so each change has its own name.
type e2eWriter struct {
	mu      sync.Mutex
	history map[int][]string
	txns    int
	live    map[int]bool // writer goroutine only
	next    int          // the last v used; writer goroutine only
}

func (w *e2eWriter) committed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.txns
}

// confirmedLSN returns the slot's confirmed_flush_lsn, "" while there is
// no slot.
func confirmedLSN(t *testing.T, conn *pgx.Conn) string {
	var lsn *string
	if err := conn.QueryRow(t.Context(), "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", e2eSlot).Scan(&lsn); err != nil || lsn == nil {
		return ""
	}
	return *lsn
}

// run commits transactions until stop is closed; it looks at stop only
// between transactions, so that every transaction's outcome is known.
func (w *e2eWriter) run(stop <-chan struct{}, dsn string, rng *rand.Rand) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		changes := map[int]string{}
		var order []int
		for n := 1 + rng.IntN(3); len(order) < n; {
			id := 1 + rng.IntN(e2eKeys)
			if _, seen := changes[id]; seen {
				continue
			}
			w.next++
			v := w.next
			var q string
			var change string
			switch {
			case !w.live[id]:
				q, change = fmt.Sprintf("INSERT INTO orders VALUES (%d, %d)", id, v), strconv.Itoa(v)
			case rng.IntN(4) == 0:
				q = fmt.Sprintf("DELETE FROM orders WHERE id = %d RETURNING v", id)
			default:
				q, change = fmt.Sprintf("UPDATE orders SET v = %d WHERE id = %d", v, id), strconv.Itoa(v)
			}
			if change == "" {
				var old int64
				if err := tx.QueryRow(ctx, q).Scan(&old); err != nil {
					tx.Rollback(ctx)
					return err
				}
				change = "d" + strconv.FormatInt(old, 10)
			} else if _, err := tx.Exec(ctx, q); err != nil {
				tx.Rollback(ctx)
				return err
			}
			changes[id] = change
			order = append(order, id)
		}
		if err := tx.Commit(ctx); err != nil {
			return err
		}
		w.mu.Lock()
		for _, id := range order {
			w.history[id] = append(w.history[id], changes[id])
			w.live[id] = !strings.HasPrefix(changes[id], "d")
		}
		w.txns++
		w.mu.Unlock()
		time.Sleep(time.Millisecond)
	}
}

// sameInCommitOrder checks that the topic's changes of a key, with
// repeats removed (a change seen before is delivered again), are exactly
// the committed ones in commit order.
func sameInCommitOrder(committed, topic []string) error {
	seen := map[string]bool{}
	var firsts []string
	for _, c := range topic {
		if !seen[c] {
			seen[c] = true
			firsts = append(firsts, c)
		}
	}
	for i, c := range committed {
		if i >= len(firsts) {
			return fmt.Errorf("change %s (the %d. of %d) is missing from the topic", c, i+1, len(committed))
		}
		if firsts[i] != c {
			return fmt.Errorf("the %d. change is %s in the topic, %s committed", i+1, firsts[i], c)
		}
	}
	if len(firsts) > len(committed) {
		return fmt.Errorf("the topic has changes that were never committed: %v", firsts[len(committed):])
	}
	return nil
}

// readE2ETopic reads the table's topic from the log: per key, the change
// names in log order, and how many were repeats.
func readE2ETopic(t *testing.T, dir string) (map[int][]string, int) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(e2eLogOptions(dir, logger))
	if err != nil {
		t.Fatalf("open the log: %v", err)
	}
	defer l.Close()
	got := map[int][]string{}
	seen := map[string]bool{}
	dups := 0
	err = engine.NewEmbedded(l, logger).ReadAll(t.Context(), e2eTopic, func(r connect.Record) error {
		ev, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
		if errors.Is(err, connect.ErrTombstone) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%d@%d: %w", r.Partition, r.Offset, err)
		}
		row, prefix := ev.After, ""
		if ev.Op == connect.OpDelete {
			row, prefix = ev.Before, "d"
		}
		id, _ := row.Get("id")
		v, _ := row.Get("v")
		key, _ := id.(int64)
		name := fmt.Sprintf("%s%v", prefix, v)
		if seen[name] {
			dups++
		}
		seen[name] = true
		got[int(key)] = append(got[int(key)], name)
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", e2eTopic, err)
	}
	return got, dups
}

// startE2EWorker starts the child process's worker: the postgres source
// into the embedded log on dir.
func startE2EWorker(dir, dsn string) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := tlog.Open(e2eLogOptions(dir, logger))
	if err != nil {
		return err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: connect.Default(), Logger: logger,
		RestartBackoffInitial: 50 * time.Millisecond, RestartBackoffMax: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	return w.Start(ctx, engine.ConnectorSpec{Pipeline: "e2e", Name: e2eSource, Kind: connect.KindSource, Connector: "postgres", Topic: "shop.{schema}.{table}",
		Config: map[string]string{"dsn": dsn, "tables": "public.orders", "heartbeat.interval": "100ms", "snapshot.chunk.size": "7"}}, "")
}

// startE2EChild starts a worker process on dir, killed when the test ends
// if it is still running.
func startE2EChild(t *testing.T, dir, dsn string) *crashtest.Proc {
	t.Helper()
	p := crashtest.Start(t, "child", "TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder", postgres.E2EChildEnv+"="+dir, e2eDSNEnv+"="+dsn)
	t.Cleanup(p.Kill)
	return p
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

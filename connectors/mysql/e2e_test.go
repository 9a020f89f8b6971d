//go:build unix

package mysql_test

import (
	"context"
	"database/sql"
	"encoding/json"
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

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/mysql"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/crashtest"
	tlog "github.com/tributary-io/tributary/log"
)

// The end-to-end crash test runs the connector in the real worker, in a
// child process (this test binary, re-executed), writing to the embedded
// log; the parent commits a stream of transactions meanwhile and kills the
// child with SIGKILL at random moments. The child prints the source
// position the worker stored whenever it changes ("offset {…}"), which is
// how the parent knows when the snapshot is done and when the last child
// has caught up.
const (
	e2eDSNEnv  = "TRIBUTARY_MYSQL_E2E_DSN"  // the child's server
	e2eDBEnv   = "TRIBUTARY_MYSQL_E2E_DB"   // the child's database
	e2eSeedEnv = "TRIBUTARY_MYSQL_E2E_SEED" // replays the delays and writes of an earlier run
	e2eSource  = "shop"
	e2eKeys    = 40
)

func e2eTopic(db string) string { return e2eSource + "." + db + ".orders" }

func e2eLogOptions(dir string, logger *slog.Logger) tlog.Options {
	return tlog.Options{Dir: filepath.Join(dir, "data"), NumPartitions: 3, Logger: logger}
}

// TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder kills a worker
// process running the mysql source into the embedded log several times
// while transactions commit, restarting it each time; at the end, every
// committed change is in the topic, and per key the changes appear in
// commit order (a restart may deliver a suffix again: at-least-once).
func TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder(t *testing.T) {
	crashtest.Child(mysql.E2EChildEnv, func(dir string) error { // in the child: runs until killed
		return startE2EWorker(dir, os.Getenv(e2eDSNEnv), os.Getenv(e2eDBEnv))
	})
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(e2eSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", e2eSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay with %s=%d)", seed, e2eSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	setup := []string{"CREATE TABLE orders (id int PRIMARY KEY, v bigint NOT NULL)"}
	for id := 1; id <= e2eKeys/2; id++ {
		setup = append(setup, fmt.Sprintf("INSERT INTO orders VALUES (%d, %d)", id, id))
	}
	dsn, dbName, db := mysql.NewTestDB(t, setup...)
	w := &e2eWriter{history: map[int][]string{}, live: map[int]bool{}, next: e2eKeys}
	for id := 1; id <= e2eKeys/2; id++ {
		w.history[id] = []string{strconv.Itoa(id)}
		w.live[id] = true
	}
	dir := t.TempDir()
	topic := e2eTopic(dbName)

	// The first child snapshots the table (in chunks of 7 rows); once the
	// snapshot's end is stored, the writes and the kills begin.
	child := startE2EChild(t, dir, dsn, dbName)
	waitFor(t, "the snapshot stored", func() bool {
		p, ok := childPosition(child)
		return ok && p.Snapshot == nil
	})
	stop := make(chan struct{})
	writeErr := make(chan error, 1)
	go func() { writeErr <- w.run(stop, db, rand.New(rand.NewPCG(seed, 1))) }()

	kills, grew := 4, 0
	last := 0
	for run := 1; run <= kills; run++ {
		delay := 300*time.Millisecond + time.Duration(rng.IntN(1200))*time.Millisecond
		time.Sleep(delay)
		child.Kill()
		got, dups := readE2ETopic(t, dir, topic)
		n := 0
		for _, changes := range got {
			n += len(changes)
		}
		if n > last {
			grew++
		}
		last = n
		t.Logf("run %d: SIGKILL %v after start; %d transactions committed, %d changes in the topic (%d repeats)", run, delay, w.committed(), n, dups)
		child = startE2EChild(t, dir, dsn, dbName)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	if err := <-writeErr; err != nil {
		child.Kill()
		t.Fatalf("writer: %v", err)
	}
	// The last child catches up: once the stored position covers the
	// server's last GTID, everything committed is durable in the log.
	var end string
	if err := db.QueryRow("SELECT @@GLOBAL.gtid_binlog_pos").Scan(&end); err != nil {
		t.Fatal(err)
	}
	want := gtidSeq(t, end)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if p, ok := childPosition(child); ok && p.Snapshot == nil && gtidSeq(t, p.GTIDs) >= want {
			break
		}
		if time.Now().After(deadline) {
			p, _ := childPosition(child)
			t.Fatalf("the stored position %+v did not reach the server's %s within a minute; the worker's log:\n%s", p, end, child.Stderr())
		}
	}
	child.Kill()

	if grew < 2 {
		t.Errorf("the topic grew in %d of %d killed runs: the children hardly captured anything before being killed", grew, kills)
	}
	got, dups := readE2ETopic(t, dir, topic)
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
}

// gtidSeq returns the sequence number of domain 0 in a MariaDB GTID
// position ("0-1-42" → 42).
func gtidSeq(t *testing.T, pos string) uint64 {
	t.Helper()
	for _, g := range strings.Split(pos, ",") {
		parts := strings.Split(strings.TrimSpace(g), "-")
		if len(parts) == 3 && parts[0] == "0" {
			n, err := strconv.ParseUint(parts[2], 10, 64)
			if err != nil {
				t.Fatalf("gtid %q: %v", g, err)
			}
			return n
		}
	}
	return 0
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

// run commits transactions until stop is closed; it looks at stop only
// between transactions, so that every transaction's outcome is known.
func (w *e2eWriter) run(stop <-chan struct{}, db *sql.DB, rng *rand.Rand) error {
	ctx := context.Background()
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		tx, err := db.BeginTx(ctx, nil)
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
			var change string
			switch {
			case !w.live[id]:
				_, err = tx.Exec("INSERT INTO orders VALUES (?, ?)", id, v)
				change = strconv.Itoa(v)
			case rng.IntN(4) == 0:
				var old int64
				err = tx.QueryRow("DELETE FROM orders WHERE id = ? RETURNING v", id).Scan(&old)
				change = "d" + strconv.FormatInt(old, 10)
			default:
				_, err = tx.Exec("UPDATE orders SET v = ? WHERE id = ?", v, id)
				change = strconv.Itoa(v)
			}
			if err != nil {
				tx.Rollback()
				return err
			}
			changes[id] = change
			order = append(order, id)
		}
		if err := tx.Commit(); err != nil {
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
func readE2ETopic(t *testing.T, dir, topic string) (map[int][]string, int) {
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
	err = engine.NewEmbedded(l, logger).ReadAll(t.Context(), topic, func(r connect.Record) error {
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
		t.Fatalf("read %s: %v", topic, err)
	}
	return got, dups
}

// startE2EWorker starts the child process's worker: the mysql source into
// the embedded log on dir. It prints the stored source position on stdout
// ("offset {...}") whenever it changes.
func startE2EWorker(dir, dsn, db string) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.SetDefault(logger)
	l, err := tlog.Open(e2eLogOptions(dir, logger))
	if err != nil {
		return err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: connect.Default(), Logger: logger,
		RestartBackoffInitial: 50 * time.Millisecond, RestartBackoffMax: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	err = w.Start(ctx, engine.ConnectorSpec{Pipeline: "e2e", Name: e2eSource, Kind: connect.KindSource, Connector: "mysql",
		Topic: e2eSource + ".{database}.{table}",
		Config: map[string]string{"dsn": dsn, "tables": db + ".orders", "heartbeat.interval": "100ms",
			"snapshot.chunk.size": "7", "snapshot.workers": "1"}}, "")
	if err != nil {
		return err
	}
	go func() { // runs until the process is killed
		last := ""
		for {
			time.Sleep(10 * time.Millisecond)
			es, err := w.Offsets(ctx, e2eSource)
			if err != nil || len(es) == 0 {
				continue
			}
			b, err := json.Marshal(es[0].Offset)
			if err != nil || string(b) == last {
				continue
			}
			last = string(b)
			fmt.Println("offset " + last)
		}
	}()
	return nil
}

// e2ePosition is what the parent reads of a stored position.
type e2ePosition struct {
	GTIDs    string          `json:"gtids"`
	Snapshot json.RawMessage `json:"snapshot"`
}

// startE2EChild starts a worker process on dir, killed when the test ends
// if it is still running.
func startE2EChild(t *testing.T, dir, dsn, db string) *crashtest.Proc {
	t.Helper()
	p := crashtest.Start(t, "child", "TestWorker_SIGKILL_EveryCommittedChangeInCommitOrder",
		mysql.E2EChildEnv+"="+dir, e2eDSNEnv+"="+dsn, e2eDBEnv+"="+db)
	t.Cleanup(p.Kill)
	return p
}

// childPosition returns the last stored position the child printed.
func childPosition(c *crashtest.Proc) (e2ePosition, bool) {
	s, _ := c.Last("offset")
	var p e2ePosition
	if s == "" || json.Unmarshal([]byte(s), &p) != nil {
		return p, false
	}
	return p, true
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

package postgres

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
)

// TestStream_LargeTransactionsStreamedInProgress makes the server stream
// large transactions while they are in progress (protocol 2, streaming on,
// logical_decoding_work_mem at its 64kB minimum): a committed one with an
// aborted and a released savepoint, interleaved with a small transaction
// committed meanwhile, and an aborted one. The connector buffers the
// streamed changes (spilling to a file past a tiny memory budget) and
// emits the committed transaction whole, at its commit, without the
// aborted savepoint's rows; nothing of the aborted transaction appears.
func TestStream_LargeTransactionsStreamedInProgress(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, pad text)")
	dsn := db.dsn + "&options=" + "-c%20logical_decoding_work_mem%3D64kB"
	s, err := tryOpenSource(t, dsn, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true"}, func(s *Source) { s.streamMemory = 16 << 10 }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })

	ctx := t.Context()
	big, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close(ctx)
	pad := strings.Repeat("x", 200)
	for _, q := range []string{
		"BEGIN",
		"INSERT INTO a SELECT g, '" + pad + "' FROM generate_series(1, 2000) g",
		"SAVEPOINT s1",
		"INSERT INTO a SELECT g, '" + pad + "' FROM generate_series(5001, 5500) g",
		"ROLLBACK TO SAVEPOINT s1",
		"SAVEPOINT s2",
		"INSERT INTO a SELECT g, '" + pad + "' FROM generate_series(6001, 6100) g",
		"RELEASE SAVEPOINT s2",
	} {
		if _, err := big.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The server has streamed part of the transaction by now: wait for it,
	// then commit a small transaction before the large one.
	waitStreamed(t, db, 1)
	db.exec(t, "INSERT INTO a VALUES (-5, 'small')")
	if _, err := big.Exec(ctx, "UPDATE a SET pad = 'u' WHERE id = 2000"); err != nil {
		t.Fatal(err)
	}
	if _, err := big.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	db.exec(t, "BEGIN; INSERT INTO a SELECT g, '"+pad+"' FROM generate_series(9001, 11000) g; ROLLBACK")
	db.exec(t, "INSERT INTO a VALUES (-1, 'marker')")

	recs := readUntil(t, s, 60*time.Second, untilMarker("a"))
	var got []string
	txOf := map[string]string{}
	for _, e := range decode(t, recs) {
		id, _ := e.Ev.After.Get("id")
		got = append(got, fmt.Sprint(id))
		txOf[fmt.Sprint(id)] = e.Ev.Transaction.ID
	}
	var want []string
	want = append(want, "-5")
	for i := 1; i <= 2000; i++ {
		want = append(want, fmt.Sprint(i))
	}
	for i := 6001; i <= 6100; i++ {
		want = append(want, fmt.Sprint(i))
	}
	want = append(want, "2000", "-1")
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("ids in order:\n got %d: %.300s…\nwant %d: %.300s…", len(got), strings.Join(got, " "), len(want), strings.Join(want, " "))
	}
	if txOf["1"] != txOf["6001"] || txOf["1"] == txOf["-5"] {
		t.Errorf("transaction ids: row 1 %s, row 6001 %s, row -5 %s; want the streamed rows in one transaction", txOf["1"], txOf["6001"], txOf["-5"])
	}
	// The streamed transaction's last record (its END) carries its
	// position; none of its other records do.
	var ends int
	for _, r := range recs {
		if r.Position != nil && r.Topic == "src.public.a" && strings.Contains(string(r.Value), `"id":1,`) {
			t.Errorf("a record inside the streamed transaction carries a position: %s", r.Position)
		}
		if strings.HasSuffix(r.Topic, ".transaction") && strings.Contains(string(r.Value), `"END"`) {
			ends++
			if r.Position == nil {
				t.Errorf("END record without a position: %s", r.Value)
			}
		}
	}
	if ends != 3 {
		t.Errorf("%d END records, want 3 (small, streamed, marker)", ends)
	}
	if n := streamedTxns(t, db); n < 2 {
		t.Errorf("the server streamed %d transactions, want both large ones: the test did not exercise streaming", n)
	}
}

// streamedTxns returns how many transactions the server streamed through
// the test's slot.
func streamedTxns(t *testing.T, db *testDB) int64 {
	var n int64
	if err := db.conn.QueryRow(t.Context(), "SELECT COALESCE(sum(stream_txns), 0)::bigint FROM pg_stat_replication_slots s JOIN pg_replication_slots r USING (slot_name) WHERE r.database = $1", db.name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func waitStreamed(t *testing.T, db *testDB, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for streamedTxns(t, db) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the server streamed no transaction within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStream_StreamedTransactionWithOrigin streams a large transaction
// made by a session with a replication origin (as a logical replication
// subscriber's apply worker makes them): pgoutput then sends an Origin
// message, which carries no transaction id, right after the Stream Start.
// It must not be taken for a change of the streamed transaction.
func TestStream_StreamedTransactionWithOrigin(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, pad text)")
	dsn := db.dsn + "&options=" + "-c%20logical_decoding_work_mem%3D64kB"
	s, err := tryOpenSource(t, dsn, map[string]string{"snapshot.mode": "never"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	ctx := t.Context()
	big, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close(ctx)
	// A name shorter than 4 bytes: read as a change, the origin message
	// would then be too short to parse (longer ones were misread quietly).
	t.Cleanup(func() { db.conn.Exec(context.Background(), "SELECT pg_replication_origin_drop('o1')") })
	pad := strings.Repeat("x", 200)
	for _, q := range []string{
		"SELECT pg_replication_origin_create('o1')",
		"SELECT pg_replication_origin_session_setup('o1')",
		"BEGIN",
		"INSERT INTO a SELECT g, '" + pad + "' FROM generate_series(1, 1000) g",
		"COMMIT",
		"SELECT pg_replication_origin_session_reset()",
		"SELECT pg_replication_origin_drop('o1')",
	} {
		if _, err := big.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.exec(t, "INSERT INTO a VALUES (-1, 'marker')")
	recs := readUntil(t, s, 30*time.Second, untilMarker("a"))
	evs := decode(t, recs)
	if len(evs) != 1001 {
		t.Fatalf("got %d events, want the 1000 rows of the streamed transaction and the marker", len(evs))
	}
	if id, _ := evs[999].Ev.After.Get("id"); fmt.Sprint(id) != "1000" {
		t.Errorf("event 999 has id %v, want 1000", id)
	}
	if n := streamedTxns(t, db); n < 1 {
		t.Errorf("the server streamed no transaction: the test did not exercise streaming")
	}
}

// TestStream_RestartInsideStreamedTransaction stops the source while the
// server is streaming a large transaction (part of it buffered, nothing of
// it emitted), acknowledging everything emitted before, while a heartbeat
// moves the slot past the transaction's start. After the commit, a new
// source resumes from the stored position: the transaction comes whole,
// once.
func TestStream_RestartInsideStreamedTransaction(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, pad text)")
	dsn := db.dsn + "&options=" + "-c%20logical_decoding_work_mem%3D64kB"
	cfg := map[string]string{"snapshot.mode": "never", "heartbeat.interval": "100ms"}
	s, err := tryOpenSource(t, dsn, cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	big, err := pgx.Connect(ctx, db.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close(ctx)
	pad := strings.Repeat("x", 200)
	for _, q := range []string{"BEGIN", "INSERT INTO a SELECT g, '" + pad + "' FROM generate_series(1, 2000) g"} {
		if _, err := big.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waitStreamed(t, db, 1)
	// Heartbeats written after the transaction began: acknowledging them
	// confirms an LSN inside it.
	var stored connect.Position
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return len(r) >= 3 })
	for _, r := range recs {
		if !strings.HasPrefix(r.Topic, "__debezium-heartbeat.") {
			t.Fatalf("before the commit: %s %s", r.Topic, r.Value)
		}
	}
	stored = lastPosition(recs)
	if err := s.Ack(ctx, stored); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // the runner confirms it
	s.Close(context.Background())
	if _, err := big.Exec(ctx, "COMMIT"); err != nil {
		t.Fatal(err)
	}
	db.exec(t, "INSERT INTO a VALUES (-1, 'marker')")
	s2, err := tryOpenSource(t, dsn, cfg, nil, stored)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close(context.Background()) })
	seen := map[string]int{}
	n := 0
	for _, e := range decode(t, readUntil(t, s2, 60*time.Second, untilMarker("a"))) {
		if e.Ev == nil || e.Rec.Topic != "src.public.a" {
			continue
		}
		seen[string(e.Rec.Key)]++
		n++
	}
	if n != 2001 || len(seen) != 2001 {
		t.Errorf("%d events of %d keys after the restart, want the 2000 rows and the marker once each", n, len(seen))
	}
}

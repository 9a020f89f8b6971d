package mysql

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

const signalDDL = "CREATE TABLE debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)"

// incDone reports whether recs end with a position without an incremental
// snapshot in progress, after at least one incremental read.
func incDone(t *testing.T, recs []connect.Record) bool {
	seen := false
	for _, e := range decode(t, recs) {
		if e.Ev != nil && e.Ev.Op == connect.OpRead {
			seen = true
			break
		}
	}
	p := lastPosition(recs)
	if !seen || p == nil {
		return false
	}
	pos, err := decodePosition(p)
	return err == nil && pos.Incremental == nil
}

// TestIncremental_WritesDuringSnapshot runs an incremental snapshot, asked
// for with a row in the signal table, while a writer updates, deletes and
// inserts rows of the table, restarts the source from its last position
// in the middle, and checks that the table rebuilt from every record
// equals the table: a chunk never overwrote a newer streamed change.
func TestIncremental_WritesDuringSnapshot(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(40))", signalDDL,
		"INSERT INTO t SELECT seq, CONCAT('init-', seq) FROM seq_1_to_3000")
	values := map[string]string{"snapshot.mode": "never", "tables": d.name + ".t",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "100"}
	s := openSource(t, d, values, nil)

	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(seed, 2))
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			id := 1 + rng.IntN(3300)
			var err error
			switch rng.IntN(5) {
			case 0, 1:
				_, err = d.db.Exec("UPDATE t SET v = ? WHERE id = ?", fmt.Sprintf("upd-%d", i), id)
			case 2:
				_, err = d.db.Exec("DELETE FROM t WHERE id = ?", id)
			default:
				_, err = d.db.Exec("INSERT INTO t VALUES (?, ?) ON DUPLICATE KEY UPDATE v = VALUES(v)", id, fmt.Sprintf("ins-%d", i))
			}
			if err != nil {
				writeErr = err
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()

	d.exec(t, "INSERT INTO debezium_signal VALUES ('sig-1', 'execute-snapshot', ?)",
		fmt.Sprintf(`{"data-collections": ["%s.t"], "type": "incremental"}`, d.name))

	// Read until the first incremental rows came, then restart from the
	// last stored position, as a worker would after a crash.
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		n := 0
		for _, e := range decode(t, r) {
			if e.Ev != nil && e.Ev.Op == connect.OpRead {
				n++
			}
		}
		return n >= 400 && lastPosition(r) != nil
	})
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Position != nil {
			recs = recs[:i+1]
			break
		}
	}
	pos := lastPosition(recs)
	if p, err := decodePosition(pos); err != nil || p.Incremental == nil || len(p.Incremental.Last) == 0 {
		t.Fatalf("position %s (%v): want an incremental snapshot in progress", pos, err)
	}
	s.Close(context.Background())
	s = openSource(t, d, values, pos)
	recs = append(recs, readUntil(t, s, 120*time.Second, func(r []connect.Record) bool { return incDone(t, r) })...)
	close(stop)
	wg.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	d.exec(t, "INSERT INTO t VALUES (-1, 'end')")
	recs = append(recs, readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		for _, e := range decode(t, r) {
			if string(e.Rec.Key) == `{"id":-1}` {
				return true
			}
		}
		return false
	})...)

	reads := 0
	for _, e := range decode(t, recs) {
		if e.Ev != nil && e.Ev.Op == connect.OpRead {
			reads++
			if e.Ev.Source.Snapshot != connect.SnapshotIncremental {
				t.Fatalf("op r with source.snapshot %q: %s", e.Ev.Source.Snapshot, e.Rec.Value)
			}
		}
		if strings.Contains(string(e.Rec.Value), "debezium_signal") {
			t.Fatalf("an event of the signal table, which is not captured: %s", e.Rec.Value)
		}
	}
	got := map[string]string{}
	apply(t, got, recs)
	want := tableState(t, d, "t")
	if diff := diffStates(want, got); diff != "" {
		t.Fatalf("rebuilt table differs from the table (%d records, %d incremental reads):\n%s", len(recs), reads, diff)
	}
	t.Logf("%d records, %d incremental reads, %d rows", len(recs), reads, len(want))
}

// TestIncremental_API runs an incremental snapshot asked for with
// ExecuteSnapshot, pauses and resumes it, and checks stop-snapshot and the
// errors of a source without a signal table.
func TestIncremental_API(t *testing.T) {
	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v int)", "CREATE TABLE b (k varchar(10) PRIMARY KEY)", signalDDL,
		"INSERT INTO a SELECT seq, seq FROM seq_1_to_50", "INSERT INTO b VALUES ('x'), ('y')")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + ".a," + d.name + ".b",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "20"}, nil)
	ctx := t.Context()
	if err := s.PauseSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.ExecuteSnapshot(ctx, []string{d.name + `\.(a|b)`}); err != nil {
		t.Fatal(err)
	}
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool { return incDone(t, r) })
	got := map[string]int{}
	for _, e := range decode(t, recs) {
		if e.Ev != nil {
			got[e.Rec.Topic]++
		}
	}
	if got["src."+d.name+".a"] != 50 || got["src."+d.name+".b"] != 2 {
		t.Fatalf("incremental reads by topic %v, want 50 of a and 2 of b", got)
	}

	// Paused: nothing is read until resumed; the pause is in the position.
	if err := s.ExecuteSnapshot(ctx, []string{d.name + ".a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.PauseSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	paused := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		p := lastPosition(r)
		if p == nil {
			return false
		}
		pos, err := decodePosition(p)
		return err == nil && pos.Incremental != nil && pos.Incremental.Paused
	})
	reads := 0
	for _, e := range decode(t, paused) {
		if e.Ev != nil && e.Ev.Op == connect.OpRead {
			reads++
		}
	}
	if reads >= 50 {
		t.Fatalf("%d reads before the pause took effect: the whole table", reads)
	}
	expectQuiet(t, s, 500*time.Millisecond)
	if err := s.ResumeSnapshot(ctx); err != nil {
		t.Fatal(err)
	}
	readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		p := lastPosition(r)
		if p == nil {
			return false
		}
		pos, _ := decodePosition(p)
		return pos.Incremental == nil
	})

	// No signal table: ExecuteSnapshot says what to set.
	s2 := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	if err := s2.ExecuteSnapshot(ctx, []string{d.name + ".a"}); err == nil || !strings.Contains(err.Error(), "signal.data.collection") {
		t.Fatalf("ExecuteSnapshot without a signal table: %v", err)
	}
}

// TestIncremental_Schemas runs an incremental snapshot with schemas
// embedded (keys {"schema":…,"payload":…}) while rows change, and checks
// the rebuilt table.
func TestIncremental_Schemas(t *testing.T) {
	d := newDB(t, "CREATE TABLE k (a int, b varchar(10), v int, PRIMARY KEY (a, b))", signalDDL,
		"INSERT INTO k SELECT seq, CONCAT('b', seq % 3), seq FROM seq_1_to_90")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "schemas": "true", "tables": d.name + ".k",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "7"}, nil)
	// A name that matches nothing captured, or is no pattern, is refused
	// to the sender (REST answers 400), not only logged.
	for _, bad := range []string{d.name + ".nope", d.name + ".(k"} {
		err := s.ExecuteSnapshot(t.Context(), []string{d.name + ".k", bad})
		if !errors.Is(err, connect.ErrBadSignal) || !strings.Contains(err.Error(), bad) {
			t.Fatalf("ExecuteSnapshot(%s) = %v, want ErrBadSignal naming it", bad, err)
		}
	}
	if err := s.ExecuteSnapshot(t.Context(), []string{d.name + ".k"}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 90; i += 4 {
		d.exec(t, "UPDATE k SET v = -v WHERE a = ?", i)
	}
	d.exec(t, "DELETE FROM k WHERE a > 80")
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool { return incDone(t, r) })
	d.exec(t, "INSERT INTO k VALUES (-1, 'end', 0)")
	recs = append(recs, readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		for _, rec := range r {
			if strings.Contains(string(rec.Key), `"end"`) {
				return true
			}
		}
		return false
	})...)
	// Rebuild by the keys' payloads, rows by their after payloads.
	got := map[string]string{}
	for _, e := range decode(t, recs) {
		k := e.Rec.Key
		if i := strings.Index(string(k), `"payload":`); i >= 0 {
			k = k[i+len(`"payload":`) : len(k)-1]
		}
		if e.Ev == nil || e.Ev.Op == connect.OpDelete {
			delete(got, string(k))
			continue
		}
		got[string(k)] = e.Ev.After.String()
	}
	want := tableState(t, d, "k")
	if diff := diffStates(want, got); diff != "" {
		t.Fatalf("rebuilt table differs:\n%s", diff)
	}
}

// TestIncremental_ResumesAfterBinaryKey restarts an incremental snapshot
// of a table keyed by BINARY(16) UUIDs (bytes that are not UTF-8) from a
// position in the middle: the position keeps the last key's bytes, so
// every row is read once, none skipped and none again.
func TestIncremental_ResumesAfterBinaryKey(t *testing.T) {
	d := newDB(t, "CREATE TABLE u (id BINARY(16) PRIMARY KEY, n int NOT NULL)", signalDDL,
		"INSERT INTO u SELECT UNHEX(MD5(seq)), seq FROM seq_1_to_300")
	values := map[string]string{"snapshot.mode": "never", "tables": d.name + ".u",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "20"}
	s := openSource(t, d, values, nil)
	if err := s.ExecuteSnapshot(t.Context(), []string{d.name + ".u"}); err != nil {
		t.Fatal(err)
	}
	reads := func(recs []connect.Record) map[string]int {
		seen := map[string]int{}
		for _, e := range decode(t, recs) {
			if e.Ev != nil && e.Ev.Op == connect.OpRead {
				n, _ := e.Ev.After.Get("n")
				seen[fmt.Sprint(n)]++
			}
		}
		return seen
	}
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		p, err := decodePosition(lastPosition(r))
		return len(reads(r)) >= 100 && err == nil && p.Incremental != nil && len(p.Incremental.Last) > 0
	})
	for len(recs) > 0 && recs[len(recs)-1].Position == nil {
		recs = recs[:len(recs)-1]
	}
	pos := lastPosition(recs)
	s.Close(context.Background())
	s = openSource(t, d, values, pos)
	recs = append(recs, readUntil(t, s, 60*time.Second, func(r []connect.Record) bool { return incDone(t, r) })...)
	seen := reads(recs)
	for i := 1; i <= 300; i++ {
		if c := seen[fmt.Sprint(i)]; c != 1 {
			t.Errorf("row n=%d read %d times, want once (resumed from %s)", i, c, pos)
		}
	}
}

package postgres

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// untilIncrementalDone reads until an incremental snapshot has emitted
// rows and a later position no longer holds its state.
func untilIncrementalDone(recs []connect.Record) bool {
	seen := false
	for _, r := range recs {
		if !seen && r.Value != nil && strings.Contains(string(r.Value), `"snapshot":"incremental"`) {
			seen = true
		}
		if seen && r.Position != nil {
			if p, _ := decodePosition(r.Position); p.Incremental == nil {
				return true
			}
		}
	}
	return false
}

// TestIncrementalSnapshot_SignalWhileWriting streams a table without an
// initial snapshot, then asks for an incremental snapshot with a row in
// the signal table while random inserts, updates and deletes go on: the
// state rebuilt from the records equals the table (a chunk never brings
// back a deleted row nor an older value), and the rows read carry
// source.snapshot "incremental".
func TestIncrementalSnapshot_SignalWhileWriting(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY, v int)",
		"INSERT INTO a SELECT g, g FROM generate_series(1, 1500) g",
		"CREATE TABLE sig (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
	)
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "tables": "public.*", "signal.data.collection": "public.sig",
		"snapshot.chunk.size": "40", "provide.transaction.metadata": "true"}, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		writeRandomly(t, db.dsn, []string{"a"}, 600, 1600, 7)
	}()
	time.Sleep(50 * time.Millisecond)
	db.exec(t, `INSERT INTO sig VALUES ('s1', 'execute-snapshot', '{"data-collections": ["public.a"], "type": "incremental"}')`)
	recs := readUntil(t, s, 60*time.Second, untilIncrementalDone)
	wg.Wait()
	db.exec(t, "INSERT INTO a VALUES (-1, 0)")
	recs = append(recs, readUntil(t, s, 30*time.Second, untilMarker("a"))...)

	reads := 0
	for _, e := range decode(t, recs) {
		if e.rec.Topic == "src.public.sig" {
			t.Fatalf("the signal table's rows became events: %s", e.rec.Value)
		}
		if e.ev != nil && e.ev.Op == connect.OpRead {
			reads++
			if e.ev.Source.Snapshot != connect.SnapshotIncremental || e.ev.Transaction != nil {
				t.Errorf("incremental row: snapshot %q, transaction %+v", e.ev.Source.Snapshot, e.ev.Transaction)
			}
		}
	}
	if reads < 500 {
		t.Errorf("%d rows read by the incremental snapshot, want most of the 1500", reads)
	}
	got := rebuild(t, recs, "src.public.a")
	want := tableState(t, db, "public.a")
	if d := diffStates(want, got); d != "" {
		t.Errorf("the table rebuilt from stream and incremental snapshot differs:\n%s", d)
	}
	if rep := s.Report(); rep.Phase != phaseStreaming {
		t.Errorf("phase after the incremental snapshot = %q", rep.Phase)
	}
}

// TestIncrementalSnapshot_MethodStopAndResume starts an incremental
// snapshot with ExecuteSnapshot, restarts from a position in its middle
// (it resumes after the last chunk), and stops it with StopSnapshot.
func TestIncrementalSnapshot_MethodStopAndResume(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY)",
		"INSERT INTO a SELECT generate_series(1, 300)",
		"CREATE TABLE b (id int PRIMARY KEY)",
		"INSERT INTO b SELECT generate_series(1, 300)",
	)
	values := map[string]string{"snapshot.mode": "never", "snapshot.chunk.size": "50"}
	s := openSource(t, db, values, nil)
	if err := s.ExecuteSnapshot(t.Context(), []string{`public\.(a|b)`}); err != nil {
		t.Fatal(err)
	}
	var stored connect.Position
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		for _, rec := range r {
			if rec.Position != nil {
				if p, _ := decodePosition(rec.Position); p.Incremental != nil && len(p.Incremental.Last) == 1 && p.Incremental.Last[0] == "100" {
					stored = rec.Position
					return true
				}
			}
		}
		return false
	})
	s.Close(context.Background())
	if len(decode(t, recs)) < 100 {
		t.Fatalf("%d records before the stored position, want 100", len(recs))
	}
	p, _ := decodePosition(stored)
	if jsonOf(p.Incremental.Tables) != `["public.a","public.b"]` {
		t.Errorf("incremental state %+v, want tables a and b", p.Incremental)
	}

	s2 := openSource(t, db, values, stored)
	first := readRecords(t, s2, 1, 30*time.Second)
	if e := decode(t, first); len(e) == 0 || string(e[0].rec.Key) != `{"id":101}` {
		t.Fatalf("after the restart the snapshot goes on with %s, want id 101", dump(first))
	}
	if err := s2.StopSnapshot(t.Context(), []string{"public.a"}); err != nil {
		t.Fatal(err)
	}
	rest := readUntil(t, s2, 30*time.Second, untilIncrementalDone)
	var fromB int
	for _, e := range decode(t, rest) {
		if e.rec.Topic == "src.public.b" {
			fromB++
		}
	}
	if fromB != 300 {
		t.Errorf("after stopping a, %d rows of b, want 300", fromB)
	}
}

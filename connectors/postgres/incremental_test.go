package postgres

import (
	"context"
	"errors"
	"fmt"
	"strconv"
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
		if e.Rec.Topic == "src.public.sig" {
			t.Fatalf("the signal table's rows became events: %s", e.Rec.Value)
		}
		if e.Ev != nil && e.Ev.Op == connect.OpRead {
			reads++
			if e.Ev.Source.Snapshot != connect.SnapshotIncremental || e.Ev.Transaction != nil {
				t.Errorf("incremental row: snapshot %q, transaction %+v", e.Ev.Source.Snapshot, e.Ev.Transaction)
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
	// A name that matches nothing captured, or is no pattern, is refused
	// to the sender (REST answers 400), not only logged.
	for _, bad := range []string{"public.nope", "public.(a"} {
		err := s.ExecuteSnapshot(t.Context(), []string{`public\.(a|b)`, bad})
		if !errors.Is(err, connect.ErrBadSignal) || !strings.Contains(err.Error(), bad) {
			t.Fatalf("ExecuteSnapshot(%s) = %v, want ErrBadSignal naming it", bad, err)
		}
	}
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
	if e := decode(t, first); len(e) == 0 || string(e[0].Rec.Key) != `{"id":101}` {
		t.Fatalf("after the restart the snapshot goes on with %s, want id 101", dump(first))
	}
	if err := s2.StopSnapshot(t.Context(), []string{"public.a"}); err != nil {
		t.Fatal(err)
	}
	rest := readUntil(t, s2, 30*time.Second, untilIncrementalDone)
	var fromB int
	for _, e := range decode(t, rest) {
		if e.Rec.Topic == "src.public.b" {
			fromB++
		}
	}
	if fromB != 300 {
		t.Errorf("after stopping a, %d rows of b, want 300", fromB)
	}
}

// incrementalRows counts the op r rows of topic among recs.
func incrementalRows(recs []connect.Record, topic string) int {
	n := 0
	for _, r := range recs {
		if r.Topic == topic && r.Value != nil && strings.Contains(string(r.Value), `"snapshot":"incremental"`) {
			n++
		}
	}
	return n
}

// TestIncrementalSnapshot_PauseSurvivesRestart pauses an incremental
// snapshot with a pause-snapshot row in the signal table: the pause is
// stored in a position even though no captured row changes, no chunk is
// read after the one in progress while streaming goes on, a restart from
// the stored position stays paused, and ResumeSnapshot reads the rest of
// the table, every row once.
func TestIncrementalSnapshot_PauseSurvivesRestart(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY)",
		"INSERT INTO a SELECT generate_series(1, 400)",
		"CREATE TABLE b (id int PRIMARY KEY)",
		"CREATE TABLE sig (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))",
	)
	values := map[string]string{"snapshot.mode": "never", "snapshot.chunk.size": "20", "tables": "public.*", "signal.data.collection": "public.sig"}
	s := openSource(t, db, values, nil)
	if err := s.ExecuteSnapshot(t.Context(), []string{"public.a"}); err != nil {
		t.Fatal(err)
	}
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return incrementalRows(r, "src.public.a") >= 20 })
	db.exec(t, `INSERT INTO sig VALUES ('p1', 'pause-snapshot', '{"type": "incremental"}')`)
	// The pause reaches a stored position without any captured change.
	var paused connect.Position
	recs = append(recs, readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		for _, rec := range r {
			if rec.Position != nil {
				if p, _ := decodePosition(rec.Position); p.Incremental != nil && p.Incremental.Paused {
					paused = rec.Position
					return true
				}
			}
		}
		return false
	})...)
	// Streaming goes on; at most the chunk in progress follows the pause.
	before := incrementalRows(recs, "src.public.a")
	more := streamMarkers(t, db, s, 1)
	if n := incrementalRows(more, "src.public.a"); n > 20 {
		t.Errorf("%d rows read after the pause, want at most the chunk in progress (20)", n)
	}
	if rep := s.Report(); rep.Phase != phaseIncrementalPaused {
		t.Errorf("phase while paused = %q, want %q", rep.Phase, phaseIncrementalPaused)
	}
	recs = append(recs, more...)
	if before+incrementalRows(more, "src.public.a") >= 400 {
		t.Fatalf("the whole table was read before the pause took effect; make the table larger")
	}
	stored := lastPosition(recs)
	if p, _ := decodePosition(stored); p.Incremental == nil || !p.Incremental.Paused {
		t.Fatalf("the last stored position %s does not hold the paused snapshot (paused one: %s)", stored, paused)
	}
	s.Close(context.Background())

	// After a restart the snapshot is still paused.
	s2 := openSource(t, db, values, stored)
	quiet := streamMarkers(t, db, s2, 100)
	if n := incrementalRows(quiet, "src.public.a"); n > 0 {
		t.Errorf("%d rows read after a restart while paused, want none", n)
	}
	if rep := s2.Report(); rep.Phase != phaseIncrementalPaused {
		t.Errorf("phase after the restart = %q, want %q", rep.Phase, phaseIncrementalPaused)
	}
	if err := s2.ResumeSnapshot(t.Context()); err != nil {
		t.Fatal(err)
	}
	rest := readUntil(t, s2, 30*time.Second, untilIncrementalDone)
	// Every row after the stored chunk's last key comes exactly once.
	p, _ := decodePosition(stored)
	last := 0
	if len(p.Incremental.Last) == 1 {
		last = atoiT(t, p.Incremental.Last[0])
	}
	seen := map[string]int{}
	for _, r := range rest {
		if r.Topic == "src.public.a" && r.Value != nil && strings.Contains(string(r.Value), `"snapshot":"incremental"`) {
			seen[string(r.Key)]++
		}
	}
	for id := last + 1; id <= 400; id++ {
		if k := `{"id":` + strconv.Itoa(id) + `}`; seen[k] != 1 {
			t.Errorf("row %d read %d times after resuming, want once", id, seen[k])
		}
	}
	if len(seen) != 400-last {
		t.Errorf("%d rows read after resuming, want %d (after key %d)", len(seen), 400-last, last)
	}
}

// streamMarkers commits ten rows into b, one at a time, reading each
// back before the next: enough turns of the stream loop for a snapshot
// that is not paused to read several chunks.
func streamMarkers(t *testing.T, db *testDB, s *Source, from int) []connect.Record {
	t.Helper()
	var recs []connect.Record
	for id := from; id < from+10; id++ {
		db.exec(t, "INSERT INTO b VALUES ($1)", id)
		key := fmt.Sprintf(`{"id":%d}`, id)
		recs = append(recs, readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
			for _, rec := range r {
				if rec.Topic == "src.public.b" && string(rec.Key) == key {
					return true
				}
			}
			return false
		})...)
	}
	return recs
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

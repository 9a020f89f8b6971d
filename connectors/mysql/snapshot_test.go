package mysql

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestSnapshot_ThenStreamWithConcurrentWrites snapshots two tables in
// small chunks while a writer changes them, then streams; the state
// rebuilt from the records equals the tables.
func TestSnapshot_ThenStreamWithConcurrentWrites(t *testing.T) {
	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v int)", "CREATE TABLE b (k1 int, k2 varchar(10), v text, PRIMARY KEY (k1, k2))")
	for i := 0; i < 300; i++ {
		d.exec(t, fmt.Sprintf("INSERT INTO a VALUES (%d, %d)", i, i))
		d.exec(t, fmt.Sprintf("INSERT INTO b VALUES (%d, 'k%d', 'v%d')", i%10, i, i))
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			d.db.Exec(fmt.Sprintf("UPDATE a SET v = v + 1 WHERE id = %d", i%300))
			d.db.Exec(fmt.Sprintf("DELETE FROM b WHERE k1 = %d AND k2 = 'k%d'", i%10, i%300))
			d.db.Exec(fmt.Sprintf("INSERT INTO a VALUES (%d, 0)", 1000+i))
		}
	}()
	s := openSource(t, d, map[string]string{"snapshot.chunk.size": "25", "snapshot.workers": "2"}, nil)
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	})
	// The snapshot: every chunk's last record carries progress; first and last are marked.
	evs := decode(t, recs)
	if evs[0].Ev.Source.Snapshot != "first" || evs[len(evs)-1].Ev.Source.Snapshot != "last" {
		t.Errorf("snapshot marks: first %s last %s", evs[0].Ev.Source.Snapshot, evs[len(evs)-1].Ev.Source.Snapshot)
	}
	close(stop)
	wg.Wait()
	d.exec(t, "INSERT INTO a VALUES (99999, 1)")
	more := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		return strings.Contains(string(lastValue(r)), `"id":99999`)
	})
	recs = append(recs, more...)
	byTable := map[string][]connect.Record{}
	for _, r := range recs {
		parts := strings.Split(r.Topic, ".")
		byTable[parts[len(parts)-1]] = append(byTable[parts[len(parts)-1]], r)
	}
	for _, tbl := range []string{"a", "b"} {
		state := map[string]string{}
		apply(t, state, byTable[tbl])
		want := tableState(t, d, tbl)
		if diff := diffStates(want, state); diff != "" {
			t.Errorf("table %s rebuilt from the records differs (%d rows vs %d):\n%s", tbl, len(state), len(want), diff)
		}
	}
}

func lastValue(recs []connect.Record) []byte {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Value != nil {
			return recs[i].Value
		}
	}
	return nil
}

// TestSnapshot_ResumesAfterLastChunk stops a snapshot after a chunk and
// restarts it from the stored position: the finished chunks are not read
// again.
func TestSnapshot_ResumesAfterLastChunk(t *testing.T) {
	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)")
	for i := 0; i < 100; i++ {
		d.exec(t, fmt.Sprintf("INSERT INTO a VALUES (%d)", i))
	}
	s := openSource(t, d, map[string]string{"snapshot.chunk.size": "10", "snapshot.workers": "1"}, nil)
	recs := readRecords(t, s, 30, 30*time.Second)
	pos := lastPosition(recs)
	s.Close(context.Background())
	if !strings.Contains(string(pos), `"snapshot"`) {
		t.Fatalf("position %s has no snapshot progress", pos)
	}
	p, _ := decodePosition(pos)
	last := p.Snapshot.Last[d.name+".a"]
	s2 := openSource(t, d, nil, pos)
	rest := readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	})
	evs := decode(t, rest)
	first, _ := evs[0].Ev.After.Get("id")
	if fmt.Sprint(first) != fmt.Sprint(atoiT(t, last[0])+1) || len(evs) != 100-atoiT(t, last[0])-1 {
		t.Errorf("resumed at %v with %d rows, last key was %v", first, len(evs), last)
	}
}

func atoiT(t *testing.T, s string) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSnapshot_LargeChunkEncodedInParallel reads a table as one chunk
// large enough to be encoded on several goroutines: every row once, in key
// order, first and last marked.
func TestSnapshot_LargeChunkEncodedInParallel(t *testing.T) {
	d := newDB(t, "CREATE TABLE a (id int PRIMARY KEY, v varchar(40))")
	d.exec(t, "INSERT INTO a SELECT seq, REPEAT('x', seq % 40) FROM seq_0_to_999")
	s := openSource(t, d, map[string]string{"snapshot.mode": "initial_only"}, nil)
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	})
	evs := decode(t, recs)
	if len(evs) != 1000 {
		t.Fatalf("%d records, want 1000", len(evs))
	}
	for i, e := range evs {
		if got, want := e.Ev.After.String(), fmt.Sprintf(`{"id":%d,"v":%q}`, i, strings.Repeat("x", i%40)); got != want {
			t.Fatalf("record %d: %s, want %s", i, got, want)
		}
		want := "true"
		switch i {
		case 0:
			want = "first"
		case 999:
			want = "last"
		}
		if e.Ev.Source.Snapshot != want {
			t.Errorf("record %d: snapshot %q, want %q", i, e.Ev.Source.Snapshot, want)
		}
	}
}

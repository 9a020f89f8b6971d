package mysql

import (
	"context"
	"fmt"
	"strconv"
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

// orderedKeyTables are tables whose key columns ORDER BY sorts by number
// while a string compares with them otherwise: ENUM by label index, SET
// by bits, BIT as a number; labels are out of alphabetical order.
var orderedKeyTables = []struct {
	ddl, rows string
	keys      []string // in key order
}{
	{"CREATE TABLE e (k enum('b','a','c') NOT NULL PRIMARY KEY, v int)",
		"INSERT INTO e VALUES ('a', 1), ('b', 2), ('c', 3)",
		[]string{`{"k":"b"}`, `{"k":"a"}`, `{"k":"c"}`}},
	{"CREATE TABLE s (k set('z','y','x') NOT NULL PRIMARY KEY, v int)",
		"INSERT INTO s VALUES ('', 0), ('z', 1), ('y', 2), ('z,y', 3), ('x', 4)",
		[]string{`{"k":""}`, `{"k":"z"}`, `{"k":"y"}`, `{"k":"z,y"}`, `{"k":"x"}`}},
	{"CREATE TABLE b (k bit(12) NOT NULL PRIMARY KEY, v int)",
		"INSERT INTO b VALUES (1, 1), (5, 2), (200, 3), (3000, 4)",
		nil}, // BIT keys are bytes in events: counted, not named
	{"CREATE TABLE c (k enum('b','a') NOT NULL, n int NOT NULL, PRIMARY KEY (k, n))",
		"INSERT INTO c VALUES ('a', 1), ('a', 2), ('b', 1), ('b', 2)",
		[]string{`{"k":"b","n":1}`, `{"k":"b","n":2}`, `{"k":"a","n":1}`, `{"k":"a","n":2}`}},
}

// TestSnapshot_EnumSetBitKeysInKeyOrder pages through tables by key, one
// row a chunk: ORDER BY key, then WHERE (key) > (the last key). ENUM, SET
// and BIT columns sort by number; compared with the last key as text
// (an ENUM's label) the next chunk skipped rows the ORDER BY put after it.
// Every row is read once, in the initial snapshot and in a restart from
// each of its positions.
func TestSnapshot_EnumSetBitKeysInKeyOrder(t *testing.T) {
	for _, tc := range orderedKeyTables {
		d := newDB(t, tc.ddl, tc.rows)
		table := strings.Fields(tc.ddl)[2]
		want, _ := strconv.Atoi(d.queryString(t, "SELECT COUNT(*) FROM "+table))
		values := map[string]string{"snapshot.mode": "initial_only", "snapshot.chunk.size": "1", "tables": d.name + "." + table}
		s := openSource(t, d, values, nil)
		recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
			if len(r) == 0 {
				return false
			}
			p, _ := decodePosition(r[len(r)-1].Position)
			return r[len(r)-1].Position != nil && p.Snapshot == nil
		})
		s.Close(t.Context())
		checkSnapshotKeys(t, table, recs, tc.keys, want)
		// A restart from the position of the first chunk reads the rest.
		first := recs[0].Position
		if first == nil {
			t.Fatalf("%s: the first chunk carries no position:\n%s", table, dump(recs))
		}
		s2 := openSource(t, d, values, first)
		rest := readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
			if len(r) == 0 {
				return false
			}
			p, _ := decodePosition(r[len(r)-1].Position)
			return r[len(r)-1].Position != nil && p.Snapshot == nil
		})
		s2.Close(t.Context())
		var tail []string
		if tc.keys != nil {
			tail = tc.keys[1:]
		}
		checkSnapshotKeys(t, table+" resumed", rest, tail, want-1)
	}
}

// TestIncremental_EnumSetBitKeysInKeyOrder: the incremental snapshot's
// chunks page by key like the initial snapshot's.
func TestIncremental_EnumSetBitKeysInKeyOrder(t *testing.T) {
	for _, tc := range orderedKeyTables {
		d := newDB(t, tc.ddl, tc.rows, signalDDL)
		table := strings.Fields(tc.ddl)[2]
		want, _ := strconv.Atoi(d.queryString(t, "SELECT COUNT(*) FROM "+table))
		s := openSource(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + "." + table,
			"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "1"}, nil)
		d.exec(t, "INSERT INTO debezium_signal VALUES ('sig-1', 'execute-snapshot', ?)",
			fmt.Sprintf(`{"data-collections": ["%s.%s"], "type": "incremental"}`, d.name, table))
		recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool { return incDone(t, r) })
		s.Close(t.Context())
		var reads []connect.Record
		for _, e := range decode(t, recs) {
			if e.Ev != nil && e.Ev.Op == connect.OpRead {
				reads = append(reads, e.Rec)
			}
		}
		checkSnapshotKeys(t, table+" incremental", reads, tc.keys, want)
	}
}

// checkSnapshotKeys checks that recs hold the read events of want rows,
// and of the keys keys when not nil, each once.
func checkSnapshotKeys(t *testing.T, what string, recs []connect.Record, keys []string, want int) {
	t.Helper()
	seen := map[string]int{}
	n := 0
	for _, e := range decode(t, recs) {
		if e.Ev == nil || e.Ev.Op != connect.OpRead {
			continue
		}
		seen[string(e.Rec.Key)]++
		n++
	}
	if n != want || len(seen) != want {
		t.Errorf("%s: %d read events of %d keys, want %d rows once each:\n%s", what, n, len(seen), want, dump(recs))
	}
	for _, k := range keys {
		if seen[k] != 1 {
			t.Errorf("%s: the row of key %s read %d times, want once:\n%s", what, k, seen[k], dump(recs))
		}
	}
}

// TestSnapshot_ResumesAfterBinaryKey stops a chunked snapshot of tables
// keyed by bytes that are not UTF-8 (BINARY(16) UUIDs, VARBINARY, BIT with
// high bits) after a few chunks and restarts it from the stored position:
// the position keeps the last key's bytes, so the restart reads every row
// after it, none skipped and none read twice.
func TestSnapshot_ResumesAfterBinaryKey(t *testing.T) {
	for _, tc := range []struct{ name, ddl, fill string }{
		{"binary16", "CREATE TABLE a (id BINARY(16) PRIMARY KEY, n int NOT NULL)",
			"INSERT INTO a SELECT UNHEX(MD5(seq)), seq FROM seq_1_to_100"},
		{"varbinary", "CREATE TABLE a (id VARBINARY(20) PRIMARY KEY, n int NOT NULL)",
			"INSERT INTO a SELECT CONCAT(UNHEX('FF80C3'), UNHEX(LPAD(HEX(seq * 997), 8, '0'))), seq FROM seq_1_to_100"},
		{"bit", "CREATE TABLE a (id BIT(16) PRIMARY KEY, n int NOT NULL)",
			"INSERT INTO a SELECT 65535 - seq * 300, seq FROM seq_1_to_100"},
		{"composite", "CREATE TABLE a (k int, id BINARY(4), n int NOT NULL, PRIMARY KEY (k, id))",
			"INSERT INTO a SELECT seq % 3, UNHEX(LEFT(MD5(seq), 8)), seq FROM seq_1_to_100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t, tc.ddl, tc.fill)
			s := openSource(t, d, map[string]string{"snapshot.chunk.size": "10", "snapshot.workers": "1"}, nil)
			recs := readRecords(t, s, 30, 30*time.Second)
			for len(recs) > 0 && recs[len(recs)-1].Position == nil {
				recs = recs[:len(recs)-1]
			}
			pos := lastPosition(recs)
			s.Close(context.Background())
			p, err := decodePosition(pos)
			if err != nil || p.Snapshot == nil || len(p.Snapshot.Last[d.name+".a"]) == 0 {
				t.Fatalf("position %s (%v): want a snapshot in progress with a last key", pos, err)
			}
			s2 := openSource(t, d, nil, pos)
			recs = append(recs, readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
				return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
			})...)
			seen := map[string]int{}
			for _, e := range decode(t, recs) {
				n, _ := e.Ev.After.Get("n")
				seen[fmt.Sprint(n)]++
			}
			for i := 1; i <= 100; i++ {
				if c := seen[strconv.Itoa(i)]; c != 1 {
					t.Errorf("row n=%d read %d times, want once (resumed from %s)", i, c, pos)
				}
			}
		})
	}
}

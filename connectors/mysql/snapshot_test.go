package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"

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

// TestChunkQuery_ReadsOnlyItsChunk runs the query of a late chunk of
// tables keyed by one to three columns (the leading ones with few values,
// as a tenant id) and counts the index entries the server read
// (Handler_read_*): a chunk reads the rows it returns, not every row
// before them. A row-constructor comparison, WHERE (k1, k2) > (?, ?), is
// no range to MariaDB 10.11: each chunk scanned the index from its start,
// and a snapshot of a big table was quadratic. The chunk's rows are the
// ones after the key in the server's ORDER BY.
func TestChunkQuery_ReadsOnlyItsChunk(t *testing.T) {
	const size = 20
	d := newDB(t,
		"CREATE TABLE one (id int PRIMARY KEY, v int)",
		"INSERT INTO one SELECT seq, seq FROM seq_0_to_2999",
		"CREATE TABLE two (k1 int NOT NULL, k2 varchar(20) COLLATE utf8mb4_general_ci NOT NULL, v int, PRIMARY KEY (k1, k2))",
		"INSERT INTO two SELECT seq DIV 1000, CONCAT(IF(seq % 2, 'K', 'k'), LPAD(seq % 1000, 4, '0')), seq FROM seq_0_to_2999",
		"CREATE TABLE three (k1 int NOT NULL, k2 varchar(20) NOT NULL, k3 int NOT NULL, v int, PRIMARY KEY (k1, k2, k3))",
		"INSERT INTO three SELECT seq DIV 1000, CONCAT('k', LPAD((seq DIV 10) % 100, 3, '0')), seq % 10, seq FROM seq_0_to_2999",
		"CREATE TABLE mixed (e enum('b','a','c') NOT NULL, s set('z','y') NOT NULL, b bit(8) NOT NULL, id binary(4) NOT NULL, v int, PRIMARY KEY (e, s, b, id))",
		"INSERT INTO mixed SELECT ELT(1 + seq DIV 1000, 'a', 'b', 'c'), (seq DIV 250) % 4, (seq DIV 10) % 25, UNHEX(LEFT(MD5(seq), 8)), seq FROM seq_0_to_2999",
		"ANALYZE TABLE one, two, three, mixed",
	)
	conn, err := d.db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	reads := func() int {
		t.Helper()
		rows, err := conn.QueryContext(t.Context(), "SHOW SESSION STATUS LIKE 'Handler_read%'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var k string
			var v int
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			n += v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// keysOf reads the key columns of a query's rows as the server sends them in text.
	keysOf := func(def *tableDef, q string, args ...any) []keyValues {
		t.Helper()
		rows, err := conn.QueryContext(t.Context(), q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		vals := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		var out []keyValues
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var k keyValues
			for _, c := range def.Key {
				k = append(k, string(vals[c]))
			}
			out = append(out, k)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, table := range []string{"one", "two", "three", "mixed"} {
		def, err := readTableDef(t.Context(), d.db, d.name, table)
		if err != nil || def == nil {
			t.Fatalf("table %s: %v", table, err)
		}
		all, _, _ := chunkQuery(def, nil, 1<<30)
		every := keysOf(def, all)
		// After a row in the middle, the last of a leading value's rows,
		// the last of a second column's run, and the chunk before the last.
		for _, at := range []int{1500, 999, 1999, 2509, len(every) - size - 1} {
			q, args, err := chunkQuery(def, every[at], size)
			if err != nil {
				t.Fatalf("%s after %q: %v", table, every[at], err)
			}
			before := reads()
			got := keysOf(def, q, args...)
			read := reads() - before
			if want := every[at+1 : at+1+size]; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("%s after %q: chunk %q,\nwant %q", table, every[at], got, want)
			}
			if limit := size + 2*len(def.Key); read > limit {
				t.Errorf("%s after row %d %q: the chunk of %d rows read %d index entries, want at most %d: the key's predicate is no range\n%s",
					table, at, every[at], size, read, limit, explain(t, conn, q, args))
			}
		}
	}
}

// explain returns the server's plan of a query, for failure messages.
func explain(t *testing.T, conn *sql.Conn, q string, args []any) string {
	t.Helper()
	var plan string
	if err := conn.QueryRowContext(t.Context(), "EXPLAIN FORMAT=JSON "+q, args...).Scan(&plan); err != nil {
		return "EXPLAIN: " + err.Error()
	}
	return q + "\n" + plan
}

// TestSnapshot_ThreeColumnKeyAcrossChunks pages through a table keyed by
// three columns (an int, a case-insensitive string whose binary order
// differs, an ENUM whose labels are out of alphabetical order) in chunks
// of two rows, so that chunks end where only the third column changes,
// where the second does and where the first does. Every row is read once,
// in key order: in the initial snapshot, in a restart from the position of
// a chunk that ends at a change of the first column, and in an
// incremental snapshot.
func TestSnapshot_ThreeColumnKeyAcrossChunks(t *testing.T) {
	d := newDB(t,
		"CREATE TABLE k (a int NOT NULL, b varchar(10) COLLATE utf8mb4_general_ci NOT NULL, c enum('z','y','x') NOT NULL, n int NOT NULL, PRIMARY KEY (a, b, c))",
		// n is the row's rank in key order: b sorts a, B, c; c sorts z, y, x.
		"INSERT INTO k SELECT 1 + seq DIV 9, ELT(1 + (seq DIV 3) % 3, 'a', 'B', 'c'), ELT(1 + seq % 3, 'z', 'y', 'x'), seq FROM seq_0_to_26",
		signalDDL)
	const rows = 27
	values := map[string]string{"snapshot.mode": "initial_only", "snapshot.chunk.size": "2", "snapshot.workers": "1", "tables": d.name + ".k"}
	snapshotDone := func(r []connect.Record) bool {
		if len(r) == 0 || r[len(r)-1].Position == nil {
			return false
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		return p.Snapshot == nil
	}
	type row struct {
		n    int
		key  [3]string
		last bool // the last record of its chunk
	}
	read := func(recs []connect.Record) []row {
		var out []row
		for _, e := range decode(t, recs) {
			if e.Ev == nil || e.Ev.Op != connect.OpRead {
				continue
			}
			var r row
			n, _ := e.Ev.After.Get("n")
			r.n = atoiT(t, fmt.Sprint(n))
			for i, c := range []string{"a", "b", "c"} {
				v, _ := e.Ev.After.Get(c)
				r.key[i] = fmt.Sprint(v)
			}
			r.last = e.Rec.Position != nil
			out = append(out, r)
		}
		return out
	}
	inOrder := func(what string, got []row, from int) {
		t.Helper()
		ok := len(got) == rows-from
		for i := 0; ok && i < len(got); i++ {
			ok = got[i].n == from+i
		}
		if !ok {
			t.Errorf("%s: rows %v, want ranks %d to %d in order, once each", what, got, from, rows-1)
		}
	}

	s := openSource(t, d, values, nil)
	recs := readUntil(t, s, 30*time.Second, snapshotDone)
	s.Close(t.Context())
	got := read(recs)
	inOrder("snapshot", got, 0)
	// Which column changes first across each chunk boundary.
	crossed := map[int]bool{}
	resume := -1 // the row at which a chunk ends before the first column changes
	for i := 0; i+1 < len(got); i++ {
		if !got[i].last {
			continue
		}
		c := 0
		for c < 2 && got[i].key[c] == got[i+1].key[c] {
			c++
		}
		crossed[c] = true
		if c == 0 && resume < 0 {
			resume = i
		}
	}
	if len(crossed) != 3 || resume < 0 {
		t.Fatalf("chunk boundaries cross columns %v, want all three: the test's rows no longer exercise them", crossed)
	}

	var pos connect.Position
	n := -1
	for _, e := range decode(t, recs) {
		if e.Ev != nil && e.Ev.Op == connect.OpRead {
			n++
		}
		if n == resume {
			pos = e.Rec.Position
			break
		}
	}
	s2 := openSource(t, d, values, pos)
	rest := readUntil(t, s2, 30*time.Second, snapshotDone)
	s2.Close(t.Context())
	inOrder("snapshot resumed after a chunk", read(rest), resume+1)

	inc := openSource(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + ".k",
		"signal.data.collection": d.name + ".debezium_signal", "snapshot.chunk.size": "2"}, nil)
	if err := inc.ExecuteSnapshot(t.Context(), []string{d.name + ".k"}); err != nil {
		t.Fatal(err)
	}
	recs = readUntil(t, inc, 30*time.Second, func(r []connect.Record) bool { return incDone(t, r) })
	inc.Close(t.Context())
	inOrder("incremental snapshot", read(recs), 0)
}

// TestSortsAfter: an ENUM or SET key column after a value is the list of
// the numbers after it, none after its last, an inequality when the list
// would be long; other columns compare with an inequality.
func TestSortsAfter(t *testing.T) {
	labels := func(n int) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = fmt.Sprint("l", i)
		}
		return l
	}
	enum := &column{Name: "e", Type: mysql.MYSQL_TYPE_ENUM, Labels: labels(3)}
	set2 := &column{Name: "s", Type: mysql.MYSQL_TYPE_SET, Labels: labels(2)}
	set64 := &column{Name: "s", Type: mysql.MYSQL_TYPE_SET, Labels: labels(64)}
	for _, tc := range []struct {
		c    *column
		v    any
		want string // "" when nothing sorts after
		args int
	}{
		{enum, uint64(0), "`k` IN (1, 2, 3)", 0},
		{enum, uint64(2), "`k` IN (3)", 0},
		{enum, uint64(3), "", 0},
		{set2, uint64(1), "`k` IN (2, 3)", 0},
		{set2, uint64(3), "", 0},
		{set64, uint64(0), "`k` > ?", 1},
		{set64, ^uint64(0) - 2, "`k` IN (18446744073709551614, 18446744073709551615)", 0},
		{set64, ^uint64(0), "", 0},
		{&column{Name: "i", Type: mysql.MYSQL_TYPE_LONG}, "7", "`k` > ?", 1},
	} {
		got, args, ok := sortsAfter(tc.c, "`k`", tc.v)
		if got != tc.want || ok != (tc.want != "") || len(args) != tc.args {
			t.Errorf("sortsAfter(%s of %d labels, %v) = %q, %v, %v; want %q with %d arguments", tc.c.Name, len(tc.c.Labels), tc.v, got, args, ok, tc.want, tc.args)
		}
	}
}

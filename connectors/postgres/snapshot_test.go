package postgres

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
)

// writeRandomly runs n random inserts, updates and deletes on the tables
// (id int PRIMARY KEY, v int) with ids below maxID, one small transaction
// each.
func writeRandomly(t *testing.T, dsn string, tables []string, n, maxID int, seed uint64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < n; i++ {
		table := tables[rng.IntN(len(tables))]
		id := rng.IntN(maxID) + 1
		var q string
		switch rng.IntN(3) {
		case 0:
			q = fmt.Sprintf("INSERT INTO %s VALUES (%d, %d) ON CONFLICT (id) DO UPDATE SET v = excluded.v", table, id, i)
		case 1:
			q = fmt.Sprintf("UPDATE %s SET v = %d WHERE id = %d", table, i, id)
		default:
			q = fmt.Sprintf("DELETE FROM %s WHERE id = %d", table, id)
		}
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Error(err)
			return
		}
	}
}

// untilMarker reads until the create event of id -1 in table.
func untilMarker(table string) func([]connect.Record) bool {
	return func(recs []connect.Record) bool {
		for i := len(recs) - 1; i >= 0 && i >= len(recs)-50; i-- {
			if strings.HasSuffix(recs[i].Topic, "."+table) && string(recs[i].Key) == `{"id":-1}` && recs[i].Value != nil {
				return true
			}
		}
		return false
	}
}

// byTable splits rebuilt state by topic.
func rebuild(t *testing.T, recs []connect.Record, topic string) map[string]string {
	var mine []connect.Record
	for _, r := range recs {
		if r.Topic == topic {
			mine = append(mine, r)
		}
	}
	state := map[string]string{}
	apply(t, state, mine)
	return state
}

func TestSnapshot_ThenStream_WritesDuringSnapshot(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY, v int)",
		"CREATE TABLE b (id int PRIMARY KEY, v int)",
		"INSERT INTO a SELECT g, g FROM generate_series(1, 3000) g",
		"INSERT INTO b SELECT g, g FROM generate_series(1, 1000) g",
	)
	s := openSource(t, db, map[string]string{"snapshot.chunk.size": "250", "snapshot.workers": "2"}, nil)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		writeRandomly(t, db.dsn, []string{"a", "b"}, 400, 3500, 1)
		db.exec(t, "INSERT INTO a VALUES (-1, 0)")
	}()
	time.Sleep(200 * time.Millisecond) // let the writes overlap the snapshot
	recs := readUntil(t, s, 90*time.Second, untilMarker("a"))
	wg.Wait()

	// Snapshot records come first, all op r, each row once.
	seen := map[string]bool{}
	reads := 0
	for _, e := range decode(t, recs) {
		if e.Ev == nil || e.Ev.Op != connect.OpRead {
			break
		}
		reads++
		k := e.Rec.Topic + string(e.Rec.Key)
		if seen[k] {
			t.Fatalf("snapshot read %s twice", k)
		}
		seen[k] = true
	}
	if reads < 3000 {
		t.Errorf("snapshot emitted %d rows, want at least the 3000 of table a", reads)
	}
	var snapshotEnd int
	for i, r := range recs {
		if r.Position != nil {
			if p, _ := decodePosition(r.Position); p.Snapshot == nil {
				snapshotEnd = i
				break
			}
		}
	}
	if snapshotEnd != reads-1 {
		t.Errorf("the snapshot's completing position is on record %d, want the last read, %d", snapshotEnd, reads-1)
	}
	for _, table := range []string{"a", "b"} {
		got := rebuild(t, recs, "src.public."+table)
		want := tableState(t, db, "public."+table)
		if d := diffStates(want, got); d != "" {
			t.Errorf("table %s rebuilt from the records differs from the table:\n%s", table, d)
		}
	}
}

func TestSnapshot_ResumeAfterCrash(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE a (id int PRIMARY KEY, v int)",
		"INSERT INTO a SELECT g, g FROM generate_series(1, 2000) g",
	)
	values := map[string]string{"snapshot.chunk.size": "100", "snapshot.workers": "1"}
	s := openSource(t, db, values, nil)
	// Read until a position mid-snapshot, as if the worker stored it and
	// then the process died.
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		p, _ := decodePosition(lastPosition(r))
		return len(r) >= 500 && p.Snapshot != nil && r[len(r)-1].Position != nil
	})
	stored := recs[len(recs)-1].Position
	s.Close(context.Background())
	p, _ := decodePosition(stored)
	lastKey := p.Snapshot.Last["public.a"]
	if len(lastKey) != 1 {
		t.Fatalf("stored snapshot position %s has no last key for public.a", stored)
	}
	writeRandomly(t, db.dsn, []string{"a"}, 300, 2500, 2)
	db.exec(t, "INSERT INTO a VALUES (-1, 0)")

	s2 := openSource(t, db, values, stored)
	recs2 := readUntil(t, s2, 60*time.Second, untilMarker("a"))
	for _, e := range decode(t, recs2) {
		if e.Ev == nil || e.Ev.Op != connect.OpRead {
			break
		}
		last, _ := strconv.ParseInt(lastKey[0], 10, 64)
		if id, _ := e.Ev.After.Get("id"); id.(int64) <= last {
			t.Fatalf("the resumed snapshot read id %v, at or before the last finished chunk (%s): it started over", id, lastKey[0])
		}
	}
	got := rebuild(t, append(recs, recs2...), "src.public.a")
	want := tableState(t, db, "public.a")
	if d := diffStates(want, got); d != "" {
		t.Errorf("the table rebuilt from both runs differs:\n%s", d)
	}
}

func TestRestart_FromStoredPosition(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)")
	values := map[string]string{"snapshot.mode": "never", "tombstones.on.delete": "false"}
	s := openSource(t, db, values, nil)
	for i := 1; i <= 5; i++ {
		db.exec(t, fmt.Sprintf("INSERT INTO a VALUES (%d)", i))
	}
	recs := readRecords(t, s, 5, 30*time.Second)
	stored := recs[2].Position // records up to id 3 are durable
	if err := s.Ack(t.Context(), stored); err != nil {
		t.Fatal(err)
	}
	p, _ := decodePosition(stored)
	deadline := time.Now().Add(30 * time.Second)
	for {
		lsn := db.queryString(t, "SELECT (confirmed_flush_lsn - '0/0')::text FROM pg_replication_slots WHERE database = $1", db.name)
		if lsn == fmt.Sprint(p.LSN) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed_flush_lsn = %s after Ack, want %d", lsn, p.LSN)
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Close(context.Background())
	for i := 6; i <= 7; i++ {
		db.exec(t, fmt.Sprintf("INSERT INTO a VALUES (%d)", i))
	}
	s2 := openSource(t, db, values, stored)
	var ids []string
	for _, e := range decode(t, readRecords(t, s2, 4, 30*time.Second)) {
		ids = append(ids, string(e.Rec.Key))
	}
	if got := strings.Join(ids, " "); got != `{"id":4} {"id":5} {"id":6} {"id":7}` {
		t.Errorf("after the restart: %s, want ids 4 to 7", got)
	}
	expectQuiet(t, s2, 300*time.Millisecond)
}

func TestHeartbeat_AdvancesSlot(t *testing.T) {
	db := newDB(t, "CREATE TABLE captured (id int PRIMARY KEY)", "CREATE TABLE noise (id int PRIMARY KEY)")
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "tables": "public.captured", "heartbeat.interval": "100ms"}, nil)
	db.exec(t, "INSERT INTO noise SELECT generate_series(1, 1000)")
	// Past the noise as inserted: pg_current_wal_lsn() is where WAL is
	// written, which lags under the test server's synchronous_commit=off.
	target := db.queryString(t, "SELECT (pg_current_wal_insert_lsn() - '0/0')::text")
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Topic != "__debezium-heartbeat.src" || string(r.Key) != `{"serverName":"src"}` || !strings.HasPrefix(string(r.Value), `{"ts_ms":`) || r.Position == nil {
				t.Fatalf("unexpected record %s %s %s", r.Topic, r.Key, r.Value)
			}
			if err := s.Ack(t.Context(), r.Position); err != nil {
				t.Fatal(err)
			}
		}
		var ok bool
		if err := db.conn.QueryRow(t.Context(), "SELECT confirmed_flush_lsn - '0/0' >= $1::numeric FROM pg_replication_slots WHERE database = $2", target, db.name).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed_flush_lsn did not pass %s", target)
		}
	}
}

func TestSnapshot_TableInParts_ResumeAfterCrash(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE big (id bigint PRIMARY KEY, v int)",
		"INSERT INTO big SELECT g * 3, g FROM generate_series(1, 6000) g",
		"ANALYZE big",
	)
	values := map[string]string{"snapshot.chunk.size": "100", "snapshot.workers": "3"}
	s := openSource(t, db, values, nil)
	// Read until a position mid-snapshot where two parts have progressed,
	// as if the worker stored it and then the process died.
	var stored connect.Position
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		if len(r) == 0 || r[len(r)-1].Position == nil {
			return false
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		if p.Snapshot == nil {
			t.Fatalf("the snapshot ended before two parts had progressed")
		}
		if len(p.Snapshot.Split["public.big"]) == 2 && len(p.Snapshot.Last)+len(p.Snapshot.Done) >= 2 && len(r) >= 1000 {
			stored = r[len(r)-1].Position
			return true
		}
		return false
	})
	s.Close(context.Background())
	p, _ := decodePosition(stored)
	if got := p.Snapshot.Split["public.big"]; jsonOf(got) != `["6002","12001"]` {
		t.Errorf("split = %v, want the ids 3..18000 cut in three", got)
	}
	if p.Snapshot.Rows["public.big"] != int64(len(recs)) {
		t.Errorf("rows in the position = %d, want the %d emitted", p.Snapshot.Rows["public.big"], len(recs))
	}
	writeRandomly(t, db.dsn, []string{"big"}, 200, 18000, 3)
	db.exec(t, "INSERT INTO big VALUES (-1, 0)")

	s2 := openSource(t, db, values, stored)
	recs2 := readUntil(t, s2, 60*time.Second, untilMarker("big"))
	for _, e := range decode(t, recs2) {
		if e.Ev == nil || e.Ev.Op != connect.OpRead {
			break
		}
		id, _ := e.Ev.After.Get("id")
		part := 0
		for _, b := range p.Snapshot.Split["public.big"] {
			if bound, _ := strconv.ParseInt(b, 10, 64); id.(int64) >= bound {
				part++
			}
		}
		unit := fmt.Sprintf("public.big#%d", part)
		if p.Snapshot.isDone(unit) {
			t.Fatalf("the resumed snapshot read id %v of part %d, which was done", id, part)
		}
		if last := p.Snapshot.Last[unit]; last != nil {
			if l, _ := strconv.ParseInt(last[0], 10, 64); id.(int64) <= l {
				t.Fatalf("the resumed snapshot read id %v, in part %d at or before its last finished chunk (%d)", id, part, l)
			}
		}
	}
	if rep := s2.Report(); rep.Gauges["snapshot_rows_scanned"]+float64(len(recs)) < 6000 {
		t.Errorf("rows scanned by both runs: %v + %d, want at least 6000", rep.Gauges["snapshot_rows_scanned"], len(recs))
	}
	got := rebuild(t, append(recs, recs2...), "src.public.big")
	want := tableState(t, db, "public.big")
	if d := diffStates(want, got); d != "" {
		t.Errorf("the table rebuilt from both runs differs:\n%s", d)
	}
}

func TestSplitRange(t *testing.T) {
	for _, c := range []struct {
		lo, hi string
		parts  int
		want   string
	}{
		{"1", "100", 4, `["26","51","76"]`},
		{"1", "2", 4, `["2"]`},
		{"5", "5", 3, `null`},
		{"-9223372036854775808", "9223372036854775807", 2, `["0"]`},
		{"1", "10", 1, `null`},
	} {
		if got := jsonOf(splitRange(c.lo, c.hi, c.parts)); got != c.want {
			t.Errorf("splitRange(%s, %s, %d) = %s, want %s", c.lo, c.hi, c.parts, got, c.want)
		}
	}
}

// TestSnapshot_ResumeAfterNonUTF8Key stops a chunked snapshot of a table
// keyed by text that is not UTF-8 in the database (LATIN1; SQL_ASCII,
// which stores any bytes) and restarts it from the stored position: the
// position keeps the last key exactly, so every row is read once, none
// skipped and none again.
func TestSnapshot_ResumeAfterNonUTF8Key(t *testing.T) {
	for _, enc := range []string{"LATIN1", "SQL_ASCII"} {
		t.Run(enc, func(t *testing.T) {
			db := newDBWith(t, "ENCODING '"+enc+"' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
				"CREATE TABLE a (id text PRIMARY KEY, n int NOT NULL)",
				// Keys that begin with bytes 0xc0-0xff: é and the like in LATIN1.
				"INSERT INTO a SELECT chr(192 + g % 60) || g::text, g FROM generate_series(1, 300) g",
			)
			values := map[string]string{"snapshot.chunk.size": "20", "snapshot.workers": "1"}
			s := openSource(t, db, values, nil)
			recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
				p, _ := decodePosition(lastPosition(r))
				return len(r) >= 100 && p.Snapshot != nil && r[len(r)-1].Position != nil
			})
			stored := recs[len(recs)-1].Position
			s.Close(context.Background())
			if p, err := decodePosition(stored); err != nil || p.Snapshot == nil || len(p.Snapshot.Last["public.a"]) != 1 {
				t.Fatalf("stored snapshot position %s (%v) has no last key for public.a", stored, err)
			}
			db.exec(t, "INSERT INTO a VALUES ('-1', -1)")
			s2 := openSource(t, db, values, stored)
			recs = append(recs, readUntil(t, s2, 60*time.Second, func(r []connect.Record) bool {
				p, _ := decodePosition(lastPosition(r))
				return len(r) > 0 && r[len(r)-1].Position != nil && p.Snapshot == nil
			})...)
			seen := map[int64]int{}
			for _, e := range decode(t, recs) {
				if e.Ev != nil && e.Ev.Op == connect.OpRead {
					n, _ := e.Ev.After.Get("n")
					seen[n.(int64)]++
				}
			}
			for i := int64(1); i <= 300; i++ {
				if seen[i] != 1 {
					t.Errorf("row n=%d read %d times, want once (resumed from %s)", i, seen[i], stored)
				}
			}
		})
	}
}

// TestSource_TextOfALatin1DatabaseIsUTF8: in a database whose encoding is
// not UTF-8 (LATIN1), text comes out as UTF-8, in the snapshot and in the
// stream: the sessions ask the server to convert (client_encoding UTF8),
// as the JDBC driver under Debezium does. (A SQL_ASCII database's bytes,
// which the server cannot convert, come out as they are stored:
// TestSnapshot_ResumeAfterNonUTF8Key.)
func TestSource_TextOfALatin1DatabaseIsUTF8(t *testing.T) {
	db := newDBWith(t, "ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0",
		"CREATE TABLE a (id int PRIMARY KEY, s text)",
		"INSERT INTO a VALUES (1, 'caf' || chr(233))") // chr: a code point, é in LATIN1
	s := openSource(t, db, nil, nil)
	db.exec(t, "INSERT INTO a VALUES (2, 'na' || chr(239) || 've'), (-1, 'marker')")
	recs := readUntil(t, s, 60*time.Second, untilMarker("a"))
	got, ops := map[int64]string{}, map[int64]connect.Op{}
	for _, e := range decode(t, recs) {
		if e.Ev != nil && e.Ev.After != nil {
			id, _ := e.Ev.After.Get("id")
			v, _ := e.Ev.After.Get("s")
			got[id.(int64)], _ = v.(string)
			ops[id.(int64)] = e.Ev.Op
		}
	}
	if ops[1] != connect.OpRead || ops[2] != connect.OpCreate {
		t.Fatalf("ops %v: want row 1 from the snapshot (r) and row 2 from the stream (c)", ops)
	}
	if got[1] != "café" || got[2] != "naïve" {
		t.Fatalf("text values %q (snapshot) and %q (stream), want \"café\" and \"naïve\" in UTF-8", got[1], got[2])
	}
}

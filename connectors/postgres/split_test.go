package postgres

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// readSnapshot reads s until the snapshot's completing position (the
// first without snapshot progress) and returns the records up to it.
func readSnapshot(t *testing.T, s *Source) []connect.Record {
	t.Helper()
	return readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		if len(r) == 0 || r[len(r)-1].Position == nil {
			return false
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		return p.Snapshot == nil
	})
}

// snapshotSplit returns the boundaries of the parts table was read in,
// from the first snapshot position that carries them; nil when the
// table was read as one.
func snapshotSplit(t *testing.T, recs []connect.Record, table string) []int64 {
	t.Helper()
	for _, r := range recs {
		if r.Position == nil {
			continue
		}
		p, err := decodePosition(r.Position)
		if err != nil {
			t.Fatal(err)
		}
		if p.Snapshot == nil || p.Snapshot.Split[table] == nil {
			continue
		}
		var out []int64
		for _, b := range p.Snapshot.Split[table] {
			n, err := strconv.ParseInt(b, 10, 64)
			if err != nil {
				t.Fatalf("split of %s: bound %q: %v", table, b, err)
			}
			out = append(out, n)
		}
		return out
	}
	return nil
}

// checkReadOnce checks that the snapshot records read the ids want, each
// once, and that every part of the split has rows.
func checkReadOnce(t *testing.T, recs []connect.Record, want []int, split []int64) {
	t.Helper()
	seen := map[int]int{}
	perPart := make([]int, len(split)+1)
	for _, e := range decode(t, recs) {
		if e.Ev == nil || e.Ev.Op != connect.OpRead {
			t.Fatalf("record %s %s is not a snapshot read", e.Rec.Topic, e.Rec.Key)
		}
		v, _ := e.Ev.After.Get("id")
		id := int(v.(int64))
		seen[id]++
		part := 0
		for _, b := range split {
			if int64(id) >= b {
				part++
			}
		}
		perPart[part]++
	}
	var got []int
	for id, n := range seen {
		if n != 1 {
			t.Errorf("id %d read %d times, want once", id, n)
		}
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the snapshot read %s, want %s", span(got), span(want))
	}
	for i, n := range perPart {
		if n == 0 {
			t.Errorf("part %d of the split %v read no row (rows per part %v)", i, split, perPart)
		}
	}
}

// snapshotProgress waits until s reports the snapshot progress of every
// table of names and returns it by table.
func snapshotProgress(t *testing.T, s *Source, names ...string) map[string]connect.Progress {
	t.Helper()
	got := map[string]connect.Progress{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		for _, p := range s.Report().Progress {
			got[p.Name] = p
		}
		missing := slices.ContainsFunc(names, func(n string) bool { _, ok := got[n]; return !ok })
		if !missing {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot progress of %v: %+v", names, s.Report())
		}
	}
}

// span renders sorted ids as "n ids lo..hi".
func span(ids []int) string {
	if len(ids) == 0 {
		return "no ids"
	}
	return fmt.Sprintf("%d ids %d..%d", len(ids), ids[0], ids[len(ids)-1])
}

// TestSnapshot_RowFilterSplit: a large table whose publication lets a few
// of its rows through, all with high ids, is cut by those rows: into
// parts by the filter's estimate, over the key range of the rows the
// filter lets through, not over the whole table's (which would leave
// every part but the last empty and one worker reading them all).
func TestSnapshot_RowFilterSplit(t *testing.T) {
	db := newDB(t, "CREATE TABLE f (id bigint PRIMARY KEY, v int)",
		"INSERT INTO f SELECT g, g FROM generate_series(1, 10000) g",
		"ANALYZE f",
		"CREATE PUBLICATION pub_f FOR TABLE f WHERE (id > 9900)")
	s := openSource(t, db, map[string]string{"tables": "public.f", "publication": "pub_f", "publication.autocreate.mode": "disabled",
		"snapshot.chunk.size": "10", "snapshot.workers": "3"}, nil)
	recs := readSnapshot(t, s)
	split := snapshotSplit(t, recs, "public.f")
	if len(split) != 2 {
		t.Fatalf("split of public.f = %v, want the ~100 rows of the filter (5 chunks of 10 per worker) cut in three", split)
	}
	for _, b := range split {
		if b <= 9901 || b > 10000 {
			t.Errorf("split of public.f = %v: bound %d outside the ids the filter lets through (9901..10000)", split, b)
		}
	}
	var want []int
	for id := 9901; id <= 10000; id++ {
		want = append(want, id)
	}
	checkReadOnce(t, recs, want, split)
}

// TestSnapshot_PartitionedTableSplit: a partitioned table's rows are
// estimated as its leaf partitions' (the partitioned table's own
// reltuples stays -1, as autovacuum analyzes only the partitions), so the
// snapshot's progress shows them and a large partitioned table is read
// in parts like an ordinary one, every row once though the parts cut
// across partitions.
func TestSnapshot_PartitionedTableSplit(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE m (id bigint PRIMARY KEY, v int) PARTITION BY RANGE (id)",
		"CREATE TABLE m_low PARTITION OF m FOR VALUES FROM (MINVALUE) TO (3000) PARTITION BY HASH (id)",
		"CREATE TABLE m_low_0 PARTITION OF m_low FOR VALUES WITH (MODULUS 2, REMAINDER 0)",
		"CREATE TABLE m_low_1 PARTITION OF m_low FOR VALUES WITH (MODULUS 2, REMAINDER 1)",
		"CREATE TABLE m_high PARTITION OF m FOR VALUES FROM (3000) TO (1000000)",
		"CREATE TABLE m_later PARTITION OF m FOR VALUES FROM (1000000) TO (MAXVALUE)",
		"INSERT INTO m SELECT g, g FROM generate_series(1, 6000) g",
		// As autovacuum does: the partitions with rows, not the
		// partitioned tables nor the empty m_later (reltuples -1).
		"ANALYZE m_low_0, m_low_1, m_high",
	)
	for _, rel := range []string{"m", "m_later"} {
		if n := db.queryString(t, fmt.Sprintf("SELECT reltuples::text FROM pg_class WHERE oid = '%s'::regclass", rel)); n != "-1" {
			t.Fatalf("reltuples of %s = %s, want -1 (never analyzed)", rel, n)
		}
	}
	s := openSource(t, db, map[string]string{"tables": "public.m", "snapshot.chunk.size": "100", "snapshot.workers": "3"}, nil)

	// Nobody reads: the runner stops after a few chunks, mid-snapshot.
	prog := snapshotProgress(t, s, "public.m")["public.m"]
	if prog.Total != 6000 || prog.Done >= 6000 {
		t.Errorf("snapshot progress of public.m = %d of %d rows, want the 6000 rows of its partitions estimated before it ends", prog.Done, prog.Total)
	}

	recs := readSnapshot(t, s)
	split := snapshotSplit(t, recs, "public.m")
	if jsonOf(split) != `[2001,4001]` {
		t.Errorf("split of public.m = %v, want the ids 1..6000 cut in three", split)
	}
	var want []int
	for id := 1; id <= 6000; id++ {
		want = append(want, id)
	}
	checkReadOnce(t, recs, want, split)
	if got := s.Report().Gauges["snapshot_rows_scanned"]; got != 6000 {
		t.Errorf("snapshot_rows_scanned = %v, want 6000", got)
	}
}

// TestSnapshot_NeverAnalyzedTableEstimate: a table loaded and never
// analyzed (reltuples -1, as before autovacuum's first analyze) has no
// statistics; its rows are estimated from a sample of its pages, so the
// progress shows them and the table is read in parts; so is a partitioned
// table whose partition has none. An empty one estimates none.
func TestSnapshot_NeverAnalyzedTableEstimate(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE u (id bigint PRIMARY KEY, v int) WITH (autovacuum_enabled = off)",
		"INSERT INTO u SELECT g, g FROM generate_series(1, 20000) g",
		"CREATE TABLE e (id bigint PRIMARY KEY) WITH (autovacuum_enabled = off)",
		"CREATE TABLE pm (id bigint PRIMARY KEY, v int) PARTITION BY RANGE (id)",
		"CREATE TABLE pm_1 PARTITION OF pm FOR VALUES FROM (MINVALUE) TO (MAXVALUE) WITH (autovacuum_enabled = off)",
		"INSERT INTO pm SELECT g, g FROM generate_series(1, 5000) g",
	)
	for _, rel := range []string{"u", "e", "pm_1"} {
		if n := db.queryString(t, fmt.Sprintf("SELECT reltuples::text FROM pg_class WHERE oid = '%s'::regclass", rel)); n != "-1" {
			t.Fatalf("reltuples of %s = %s, want -1 (never analyzed)", rel, n)
		}
	}
	s := openSource(t, db, map[string]string{"tables": "public.u,public.e,public.pm", "snapshot.chunk.size": "100", "snapshot.workers": "3"}, nil)
	prog := snapshotProgress(t, s, "public.u", "public.e", "public.pm")
	// A sample of about 100 of the table's ~110 pages: close to every row.
	if got := prog["public.u"].Total; got < 15000 || got > 25000 {
		t.Errorf("estimated rows of public.u = %d, want about 20000 (from a sample of its pages)", got)
	}
	if got := prog["public.e"].Total; got != 0 {
		t.Errorf("estimated rows of the empty public.e = %d, want 0", got)
	}
	// A partitioned table whose partition has no statistics: sampled
	// through the partitioned table.
	if got := prog["public.pm"].Total; got < 3750 || got > 6250 {
		t.Errorf("estimated rows of public.pm = %d, want about 5000 (from a sample of its partition's pages)", got)
	}
	recs := readSnapshot(t, s)
	var ofU []connect.Record
	for _, r := range recs {
		if r.Topic == "src.public.u" {
			ofU = append(ofU, r)
		}
	}
	split := snapshotSplit(t, recs, "public.u")
	if len(split) != 2 {
		t.Errorf("split of public.u = %v, want it cut in three", split)
	}
	var want []int
	for id := 1; id <= 20000; id++ {
		want = append(want, id)
	}
	checkReadOnce(t, ofU, want, split)
}

package iceberg

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// fileCounts returns the data and equality delete files the table's
// current snapshot reads.
func (e *env) fileCounts(t *testing.T, name string) (data, eqDeletes int) {
	t.Helper()
	tasks, err := e.table(t, name).Scan().PlanFiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, task := range tasks {
		data++
		for _, d := range task.EqualityDeleteFiles {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				eqDeletes++
			}
		}
	}
	return data, eqDeletes
}

// Compaction of an upsert table fed random inserts, updates and deletes
// over many small commits: fewer data files, the equality deletes no file
// needs dropped, the table still equal to the model, and a restarted sink
// that gets every record again writes none twice (the compaction snapshot
// keeps the offsets).
func TestSink_Compact_Upsert(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false",
		"compact.interval": "1ms", "compact.min.files": "4", "expire.interval": "0"})
	cols := []connect.Schema{{Type: connect.SchemaInt64, Field: "id"}, {Type: connect.SchemaString, Optional: true, Field: "name"}}
	state := map[int64]string{}
	s := e.open(t)
	var all []connect.Record
	commits := 0
	for i := range 300 {
		id := rng.Int64N(30)
		var r connect.Record
		if _, ok := state[id]; ok && rng.IntN(3) == 0 {
			r = changeRecord(t, "pg.public.stock", cols, connect.OpDelete, connect.Row{{Name: "id", Value: id}}, nil)
			delete(state, id)
		} else {
			name := fmt.Sprintf("n%d-%d", id, i)
			r = changeRecord(t, "pg.public.stock", cols, connect.OpUpdate, nil, connect.Row{{Name: "id", Value: id}, {Name: "name", Value: name}})
			state[id] = name
		}
		r.Offset = int64(i)
		all = append(all, r)
		write(t, s, r)
		if i%20 == 19 {
			flush(t, s)
			commits++
			time.Sleep(2 * time.Millisecond)
		}
	}
	flush(t, s)
	commits++
	check := func(when string) {
		t.Helper()
		got := e.rows(t, "public.stock", "id")
		if len(got) != len(state) {
			t.Fatalf("%s: %d rows, want %d", when, len(got), len(state))
		}
		for _, r := range got {
			if want := state[r["id"].(int64)]; r["name"] != want {
				t.Fatalf("%s: row %v, want name %q", when, r, want)
			}
		}
	}
	check("after compaction")
	data, eq := e.fileCounts(t, "public.stock")
	rep := s.Report()
	t.Logf("%d commits → %d data files, %d equality delete files; report %v", commits, data, eq, rep.Gauges)
	if rep.Gauges["iceberg_compacted_files"] == 0 || data >= commits/2 {
		t.Errorf("%d commits left %d data files (compacted %v): want compaction", commits, data, rep.Gauges["iceberg_compacted_files"])
	}
	if eq >= commits/2 {
		t.Errorf("%d equality delete files still read after compaction of %d commits", eq, commits)
	}
	if len(rep.Warnings) > 0 {
		t.Errorf("warnings %q", rep.Warnings)
	}
	s2 := e.open(t)
	write(t, s2, all...)
	flush(t, s2)
	check("after a restart that delivered every record again")
}

// Compaction of an append table keeps every row once.
func TestSink_Compact_Append(t *testing.T) {
	e := newEnv(t, map[string]string{"metadata.columns": "false", "compact.interval": "1ms", "compact.min.files": "3"})
	s := e.open(t)
	for i := range 10 {
		write(t, s, rec("a.b", 0, int64(i), fmt.Sprintf(`{"x":%d}`, i)))
		flush(t, s)
		time.Sleep(2 * time.Millisecond)
	}
	got := e.rows(t, "a.b", "x")
	if len(got) != 10 {
		t.Fatalf("%d rows after compaction, want 10: %s", len(got), js(got))
	}
	if data, _ := e.fileCounts(t, "a.b"); data > 4 {
		t.Errorf("10 commits left %d data files after compaction", data)
	}
}

// Compact and Expire work on a table outside a running sink, with the
// sink's configuration, keeping its offsets.
func TestCompactExpire_Functions(t *testing.T) {
	e := newEnv(t, map[string]string{"metadata.columns": "false", "compact.min.files": "3", "expire.older.than": "0s", "expire.retain.last": "1"})
	s := e.open(t)
	var all []connect.Record
	for i := range 6 {
		r := rec("a.b", 0, int64(i), fmt.Sprintf(`{"x":%d}`, i))
		all = append(all, r)
		write(t, s, r)
		flush(t, s)
	}
	s.Close(t.Context())
	cfg := connect.Config{Pipeline: "p", Connector: "lake", Values: e.values, Spec: spec()}
	res, err := Compact(t.Context(), cfg, "a.b")
	if err != nil || res.CompactedFiles != 6 || res.CompactionOutputFiles != 1 {
		t.Fatalf("Compact = %+v, %v; want 6 files into 1", res, err)
	}
	res, err = Expire(t.Context(), cfg, "a.b")
	if err != nil || res.ExpiredSnapshots != 6 {
		t.Fatalf("Expire = %+v, %v; want the 6 older snapshots expired", res, err)
	}
	if _, err := Compact(t.Context(), cfg, "a.nope"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Compact of a missing table = %v", err)
	}
	s2 := e.open(t)
	write(t, s2, all...)
	flush(t, s2)
	if got := js(e.rows(t, "a.b", "x")); got != `[{"x":0},{"x":1},{"x":2},{"x":3},{"x":4},{"x":5}]` {
		t.Errorf("after compaction, expiry and a restart the table holds %s", got)
	}
	if n := len(e.table(t, "a.b").Metadata().Snapshots()); n != 1 {
		t.Errorf("%d snapshots, want 1", n)
	}
}

// Files no snapshot references (left by a crash between writing data files
// and committing) are removed once old enough; young ones and every
// referenced file stay, and the table reads the same.
func TestRemoveOrphans(t *testing.T) {
	e := newEnv(t, map[string]string{"metadata.columns": "false"})
	s := e.open(t)
	for i := range int64(2) {
		write(t, s, rec("a.b", 0, i, fmt.Sprintf(`{"i":%d}`, i)))
		flush(t, s)
	}
	tbl := e.table(t, "a.b")
	dataDir := strings.TrimPrefix(tbl.Location(), "file://") + "/data"
	files, err := filepath.Glob(filepath.Join(dataDir, "*.parquet"))
	if err != nil || len(files) != 2 {
		t.Fatalf("data files %v, %v", files, err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	old, young := filepath.Join(dataDir, "00000-0-orphan-old.parquet"), filepath.Join(dataDir, "00000-0-orphan-young.parquet")
	for _, f := range []string{old, young} {
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-100 * time.Hour)
	// Everything is old except the young orphan: only referenced-ness decides.
	filepath.Walk(strings.TrimPrefix(tbl.Location(), "file://"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && p != young {
			os.Chtimes(p, long, long)
		}
		return nil
	})
	cfg := connect.Config{Pipeline: "p", Connector: "lake", Values: e.values, Spec: spec()}
	if _, err := RemoveOrphans(t.Context(), cfg, "a.b", OrphanOptions{OlderThan: time.Minute}); err == nil || !strings.Contains(err.Error(), "too young") {
		t.Errorf("RemoveOrphans(1m) = %v, want a refusal", err)
	}
	res, err := RemoveOrphans(t.Context(), cfg, "a.b", OrphanOptions{OlderThan: 72 * time.Hour, DryRun: true})
	if err != nil || len(res.Files) != 1 || !strings.HasSuffix(res.Files[0], "orphan-old.parquet") || res.Deleted != 0 || res.Bytes != int64(len(b)) {
		t.Fatalf("dry run = %+v, %v; want the old orphan listed, none deleted", res, err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("the dry run deleted %s", old)
	}
	res, err = RemoveOrphans(t.Context(), cfg, "a.b", OrphanOptions{OlderThan: 72 * time.Hour})
	if err != nil || res.Deleted != 1 {
		t.Fatalf("RemoveOrphans = %+v, %v; want 1 deleted", res, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("old orphan still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("young orphan removed: %v", err)
	}
	if got := js(e.rows(t, "a.b", "i")); got != `[{"i":0},{"i":1}]` {
		t.Errorf("table holds %s after orphan removal", got)
	}
	if _, err := RemoveOrphans(t.Context(), cfg, "a.missing", OrphanOptions{OlderThan: 72 * time.Hour}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("RemoveOrphans of a missing table = %v", err)
	}
}

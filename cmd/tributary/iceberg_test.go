package main

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// TestIceberg_UpkeepCommands runs generator → iceberg, then compacts and
// expires the table from the command line with the sink's own settings.
func TestIceberg_UpkeepCommands(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lake.yaml")
	writeFile(t, file, `version: 1
name: lake
log: {dir: `+filepath.Join(dir, "data")+`}
sources:
  - {name: gen, connector: generator, topic: lake.events, config: {rate: 100, max.events: 600, batch.size: 10}}
sinks:
  - name: lake
    connector: iceberg
    topics: [lake.events]
    config:
      catalog.uri: sqlite://`+filepath.Join(dir, "catalog.db")+`
      warehouse: `+filepath.Join(dir, "warehouse")+`
      commit.records: 20
`)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", freeAddr(t)}, strings.NewReader(""), new(syncbuf.Buffer), new(syncbuf.Buffer))
	}()
	// Wait for several commits (compaction wants at least
	// compact.min.files, 5): each commit writes a metadata file. Nominally
	// 30 commits of 20 records; a sink slowed by a loaded machine gets
	// larger batches and commits fewer times, so the wait asks for 6.
	warehouse := filepath.Join(dir, "warehouse")
	deadline := time.Now().Add(60 * time.Second)
	for len(filesUnder(t, warehouse, ".metadata.json")) < 7 {
		if time.Now().After(deadline) {
			t.Fatalf("the sink made %d commits in 60 s, want at least 6", len(filesUnder(t, warehouse, ".metadata.json"))-1)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	out, _ := mustRun(t, dir, "", "iceberg", "compact", "lake.events", "--pipeline", file)
	wantContains(t, "compact", out, "lake.events: ", "data files compacted into")
	if strings.HasPrefix(out, "lake.events: 0 data files") {
		t.Errorf("compact found nothing to do after several small commits: %s", out)
	}
	if strings.Contains(out, "expired") {
		t.Errorf("compact reports expired snapshots, which it does not expire: %s", out)
	}
	out, _ = mustRun(t, dir, "", "iceberg", "expire", "lake.events", "--pipeline", file)
	wantContains(t, "expire", out, "snapshots expired")
	if strings.Contains(out, "compacted") {
		t.Errorf("expire reports compacted files, which it does not compact: %s", out)
	}

	// An orphan: a data file no snapshot references, as a crash before a
	// commit leaves. Old enough to go; a young one stays.
	data := filepath.Dir(filesUnder(t, warehouse, ".parquet")[0])
	old, young := filepath.Join(data, "orphan-old.parquet"), filepath.Join(data, "orphan-young.parquet")
	writeFile(t, old, "left by a crash")
	writeFile(t, young, "being written")
	long := time.Now().Add(-100 * time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	out, _ = mustRun(t, dir, "", "iceberg", "remove-orphans", "lake.events", "--pipeline", file, "--dry-run")
	wantContains(t, "remove-orphans --dry-run", out, "orphan-old.parquet", "1 orphan files", "0 deleted")
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a dry run deleted the orphan: %v", err)
	}
	out, _ = mustRun(t, dir, "", "iceberg", "remove-orphans", "lake.events", "--pipeline", file)
	wantContains(t, "remove-orphans", out, "1 deleted")
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Errorf("the old orphan is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("the young file was deleted: %v", err)
	}
	err := mustFail(t, dir, "", "iceberg", "remove-orphans", "lake.events", "--pipeline", file, "--older-than", "1m")
	wantContains(t, "remove-orphans --older-than 1m", err.Error(), "1h")

	err = mustFail(t, dir, "", "iceberg", "compact", "lake.nope", "--pipeline", file)
	wantContains(t, "unknown table", err.Error(), "lake.nope")
	err = mustFail(t, dir, "", "iceberg", "compact", "lake.events")
	wantContains(t, "no --pipeline", err.Error(), "--pipeline")
}

// filesUnder lists the files below dir whose names end with suffix.
func filesUnder(t *testing.T, dir, suffix string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, suffix) {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// TestIceberg_OnlyTheSinksVariables: the upkeep commands need the iceberg
// sink's settings only; a variable that only another connector uses may be
// unset, one the sink uses is named.
func TestIceberg_OnlyTheSinksVariables(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tracking.yaml")
	pipeline := `version: 1
name: tracking
log: {dir: ` + filepath.Join(dir, "data") + `}
sources:
  - name: tracking-api
    connector: httptrack
    topic: web.tracking
    config: {listen: "127.0.0.1:0", write.keys: "${TRIBUTARY_TEST_UNSET_WRITE_KEY}"}
sinks:
  - name: lake
    connector: iceberg
    topics: [web.tracking]
    config:
      catalog.uri: sqlite://` + filepath.Join(dir, "catalog.db") + `
      warehouse: WAREHOUSE
`
	writeFile(t, file, strings.Replace(pipeline, "WAREHOUSE", filepath.Join(dir, "warehouse"), 1))
	err := mustFail(t, dir, "", "iceberg", "compact", "web.nope", "--pipeline", file)
	if strings.Contains(err.Error(), "TRIBUTARY_TEST_UNSET_WRITE_KEY") {
		t.Fatalf("compact needs the source's variable: %v", err)
	}
	wantContains(t, "compact of an unknown table", err.Error(), "web.nope")

	writeFile(t, file, strings.Replace(pipeline, "WAREHOUSE", "${TRIBUTARY_TEST_UNSET_WAREHOUSE}", 1))
	err = mustFail(t, dir, "", "iceberg", "compact", "web.nope", "--pipeline", file)
	wantContains(t, "compact with the sink's variable unset", err.Error(), "TRIBUTARY_TEST_UNSET_WAREHOUSE", "iceberg sink lake", "warehouse")
}

// A --pipeline with several iceberg sinks, or without the one --sink names,
// is an error that names the sinks to choose from.
func TestIceberg_ChoosingTheSinkNamesTheChoices(t *testing.T) {
	dir := t.TempDir()
	file := "../../examples/postgres-to-iceberg/pipeline.yaml"
	err := mustFail(t, dir, "", "iceberg", "compact", "shop.orders", "--pipeline", file)
	wantContains(t, "compact of a file with two iceberg sinks", err.Error(), "--sink", "shop-mirror", "shop-history")
	err = mustFail(t, dir, "", "iceberg", "expire", "shop.orders", "--pipeline", file, "--sink", "mirror")
	wantContains(t, "expire --sink of a sink the file does not have", err.Error(), "no iceberg sink named mirror", "shop-mirror", "shop-history")
}

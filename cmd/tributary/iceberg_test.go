package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
  - {name: gen, connector: generator, topic: lake.events, config: {rate: 200, max.events: 600, batch.size: 50}}
sinks:
  - name: lake
    connector: iceberg
    topics: [lake.events]
    config:
      catalog.uri: sqlite://`+filepath.Join(dir, "catalog.db")+`
      warehouse: `+filepath.Join(dir, "warehouse")+`
      commit.records: 50
`)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", freeAddr(t)}, strings.NewReader(""), &syncBuffer{}, &syncBuffer{})
	}()
	time.Sleep(3 * time.Second) // several commits of 50 records
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v", err)
	}
	out, _ := mustRun(t, dir, "", "iceberg", "compact", "lake.events", "--pipeline", file)
	wantContains(t, "compact", out, "lake.events: ", "data files compacted into")
	if strings.HasPrefix(out, "lake.events: 0 data files") {
		t.Errorf("compact found nothing to do after several small commits: %s", out)
	}
	out, _ = mustRun(t, dir, "", "iceberg", "expire", "lake.events", "--pipeline", file)
	wantContains(t, "expire", out, "snapshots expired")
	err := mustFail(t, dir, "", "iceberg", "compact", "lake.nope", "--pipeline", file)
	wantContains(t, "unknown table", err.Error(), "lake.nope")
	err = mustFail(t, dir, "", "iceberg", "compact", "lake.events")
	wantContains(t, "no --pipeline", err.Error(), "--pipeline")
}

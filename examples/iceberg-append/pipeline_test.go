// Package icebergappend_test runs the iceberg-append example pipeline: it
// validates against the real connector specs, and runs in process (the
// built-in log, the generator, the Iceberg sink) into a temporary data
// directory, after which the table, read back with iceberg-go, holds every
// generated event once, partitioned by day.
package icebergappend_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/internal/exampletest"
	"github.com/tributary-io/tributary/pipelines"
)

const events = 1500

func load(t *testing.T, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	return exampletest.Load(t, "pipeline.yaml", env, generator.Connector(), iceberg.Connector())
}

func TestExample_Validate(t *testing.T) {
	p := load(t, nil)
	if len(p.Sinks) != 1 || p.Sinks[0].Connector != "iceberg" {
		t.Fatalf("sinks %+v", p.Sinks)
	}
	cfg := p.Sinks[0].Config
	// Its own directory, as the quickstart's: in ./data the web-tracking
	// example's sinks would read the generator's events from web.tracking.
	if p.Log.Dir != "./data/iceberg-append" {
		t.Errorf("log.dir %q, want ./data/iceberg-append by default", p.Log.Dir)
	}
	if cfg["catalog.uri"] != "sqlite://./data/iceberg-append/iceberg/catalog.db" || cfg["warehouse"] != "./data/iceberg-append/iceberg/warehouse" {
		t.Errorf("catalog.uri %q, warehouse %q: want them under ./data/iceberg-append by default", cfg["catalog.uri"], cfg["warehouse"])
	}
}

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	p := load(t, map[string]string{"TRIBUTARY_DATA_DIR": dir, "MAX_EVENTS": fmt.Sprint(events)})
	run := exampletest.Run(t, p, generator.Connector(), iceberg.Connector())
	exampletest.WaitFor(t, 30*time.Second, "the sink commits all events", func() error { return run.CaughtUp("tracking-lake", events) })
	run.Shutdown()

	tbl := exampletest.IcebergTable(t, exampletest.IcebergCatalog(t, filepath.Join(dir, "iceberg", "catalog.db")), "lake.tracking")
	if got := tbl.Spec().String(); !strings.Contains(got, "timestamp_day") || !strings.Contains(got, "day") {
		t.Errorf("partition spec %s, want day(timestamp)", got)
	}
	if f, ok := tbl.Schema().FindFieldByName("seq"); !ok || f.Type.String() != "long" {
		t.Fatalf("column seq %+v, want a long: %s", f, tbl.Schema())
	}
	seen := map[string]int{}
	for _, r := range exampletest.IcebergRows(t, tbl, "seq") {
		seen[r[0]]++
	}
	for seq := int64(1); seq <= events; seq++ {
		if n := seen[strconv.FormatInt(seq, 10)]; n != 1 {
			t.Fatalf("seq %d is %d times in the table, want once", seq, n)
		}
	}
	if len(seen) != events {
		t.Fatalf("%d distinct seqs in the table, want %d", len(seen), events)
	}
	parts, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "timestamp_day=*"))
	if len(parts) == 0 {
		t.Errorf("no timestamp_day=… partition directories under %s/data", tbl.Location())
	}
	t.Logf("%d events in %d snapshots, %d day partitions", len(seen), len(tbl.Metadata().Snapshots()), len(parts))
}

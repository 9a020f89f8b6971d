// Package icebergappend_test runs the iceberg-append example pipeline: it
// validates against the real connector specs, and runs in process (the
// built-in log, the generator, the Iceberg sink) into a temporary data
// directory, after which the table, read back with iceberg-go, holds every
// generated event once, partitioned by day.
package icebergappend_test

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

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
	if cfg["catalog.uri"] != "sqlite://./data/iceberg/catalog.db" || cfg["warehouse"] != "./data/iceberg/warehouse" {
		t.Errorf("catalog.uri %q, warehouse %q: want them under ./data by default", cfg["catalog.uri"], cfg["warehouse"])
	}
}

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	p := load(t, map[string]string{"TRIBUTARY_DATA_DIR": dir, "MAX_EVENTS": fmt.Sprint(events)})
	run := exampletest.Run(t, p, generator.Connector(), iceberg.Connector())
	exampletest.WaitFor(t, 30*time.Second, "the sink commits all events", func() error { return run.CaughtUp("tracking-lake", events) })
	run.Shutdown()

	db, err := sql.Open("sqlite", filepath.Join(dir, "iceberg", "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("tributary", db, sqlcat.SQLite, ib.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(t.Context(), catalog.ToIdentifier("lake", "tracking"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Spec().String(); !strings.Contains(got, "timestamp_day") || !strings.Contains(got, "day") {
		t.Errorf("partition spec %s, want day(timestamp)", got)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	seen := map[int64]int{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rb := tr.RecordBatch()
		idx := rb.Schema().FieldIndices("seq")
		if len(idx) != 1 {
			t.Fatalf("no seq column in %s", rb.Schema())
		}
		seqs := rb.Column(idx[0]).(*array.Int64)
		for i := range seqs.Len() {
			seen[seqs.Value(i)]++
		}
	}
	for seq := int64(1); seq <= events; seq++ {
		if seen[seq] != 1 {
			t.Fatalf("seq %d is %d times in the table, want once", seq, seen[seq])
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

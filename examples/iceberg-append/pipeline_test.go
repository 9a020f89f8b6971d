// Package icebergappend_test runs the iceberg-append example pipeline: it
// validates against the real connector specs, and runs in process (the
// built-in log, the generator, the Iceberg sink) into a temporary data
// directory, after which the table, read back with iceberg-go, holds every
// generated event once, partitioned by day.
package icebergappend_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

const events = 1500

func load(t *testing.T, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	transforms := transform.Builtin()
	specs := pipelines.Specs{
		pipelines.KindSource:    {"generator": generator.Connector().Spec},
		pipelines.KindSink:      {"iceberg": iceberg.Connector().Spec},
		pipelines.KindTransform: {},
	}
	for _, name := range transforms.Names() {
		specs[pipelines.KindTransform][name], _ = transforms.Spec(name)
	}
	data, err := os.ReadFile("pipeline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := pipelines.Parse("pipeline.yaml", data, pipelines.Options{Catalog: specs, LookupEnv: func(n string) (string, bool) {
		v, ok := env[n]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
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
	quiet := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: p.Log.Dir, NumPartitions: p.Log.Defaults.Partitions, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg := connect.NewRegistry()
	reg.MustRegister(generator.Connector())
	reg.MustRegister(iceberg.Connector())
	transforms := transform.Builtin()
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, quiet), Connectors: reg, Logger: quiet,
		Transforms: func(typ string, cfg map[string]string) (engine.Transformer, error) { return transforms.New(typ, cfg) }})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	shutdown := func() {
		if stopped {
			return
		}
		stopped = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	defer shutdown()
	if err := w.StartPipeline(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !caughtUp(l, "tracking-lake") {
		if time.Now().After(deadline) {
			t.Fatal("the sink did not commit all events within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	shutdown()

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

// caughtUp reports whether the sink group has committed every record of
// its topics, and the topics hold all the generated events.
func caughtUp(l *tlog.Log, group string) bool {
	lags, err := l.Groups().Describe(group)
	if err != nil || len(lags) == 0 {
		return false
	}
	var end int64
	for _, lag := range lags {
		if lag.Lag != 0 {
			return false
		}
		end += lag.LogEndOffset
	}
	return end >= events
}

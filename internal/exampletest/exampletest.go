// Package exampletest holds what the tests of the example pipelines under
// examples/ share: loading an example's pipeline file against the real
// connector and transform specs with a chosen environment, running it in
// process in a worker of its own (on the built-in log, or on another
// backend), waiting, with a deadline, until its sinks have caught up, and
// reading back the Iceberg tables they wrote.
// It runs the real engine, log and connectors: never a mock.
package exampletest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // database/sql driver "sqlite" for IcebergCatalog

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

// ShutdownTimeout bounds how long Shutdown waits for the worker to drain.
const ShutdownTimeout = 30 * time.Second

// Catalog returns the config specs of the connectors, each under its kind,
// and of every built-in transform.
func Catalog(connectors ...connect.Connector) pipelines.Specs {
	specs := pipelines.Specs{pipelines.KindSource: {}, pipelines.KindSink: {}, pipelines.KindTransform: {}}
	for _, c := range connectors {
		specs[pipelines.Kind(c.Kind)][c.Name] = c.Spec
	}
	transforms := transform.Builtin()
	for _, name := range transforms.Names() {
		specs[pipelines.KindTransform][name], _ = transforms.Spec(name)
	}
	return specs
}

// Load reads and validates the pipeline file at path against
// Catalog(connectors...), resolving ${VAR} references from env only (nil
// sets none), and fails t on any problem.
func Load(t testing.TB, path string, env map[string]string, connectors ...connect.Connector) *pipelines.Pipeline {
	t.Helper()
	p, err := pipelines.LoadFile(path, pipelines.Options{Catalog: Catalog(connectors...), LookupEnv: func(name string) (string, bool) {
		v, ok := env[name]
		return v, ok
	}})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	return p
}

// Running is a pipeline started by Run or Start.
type Running struct {
	// Log is the built-in log the pipeline runs on; nil after Start.
	Log *tlog.Log
	// Worker runs the pipeline.
	Worker *engine.Worker

	t    testing.TB
	once sync.Once
}

// Run opens the built-in log at the pipeline's log dir with its default
// partition count and starts p on it (see Start). The log is closed when
// the test ends, after the worker has shut down, so that a test can read
// it after Shutdown.
func Run(t testing.TB, p *pipelines.Pipeline, connectors ...connect.Connector) *Running {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: p.Log.Dir, NumPartitions: p.Log.Defaults.Partitions, Logger: quiet})
	if err != nil {
		t.Fatalf("open log %s: %v", p.Log.Dir, err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("close log %s: %v", p.Log.Dir, err)
		}
	})
	r := Start(t, engine.NewEmbedded(l, quiet), p, connectors...)
	r.Log = l
	return r
}

// Start starts p in a new worker on backend b, with a registry of the
// connectors and the built-in transforms, and logs discarded. The worker
// is shut down when the test ends, unless the test has called Shutdown.
func Start(t testing.TB, b engine.Backend, p *pipelines.Pipeline, connectors ...connect.Connector) *Running {
	t.Helper()
	reg := connect.NewRegistry()
	for _, c := range connectors {
		if err := reg.Register(c); err != nil {
			t.Fatalf("register connector %s: %v", c.Name, err)
		}
	}
	transforms := transform.Builtin()
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: b, Connectors: reg, Logger: slog.New(slog.DiscardHandler),
		Transforms: func(typ string, cfg map[string]string) (engine.Transformer, error) { return transforms.New(typ, cfg) }})
	if err != nil {
		t.Fatalf("new worker: %v", err)
	}
	r := &Running{Worker: w, t: t}
	t.Cleanup(r.Shutdown)
	if err := w.StartPipeline(t.Context(), p); err != nil {
		t.Fatalf("start pipeline %s: %v", p.Name, err)
	}
	return r
}

// Shutdown stops the worker, draining its connectors, and fails the test
// when it does not within ShutdownTimeout. Only the first call does
// anything.
func (r *Running) Shutdown() {
	r.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
		defer cancel()
		if err := r.Worker.Shutdown(ctx); err != nil {
			r.t.Errorf("shutdown: %v", err)
		}
	})
}

// Committed returns how many records the consumer group has committed over
// all partitions of the built-in log, 0 while it is unknown.
func (r *Running) Committed(group string) int64 {
	lags, err := r.Log.Groups().Describe(group)
	if err != nil {
		return 0
	}
	var n int64
	for _, lag := range lags {
		n += max(lag.CurrentOffset, 0)
	}
	return n
}

// CaughtUp returns nil once the consumer group has committed every record
// of its topics' non-empty partitions in the built-in log and those hold
// at least n records; otherwise an error that shows the group's lags.
func (r *Running) CaughtUp(group string, n int64) error {
	lags, err := r.Log.Groups().Describe(group)
	if err != nil {
		return err
	}
	if len(lags) == 0 {
		return fmt.Errorf("group %s reads no partition yet", group)
	}
	var end int64
	behind := false
	for _, lag := range lags {
		if lag.LogEndOffset <= 0 {
			continue // an empty partition has nothing to commit
		}
		end += lag.LogEndOffset
		behind = behind || lag.Lag != 0
	}
	if behind || end < n {
		return fmt.Errorf("group %s has committed %d of %d records (want %d): %+v", group, r.Committed(group), end, n, lags)
	}
	return nil
}

// WaitFor polls cond every 50 ms until it returns nil, and fails the test
// with what and cond's last error when it does not within timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %v", what, timeout, err)
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("%s: %v", what, errors.Join(err, t.Context().Err()))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// IcebergCatalog opens the SQLite Iceberg catalog at path, as the iceberg
// sink's embedded catalog (catalog.uri sqlite://path) writes it; its
// database is closed when the test ends.
func IcebergCatalog(t testing.TB, path string) *sqlcat.Catalog {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("open catalog %s: %v", path, err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("tributary", db, sqlcat.SQLite, ib.Properties{})
	if err != nil {
		t.Fatalf("open catalog %s: %v", path, err)
	}
	return cat
}

// IcebergTable loads the table named "namespace.table" from cat.
func IcebergTable(t testing.TB, cat catalog.Catalog, name string) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), catalog.ToIdentifier(strings.Split(name, ".")...))
	if err != nil {
		t.Fatalf("load table %s: %v", name, err)
	}
	return tbl
}

// IcebergRows reads tbl with iceberg-go (applying equality deletes) and
// returns the given columns of each row as text (timestamps as epoch
// microseconds, nulls as <null>), sorted by the first column as a number
// when it holds one and then by the whole row. It fails the test when tbl
// has no such column.
func IcebergRows(t testing.TB, tbl *table.Table, cols ...string) [][]string {
	t.Helper()
	name := strings.Join(tbl.Identifier(), ".")
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %s: %v", name, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	var out [][]string
	for tr.Next() {
		rb := tr.RecordBatch()
		arrays := make([]arrow.Array, len(cols))
		for c, col := range cols {
			idx := rb.Schema().FieldIndices(col)
			if len(idx) != 1 {
				t.Fatalf("table %s has no column %s: %s", name, col, rb.Schema())
			}
			arrays[c] = rb.Column(idx[0])
		}
		for i := range int(rb.NumRows()) {
			r := make([]string, len(cols))
			for c, a := range arrays {
				switch {
				case a.IsNull(i):
					r[c] = "<null>"
				case a.DataType().ID() == arrow.TIMESTAMP:
					r[c] = fmt.Sprint(int64(a.(*array.Timestamp).Value(i)))
				default:
					r[c] = a.ValueStr(i)
				}
			}
			out = append(out, r)
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	slices.SortFunc(out, func(a, b []string) int {
		if len(a[0]) != len(b[0]) {
			return len(a[0]) - len(b[0])
		}
		return strings.Compare(strings.Join(a, "\x00"), strings.Join(b, "\x00"))
	})
	return out
}

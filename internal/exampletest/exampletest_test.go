package exampletest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/pipelines"
)

// pipeline is a small generator → log → file pipeline; ${DIR} holds the
// log and the file, ${EVENTS} is how many events the generator makes.
const pipeline = `
version: 1
name: small
log:
  backend: embedded
  dir: ${DIR}
  defaults: {partitions: 2}
topics:
  - {name: events, partitions: 2}
sources:
  - name: gen
    connector: generator
    topic: events
    config: {rate: 5000, seed: 1, max.events: "${EVENTS}"}
    transforms:
      - {type: mask_fields, fields: [properties.referrer]}
sinks:
  - name: out
    connector: file
    topics: [events]
    group: out
    config: {path: "${DIR}/out.jsonl"}
`

func writePipeline(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(path, []byte(pipeline), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fatalTB records the first Fatalf and ends the goroutine, as testing.T
// does; everything else goes to the real test.
type fatalTB struct {
	testing.TB
	mu  sync.Mutex
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.msg = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}

// failure runs fn with a fatalTB and returns what it failed with, "" when
// it returned normally.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.msg
}

func TestCatalog(t *testing.T) {
	specs := Catalog(generator.Connector(), file.Connector())
	if _, ok := specs.Spec(pipelines.KindSource, "generator"); !ok {
		t.Error("no source generator")
	}
	if _, ok := specs.Spec(pipelines.KindSink, "file"); !ok {
		t.Error("no sink file")
	}
	if _, ok := specs.Spec(pipelines.KindSource, "file"); ok {
		t.Error("the file sink is listed as a source")
	}
	names := transform.Builtin().Names()
	if len(names) == 0 || len(specs[pipelines.KindTransform]) != len(names) {
		t.Errorf("transforms %v, want the built-in %v", specs.Names(pipelines.KindTransform), names)
	}
}

func TestLoad(t *testing.T) {
	path := writePipeline(t)
	p := Load(t, path, map[string]string{"DIR": "/data/x", "EVENTS": "10"}, generator.Connector(), file.Connector())
	if p.Log.Dir != "/data/x" || p.Sinks[0].Config["path"] != "/data/x/out.jsonl" {
		t.Errorf("log dir %s, sink path %s: env not applied", p.Log.Dir, p.Sinks[0].Config["path"])
	}
	// Without the file connector's spec, or with a variable unset, the file
	// does not load.
	if msg := failure(t, func(tb testing.TB) {
		Load(tb, path, map[string]string{"DIR": "/d", "EVENTS": "10"}, generator.Connector())
	}); !strings.Contains(msg, path) || !strings.Contains(msg, "file") {
		t.Errorf("without the file connector: failure %q", msg)
	}
	if msg := failure(t, func(tb testing.TB) {
		Load(tb, path, map[string]string{"DIR": "/d"}, generator.Connector(), file.Connector())
	}); !strings.Contains(msg, "EVENTS") {
		t.Errorf("with EVENTS unset: failure %q", msg)
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	const events = 200
	conns := []connect.Connector{generator.Connector(), file.Connector()}
	p := Load(t, writePipeline(t), map[string]string{"DIR": dir, "EVENTS": "200"}, conns...)
	run := Run(t, p, conns...)
	if err := run.CaughtUp("nosuchgroup", 0); err == nil {
		t.Error("an unknown group is caught up")
	}
	WaitFor(t, 30*time.Second, "the sink commits every event", func() error { return run.CaughtUp("out", events) })
	run.Shutdown()
	run.Shutdown() // a second call does nothing
	// The log stays open after Shutdown, for the test to read.
	if n := run.Committed("out"); n != events {
		t.Errorf("committed %d, want %d", n, events)
	}
	if err := run.CaughtUp("out", events+1); err == nil {
		t.Errorf("caught up with %d records, want an error", events+1)
	}
	data, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "\n"); n != events {
		t.Errorf("the file has %d lines, want %d", n, events)
	}
}

func TestWaitFor(t *testing.T) {
	calls := 0
	WaitFor(t, time.Second, "three calls", func() error {
		if calls++; calls < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if calls != 3 {
		t.Errorf("%d calls, want 3", calls)
	}
	start := time.Now()
	msg := failure(t, func(tb testing.TB) {
		WaitFor(tb, 200*time.Millisecond, "never", func() error { return errors.New("still 3 of 5") })
	})
	if want := "never: not within 200ms: still 3 of 5"; msg != want {
		t.Errorf("failure %q, want %q", msg, want)
	}
	if d := time.Since(start); d < 200*time.Millisecond || d > 5*time.Second {
		t.Errorf("failed after %s, want after the 200ms timeout", d)
	}
}

// TestIceberg reads back a table the iceberg sink wrote: every generated
// event once, sorted by seq as a number. It runs in parallel: the engine
// flushes the sink, and so the table commits, every 5 s.
func TestIceberg(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "pipeline.yaml")
	yaml := strings.NewReplacer("connector: file", "connector: iceberg",
		`config: {path: "${DIR}/out.jsonl"}`,
		`config: {mode: append, catalog.uri: "sqlite://${DIR}/catalog.db", warehouse: "${DIR}/warehouse", table: t.events, schema: [seq long not null]}`).Replace(pipeline)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	const events = 120
	conns := []connect.Connector{generator.Connector(), iceberg.Connector()}
	run := Run(t, Load(t, path, map[string]string{"DIR": dir, "EVENTS": "120"}, conns...), conns...)
	WaitFor(t, 30*time.Second, "the sink commits every event", func() error { return run.CaughtUp("out", events) })
	run.Shutdown()

	tbl := IcebergTable(t, IcebergCatalog(t, filepath.Join(dir, "catalog.db")), "t.events")
	rows := IcebergRows(t, tbl, "seq", "user_id")
	if len(rows) != events {
		t.Fatalf("%d rows, want %d", len(rows), events)
	}
	for i, r := range rows {
		if want := strconv.Itoa(i + 1); r[0] != want || r[1] == "" || r[1] == "<null>" {
			t.Fatalf("row %d is %v, want seq %s and a user_id", i, r, want)
		}
	}
	if msg := failure(t, func(tb testing.TB) { IcebergRows(tb, tbl, "seq", "nosuchcolumn") }); !strings.Contains(msg, "no column nosuchcolumn") {
		t.Errorf("a missing column: failure %q", msg)
	}
}

// Package webtracking_test runs the web-tracking example pipeline in
// process: Segment-style requests to the HTTP tracking source land in the
// built-in log, in the JSON-lines file with emails hashed, and in the
// Iceberg table partitioned by the event's day, each event once.
package webtracking_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"net/http"
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
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

func load(t *testing.T, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	transforms := transform.Builtin()
	specs := pipelines.Specs{
		pipelines.KindSource:    {"httptrack": httptrack.Connector().Spec},
		pipelines.KindSink:      {"iceberg": iceberg.Connector().Spec, "file": file.Connector().Spec},
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

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	l0, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l0.Addr().String()
	l0.Close()
	p := load(t, map[string]string{"TRIBUTARY_DATA_DIR": dir, "TRACKING_WRITE_KEY": "dev-key", "TRACKING_LISTEN": addr})
	quiet := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: p.Log.Dir, NumPartitions: p.Log.Defaults.Partitions, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg := connect.NewRegistry()
	reg.MustRegister(httptrack.Connector())
	reg.MustRegister(file.Connector())
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
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	defer shutdown()
	if err := w.StartPipeline(t.Context(), p); err != nil {
		t.Fatal(err)
	}

	// Two days of events, sent the way the SDKs send them.
	var batch []string
	for i := range 100 {
		day := 1 + i%2
		batch = append(batch, fmt.Sprintf(`{"type":"track","userId":"u-%d","event":"Viewed","messageId":"m-%d","timestamp":"2026-03-0%dT10:00:00Z","properties":{"n":%d}}`, i%7, i, day, i))
	}
	batch = append(batch, `{"type":"identify","userId":"u-1","messageId":"m-id","timestamp":"2026-03-01T11:00:00Z","traits":{"email":"ann@example.com"}}`)
	post := func(path, body string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://"+addr+path, strings.NewReader(body))
			req.SetBasicAuth("dev-key", "")
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				var b bytes.Buffer
				b.ReadFrom(resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return
				}
				err = fmt.Errorf("%s: %s", resp.Status, b.String())
			}
			if time.Now().After(deadline) {
				t.Fatalf("POST %s: %v", path, err)
			}
			time.Sleep(100 * time.Millisecond) // until the source listens
		}
	}
	post("/v1/batch", `{"batch":[`+strings.Join(batch, ",")+`]}`)
	post("/v1/track", `{"userId":"u-9","event":"Signed Up","messageId":"m-single","timestamp":"2026-03-02T12:00:00Z"}`)
	post("/v1/track", `{"userId":"u-9","event":"Signed Up","messageId":"m-single","timestamp":"2026-03-02T12:00:00Z"}`) // an SDK's retry
	const want = 102

	deadline := time.Now().Add(60 * time.Second)
	for !caughtUp(l, "tracking-lake", want) || !caughtUp(l, "tracking-file", want) {
		if time.Now().After(deadline) {
			for _, g := range []string{"tracking-lake", "tracking-file"} {
				lags, err := l.Groups().Describe(g)
				t.Logf("group %s: %+v %v", g, lags, err)
			}
			st, _ := w.Status("tracking-lake")
			t.Logf("tracking-lake: %+v", st)
			t.Fatal("the sinks did not commit all events within 60s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	shutdown()

	lines, err := os.ReadFile(filepath.Join(dir, "out", "tracking.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(lines, []byte("\n")); n != want {
		t.Errorf("the file has %d lines, want %d", n, want)
	}
	if bytes.Contains(lines, []byte("ann@example.com")) {
		t.Error("the file shows an email in clear")
	}

	db, err := sql.Open("sqlite", filepath.Join(dir, "iceberg", "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("tributary", db, sqlcat.SQLite, ib.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(t.Context(), catalog.ToIdentifier("web", "tracking"))
	if err != nil {
		t.Fatal(err)
	}
	if got := tbl.Spec().String(); !strings.Contains(got, "timestamp_day") {
		t.Errorf("partition spec %s, want day(timestamp)", got)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	seen := map[string]int{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rb := tr.RecordBatch()
		idx := rb.Schema().FieldIndices("messageId")
		if len(idx) != 1 {
			t.Fatalf("no messageId column in %s", rb.Schema())
		}
		ids := rb.Column(idx[0]).(*array.String)
		for i := range ids.Len() {
			seen[ids.Value(i)]++
		}
		if tr := rb.Schema().FieldIndices("traits"); len(tr) == 1 {
			col := rb.Column(tr[0]).(*array.String)
			for i := range col.Len() {
				if strings.Contains(col.Value(i), "ann@example.com") {
					t.Error("the table shows an email in clear")
				}
			}
		}
	}
	if len(seen) != want {
		t.Errorf("%d distinct messageIds in the table, want %d", len(seen), want)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("messageId %s is %d times in the table", id, n)
		}
	}
	parts, _ := filepath.Glob(filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "timestamp_day=*"))
	if len(parts) != 2 {
		t.Errorf("%d timestamp_day=… partitions, want 2 (two days of events)", len(parts))
	}
}

// caughtUp reports whether a sink group has committed every record of its
// topics, and the topics hold n records.
func caughtUp(l *tlog.Log, group string, n int64) bool {
	lags, err := l.Groups().Describe(group)
	if err != nil || len(lags) == 0 {
		return false
	}
	var end int64
	for _, lag := range lags {
		if lag.Lag != 0 && lag.LogEndOffset > 0 { // an empty partition has nothing to commit
			return false
		}
		end += lag.LogEndOffset
	}
	return end >= n
}

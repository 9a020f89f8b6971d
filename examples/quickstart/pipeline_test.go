// Package quickstart_test runs the quickstart pipeline in process: the
// generator's events land in the built-in log and in the JSON-lines file,
// referrers masked, both under the quickstart's own data directory.
package quickstart_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

func load(t *testing.T, path string, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	transforms := transform.Builtin()
	specs := pipelines.Specs{
		pipelines.KindSource:    {"generator": generator.Connector().Spec, "httptrack": httptrack.Connector().Spec},
		pipelines.KindSink:      {"file": file.Connector().Spec, "iceberg": iceberg.Connector().Spec},
		pipelines.KindTransform: {},
	}
	for _, name := range transforms.Names() {
		specs[pipelines.KindTransform][name], _ = transforms.Spec(name)
	}
	p, err := pipelines.LoadFile(path, pipelines.Options{Catalog: specs, LookupEnv: func(n string) (string, bool) {
		v, ok := env[n]
		return v, ok
	}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The quickstart keeps its log and its output apart from the other
// examples', whose sinks read the same topic web.tracking: run one after
// the other with the defaults, the web-tracking example must not deliver
// the quickstart's synthetic events. TRIBUTARY_DATA_DIR moves both the log
// and the output file.
func TestExample_OwnDataDir(t *testing.T) {
	qs := load(t, "pipeline.yaml", map[string]string{})
	wt := load(t, "../web-tracking/pipeline.yaml", map[string]string{"TRACKING_WRITE_KEY": "k"})
	if qs.Log.Dir == wt.Log.Dir {
		t.Errorf("quickstart and web-tracking share the log %s", qs.Log.Dir)
	}
	if want := "./data/quickstart"; qs.Log.Dir != want {
		t.Errorf("log dir %s, want %s", qs.Log.Dir, want)
	}
	if got, want := qs.Sinks[0].Config["path"], "./data/quickstart/out/events.jsonl"; got != want {
		t.Errorf("file sink path %s, want %s", got, want)
	}

	qs = load(t, "pipeline.yaml", map[string]string{"TRIBUTARY_DATA_DIR": "/srv/qs"})
	if qs.Log.Dir != "/srv/qs" {
		t.Errorf("with TRIBUTARY_DATA_DIR the log dir is %s", qs.Log.Dir)
	}
	if got, want := qs.Sinks[0].Config["path"], "/srv/qs/out/events.jsonl"; got != want {
		t.Errorf("with TRIBUTARY_DATA_DIR the file sink path is %s, want %s", got, want)
	}
}

func TestExample_Runs(t *testing.T) {
	dir := t.TempDir()
	p := load(t, "pipeline.yaml", map[string]string{"TRIBUTARY_DATA_DIR": dir})
	quiet := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: p.Log.Dir, NumPartitions: p.Log.Defaults.Partitions, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	reg := connect.NewRegistry()
	reg.MustRegister(generator.Connector())
	reg.MustRegister(file.Connector())
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

	// The generator runs at 1000 events/s: wait until the file sink has
	// committed a few hundred of them.
	const want = 300
	deadline := time.Now().Add(30 * time.Second)
	for committed(l, "events-file") < want {
		if time.Now().After(deadline) {
			lags, err := l.Groups().Describe("events-file")
			t.Fatalf("the file sink did not commit %d events within 30s: %+v %v", want, lags, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	shutdown()
	n := committed(l, "events-file")

	f, err := os.Open(filepath.Join(dir, "out", "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines, referrers := 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		var event struct {
			Event      string         `json:"event"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(sc.Bytes(), &event); err != nil {
			t.Fatalf("line %d: %v: %s", lines, err, sc.Bytes())
		}
		if event.Event == "" {
			t.Fatalf("line %d is not a tracking event: %s", lines, sc.Bytes())
		}
		if r, ok := event.Properties["referrer"]; ok {
			referrers++
			if r != "****" {
				t.Errorf("line %d: referrer %v is not masked", lines, r)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if int64(lines) < n {
		t.Errorf("the file has %d lines, the sink committed %d", lines, n)
	}
	if referrers == 0 {
		t.Error("no event with a referrer: the mask was not exercised")
	}
}

// committed is the number of records group has committed over all
// partitions.
func committed(l *tlog.Log, group string) int64 {
	lags, err := l.Groups().Describe(group)
	if err != nil {
		return 0
	}
	var n int64
	for _, lag := range lags {
		n += max(lag.CurrentOffset, 0)
	}
	return n
}

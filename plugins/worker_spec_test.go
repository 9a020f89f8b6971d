package plugins_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
	"github.com/tributary-io/tributary/plugins"
)

// TestWorker_PluginSpecAsBuiltIn: what a plugin's connect.Spec holds
// beyond data reaches the worker as a built-in's does: its Redact masks
// the password of a URL in REST answers and in the worker's log (the
// plugin's own log lines too), its Exclusive parameter refuses a second
// connector with the same file (worker and pipeline validation), and its
// bounds are checked by the REST validate endpoint and pipeline
// validation.
func TestWorker_PluginSpecAsBuiltIn(t *testing.T) {
	logs := &syncWriter{}
	w, srv, _ := newWorkerWith(t, plugins.Options{Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))},
		time.Minute, plugins.BuiltPlugin("misbehave"))
	out := filepath.Join(t.TempDir(), "out")
	const secretURL = "https://bob:hunter2@example.com/hook"
	ctx := t.Context()
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "a", Kind: connect.KindSink, Connector: "misbehave", Topics: []string{"in"},
		Config: map[string]string{"url": secretURL, "out": out}}, ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the sink to run", func() bool { return getStatus(t, srv, "a").Tasks[0].State == "RUNNING" })
	for _, path := range []string{"/connectors/a", "/connectors/a/config", "/connectors/a/status", "/connectors?expand=info&expand=status"} {
		body := httpGet(t, srv.URL+path)
		if strings.Contains(body, "hunter2") {
			t.Errorf("GET %s shows the password: %s", path, body)
		}
		if path == "/connectors/a/config" && !strings.Contains(body, "https://bob:********@example.com/hook") {
			t.Errorf("GET %s does not show the URL with its password masked: %s", path, body)
		}
	}
	// The plugin logs its config (connect.Config's LogValue) through the
	// worker's log.
	waitUntil(t, "the plugin's config in the log", func() bool { return strings.Contains(logs.String(), "msg=configured") })
	if s := logs.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "bob:********@example.com") {
		t.Errorf("the log shows the password, or not the masked URL:\n%s", s)
	}

	// A second connector may not write to the same file, however written.
	err := w.Start(ctx, engine.ConnectorSpec{Name: "b", Kind: connect.KindSink, Connector: "misbehave", Topics: []string{"in"},
		Config: map[string]string{"out": filepath.Join(filepath.Dir(out), ".", "out")}}, "")
	if err == nil || !strings.Contains(err.Error(), "out") {
		t.Errorf("a second sink on the same out: %v", err)
	}

	// The bounds of retry.wait, at the REST validate endpoint.
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/connector-plugins/misbehave/config/validate", strings.NewReader(`{"name": "b2", "topics": "in", "retry.wait": "5s"}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct {
		ErrorCount int `json:"error_count"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.ErrorCount != 1 || !strings.Contains(string(body), "at most 1s") {
		t.Errorf("validate retry.wait=5s: %s", body)
	}

	// And in a pipeline file.
	c, err := w.Registry().Lookup(connect.KindSink, "misbehave")
	if err != nil {
		t.Fatal(err)
	}
	yaml := `version: 1
name: twice
topics: [{name: in}]
sinks:
  - {name: one, connector: misbehave, topics: [in], config: {out: ./data/out, retry.wait: 5s}}
  - {name: two, connector: misbehave, topics: [in], config: {out: data/out}}
`
	_, err = pipelines.Parse("twice.yaml", []byte(yaml), pipelines.Options{Catalog: pipelines.Specs{pipelines.KindSink: {"misbehave": c.Spec}}})
	if err == nil || !strings.Contains(err.Error(), "config.retry.wait: \"5s\" must be at most 1s") ||
		!strings.Contains(err.Error(), `sinks[1].config.out: misbehave out "data/out" is already used by one`) {
		t.Errorf("a pipeline with retry.wait 5s and two sinks on one file: %v", err)
	}
}

// TestWorker_StopCutsPluginSinkRetries: stopping a connector whose plugin
// sink retries a record on its own (connect.Stopping) ends the retries
// rather than waiting for them: the stop returns well before the Write's
// deadline (a minute here), the task is STOPPED, not FAILED, and nothing
// at or past the record that was not delivered is committed.
func TestWorker_StopCutsPluginSinkRetries(t *testing.T) {
	w, _, l := newWorkerWith(t, plugins.Options{CallTimeout: time.Minute}, time.Minute, plugins.BuiltPlugin("misbehave"))
	if err := l.CreateTopic("in", 1, nil); err != nil {
		t.Fatal(err)
	}
	var recs []tlog.Record
	for _, v := range []string{"1", "2", "poison", "3"} {
		recs = append(recs, tlog.Record{Value: []byte(v)})
	}
	if _, err := l.Append(t.Context(), "in", 0, recs); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "out")
	if err := w.Start(t.Context(), engine.ConnectorSpec{Name: "s", Kind: connect.KindSink, Connector: "misbehave", Topics: []string{"in"},
		Config: map[string]string{"mode": "stubborn", "out": out, "retry.wait": "5ms"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the sink to retry the poison record", func() bool {
		b, _ := os.ReadFile(out)
		return strings.Contains(string(b), "try 3\n")
	})
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := w.Stop(ctx, "s"); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if st, err := w.Status("s"); err != nil || st.State != engine.StateStopped {
		t.Errorf("after the stop: %+v, %v", st, err)
	}
	b, _ := os.ReadFile(out)
	if got := string(b); !strings.HasPrefix(got, "1\n2\ntry 1\n") || slices.Contains(strings.Split(got, "\n"), "3") {
		t.Errorf("out = %q, want 1, 2, then tries, and no 3", got)
	}
	offsets, err := w.Offsets(t.Context(), "s")
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range offsets {
		n, ok := o.Offset.(map[string]any)["kafka_offset"].(int64)
		if !ok || n > 2 {
			t.Errorf("committed %+v, past the poison record at offset 2", o)
		}
	}
}

// syncWriter is a log destination that tests read.
type syncWriter struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

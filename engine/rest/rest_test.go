package rest

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
)

var update = flag.Bool("update", false, "rewrite golden files")

const secret = "s3cr3t-password-value"

type idleSource struct{}

func (idleSource) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (idleSource) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return []connect.Record{{Value: []byte(`{"x":1}`), Position: connect.Position(`{"seq":1}`)}}, nil
	}
}
func (idleSource) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (idleSource) Close(ctx context.Context) error                     { return nil }

// brokenSource fails to open with a setup error: its task stays FAILED
// until restarted.
type brokenSource struct{ idleSource }

func (brokenSource) Open(ctx context.Context, cfg connect.Config) error {
	return connect.Permanent(errors.New("wal_level is replica, want logical"))
}

type nullSink struct{}

func (nullSink) Open(ctx context.Context, cfg connect.Config) error     { return nil }
func (nullSink) Write(ctx context.Context, recs []connect.Record) error { return nil }
func (nullSink) Close(ctx context.Context) error                        { return nil }

func newTestServer(t *testing.T) (*httptest.Server, *engine.Worker, *bytesLog) {
	t.Helper()
	srv, w, logs, _ := newTestServerLog(t)
	return srv, w, logs
}

// newTestServerLog is newTestServer that also returns the embedded log.
func newTestServerLog(t testing.TB) (*httptest.Server, *engine.Worker, *bytesLog, *tlog.Log) {
	t.Helper()
	return newTestServerOpts(t, tlog.Options{Dir: t.TempDir()})
}

// newTestServerOpts is newTestServerLog on a log opened with opts (its
// Logger is the worker's).
func newTestServerOpts(t testing.TB, opts tlog.Options) (*httptest.Server, *engine.Worker, *bytesLog, *tlog.Log) {
	t.Helper()
	logs := &bytesLog{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	opts.Logger = logger
	l, err := tlog.Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "idle", Kind: connect.KindSource, Version: "1.0.0",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "password", Type: connect.TypePassword, Description: "the secret"},
			{Name: "mode", Type: connect.TypeString, Enum: []string{"a", "b"}, Default: "a", Description: "a mode"},
			{Name: "url", Type: connect.TypeString, Description: "a URL whose password is masked"},
		}, Redact: func(name, value string) string {
			if u, err := url.Parse(value); name == "url" && err == nil && u.User != nil {
				return u.Redacted()
			}
			return value
		}},
		NewSource: func() connect.Source { return idleSource{} }})
	reg.MustRegister(connect.Connector{Name: "null", Kind: connect.KindSink, Version: "1.0.0", NewSink: func() connect.Sink { return nullSink{} }})
	reg.MustRegister(connect.Connector{Name: "broken", Kind: connect.KindSource, Version: "1.0.0", NewSource: func() connect.Source { return brokenSource{} }})
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger, WorkerID: "127.0.0.1:8083",
		Transforms: func(typ string, cfg map[string]string) (engine.Transformer, error) {
			return transform.Builtin().New(typ, cfg)
		}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(w, l, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	return srv, w, logs, l
}

// bytesLog collects the worker's log; safe to read while it writes.
type bytesLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *bytesLog) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *bytesLog) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func call(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// golden compares a JSON answer (re-indented) with testdata/name.json.
func golden(t *testing.T, name, got string) {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(got), &v); err != nil {
		t.Fatalf("%s: answer is not JSON: %v\n%s", name, err, got)
	}
	pretty, _ := json.MarshalIndent(v, "", "  ")
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.WriteFile(path, append(pretty, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(string(pretty)) {
		t.Errorf("%s: got\n%s\nwant\n%s", name, pretty, want)
	}
}

func TestREST_ConnectShapes(t *testing.T) {
	srv, w, logs := newTestServer(t)
	steps := []struct {
		name, method, path, body string
		code                     int
	}{
		{"create", "POST", "/connectors", `{"name":"src","config":{"connector.class":"idle","topic":"t","password":"` + secret + `"}}`, 201},
		{"create_conflict", "POST", "/connectors", `{"name":"src","config":{"connector.class":"idle","topic":"t"}}`, 409},
		{"create_unknown_class", "POST", "/connectors", `{"name":"x","config":{"connector.class":"nope"}}`, 400},
		{"list", "GET", "/connectors", "", 200},
		{"info", "GET", "/connectors/src", "", 200},
		{"config", "GET", "/connectors/src/config", "", 200},
		{"not_found", "GET", "/connectors/missing", "", 404},
		{"plugins", "GET", "/connector-plugins", "", 200},
		{"validate", "PUT", "/connector-plugins/idle/config/validate", `{"connector.class":"idle","password":"` + secret + `","mode":"z","bogus":"1","url":"http://u:` + secret + `@h/"}`, 200},
		{"validate_sink", "PUT", "/connector-plugins/null/config/validate", `{"name":"s","errors.retry.timeout":"60000"}`, 200},
		{"offsets_patch_running", "PATCH", "/connectors/src/offsets", `{"offsets":[{"partition":{"pipeline":"rest"},"offset":{"seq":5}}]}`, 400},
	}
	for _, s := range steps {
		code, body := call(t, srv, s.method, s.path, s.body)
		if code != s.code {
			t.Fatalf("%s: %s %s = %d %s, want %d", s.name, s.method, s.path, code, body, s.code)
		}
		if strings.Contains(body, secret) {
			t.Fatalf("%s: the secret shows in the answer: %s", s.name, body)
		}
		golden(t, s.name, body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, _ := w.Status("src")
		if len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("source never RUNNING: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for {
		offs, _ := w.Offsets(t.Context(), "src")
		if len(offs) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("source never stored a position")
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, body := call(t, srv, "GET", "/connectors/src/status", "")
	if code != 200 {
		t.Fatalf("status = %d", code)
	}
	golden(t, "status", body)
	code, body = call(t, srv, "GET", "/connectors/src/tasks/0/status", "")
	if code != 200 {
		t.Fatalf("task status = %d", code)
	}
	golden(t, "task_status", body)
	if code, _ := call(t, srv, "PUT", "/connectors/src/pause", ""); code != 202 {
		t.Fatalf("pause = %d", code)
	}
	if code, _ := call(t, srv, "PUT", "/connectors/src/stop", ""); code != 204 {
		t.Fatalf("stop = %d", code)
	}
	_, body = call(t, srv, "GET", "/connectors/src/status", "")
	golden(t, "status_stopped", body)
	_, body = call(t, srv, "GET", "/connectors/src/offsets", "")
	golden(t, "offsets", body)
	code, body = call(t, srv, "PATCH", "/connectors/src/offsets", `{"offsets":[{"partition":{"pipeline":"rest"},"offset":{"seq":5}}]}`)
	if code != 200 {
		t.Fatalf("patch offsets while stopped = %d %s", code, body)
	}
	golden(t, "offsets_patched", body)
	_, body = call(t, srv, "GET", "/connectors/src/offsets", "")
	golden(t, "offsets_after_patch", body)
	if code, _ := call(t, srv, "PUT", "/connectors/src/resume", ""); code != 202 {
		t.Fatalf("resume = %d", code)
	}
	code, body = call(t, srv, "POST", "/connectors/src/restart?includeTasks=true", "")
	if code != 202 || strings.Contains(body, secret) {
		t.Fatalf("restart = %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/connectors?expand=info", "")
	if code != 200 || strings.Contains(body, secret) {
		t.Fatalf("expand = %d %s", code, body)
	}
	code, body = call(t, srv, "GET", "/metrics", "")
	if code != 200 || !strings.Contains(body, "kafka_connect_connector_status") || !strings.Contains(body, "tributary_log_records_appended_total") || !strings.Contains(body, "tributary_log_roll_failures_total 0") {
		t.Fatalf("metrics = %d\n%s", code, body)
	}
	code, body = call(t, srv, "PATCH", "/connectors/src/config", `{"mode":"b","topic":"t2"}`)
	if code != 200 || !strings.Contains(body, `"mode":"b"`) || !strings.Contains(body, `"topic":"t2"`) || strings.Contains(body, secret) {
		t.Fatalf("patch config = %d %s", code, body)
	}
	if spec, _ := w.Spec("src"); spec.Config["password"] != secret {
		t.Fatalf("PATCH lost the secret: %q", spec.Config["password"])
	}
	code, body = call(t, srv, "PATCH", "/connectors/src/config", `{"mode":null}`)
	if code != 200 || strings.Contains(body, `"mode"`) {
		t.Fatalf("patch config with null = %d %s", code, body)
	}
	if code, _ := call(t, srv, "DELETE", "/connectors/src", ""); code != 204 {
		t.Fatalf("delete = %d", code)
	}
	if strings.Contains(logs.String(), secret) {
		t.Fatalf("the secret shows in the worker's log")
	}
}

func TestREST_TopicsAndRecords(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/topics", `{"name":"web","partitions":2,"config":{"retention.ms":"1000"}}`); code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/topics", `{"name":"bad","partitions":1,"config":{"retention.mss":"1"}}`); code != 400 || !strings.Contains(body, "retention.ms") {
		t.Fatalf("bad config = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/topics/web/records", `{"records":[{"key":"a","value":"1"},{"partition":1,"value":"2","headers":[["h","v"]]}]}`); code != 200 || !strings.Contains(body, `"acknowledged":2`) {
		t.Fatalf("produce = %d %s", code, body)
	}
	code, body := call(t, srv, "GET", "/topics/web/partitions/1/records?offset=0", "")
	if code != 200 || !strings.Contains(body, `"value":"2"`) || !strings.Contains(body, `["h","v"]`) {
		t.Fatalf("read = %d %s", code, body)
	}
	if code, _ := call(t, srv, "GET", "/topics/web/partitions/1/records?offset=99", ""); code != 400 {
		t.Fatalf("read out of range = %d", code)
	}
	if code, _ := call(t, srv, "GET", "/topics/nope", ""); code != 404 {
		t.Fatalf("unknown topic = %d", code)
	}
	if code, body := call(t, srv, "GET", "/topics", ""); code != 200 || strings.TrimSpace(body) != `["_tributary.offsets","web"]` {
		t.Fatalf("list topics = %d %s", code, body)
	}
	if code, body := call(t, srv, "GET", "/topics?expand=status", ""); code != 200 || strings.TrimSpace(body) != `{"_tributary.offsets":{"status":{"state":"OPEN"}},"web":{"status":{"state":"OPEN"}}}` {
		t.Fatalf("list topics with status = %d %s", code, body)
	}
}

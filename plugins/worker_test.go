package plugins_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/plugins"
)

// These tests run plugin connectors under the real worker (engine) and its
// REST API, on the embedded log: what a user of `tributary run` sees.

// newWorker returns a worker on a fresh embedded log whose registry holds
// the given plugins, its REST API, and the log.
func newWorker(t *testing.T, backoff time.Duration, paths ...string) (*engine.Worker, *httptest.Server, *tlog.Log) {
	t.Helper()
	return newWorkerWith(t, plugins.Options{}, backoff, paths...)
}

// newWorkerWith is newWorker with the plugin host's options: its Logger
// (nil discards) is the worker's too; CallTimeout defaults to 5s and
// ReadWait to 200ms.
func newWorkerWith(t *testing.T, opts plugins.Options, backoff time.Duration, paths ...string) (*engine.Worker, *httptest.Server, *tlog.Log) {
	t.Helper()
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	opts.Logger = logger
	if opts.CallTimeout == 0 {
		opts.CallTimeout = 5 * time.Second
	}
	if opts.ReadWait == 0 {
		opts.ReadWait = 200 * time.Millisecond
	}
	h := plugins.NewHost(opts)
	var found []*plugins.Plugin
	for _, p := range paths {
		found = append(found, h.Inspect(t.Context(), p))
	}
	reg := connect.NewRegistry()
	if err := plugins.Register(reg, found); err != nil {
		t.Fatal(err)
	}
	for _, p := range found {
		if !p.Valid() {
			t.Fatal(p.Err)
		}
	}
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: reg, Logger: logger,
		RestartBackoffInitial: backoff, RestartBackoffMax: backoff})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.New(w, l, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := w.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		h.Close()
		l.Close()
	})
	return w, srv, l
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// taskStatus is GET /connectors/{name}/status, as Kafka Connect shapes it.
type taskStatus struct {
	Connector struct{ State string } `json:"connector"`
	Tasks     []struct {
		State string `json:"state"`
		Trace string `json:"trace"`
	} `json:"tasks"`
}

func getStatus(t *testing.T, srv *httptest.Server, name string) taskStatus {
	t.Helper()
	resp, err := http.Get(srv.URL + "/connectors/" + name + "/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st taskStatus
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || resp.StatusCode != http.StatusOK || len(st.Tasks) != 1 {
		t.Fatalf("status of %s: %d %+v %v", name, resp.StatusCode, st, err)
	}
	return st
}

// TestWorker_PluginCrashInTaskStatus: a sink plugin that panics fails its
// task, whose status — in the engine and at REST
// /connectors/{name}/status — carries the plugin's last stderr lines (the
// panic); the source task of another plugin keeps running.
func TestWorker_PluginCrashInTaskStatus(t *testing.T) {
	// A long restart backoff keeps the task FAILED while the test looks.
	w, srv, _ := newWorker(t, time.Minute, plugins.BuiltPlugin("counter"), plugins.BuiltPlugin("misbehave"))
	ctx := t.Context()
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "numbers", Kind: connect.KindSource, Connector: "counter",
		Topic: "numbers", Config: map[string]string{"rate": "100"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "out", Kind: connect.KindSink, Connector: "misbehave",
		Topics: []string{"numbers"}, Config: map[string]string{"mode": "crash"}}, ""); err != nil {
		t.Fatal(err)
	}
	var st engine.ConnectorStatus
	waitUntil(t, "the sink task to fail", func() bool {
		var err error
		st, err = w.Status("out")
		return err == nil && len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateFailed
	})
	wants := []string{
		"plugin misbehave (misbehave, pid ", "write: the plugin process exited (exit status 2)",
		// Lines from os.Stderr and from slog reach the host on two paths:
		// their order may vary, and a line written just before the crash
		// may arrive after the tail was taken, so only the panic (which the
		// process exit waits for) is required.
		"; its last stderr lines:\n\t", "\n\tpanic: boom after ", " records\n\tgoroutine ",
	}
	for _, want := range wants {
		if !strings.Contains(st.Tasks[0].Trace, want) {
			t.Errorf("the task's trace has no %q:\n%s", want, st.Tasks[0].Trace)
		}
	}
	t.Logf("the sink task's trace:\n%s", st.Tasks[0].Trace)
	rs := getStatus(t, srv, "out")
	if rs.Tasks[0].State != "FAILED" || rs.Tasks[0].Trace != st.Tasks[0].Trace {
		t.Errorf("REST status of the sink: %s, trace:\n%s", rs.Tasks[0].State, rs.Tasks[0].Trace)
	}
	if rs := getStatus(t, srv, "numbers"); rs.Tasks[0].State != "RUNNING" {
		t.Errorf("the source task is %s, want RUNNING: %s", rs.Tasks[0].State, rs.Tasks[0].Trace)
	}
}

// TestWorker_SinkPluginKilled: SIGKILL the jsonl sink plugin mid-stream;
// its task restarts in a new process from the committed offsets, and the
// file ends up holding every number (at least once).
func TestWorker_SinkPluginKilled(t *testing.T) {
	w, srv, _ := newWorker(t, 50*time.Millisecond, plugins.BuiltPlugin("counter"), plugins.BuiltPlugin("jsonl"))
	ctx := t.Context()
	out := filepath.Join(t.TempDir(), "numbers.jsonl")
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "numbers", Kind: connect.KindSource, Connector: "counter",
		Topic: "numbers", Config: map[string]string{"rate": "1000"}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "file", Kind: connect.KindSink, Connector: "jsonl",
		Topics: []string{"numbers"}, Config: map[string]string{"path": out}}, ""); err != nil {
		t.Fatal(err)
	}
	numbers := func() (seen map[int]bool, top int) {
		seen = map[int]bool{}
		data, _ := os.ReadFile(out)
		for _, line := range strings.Split(string(data), "\n") {
			var v struct{ N int }
			if json.Unmarshal([]byte(line), &v) == nil {
				seen[v.N] = true
				top = max(top, v.N)
			}
		}
		return seen, top
	}
	waitUntil(t, "200 numbers in the file", func() bool { _, top := numbers(); return top >= 200 })

	pid := pluginPID(t, plugins.BuiltPlugin("jsonl"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, before := numbers()
	waitUntil(t, "numbers to continue after the sink plugin was killed", func() bool {
		_, top := numbers()
		return top >= before+500
	})
	if pid2 := pluginPID(t, plugins.BuiltPlugin("jsonl")); pid2 == pid {
		t.Errorf("the sink runs in the killed process %d still", pid)
	}
	if rs := getStatus(t, srv, "file"); rs.Tasks[0].State != "RUNNING" {
		t.Errorf("the sink task is %s: %s", rs.Tasks[0].State, rs.Tasks[0].Trace)
	}
	seen, top := numbers()
	for n := 1; n <= top; n++ {
		if !seen[n] {
			t.Fatalf("number %d of 1..%d is missing after the sink plugin was killed", n, top)
		}
	}
}

// pluginPID returns the pid of the one running process of the plugin at
// path, from /proc.
func pluginPID(t *testing.T, path string) int {
	t.Helper()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			pids = append(pids, pid)
		}
	}
	if len(pids) != 1 {
		t.Fatalf("%d processes of %s running, want 1: %v", len(pids), path, pids)
	}
	return pids[0]
}

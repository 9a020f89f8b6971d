package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// TestServer_SinkOwnsItsGroup runs a worker whose file sink consumes as
// group events-file, and checks through --server that the group shows the
// sink as its member and refuses resets, deletes and consumers from outside
// until the connector is stopped. The worker starts despite a missing
// --plugins-dir, and skips a directory of Go source without a warning per
// file.
func TestServer_SinkOwnsItsGroup(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out", "events.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", out).Replace(quickstartYAML))
	source := filepath.Join(dir, "src")
	if err := os.MkdirAll(source, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(source, "main.go"), "package main\n")

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var runErr syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", addr, "--plugins-dir", filepath.Join(dir, "missing"), "--plugins-dir", source},
			strings.NewReader(""), new(syncbuf.Buffer), &runErr)
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		o, _, err := tributary(t, data, "", "groups", "describe", "events-file", "--server", addr)
		if err == nil && strings.Count(o, "\nevents-file") == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sink never committed on every partition (%v)\n%s\nworker stderr:\n%s", err, o, runErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if s := runErr.String(); !strings.Contains(s, "missing") || strings.Contains(s, "not executable") {
		t.Errorf("worker stderr: want a warning about the missing plugin directory and none per source file:\n%s", s)
	}

	o, e := mustRun(t, data, "", "groups", "describe", "events-file", "--server", addr)
	wantContains(t, "describe", o, "connector-consumer-events-file-0", "/127.0.0.1")
	if strings.Contains(e, "no active members") {
		t.Errorf("describe says no active members while the sink runs: %s", e)
	}
	// The hints name the CLI first, the REST calls in parentheses.
	hints := []string{"tributary connectors stop events-file", "then tributary connectors offsets events-file --set …|--reset", "(REST: PUT /connectors/events-file/stop"}
	err := mustFail(t, data, "", "groups", "reset-offsets", "--group", "events-file", "--topic", "web.tracking", "--to-earliest", "--execute", "--server", addr)
	wantContains(t, "reset while the sink runs", err.Error(), hints...)
	err = mustFail(t, data, "", "groups", "delete", "events-file", "--server", addr)
	wantContains(t, "delete while the sink runs", err.Error(), hints...)
	err = mustFail(t, data, "", "consume", "web.tracking", "-g", "events-file", "-e", "--server", addr)
	wantContains(t, "consume as the sink's group", err.Error(), hints...)
	mustRun(t, data, "", "groups", "reset-offsets", "--group", "events-file", "--topic", "web.tracking", "--to-earliest", "--server", addr) // a dry run is fine

	// KIP-745: --only-failed leaves a healthy connector be; the default
	// (--include-tasks) restarts the connector and its task.
	o, _ = mustRun(t, data, "", "connectors", "restart", "events-file", "--only-failed", "--server", addr)
	wantContains(t, "restart --only-failed", o, "events-file: nothing restarted (connector RUNNING")
	o, _ = mustRun(t, data, "", "connectors", "restart", "events-file", "--server", addr)
	wantContains(t, "restart", o, "events-file: restarting connector, task 0\n")

	o, _ = mustRun(t, data, "", "connectors", "stop", "events-file", "--server", addr)
	wantContains(t, "stop", o, "events-file: stopped")
	_, e = mustRun(t, data, "", "groups", "describe", "events-file", "--server", addr)
	wantContains(t, "describe after stop", e, "Consumer group 'events-file' has no active members.")
	mustRun(t, data, "", "groups", "reset-offsets", "--group", "events-file", "--topic", "web.tracking", "--to-earliest", "--execute", "--server", addr)
}

func TestServer_NotATributaryWorker(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte("<!DOCTYPE html>\n<html><body><h1>Not Found</h1>\n<p>lots of markup</p></body></html>\n"))
	}))
	defer srv.Close()
	for _, args := range [][]string{{"topics", "list"}, {"connectors", "list"}, {"connectors", "pause", "x"}} {
		err := mustFail(t, t.TempDir(), "", append(args, "--server", srv.URL)...)
		msg := err.Error()
		wantContains(t, strings.Join(args, " "), msg, srv.URL+": not a Tributary worker (got text/html 404 Not Found)", "--server", envServer)
		if strings.Contains(msg, "<") || strings.Contains(msg, "\n") {
			t.Errorf("%s: the error carries the page: %q", strings.Join(args, " "), msg)
		}
	}
}

func TestConnectors_HelpSaysWhatTheCommandDoes(t *testing.T) {
	for cmd, want := range map[string]string{"pause": "Pause a connector", "resume": "Resume a paused", "stop": "Stop a connector"} {
		o, _ := mustRun(t, t.TempDir(), "", "connectors", cmd, "--help")
		wantContains(t, cmd+" --help", o, want)
		if strings.HasPrefix(o, "Paused") || strings.HasPrefix(o, "Resumed") || strings.HasPrefix(o, "Stopped") {
			t.Errorf("%s --help describes the outcome, not the command: %q", cmd, o)
		}
	}
}

func TestVersion_BuildInfo(t *testing.T) {
	if got := commitFromSettings([]debug.BuildSetting{{Key: "vcs.revision", Value: "b3a11bdee81746535f79307459c78cbd64fe99b1"}, {Key: "vcs.modified", Value: "true"}}); got != "b3a11bdee817-dirty" {
		t.Errorf("commit from build info = %q", got)
	}
	if got := commitFromSettings(nil); got != "" {
		t.Errorf("commit without build info = %q", got)
	}
	oldV, oldC := version, commit
	t.Cleanup(func() { version, commit = oldV, oldC })
	version, commit = "v1.2.3", "abc1234"
	o, _ := mustRun(t, t.TempDir(), "", "version")
	wantContains(t, "version", o, "tributary v1.2.3 (commit abc1234, ")
}

// Through --server, produce and consume carry keys and values byte for
// byte, as they do without --server (and as kcat does): binary payloads
// (Avro, Protobuf, Latin-1 text) are not turned into U+FFFD on the way,
// which JSON strings would do to bytes that are not UTF-8.
func TestServer_ProduceConsumeKeepBinaryBytes(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out", "events.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", out).Replace(quickstartYAML))
	const line = "k\xff:caf\xe9 \x00\x80\xfe"
	// Stored byte for byte without --server, before the worker starts.
	mustRun(t, data, line+"\n", "produce", "exact", "-K", ":", "-q")
	addr, stop := startWorker(t, data, file)
	got, _ := mustRun(t, data, "", "consume", "exact", "-e", "-q", "-f", "%k:%s\n", "--server", addr)
	if got != line+"\n" {
		t.Errorf("consume --server of a record stored exactly printed %q, want %q", got, line+"\n")
	}
	mustRun(t, data, line+"\n", "produce", "bin", "-K", ":", "-q", "--server", addr)
	got, _ = mustRun(t, data, "", "consume", "bin", "-e", "-q", "-f", "%k:%s\n", "--server", addr)
	if got != line+"\n" {
		t.Errorf("consume --server printed %q, want %q (as produced)", got, line+"\n")
	}
	stop()
	got, _ = mustRun(t, data, "", "consume", "bin", "-e", "-q", "-f", "%k:%s\n")
	if got != line+"\n" {
		t.Errorf("the log holds %q, want %q (as produced with --server)", got, line+"\n")
	}
}

// startWorker runs `tributary run file` (its log in data) with the REST
// API on a free address until the test ends or stop is called, and returns
// once the worker answers the log commands' --server requests.
func startWorker(t *testing.T, data, file string) (addr string, stop func()) {
	t.Helper()
	addr = freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var runErr syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", addr}, strings.NewReader(""), new(syncbuf.Buffer), &runErr)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
		})
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, err := tributary(t, data, "", "topics", "list", "--server", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never answered\n%s", runErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return addr, stop
}

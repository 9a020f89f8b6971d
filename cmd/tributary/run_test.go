package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

const quickstartYAML = `version: 1
name: qs
log:
  dir: %DATA%
  defaults: {partitions: 3}
topics:
  - name: web.tracking
    partitions: 3
sources:
  - name: web-events
    connector: generator
    topic: web.tracking
    config: {rate: 2000, seed: 42, max.events: 300}
sinks:
  - name: events-file
    connector: file
    topics: [web.tracking]
    config: {path: %OUT%}
`

// TestRunQuickstart runs a pipeline in a worker, then uses the CLI through
// --server while the worker holds the data directory, then SIGTERM-style
// cancellation drains it.
func TestRunQuickstart(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out", "events.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	yaml := strings.NewReplacer("%DATA%", data, "%OUT%", out).Replace(quickstartYAML)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _ := mustRun(t, data, "", "validate", file)
	wantContains(t, "validate", stdout, "pipeline qs is valid")

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var runErr syncbuf.Buffer
	go func() {
		err := run(ctx, []string{"run", file, "--rest-addr", addr}, strings.NewReader(""), new(syncbuf.Buffer), &runErr)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	var lines string
	for {
		o, _, err := tributary(t, data, "", "consume", "web.tracking", "-e", "-q", "--server", addr)
		if err == nil && strings.Count(o, "\n") == 300 {
			lines = o
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("300 events never showed through --server (last: %d lines, %v)\nworker stderr:\n%s", strings.Count(o, "\n"), err, runErr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	wantContains(t, "events", lines, `"seq":1,`, `"seq":300,`)
	// The data directory is held: direct access names the holder.
	if err := mustFail(t, data, "", "topics", "list"); !strings.Contains(err.Error(), "locked") {
		t.Fatalf("direct access while the worker runs: %v", err)
	}
	o, _ := mustRun(t, data, "", "connectors", "list", "--server", addr)
	wantContains(t, "connectors list", o, "events-file", "web-events", "RUNNING")
	o, _ = mustRun(t, data, "", "topics", "describe", "web.tracking", "--server", addr)
	wantContains(t, "describe via server", o, "PartitionCount: 3")
	o, _ = mustRun(t, data, "", "connectors", "offsets", "web-events", "--server", addr)
	wantContains(t, "source offsets", o, `"seq"`)
	if err := mustFail(t, data, "", "connectors", "snapshot", "web-events", "public.orders", "--server", addr); !strings.Contains(err.Error(), "does not take snapshot signals") {
		t.Fatalf("snapshot signal to the generator: %v", err)
	}
	mustRun(t, data, "", "connectors", "pause", "events-file", "--server", addr)
	o, _ = mustRun(t, data, "", "connectors", "status", "events-file", "--server", addr)
	wantContains(t, "status after pause", o, `"PAUSED"`)

	cancel() // what SIGTERM does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not drain")
	}
	// After the drain the directory is free again and the group offsets are stored.
	o, _ = mustRun(t, data, "", "groups", "describe", "events-file")
	wantContains(t, "group after run", o, "web.tracking")
}

func TestValidate_ReportsEveryErrorWithPosition(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	bad := "version: 1\nsources:\n  - name: a\n    connector: generatr\n    topic: t\nsinks:\n  - name: b\n    connector: file\n    topics: [nope]\n    config: {}\n"
	if err := os.WriteFile(file, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mustFail(t, dir, "", "validate", file)
	wantContains(t, "validate errors", err.Error(), "bad.yaml:4:", "generator", "bad.yaml:9:", "path")
}

func TestProgressBar(t *testing.T) {
	tests := []struct {
		done, total int64
		want        string
	}{
		{12345, 100000, "public.orders [##------------------] 12,345/100,000 rows  12%"},
		{5, 0, "public.orders 5 rows"},
		{200, 100, "public.orders [####################] 200/100 rows 100%"},
	}
	for _, tt := range tests {
		if got := progressBar("public.orders", tt.done, tt.total, "rows"); got != tt.want {
			t.Errorf("progressBar(%d, %d) = %q, want %q", tt.done, tt.total, got, tt.want)
		}
	}
}

// TestValidate_RefusesTasksAboveOne: validate reports every problem run
// would refuse, with its file:line:column: a source or sink asking for more
// than one task too (run refused it only after the REST API served, with
// no position).
func TestValidate_RefusesTasksAboveOne(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tasks.yaml")
	src := `version: 1
name: tasks
sources:
  - {name: g, connector: generator, topic: t, tasks: 2}
sinks:
  - {name: s, connector: stdout, topics: [t], tasks: 3}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	err := mustFail(t, dir, "", "validate", file)
	wantContains(t, "validate", err.Error(),
		file+":4:",
		"sources[0].tasks",
		file+":6:",
		"sinks[0].tasks",
	)
}

// run on a REST address that is taken fails before it opens the log: it
// leaves no data directory (nor topics) behind, as a missing certificate
// does not.
func TestRun_BusyRESTAddrLeavesNoDataDir(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	file := filepath.Join(dir, "pipeline.yaml")
	yaml := strings.NewReplacer("%DATA%", dataDir, "%OUT%", filepath.Join(dir, "out.jsonl")).Replace(quickstartYAML)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, _, err = tributary(t, dataDir, "", "run", file, "--rest-addr", ln.Addr().String())
	if err == nil {
		t.Fatal("run on a taken REST address succeeded")
	}
	wantContains(t, "error", err.Error(), ln.Addr().String(), "--rest-addr")
	if _, err := os.Stat(dataDir); err == nil {
		t.Errorf("run made the data directory %s though it could not serve its REST API", dataDir)
	}
}

// The errors a second `tributary run` meets say what to do about them: a
// data directory another worker holds, --data-dir beside backend: kafka, and
// brokers that cannot be reached.
func TestRun_StartErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	c, err := openEmbedded(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", filepath.Join(dir, "out.jsonl")).Replace(quickstartYAML))
	err = mustFail(t, data, "", "run", file, "--rest-addr", freeAddr(t))
	wantContains(t, "run on a held data directory", err.Error(), "locked", "a data directory of its own", "--data-dir DIR")

	kafkaFile := filepath.Join(dir, "kafka.yaml")
	writeFile(t, kafkaFile, "version: 1\nname: k\nlog: {backend: kafka, kafka: {brokers: [\"127.0.0.1:1\"]}}\n")
	err = mustFail(t, data, "", "run", kafkaFile, "--rest-addr", freeAddr(t))
	wantContains(t, "run --data-dir with backend: kafka", err.Error(), "leave --data-dir out")

	var stderr bytes.Buffer
	err = run(t.Context(), []string{"run", kafkaFile, "--rest-addr", freeAddr(t)}, strings.NewReader(""), new(bytes.Buffer), &stderr)
	if err == nil {
		t.Fatal("run against brokers at 127.0.0.1:1 succeeded")
	}
	wantContains(t, "run against unreachable brokers", err.Error(), "127.0.0.1:1", "check log.kafka of "+kafkaFile)
}

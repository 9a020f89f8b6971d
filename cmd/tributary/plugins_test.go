package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// buildExamplePlugins builds examples/plugins/{counter,jsonl} into dir.
func buildExamplePlugins(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"counter", "jsonl"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, name), ".")
		cmd.Dir = filepath.Join("..", "..", "examples", "plugins", name)
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build plugin %s: %v\n%s", name, err, out)
		}
	}
}

// TestRun_PluginPipeline runs the example plugins through the worker: the
// counter plugin's numbers reach the jsonl plugin's file; a SIGKILL of the
// source's plugin process fails only that task, which restarts from its
// stored position, so no number is skipped.
func TestRun_PluginPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugin binaries")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	buildExamplePlugins(t, bin)
	out := filepath.Join(dir, "numbers.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, `version: 1
name: plug
log: {dir: `+filepath.Join(dir, "data")+`}
plugins: {dirs: [`+bin+`]}
sources:
  - {name: numbers, connector: counter, topic: numbers, config: {rate: 500}}
sinks:
  - {name: numbers-file, connector: jsonl, topics: [numbers], config: {path: `+out+`}}
`)
	o, _ := mustRun(t, dir, "", "plugins", "list", "--plugins-dir", bin)
	wantContains(t, "plugins list", o, "counter", "source", "jsonl", "sink")

	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", addr, "--plugins-dir", bin}, strings.NewReader(""), new(syncbuf.Buffer), &stderr)
	}()
	maxN := func() int {
		data, _ := os.ReadFile(out)
		m := 0
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var v struct{ N int }
			if json.Unmarshal([]byte(line), &v) == nil && v.N > m {
				m = v.N
			}
		}
		return m
	}
	waitUntil := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s\nworker stderr:\n%s", what, stderr.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitUntil("100 numbers in the file", func() bool { return maxN() >= 100 })

	// Kill the counter plugin's process: only its task fails and restarts.
	pids, _ := exec.Command("pgrep", "-f", filepath.Join(bin, "counter")).Output()
	fields := strings.Fields(string(pids))
	if len(fields) == 0 {
		t.Fatal("no counter plugin process found")
	}
	for _, f := range fields {
		var pid int
		if _, err := fmtSscan(f, &pid); err == nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	before := maxN()
	waitUntil("numbers to continue after the plugin was killed", func() bool { return maxN() >= before+200 })
	o, _ = mustRun(t, dir, "", "connectors", "status", "numbers-file", "--server", addr)
	wantContains(t, "sink status", o, `"RUNNING"`)

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	// Every number from 1 to the highest is in the file (at least once).
	data, _ := os.ReadFile(out)
	seen := map[int]bool{}
	top := 0
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var v struct{ N int }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("bad line %q: %v", line, err)
		}
		seen[v.N] = true
		top = max(top, v.N)
	}
	for n := 1; n <= top; n++ {
		if !seen[n] {
			t.Fatalf("number %d of 1..%d is missing after the plugin crash", n, top)
		}
	}
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

// TestPlugins_ListSkipsSourceFiles: plugins list leaves out what is clearly
// not a plugin (directories, source and document files without the
// executable bit) and says once that a folder of Go source is no plugin
// directory; a file that may be a plugin with a missing executable bit is
// still listed, with the reason.
func TestPlugins_ListSkipsSourceFiles(t *testing.T) {
	dir := t.TempDir()
	src, bin := filepath.Join(dir, "src"), filepath.Join(dir, "bin")
	for _, d := range []string{filepath.Join(src, "internal"), bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"host.go", "host_test.go", "README.md", "plugin.proto", "go.mod", "go.sum", "notes.txt", "x.json", "x.yaml"} {
		writeFile(t, filepath.Join(src, name), "package plugins\n")
	}
	out, errOut := mustRun(t, dir, "", "plugins", "list", "--plugins-dir", src)
	if want := "NAME  KIND  VERSION  STATUS  PATH  SHA256\n"; out != want {
		t.Errorf("plugins list of Go source = %q, want the header alone", out)
	}
	if n := strings.Count(errOut, "\n"); n != 1 {
		t.Errorf("stderr has %d lines, want one hint:\n%s", n, errOut)
	}
	wantContains(t, "hint", errOut, src+" holds Go source (2 .go files) and no executables", "--plugins-dir DIR")

	// inspect NAME there fails saying the same, and how to point it at the
	// plugins (as from the repository's root, where ./plugins is source).
	err := mustFail(t, dir, "", "plugins", "inspect", "counter", "--plugins-dir", src)
	wantContains(t, "inspect in Go source: error", err.Error(), `no plugin "counter"`, src+" holds Go source", "--plugins-dir DIR", "inspect PATH")

	// A file without an extension and without the executable bit may be a
	// plugin someone forgot to chmod: listed, with the reason.
	writeFile(t, filepath.Join(src, "counter"), "\x7fELF")
	out, _ = mustRun(t, dir, "", "plugins", "list", "--plugins-dir", src)
	wantContains(t, "plugins list", out, "invalid", filepath.Join(src, "counter"), "chmod +x")
	if strings.Contains(out, ".go") || strings.Contains(out, "README.md") {
		t.Errorf("plugins list shows source files:\n%s", out)
	}

	// A directory with an executable is a plugin directory: no hint.
	writeFile(t, filepath.Join(bin, "notes.md"), "# plugins\n")
	writeFile(t, filepath.Join(bin, "tool.go"), "package main\n")
	if err := os.WriteFile(filepath.Join(bin, "broken"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, errOut = mustRun(t, dir, "", "plugins", "list", "--plugins-dir", bin)
	wantContains(t, "plugins list with an executable", out, filepath.Join(bin, "broken"))
	if strings.Contains(errOut, "Go source") || strings.Contains(out, "notes.md") || strings.Contains(out, "tool.go") {
		t.Errorf("plugins list of a plugin directory:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// TestPlugins_InspectSaysWhatThePluginImplements: inspect names what the
// plugin's connector implements in the words of its Go code (the connect
// interfaces, Spec.Redact), and for a plugin of an older protocol, what the
// worker does not use at that version.
func TestPlugins_InspectSaysWhatThePluginImplements(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three plugin binaries")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	for _, name := range []string{"misbehave", "recorder", "oldproto"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./plugins/testdata/"+name)
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build plugin %s: %v\n%s", name, err, out)
		}
	}
	for _, tc := range []struct {
		name string
		want []string
	}{
		{"misbehave", []string{"Implements:  connect.Sink, connect.Spec.Redact\n", "Protocol:    3\n"}},
		{"recorder", []string{"Implements:  connect.Source, connect.DurableNotifier, connect.TailRecoverer\n", "Protocol:    3\n"}},
		{"oldcounter", []string{"Implements:  connect.Source\n",
			"Protocol:    1 (this Tributary speaks 1 to 3; at version 1 the worker does not use connect.DurableNotifier, connect.TailRecoverer, connect.Spec.Redact, even when the plugin implements it: rebuild it with a newer github.com/tributary-io/tributary module)\n"}},
	} {
		out, _ := mustRun(t, dir, "", "plugins", "inspect", tc.name, "--plugins-dir", bin)
		wantContains(t, "plugins inspect "+tc.name, out, tc.want...)
		if strings.Contains(out, "Interfaces:") {
			t.Errorf("plugins inspect %s still prints the old Interfaces row:\n%s", tc.name, out)
		}
	}
}

// TestRun_PluginCallTimeout: plugins.call_timeout reaches the plugin host: a
// plugin sink whose Write hangs is deemed hung after that deadline (not the
// default 30 s), and its task's trace says so.
func TestRun_PluginCallTimeout(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a plugin binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	cmd := exec.Command("go", "build", "-o", filepath.Join(bin, "misbehave"), "./plugins/testdata/misbehave")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build plugin: %v\n%s", err, out)
	}
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, `version: 1
name: hang
log: {dir: `+filepath.Join(dir, "data")+`}
plugins: {dirs: [`+bin+`], call_timeout: 1s}
sources:
  - {name: events, connector: generator, topic: events, config: {rate: 10}}
sinks:
  - {name: stuck, connector: misbehave, topics: [events], config: {mode: hang}}
`)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	var stderr syncbuf.Buffer
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", addr, "--drain-timeout", "5s"}, strings.NewReader(""), new(syncbuf.Buffer), &stderr)
	}()
	start := time.Now()
	deadline := start.Add(20 * time.Second)
	for {
		o, _, _ := tributary(t, dir, "", "connectors", "status", "stuck", "--server", addr)
		if strings.Contains(o, "no answer within 1s") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the hanging plugin sink's status never said it hung after 1s; last status:\n%s\nworker stderr:\n%s", o, stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the hang was noticed after %s; call_timeout is 1s", took)
	}
	cancel()
	<-done
}

// A plugin directory that does not exist is an error that says where it was
// named and what to do: the default ./plugins for the plugins commands,
// --plugins-dir, and a pipeline's plugins.dirs (the plugins example before
// its plugins are built).
func TestPlugins_MissingDirSaysWhereAndWhatToDo(t *testing.T) {
	dir := t.TempDir()
	// The tests run in cmd/tributary, which has no ./plugins.
	err := mustFail(t, dir, "", "plugins", "list")
	wantContains(t, "plugins list", err.Error(), "plugin directory ./plugins does not exist", "the default of --plugins-dir", "--plugins-dir DIR")

	missing := filepath.Join(dir, "nosuch")
	err = mustFail(t, dir, "", "plugins", "inspect", "counter", "--plugins-dir", missing)
	wantContains(t, "plugins inspect --plugins-dir", err.Error(), "plugin directory "+missing+" does not exist", "--plugins-dir")
	err = mustFail(t, dir, "", "validate", filepath.Join(dir, "none.yaml"), "--plugins-dir", missing)
	wantContains(t, "validate --plugins-dir", err.Error(), "plugin directory "+missing+" does not exist", "--plugins-dir")

	file := filepath.Join(dir, "p.yaml")
	writeFile(t, file, "version: 1\nname: p\nplugins: {dirs: [./no/such/bin]}\n")
	err = mustFail(t, dir, "", "validate", file)
	wantContains(t, "validate with plugins.dirs", err.Error(),
		file+": plugins.dirs: plugin directory ./no/such/bin does not exist", "build the plugins into it", "relative to the directory tributary runs in")
}

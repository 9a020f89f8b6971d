package plugins

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/pipelines"
)

func TestDiscover(t *testing.T) {
	h, logs := newTestHost(t, Options{})
	dir := pluginDir(t, bin.counter, bin.jsonl)
	if err := os.WriteFile(filepath.Join(dir, "script.sh"), []byte("#!/bin/sh\necho 'not a plugin' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "random.bin"), []byte{0x7f, 1, 2, 3, 4}, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# my plugins\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	found, err := h.Discover(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]*Plugin{}
	for _, p := range found {
		byFile[filepath.Base(p.Path)] = p
	}
	if len(found) != 5 {
		t.Fatalf("found %d files, want 5 (counter, jsonl, script.sh, random.bin, README.md): %v", len(found), byFile)
	}

	c := byFile["counter"]
	if !c.Valid() || c.Name != "counter" || c.Kind != connect.KindSource || c.Version != "0.1.0" || c.Protocol != ProtocolVersion {
		t.Fatalf("counter: %+v", c)
	}
	if p, ok := c.Spec.Param("rate"); !ok || p.Type != connect.TypeFloat || p.Default != "10" {
		t.Errorf("counter's rate parameter: %+v, %v", p, ok)
	}
	if sum, _ := fileSHA256(bin.counter); c.SHA256 != sum {
		t.Errorf("counter's SHA256 = %s, want %s", c.SHA256, sum)
	}
	j := byFile["jsonl"]
	if !j.Valid() || j.Name != "jsonl" || j.Kind != connect.KindSink {
		t.Fatalf("jsonl: %+v", j)
	}
	if p, ok := j.Spec.Param("path"); !ok || !p.Required {
		t.Errorf("jsonl's path parameter: %+v, %v", p, ok)
	}

	for file, want := range map[string]string{
		"script.sh":  "did not complete the plugin handshake",
		"random.bin": "not a program this machine can run",
		"README.md":  "not executable",
	} {
		p := byFile[file]
		if p.Valid() || !errors.Is(p.Err, ErrNotPlugin) || !strings.Contains(p.Err.Error(), want) {
			t.Errorf("%s: err = %v, want ErrNotPlugin saying %q", file, p.Err, want)
		}
	}
	if !strings.Contains(byFile["script.sh"].Err.Error(), "not a plugin") {
		t.Errorf("the script's error does not show its stderr: %v", byFile["script.sh"].Err)
	}
	// A program that is no plugin is worth a warning; a file that is no
	// program (sources, READMEs beside the plugins) only a debug line.
	logs.waitFor(t, `level=WARN msg="skipping a file in a plugin directory that is not a usable plugin" path=`+filepath.Join(dir, "script.sh"),
		`level=DEBUG msg="skipping a file in a plugin directory that is not a program" path=`+filepath.Join(dir, "README.md"))

	// Their specs validate the example pipeline, as `tributary validate`
	// does, so that it never drifts from its plugins.
	specs := pipelines.Specs{pipelines.KindSource: {"counter": c.Spec}, pipelines.KindSink: {"jsonl": j.Spec}}
	if _, err := pipelines.LoadFile("../examples/plugins/pipeline.yaml", pipelines.Options{Catalog: specs}); err != nil {
		t.Errorf("the example pipeline: %v", err)
	}

	// Usable plugins register like built-ins; an unusable one named in a
	// pipeline is explained.
	reg := connect.NewRegistry()
	if err := Register(reg, found); err != nil {
		t.Fatal(err)
	}
	if got := reg.Names(connect.KindSource); len(got) != 1 || got[0] != "counter" {
		t.Errorf("registered sources = %v", got)
	}
	if err := Explain(found, connect.KindSource, "script"); err == nil || !strings.Contains(err.Error(), "script.sh is not usable") {
		t.Errorf("Explain(script) = %v", err)
	}
	if err := Explain(found, connect.KindSink, "counter"); err == nil || !strings.Contains(err.Error(), "provides a source connector") {
		t.Errorf("Explain(sink counter) = %v", err)
	}
	if err := Explain(found, connect.KindSink, "nothing"); err != nil {
		t.Errorf("Explain(nothing) = %v", err)
	}
	// A name taken by a built-in is not registered, and says so.
	reg2 := connect.NewRegistry()
	reg2.MustRegister(connect.Connector{Name: "jsonl", Kind: connect.KindSink, NewSink: func() connect.Sink { return nil }})
	if err := Register(reg2, found); err == nil || !strings.Contains(err.Error(), "registered already") || j.Valid() {
		t.Errorf("Register over a built-in: %v (jsonl valid: %v)", err, j.Valid())
	}

	// A second plugin of the same kind and name is not usable.
	dir2 := pluginDir(t, bin.counter)
	found, err = h.Discover(t.Context(), dir, dir2)
	if err != nil {
		t.Fatal(err)
	}
	last := found[len(found)-1]
	if last.Valid() || !strings.Contains(last.Err.Error(), "already") {
		t.Errorf("the second counter: %v", last.Err)
	}

	if _, err := h.Discover(t.Context(), filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing directory: %v", err)
	}
}

// openSource opens a source instance of a plugin, closing it at cleanup.
func openSource(t *testing.T, h *Host, path string, values map[string]string, pos connect.Position) connect.Source {
	t.Helper()
	p := h.Inspect(t.Context(), path)
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	return openPluginSource(t, p, values, pos)
}

// openPluginSource opens a source instance of an inspected plugin, closing
// it at cleanup.
func openPluginSource(t *testing.T, p *Plugin, values map[string]string, pos connect.Position) connect.Source {
	t.Helper()
	src := p.Connector().NewSource()
	cfg := connect.Config{Pipeline: "test", Connector: "numbers", Values: values, Spec: p.Spec, Position: pos}
	if err := src.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { src.Close(context.Background()) })
	return src
}

func openSink(t *testing.T, h *Host, path string, values map[string]string) connect.Sink {
	t.Helper()
	p := h.Inspect(t.Context(), path)
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	sink := p.Connector().NewSink()
	cfg := connect.Config{Pipeline: "test", Connector: "out", Values: values, Spec: p.Spec}
	if err := sink.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close(context.Background()) })
	return sink
}

func TestSource_ReadAckResume(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	src := openSource(t, h, bin.counter, map[string]string{"rate": "0"}, nil)
	var got []connect.Record
	for len(got) < 1500 {
		recs, err := src.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, recs...)
	}
	for i, r := range got {
		n := i + 1
		if string(r.Value) != fmt.Sprintf(`{"n":%d}`, n) || string(r.Position) != fmt.Sprint(n) || r.Key != nil || r.Timestamp.IsZero() {
			t.Fatalf("record %d: %+v", i, r)
		}
	}
	if err := src.Ack(t.Context(), got[len(got)-1].Position); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := src.Read(t.Context()); err == nil {
		t.Fatal("Read after Close succeeded")
	}

	// A new instance (a new process) resumes after the stored position;
	// with max, it ends there.
	src = openSource(t, h, bin.counter, map[string]string{"rate": "0", "max": "1503"}, connect.Position("1500"))
	recs, err := src.Read(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || string(recs[0].Value) != `{"n":1501}` || string(recs[2].Value) != `{"n":1503}` {
		t.Fatalf("after a restart from 1500 with max 1503: %d records, first %+v", len(recs), recs[0])
	}
	if recs, err := src.Read(t.Context()); err != nil || len(recs) != 0 {
		t.Fatalf("a read after max: %d records, %v", len(recs), err)
	}
}

func TestSource_IdleReadReturnsEmpty(t *testing.T) {
	h, _ := newTestHost(t, Options{ReadWait: 100 * time.Millisecond})
	src := openSource(t, h, bin.counter, map[string]string{"rate": "0.5"}, nil)
	recs, err := src.Read(t.Context()) // n=1 is due at once
	if err != nil || len(recs) != 1 {
		t.Fatalf("first read: %d records, %v", len(recs), err)
	}
	start := time.Now()
	recs, err = src.Read(t.Context()) // n=2 is due in 2s: the plugin answers empty
	if err != nil || len(recs) != 0 {
		t.Fatalf("idle read: %d records, %v", len(recs), err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("an idle read took %s, want about ReadWait", d)
	}
	// The source's Read went on: the record comes in a later call.
	for len(recs) == 0 {
		if recs, err = src.Read(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if string(recs[0].Value) != `{"n":2}` {
		t.Errorf("got %s, want n=2", recs[0].Value)
	}
	// A cancelled Read returns the context's error, and the instance stays usable.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := src.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled read: %v", err)
	}
}

func TestSink_Write(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	path := filepath.Join(t.TempDir(), "out", "values.jsonl")
	sink := openSink(t, h, bin.jsonl, map[string]string{"path": path})
	batch := []connect.Record{
		{Value: []byte(`{"n":1}`), Topic: "t", Offset: 0},
		{Value: nil, Topic: "t", Offset: 1}, // a tombstone: skipped
		{Value: []byte(`{"n":2}`), Topic: "t", Offset: 2, Headers: []connect.Header{{Key: "h", Value: []byte("v")}}},
	}
	if err := sink.Write(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	assertFile(t, path, "{\"n\":1}\n{\"n\":2}\n")

	// A bad record keeps its index across the boundary; the records before
	// it are written.
	err := sink.Write(t.Context(), []connect.Record{
		{Value: []byte(`{"n":3}`)},
		{Value: []byte("two\nlines"), Topic: "t", Offset: 4},
		{Value: []byte(`{"n":5}`)},
	})
	var bre *connect.BadRecordError
	if !errors.As(err, &bre) || bre.Index != 1 || !strings.Contains(err.Error(), "line break") {
		t.Fatalf("write with a bad record: %v (%#v)", err, bre)
	}
	assertFile(t, path, "{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
	if err := sink.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func assertFile(t *testing.T, path, want string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != want {
		t.Fatalf("%s holds %q, want %q", path, b, want)
	}
}

// TestSource_KilledMidRead kills the plugin process with SIGKILL while a
// Read waits in it: the Read fails at once with the process's fate, and
// later calls fail the same way; the host goes on.
func TestSource_KilledMidRead(t *testing.T) {
	h, _ := newTestHost(t, Options{ReadWait: 10 * time.Second})
	src := openSource(t, h, bin.counter, map[string]string{"rate": "0.1"}, nil)
	if _, err := src.Read(t.Context()); err != nil { // n=1, at once
		t.Fatal(err)
	}
	pid := src.(*source).proc.Load().pid
	time.AfterFunc(300*time.Millisecond, func() { syscall.Kill(pid, syscall.SIGKILL) })
	start := time.Now()
	_, err := src.Read(t.Context()) // n=2 is due in 10s
	var pe *ProcessError
	if !errors.As(err, &pe) || pe.Op != "read" || !strings.Contains(err.Error(), "signal: killed") {
		t.Fatalf("read from a killed plugin: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the read failed after %s", d)
	}
	if _, err2 := src.Read(t.Context()); !errors.As(err2, &pe) {
		t.Errorf("a read after the crash: %v", err2)
	}
	if err := src.Close(t.Context()); err != nil {
		t.Errorf("close after the crash: %v", err)
	}
	// The host starts new instances as before.
	src2 := openSource(t, h, bin.counter, map[string]string{"rate": "0"}, connect.Position("1"))
	recs, err := src2.Read(t.Context())
	if err != nil || string(recs[0].Value) != `{"n":2}` {
		t.Fatalf("a new instance after the crash: %v", err)
	}
}

func TestSink_HangHitsDeadline(t *testing.T) {
	h, _ := newTestHost(t, Options{CallTimeout: time.Second})
	sink := openSink(t, h, bin.misbehave, map[string]string{"mode": "hang"})
	start := time.Now()
	err := sink.Write(t.Context(), []connect.Record{{Value: []byte("x")}})
	var pe *ProcessError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "no answer within 1s") {
		t.Fatalf("write to a hanging plugin: %v", err)
	}
	if !strings.Contains(err.Error(), "hanging now") {
		t.Errorf("the error does not show the plugin's last stderr lines: %v", err)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("the write failed after %s", d)
	}
	if err := syscall.Kill(pe.PID, 0); err == nil {
		t.Errorf("the hanging process %d is still alive", pe.PID)
	}
	if err := sink.Close(t.Context()); err != nil {
		t.Errorf("close after the hang: %v", err)
	}
}

func TestSink_CrashShowsPanic(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	sink := openSink(t, h, bin.misbehave, map[string]string{"mode": "crash"})
	err := sink.Write(t.Context(), make([]connect.Record, 3))
	var pe *ProcessError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "exit status 2") || !strings.Contains(err.Error(), "panic: boom after 3 records") {
		t.Fatalf("write to a crashing plugin: %v", err)
	}
}

// TestSink_PermanentAndAttemptsCrossTheBoundary checks that the markers
// Permanent and WithAttempts of a plugin's error reach the host: the worker
// leaves a permanent failure FAILED and counts the plugin's tries in the
// dead-letter header.
func TestSink_PermanentAndAttemptsCrossTheBoundary(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	perm := openSink(t, h, bin.misbehave, map[string]string{"mode": "permanent"})
	err := perm.Write(t.Context(), make([]connect.Record, 1))
	if !connect.IsPermanent(err) || connect.IsRetryable(err) || connect.Attempts(err) != 2 || err.Error() != "role tributary lacks the grant" {
		t.Errorf("permanent: %v (permanent %v, retryable %v, attempts %d), want permanent, not retryable, 2 attempts",
			err, connect.IsPermanent(err), connect.IsRetryable(err), connect.Attempts(err))
	}
	gaveUp := openSink(t, h, bin.misbehave, map[string]string{"mode": "gaveup"})
	err = gaveUp.Write(t.Context(), make([]connect.Record, 2))
	var bre *connect.BadRecordError
	if !errors.As(err, &bre) || bre.Index != 0 || connect.IsPermanent(err) || connect.Attempts(err) != 4 {
		t.Errorf("gave up: %v (attempts %d), want BadRecordAt(0) with 4 attempts", err, connect.Attempts(err))
	}
}

func TestProtocolMismatch(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	t.Setenv("TRIBUTARY_TEST_PROTOCOL", "7")
	p := h.Inspect(t.Context(), bin.misbehave)
	if !errors.Is(p.Err, ErrProtocolMismatch) {
		t.Fatalf("err = %v, want ErrProtocolMismatch", p.Err)
	}
	for _, want := range []string{"speaks plugin protocol version 7", fmt.Sprintf("this Tributary speaks versions %d to %d", MinProtocolVersion, ProtocolVersion), "or run a newer Tributary, one that speaks version 7"} {
		if !strings.Contains(p.Err.Error(), want) {
			t.Errorf("the error %q does not say %q", p.Err, want)
		}
	}
}

func TestChecksumPins(t *testing.T) {
	sum, err := fileSHA256(bin.counter)
	if err != nil {
		t.Fatal(err)
	}
	wrong := strings.Repeat("ab", 32)

	h, _ := newTestHost(t, Options{Pins: map[string]string{"counter": "sha256:" + sum}})
	if p := h.Inspect(t.Context(), bin.counter); !p.Valid() || p.Pinned == "" {
		t.Fatalf("a matching pin: %v (pinned %q)", p.Err, p.Pinned)
	}

	h, _ = newTestHost(t, Options{Pins: map[string]string{"counter": wrong}})
	p := h.Inspect(t.Context(), bin.counter)
	if !errors.Is(p.Err, ErrChecksumMismatch) || !strings.Contains(p.Err.Error(), sum) || !strings.Contains(p.Err.Error(), wrong) {
		t.Fatalf("a wrong pin: %v", p.Err)
	}

	// The lock file of the directory pins too.
	dir := pluginDir(t, bin.counter, bin.jsonl)
	lock := fmt.Sprintf("%s  counter\n%s *jsonl\n", sum, wrong)
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	h, _ = newTestHost(t, Options{})
	found, err := h.Discover(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || !found[0].Valid() || !strings.Contains(found[0].Pinned, LockFile) ||
		!errors.Is(found[1].Err, ErrChecksumMismatch) || !strings.Contains(found[1].Err.Error(), LockFile) {
		t.Fatalf("with a lock file: %v %v", found[0].Err, found[1].Err)
	}

	// A file replaced after discovery is not started.
	dir = t.TempDir()
	copyFile(t, bin.counter, filepath.Join(dir, "counter"))
	h, _ = newTestHost(t, Options{Pins: map[string]string{"counter": sum}})
	p = h.Inspect(t.Context(), filepath.Join(dir, "counter"))
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	copyFile(t, bin.jsonl, filepath.Join(dir, "counter"))
	err = p.Connector().NewSource().Open(t.Context(), connect.Config{Spec: p.Spec})
	if !errors.Is(err, ErrChecksumMismatch) {
		t.Fatalf("open after the file changed: %v", err)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(to)
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestPluginOutputIsLogged(t *testing.T) {
	h, logs := newTestHost(t, Options{})
	sink := openSink(t, h, bin.misbehave, map[string]string{"mode": "ok"})
	if err := sink.Write(t.Context(), []connect.Record{{Value: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	logs.waitFor(t,
		`msg="hello on stdout" plugin=misbehave stream=stdout`,
		`msg="hello on stderr" plugin=misbehave stream=stderr`,
		`level=INFO msg=opened plugin=misbehave mode=ok`,
	)
}

// TestSource_FrozenProcessHitsDeadline stops the whole plugin process
// (SIGSTOP: it can answer nothing, not even the empty batch of an idle
// Read): the Read fails after ReadWait plus CallTimeout, and the process
// is killed.
func TestSource_FrozenProcessHitsDeadline(t *testing.T) {
	h, _ := newTestHost(t, Options{CallTimeout: time.Second, ReadWait: 100 * time.Millisecond})
	src := openSource(t, h, bin.counter, map[string]string{"rate": "0"}, nil)
	if _, err := src.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := src.(*source).proc.Load().pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := src.Read(t.Context())
	var pe *ProcessError
	if !errors.As(err, &pe) || pe.Op != "read" || !strings.Contains(err.Error(), "no answer within 1.1s") {
		t.Fatalf("read from a frozen plugin: %v", err)
	}
	if d := time.Since(start); d < time.Second || d > 5*time.Second {
		t.Errorf("the read failed after %s, want about 1.1s", d)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("the frozen process %d is still there", pid)
	}
}

// TestSink_ExitShowsItsLastStderrLine: a plugin that prints why to
// os.Stderr and exits at once (os.Exit, log.Fatal-style) gets that line in
// the error, not "it wrote nothing to stderr".
func TestSink_ExitShowsItsLastStderrLine(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	sink := openSink(t, h, bin.misbehave, map[string]string{"mode": "exit"})
	err := sink.Write(t.Context(), make([]connect.Record, 1))
	var pe *ProcessError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("write to a plugin that exits: %v", err)
	}
	if !strings.Contains(err.Error(), "cannot reach the backend: giving up") {
		t.Errorf("the error does not show the line the plugin printed to os.Stderr before it exited: %v", err)
	}
}

// TestInspect_NoHandshakeAndAChildLeftBehind: a file that is no plugin,
// never writes the handshake, and has started a child that holds its
// output open (a shell script with a background job) is reported as not a
// plugin after StartTimeout, instead of hanging discovery for ever; the
// child is killed with it.
func TestInspect_NoHandshakeAndAChildLeftBehind(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	script := "#!/bin/sh\nsleep 60 &\necho $! > " + pidFile + "\nsleep 60\n"
	path := filepath.Join(dir, "helper.sh")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h, _ := newTestHost(t, Options{StartTimeout: 500 * time.Millisecond})
	done := make(chan *Plugin, 1)
	go func() { done <- h.Inspect(context.Background(), path) }()
	var p *Plugin
	select {
	case p = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Inspect did not return within 15s")
	}
	if !errors.Is(p.Err, ErrNotPlugin) || !strings.Contains(p.Err.Error(), "did not complete the plugin handshake: it wrote no handshake line within 500ms, and was killed") {
		t.Errorf("err = %v, want ErrNotPlugin for a missing handshake", p.Err)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the child %d the script started is still running", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// alive reports whether the process pid runs (a zombie does not).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	_, rest, _ := strings.Cut(string(b), ") ")
	return !strings.HasPrefix(rest, "Z")
}

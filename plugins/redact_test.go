package plugins

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

const (
	secretURL = "https://bob:hunter2@example.com/hook"
	maskedURL = "https://bob:" + connect.Masked + "@example.com/hook"
)

// TestInspect_SpecConstraints: what a plugin's spec says beyond names and
// types (bounds, Exclusive) reaches the host, whose Validate checks it as
// for a built-in connector.
func TestInspect_SpecConstraints(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	t.Cleanup(h.Close)
	p := h.Inspect(t.Context(), bin.misbehave)
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	if out, _ := p.Spec.Param("out"); !out.Exclusive {
		t.Errorf("out: %+v, want Exclusive", out)
	}
	if w, _ := p.Spec.Param("retry.wait"); w.Min != "1ms" || w.Max != "1s" {
		t.Errorf("retry.wait: %+v, want bounds 1ms..1s", w)
	}
	errs := p.Spec.Validate(map[string]string{"retry.wait": "5s"})
	if len(errs) != 1 || errs[0].Param != "retry.wait" || !strings.Contains(errs[0].Message, "at most 1s") {
		t.Errorf("Validate(retry.wait=5s) = %v, want retry.wait at most 1s", errs)
	}
	if errs := p.Spec.Validate(map[string]string{"retry.wait": "20ms"}); len(errs) != 0 {
		t.Errorf("Validate(retry.wait=20ms) = %v", errs)
	}
}

// TestInspect_UnknownFormatDropped: a format this build does not know (a
// plugin built against a newer connect) is dropped with a warning, rather
// than refusing every value; a known one is kept.
func TestFromPBParams_Formats(t *testing.T) {
	spec := connect.Spec{Params: []connect.Param{
		{Name: "listen", Type: connect.TypeString, Format: connect.FormatHostPort},
		{Name: "email", Type: connect.TypeString, Format: "email"},
	}}
	got, unknown := fromPBParams(toPBParams(spec))
	if l, _ := got.Param("listen"); l.Format != connect.FormatHostPort {
		t.Errorf("listen: %+v, want its format kept", l)
	}
	if e, _ := got.Param("email"); e.Format != "" {
		t.Errorf("email: %+v, want its unknown format dropped", e)
	}
	if len(unknown) != 1 || !strings.Contains(unknown[0], `email (format "email")`) {
		t.Errorf("unknown = %q", unknown)
	}
	if errs := got.Validate(map[string]string{"listen": "nope", "email": "a@b"}); len(errs) != 1 || errs[0].Param != "listen" {
		t.Errorf("Validate = %v, want listen's format only", errs)
	}
}

// TestRedact_PluginSpec: a plugin whose spec has a Redact masks the
// secret part of a value on the host, in Mask and so in a config's log
// value, by asking a process of its own; after Host.Close the value
// shows masked as a whole.
func TestRedact_PluginSpec(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	p := h.Inspect(t.Context(), bin.misbehave)
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	if p.Spec.Redact == nil {
		t.Fatal("the plugin's spec has no Redact on the host")
	}
	cfg := map[string]string{"url": secretURL, "mode": "ok", "out": "/tmp/x"}
	for range 2 { // the second from the cache
		got := p.Spec.Mask(cfg)
		if got["url"] != maskedURL || got["mode"] != "ok" || got["out"] != "/tmp/x" {
			t.Fatalf("Mask = %v", got)
		}
	}
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("config", "config", connect.Config{Values: cfg, Spec: p.Spec})
	if strings.Contains(buf.String(), "hunter2") || !strings.Contains(buf.String(), maskedURL) {
		t.Errorf("the log line shows the password, or not the URL: %s", buf.String())
	}
	h.Close()
	if got := p.Spec.Mask(map[string]string{"url": "https://al:other@example.com/"}); got["url"] != connect.Masked {
		t.Errorf("after Close, Mask = %v, want the value masked as a whole", got)
	}
}

// TestRedact_IdleAndCache: the redacting process ends after its idle
// time; a value asked before is answered from the cache without starting
// it again, a new one starts it again.
func TestRedact_IdleAndCache(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	t.Cleanup(h.Close)
	h.redactIdle = 20 * time.Millisecond
	p := h.Inspect(t.Context(), bin.misbehave)
	if !p.Valid() || p.redactor == nil {
		t.Fatalf("%+v", p)
	}
	running := func() bool {
		p.redactor.mu.Lock()
		defer p.redactor.mu.Unlock()
		return p.redactor.proc != nil
	}
	waitStopped := func() {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for running() {
			if time.Now().After(deadline) {
				t.Fatal("the redacting process did not end when idle")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	if got := p.Spec.Redact("url", secretURL); got != maskedURL {
		t.Fatalf("Redact = %q", got)
	}
	waitStopped()
	if got := p.Spec.Redact("url", secretURL); got != maskedURL || running() {
		t.Fatalf("Redact of the same value = %q (process running: %t), want the cached answer", got, running())
	}
	const other = "https://al:s3cret@example.com/"
	if got := p.Spec.Redact("url", other); got != "https://al:"+connect.Masked+"@example.com/" {
		t.Fatalf("Redact of a new value = %q", got)
	}
	waitStopped()
}

// TestRedact_FailsClosed: when the plugin cannot redact (its file now
// holds another connector), a value shows masked as a whole, with a
// warning that does not show it.
func TestRedact_FailsClosed(t *testing.T) {
	h, logs := newTestHost(t, Options{})
	t.Cleanup(h.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "plugin")
	if err := os.Symlink(bin.misbehave, path); err != nil {
		t.Fatal(err)
	}
	p := h.Inspect(t.Context(), path)
	if !p.Valid() || p.Spec.Redact == nil {
		t.Fatalf("%+v", p)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin.counter, path); err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.Mask(map[string]string{"url": secretURL, "mode": "ok"}); got["url"] != connect.Masked || got["mode"] != connect.Masked {
		t.Errorf("Mask = %v, want every value masked as a whole", got)
	}
	logs.waitFor(t, "a plugin's redacting process did not start", "no longer provides the sink connector")
	if strings.Contains(logs.String(), "hunter2") {
		t.Errorf("the log shows the password:\n%s", logs.String())
	}
}

// TestRedactStop_OlderProtocol: with a plugin of an older protocol (a
// version-1 plugin, or a version-3 plugin under a host that offers
// version 2 only) the host falls back to what it did: the spec has no
// Redact (secret parameters are masked, other values shown) and Write
// sends no stop, so a sink retrying on its own goes on until the Write's
// context ends.
func TestRedactStop_OlderProtocol(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	t.Cleanup(h.Close)
	old := h.Inspect(t.Context(), bin.oldproto)
	if !old.Valid() || old.Protocol != 1 || old.Spec.Redact != nil {
		t.Fatalf("the version-1 plugin: %+v", old)
	}
	if got := old.Spec.Mask(map[string]string{"acks": "/tmp/acks"}); got["acks"] != "/tmp/acks" {
		t.Errorf("Mask = %v", got)
	}

	h2, _ := newTestHost(t, Options{})
	t.Cleanup(h2.Close)
	h2.protocol = 2
	p := h2.Inspect(t.Context(), bin.misbehave)
	if !p.Valid() || p.Spec.Redact != nil {
		t.Fatalf("under a version-2 host: %+v", p)
	}
	if got := p.Spec.Mask(map[string]string{"url": secretURL}); got["url"] != secretURL {
		t.Errorf("Mask = %v, want the value as it is (no Redact before version 3)", got)
	}
	out := filepath.Join(t.TempDir(), "out")
	sink := openPluginSink(t, p, map[string]string{"mode": "stubborn", "out": out, "retry.wait": "5ms"})
	stop, stopNow := context.WithCancel(t.Context())
	stopNow()
	ctx, cancel := context.WithCancel(connect.WithStop(t.Context(), stop))
	go func() {
		waitUntilFile(t, out, "a\ntry 1\ntry 2\ntry 3\n")
		cancel()
	}()
	err := sink.Write(ctx, []connect.Record{{Value: []byte("a")}, {Value: []byte("poison")}})
	if connect.IsStopping(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("Write with an ended stop under a version-2 host = %v, want it to go on until its context ends", err)
	}
}

// TestSink_StopCutsRetries: the worker's stop (connect.WithStop) reaches
// a plugin sink's Write in flight, whose connect.Stopping context ends
// with connect.ErrStopping: a sink retrying on its own gives up, and the
// host's Write returns an error that says the task is stopping. The stop
// holds for its Write only: the next Write, with a stop that has not
// ended, is not stopped; a Write whose stop had ended before it began
// starts stopped.
func TestSink_StopCutsRetries(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	t.Cleanup(h.Close)
	out := filepath.Join(t.TempDir(), "out")
	sink := openSink(t, h, bin.misbehave, map[string]string{"mode": "stubborn", "out": out, "retry.wait": "5ms"})

	stop, stopNow := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		errc <- sink.Write(connect.WithStop(t.Context(), stop), []connect.Record{{Value: []byte("a")}, {Value: []byte("poison")}, {Value: []byte("b")}})
	}()
	waitUntilFile(t, out, "try 3\n")
	stopNow()
	err := <-errc
	if !connect.IsStopping(err) || !strings.Contains(err.Error(), "deliver record 1") {
		t.Fatalf("Write = %v, want a stopping error from the plugin", err)
	}
	if got := readFile(t, out); !strings.HasPrefix(got, "a\ntry 1\n") || strings.Contains(got, "b\n") {
		t.Errorf("out = %q, want a, then tries, and no b", got)
	}

	// The next batch, with a stop of its own, goes through.
	next, cancelNext := context.WithCancel(t.Context())
	defer cancelNext()
	if err := sink.Write(connect.WithStop(t.Context(), next), []connect.Record{{Value: []byte("c")}}); err != nil {
		t.Fatalf("the next Write: %v", err)
	}
	// A Write asked to stop before it began gives up at its first try.
	before := strings.Count(readFile(t, out), "try ")
	err = sink.Write(connect.WithStop(t.Context(), stop), []connect.Record{{Value: []byte("poison")}})
	if !connect.IsStopping(err) {
		t.Fatalf("a Write with an ended stop = %v", err)
	}
	if got := readFile(t, out); !strings.Contains(got, "c\n") || strings.Count(got, "try ") != before+1 {
		t.Errorf("out = %q, want c and one more try", got)
	}
	// Without a stop, a failing Write ends with its context, not stopping.
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		waitUntilFile(t, out, "c\ntry 1\ntry 1\ntry 2\n")
		cancel()
	}()
	if err := sink.Write(ctx, []connect.Record{{Value: []byte("poison")}}); connect.IsStopping(err) || !errors.Is(err, context.Canceled) {
		t.Errorf("a Write whose context ends = %v, want context.Canceled", err)
	}
}

func TestStops_Pairing(t *testing.T) {
	var st stops
	st.request(1) // before Write 1 began
	stop, done := st.begin(1)
	if stop.Err() == nil {
		t.Error("Write 1 began without its early Stop")
	}
	done()
	st.request(1) // after Write 1 returned
	stop, done = st.begin(2)
	if stop.Err() != nil {
		t.Error("Write 2 began stopped by Write 1's Stop")
	}
	st.request(2)
	if stop.Err() == nil {
		t.Error("Stop 2 did not stop Write 2")
	}
	done()
}

func openPluginSink(t *testing.T, p *Plugin, values map[string]string) connect.Sink {
	t.Helper()
	sink := p.Connector().NewSink()
	cfg := connect.Config{Pipeline: "test", Connector: "out", Values: values, Spec: p.Spec}
	if err := sink.Open(t.Context(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close(context.Background()) })
	return sink
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

// waitUntilFile polls until the file at path holds every one of want, or
// fails after 15s.
func waitUntilFile(t *testing.T, path string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := readFile(t, path)
		ok := true
		for _, w := range want {
			ok = ok && strings.Contains(got, w)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s holds %q, want %q", path, got, want)
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

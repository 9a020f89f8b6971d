package plugins

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// RecorderEvents returns the complete lines of the recorder plugin's
// events file (see testdata/recorder), each split into its fields.
func RecorderEvents(t testing.TB, path string) [][]string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	text := string(data)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i] // a line still being written is not one yet
	} else {
		text = ""
	}
	var out [][]string
	for line := range strings.SplitSeq(text, "\n") {
		if line != "" {
			out = append(out, strings.Fields(line))
		}
	}
	return out
}

// TestSource_DurableAndTailCross: a source plugin that implements
// connect.DurableNotifier and connect.TailRecoverer gets an adapter that
// implements them too (and not connect.Reporter, which it lacks); its
// TailTopics arrive with Open, RecoverTail's records keep their Topic,
// Partition and Offset, and Durable's errors keep their class.
func TestSource_DurableAndTailCross(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	p := h.Inspect(t.Context(), bin.recorder)
	if !p.Valid() || p.Protocol != ProtocolVersion {
		t.Fatalf("recorder: %+v", p)
	}
	if got, want := p.Interfaces(), []string{"connect.DurableNotifier", "connect.TailRecoverer"}; !slices.Equal(got, want) {
		t.Fatalf("recorder's Interfaces() = %q, want %q", got, want)
	}
	events := filepath.Join(t.TempDir(), "events")
	src := openPluginSource(t, p, map[string]string{"events": events, "durable_error": "retryable", "durable_error_at": "6"}, connect.Position("3"))
	dn, ok := src.(connect.DurableNotifier)
	if !ok {
		t.Fatalf("the adapter %T is no connect.DurableNotifier", src)
	}
	tr, ok := src.(connect.TailRecoverer)
	if !ok {
		t.Fatalf("the adapter %T is no connect.TailRecoverer", src)
	}
	if _, ok := src.(connect.Reporter); ok {
		t.Errorf("the adapter %T is a connect.Reporter, but the plugin's source is not", src)
	}
	if got := tr.TailTopics(); !slices.Equal(got, []string{""}) {
		t.Errorf("TailTopics = %q, want [\"\"]", got)
	}
	tail := []connect.Record{
		{Topic: "events", Partition: 2, Offset: 41, Value: []byte("2")},
		{Topic: "events", Partition: 2, Offset: 42, Value: []byte("3")},
		{Topic: "other", Partition: 0, Offset: 7, Value: []byte("x")},
	}
	if err := tr.RecoverTail(t.Context(), tail); err != nil {
		t.Fatal(err)
	}
	recs, err := src.Read(t.Context())
	if err != nil || len(recs) != 3 || string(recs[0].Value) != "4" || string(recs[2].Position) != "6" {
		t.Fatalf("Read: %v, %+v", err, recs)
	}
	err = dn.Durable(t.Context(), connect.Position("6"))
	if !connect.IsRetryable(err) || !strings.Contains(err.Error(), "durable 6: not now") {
		t.Errorf("Durable(6) = %v, want the plugin's Retryable error", err)
	}
	if err := src.Ack(t.Context(), connect.Position("6")); err != nil {
		t.Fatal(err)
	}
	if err := dn.Durable(t.Context(), connect.Position("9")); err != nil {
		t.Errorf("Durable(9) = %v", err)
	}
	if err := src.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := dn.Durable(t.Context(), connect.Position("12")); err == nil {
		t.Error("Durable after Close succeeded")
	}
	want := []string{"open 3", "topics", "tail events 2 41 2", "tail events 2 42 3", "tail other 0 7 x",
		"durable 6", "ack 6", "durable 9", "close"}
	var got []string
	for _, e := range RecorderEvents(t, events) {
		got = append(got, strings.Join(e, " "))
	}
	if !slices.Equal(got, want) {
		t.Errorf("the plugin saw\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}

	// Any other error fails the task: it must not come back Retryable.
	events = filepath.Join(t.TempDir(), "events")
	src = openPluginSource(t, p, map[string]string{"events": events, "durable_error": "fatal", "durable_error_at": "3"}, nil)
	err = src.(connect.DurableNotifier).Durable(t.Context(), connect.Position("3"))
	if err == nil || connect.IsRetryable(err) || !strings.Contains(err.Error(), "durable 3: broken") {
		t.Errorf("Durable(3) = %v, want the plugin's error, not Retryable", err)
	}
}

// TestSource_OlderHost: a plugin built for protocol 2 runs under a host
// that speaks only version 1; the handshake settles on 1, so the adapter
// offers neither interface of version 2 and the plugin is asked for no
// TailTopics, while Read and Ack work as before.
func TestSource_OlderHost(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	h.protocol = 1
	events := filepath.Join(t.TempDir(), "events")
	src := openSource(t, h, bin.recorder, map[string]string{"events": events}, connect.Position("30"))
	if _, ok := src.(connect.DurableNotifier); ok {
		t.Errorf("the adapter %T of a version-1 handshake is a connect.DurableNotifier", src)
	}
	if _, ok := src.(connect.TailRecoverer); ok {
		t.Errorf("the adapter %T of a version-1 handshake is a connect.TailRecoverer", src)
	}
	recs, err := src.Read(t.Context())
	if err != nil || len(recs) != 3 || string(recs[0].Value) != "31" {
		t.Fatalf("Read: %v, %+v", err, recs)
	}
	if err := src.Ack(t.Context(), recs[2].Position); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range RecorderEvents(t, events) {
		got = append(got, strings.Join(e, " "))
	}
	if want := []string{"open 30", "ack 33", "close"}; !slices.Equal(got, want) {
		t.Errorf("the plugin saw %q, want %q", got, want)
	}
}

// TestSource_OldPlugin: a plugin of protocol version 1 (built before
// version 2) loads, says so, and its adapter offers neither interface of
// version 2, so the worker never makes the calls it lacks.
func TestSource_OldPlugin(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	p := h.Inspect(t.Context(), bin.oldproto)
	if !p.Valid() || p.Protocol != 1 || p.Name != "oldcounter" || len(p.Interfaces()) != 0 {
		t.Fatalf("oldproto: %+v, interfaces %q", p, p.Interfaces())
	}
	acks := filepath.Join(t.TempDir(), "acks")
	src := openPluginSource(t, p, map[string]string{"acks": acks}, nil)
	if _, ok := src.(connect.DurableNotifier); ok {
		t.Errorf("the adapter %T of a version-1 plugin is a connect.DurableNotifier", src)
	}
	if _, ok := src.(connect.TailRecoverer); ok {
		t.Errorf("the adapter %T of a version-1 plugin is a connect.TailRecoverer", src)
	}
	recs, err := src.Read(t.Context())
	if err != nil || len(recs) != 2 || string(recs[1].Position) != "2" {
		t.Fatalf("Read: %v, %+v", err, recs)
	}
	if err := src.Ack(t.Context(), recs[1].Position); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(acks); string(b) != "ack 2\n" {
		t.Errorf("the plugin's acks: %q", b)
	}
}

// TestSource_ExtrasGoneAtOpen: an instance made with the interfaces the
// plugin announced when inspected fails to open when its new process no
// longer has them (here the handshake settles on version 1), rather than
// leaving the worker to call what the process lacks.
func TestSource_ExtrasGoneAtOpen(t *testing.T) {
	h, _ := newTestHost(t, Options{})
	p := h.Inspect(t.Context(), bin.recorder)
	if !p.Valid() {
		t.Fatal(p.Err)
	}
	h.protocol = 1
	src := p.Connector().NewSource()
	cfg := connect.Config{Values: map[string]string{"events": filepath.Join(t.TempDir(), "events")}, Spec: p.Spec}
	err := src.Open(t.Context(), cfg)
	if err == nil {
		src.Close(context.Background())
		t.Fatal("Open succeeded")
	}
	if !strings.Contains(err.Error(), "no longer implements connect.DurableNotifier and connect.TailRecoverer") {
		t.Errorf("Open: %v", err)
	}
}

// BenchmarkSource_Durable measures what connect.DurableNotifier costs a
// plugin source per positioned batch: one more call (Durable) beside the
// Ack that every source gets. The recorder appends a line to its events
// file on each, as a source answering its clients would do some work.
//
//	go test -run '^$' -bench BenchmarkSource_Durable -benchtime 20000x ./plugins/
func BenchmarkSource_Durable(b *testing.B) {
	h := NewHost(Options{})
	p := h.Inspect(b.Context(), bin.recorder)
	if !p.Valid() {
		b.Fatal(p.Err)
	}
	for _, durable := range []bool{false, true} {
		name := "ack"
		if durable {
			name = "durable+ack"
		}
		b.Run(name, func(b *testing.B) {
			src := p.Connector().NewSource()
			cfg := connect.Config{Values: map[string]string{"events": filepath.Join(b.TempDir(), "events")}, Spec: p.Spec}
			if err := src.Open(b.Context(), cfg); err != nil {
				b.Fatal(err)
			}
			defer src.Close(context.Background())
			dn := src.(connect.DurableNotifier)
			cpu := cpuMeter(b, bin.recorder)
			var pos []byte
			for i := 0; b.Loop(); i++ {
				pos = strconv.AppendInt(pos[:0], int64(i+1), 10)
				if durable {
					if err := dn.Durable(b.Context(), pos); err != nil {
						b.Fatal(err)
					}
				}
				if err := src.Ack(b.Context(), pos); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu().Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// cpuMeter starts measuring the CPU time (user and system) of this process
// and of the one running process of the plugin at path; the function it
// returns gives the time used since.
func cpuMeter(b *testing.B, path string) func() time.Duration {
	b.Helper()
	pid := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && exe == path {
			if pid != 0 {
				b.Fatalf("more than one process of %s", path)
			}
			pid, _ = strconv.Atoi(e.Name())
		}
	}
	if pid == 0 {
		b.Fatalf("no process of %s", path)
	}
	used := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			b.Fatal(err)
		}
		self := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command's closing parenthesis; utime and
		// stime are the 12th and 13th, in clock ticks (100 a second).
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		return self + time.Duration(ut+st)*10*time.Millisecond
	}
	start := used()
	return func() time.Duration { return used() - start }
}

package file

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite generated docs")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t testing.TB, values map[string]string) *Sink {
	t.Helper()
	s := Connector().NewSink().(*Sink)
	if err := s.Open(t.Context(), connect.Config{Pipeline: "p", Connector: "out", Values: values, Spec: spec()}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func write(t *testing.T, s *Sink, recs ...connect.Record) {
	t.Helper()
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func value(v string) connect.Record { return connect.Record{Value: []byte(v)} }

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkLines checks that every line of the file is one JSON value.
func checkLines(t *testing.T, content string) {
	t.Helper()
	if content != "" && !strings.HasSuffix(content, "\n") {
		t.Errorf("file does not end with a newline: %q", content)
	}
	for _, line := range strings.Split(strings.TrimSuffix(content, "\n"), "\n") {
		if content != "" && !json.Valid([]byte(line)) {
			t.Errorf("line is not JSON: %q", line)
		}
	}
}

func TestConnector_Registered(t *testing.T) {
	c, err := connect.Default().Lookup(connect.KindSink, Name)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != Name || c.Description == "" || c.Version == "" || c.NewSink == nil {
		t.Errorf("registered connector = %+v", c)
	}
}

func TestSink_Write_Values(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	write(t, s,
		value(`{"seq": 1,  "tags": [1, 2],
		        "name": "a b"}`),
		value(`42`),
		value(` "text" `),
		value(`not json`),
		value(`{"torn":`),
		value(""),
		connect.Record{Key: []byte("k")}, // a tombstone: skipped
		value("line\nbreak\t\"quoted\" \\ <html>"),
		value("\xff\xfe binary"),
		value(`{"s":"<b>&amp;</b> \u2028"}`),
		value("{\"city\":\"Zürich\"}"),
		value("{\"bad\":\"\xff\"}"), // JSON, but not UTF-8: written as a string
	)
	want := `{"seq":1,"tags":[1,2],"name":"a b"}
42
"text"
"not json"
"{\"torn\":"
""
"line\nbreak\t\"quoted\" \\ <html>"
"\ufffd\ufffd binary"
{"s":"<b>&amp;</b> \u2028"}
{"city":"Zürich"}
"{\"bad\":\"\ufffd\"}"
`
	got := readFile(t, path)
	if got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	checkLines(t, got)

	// A second batch appends.
	write(t, s, value(`{"seq":2}`))
	if got := readFile(t, path); got != want+"{\"seq\":2}\n" {
		t.Errorf("after a second write:\n%s", got)
	}
}

func TestSink_Open_Appends(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "out.jsonl") // parents are created
	s := open(t, map[string]string{"path": path})
	write(t, s, value(`{"n":1}`))
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	s = open(t, map[string]string{"path": path})
	write(t, s, value(`{"n":2}`))
	if got, want := readFile(t, path), "{\"n\":1}\n{\"n\":2}\n"; got != want {
		t.Errorf("file = %q, want %q", got, want)
	}
}

func TestSink_Write_Metadata(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path, "include.metadata": "true"})
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6000000, time.FixedZone("CET", 3600))
	write(t, s,
		connect.Record{Topic: "web.tracking", Partition: 2, Offset: 41, Timestamp: ts, Key: []byte("user-7"), Value: []byte(`{"seq": 7}`)},
		connect.Record{Topic: "db.public.users", Offset: 3, Key: []byte(`{"id":1}`)}, // a tombstone: skipped
		connect.Record{Topic: "raw", Partition: 0, Offset: 0, Value: []byte("plain text")},
	)
	want := `{"topic":"web.tracking","partition":2,"offset":41,"timestamp":"2026-01-02T02:04:05.006Z","key":"user-7","value":{"seq":7}}
{"topic":"raw","partition":0,"offset":0,"timestamp":null,"key":null,"value":"plain text"}
`
	got := readFile(t, path)
	if got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	checkLines(t, got)
}

// spyFile records the calls made on the sink's file and injects failures.
type spyFile struct {
	appendFile
	calls     []string
	failWrite error // write half the buffer, then fail
	failAfter int   // with failWrite: writes that succeed first
	failSync  error
}

func (f *spyFile) Write(p []byte) (int, error) {
	f.calls = append(f.calls, fmt.Sprintf("write %d", len(p)))
	if f.failWrite != nil && f.failAfter > 0 {
		f.failAfter--
	} else if f.failWrite != nil {
		n, _ := f.appendFile.Write(p[:len(p)/2])
		return n, f.failWrite
	}
	return f.appendFile.Write(p)
}

func (f *spyFile) Sync() error {
	f.calls = append(f.calls, "sync")
	if f.failSync != nil {
		return f.failSync
	}
	return f.appendFile.Sync()
}

func spy(s *Sink) *spyFile {
	f := &spyFile{appendFile: s.f}
	s.f = f
	return f
}

func TestSink_Write_Syncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	f := spy(s)

	write(t, s, value(`{"a":1}`), value(`{"b":2}`))
	// Durable on return: fsync'ed, and the lines are in the file.
	if got, want := strings.Join(f.calls, ", "), "write 16, sync"; got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
	if got := readFile(t, path); got != "{\"a\":1}\n{\"b\":2}\n" {
		t.Errorf("file = %q", got)
	}

	// Nothing to write: no write, no sync.
	f.calls = nil
	write(t, s)
	write(t, s, connect.Record{Key: []byte("gone")})
	if len(f.calls) != 0 {
		t.Errorf("calls for batches without values = %v", f.calls)
	}
}

func TestSink_Write_FailedWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	write(t, s, value(`{"ok":1}`))
	f := spy(s)
	f.failWrite = errors.New("no space left on device")

	err := s.Write(t.Context(), []connect.Record{value(`{"lost":1}`), value(`{"lost":2}`)})
	if !connect.IsRetryable(err) || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("Write = %v, want a retryable error", err)
	}
	// The torn half of the batch is gone; the retry appends whole lines.
	if got := readFile(t, path); got != "{\"ok\":1}\n" {
		t.Errorf("file after the failed write = %q", got)
	}
	f.failWrite = nil
	write(t, s, value(`{"lost":1}`), value(`{"lost":2}`))
	got := readFile(t, path)
	if got != "{\"ok\":1}\n{\"lost\":1}\n{\"lost\":2}\n" {
		t.Errorf("file after the retry = %q", got)
	}
}

// TestSink_Write_Chunks checks that a large batch goes out in writes of
// about writeChunk bytes with one fsync, and that a write failing after
// others of its batch took effect cuts off the whole batch.
func TestSink_Write_Chunks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	write(t, s, value(`{"ok":1}`))
	f := spy(s)
	line := `"` + strings.Repeat("x", 1000) + `"`
	var recs []connect.Record
	for range 3*writeChunk/(len(line)+1) - 2 {
		recs = append(recs, value(line))
	}
	write(t, s, recs...)
	writes, syncs := 0, 0
	for _, c := range f.calls {
		if c == "sync" {
			syncs++
		} else {
			writes++
		}
	}
	if writes != 3 || syncs != 1 || f.calls[len(f.calls)-1] != "sync" {
		t.Errorf("calls = %v, want 3 writes and then one sync", f.calls)
	}
	want := "{\"ok\":1}\n" + strings.Repeat(line+"\n", len(recs))
	if got := readFile(t, path); got != want {
		t.Errorf("file holds %d bytes, want %d", len(got), len(want))
	}

	f.calls, f.failWrite, f.failAfter = nil, errors.New("no space left on device"), 2
	if err := s.Write(t.Context(), recs); !connect.IsRetryable(err) {
		t.Fatalf("Write = %v, want a retryable error", err)
	}
	if got := readFile(t, path); got != want {
		t.Errorf("after a failed third write the file holds %d bytes, want the %d from before the batch", len(got), len(want))
	}
	f.failWrite = nil
	write(t, s, value(`{"after":1}`))
	checkLines(t, readFile(t, path))
}

func TestSink_Write_FailedSync(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	f := spy(s)
	f.failSync = errors.New("input/output error")
	err := s.Write(t.Context(), []connect.Record{value(`{"a":1}`)})
	if err == nil || connect.IsRetryable(err) || !strings.Contains(err.Error(), "fsync") {
		t.Errorf("Write with a failing fsync = %v, want a non-retryable fsync error", err)
	}
}

func TestSink_Open_TornTail(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the chunk read backwards
	tests := []struct {
		name, before, after string
	}{
		{"empty", "", ""},
		{"whole lines", "{\"a\":1}\n{\"b\":2}\n", "{\"a\":1}\n{\"b\":2}\n"},
		{"torn line", "{\"a\":1}\n{\"b\":", "{\"a\":1}\n"},
		{"only a torn line", "{\"b\":", ""},
		{"long torn line", "{\"a\":1}\n{\"b\":\"" + long, "{\"a\":1}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
				t.Fatal(err)
			}
			s := open(t, map[string]string{"path": path})
			if got := readFile(t, path); got != tt.after {
				t.Errorf("after Open: %.80q, want %q", got, tt.after)
			}
			write(t, s, value(`{"c":3}`))
			if got := readFile(t, path); got != tt.after+"{\"c\":3}\n" {
				t.Errorf("after Write: %.80q", got)
			}
		})
	}
}

func TestSink_Open_Errors(t *testing.T) {
	dir := t.TempDir()
	var fe connect.FieldError
	err := Connector().NewSink().Open(t.Context(), connect.Config{Values: map[string]string{}})
	if !errors.As(err, &fe) || fe.Param != "path" {
		t.Errorf("Open without a path = %v, want a FieldError for path", err)
	}
	err = Connector().NewSink().Open(t.Context(), connect.Config{Values: map[string]string{"path": "x", "include.metadata": "maybe"}})
	if !errors.As(err, &fe) || fe.Param != "include.metadata" {
		t.Errorf("Open with include.metadata=maybe = %v, want a FieldError", err)
	}
	if err := Connector().NewSink().Open(t.Context(), connect.Config{Values: map[string]string{"path": dir}}); err == nil {
		t.Error("Open of a directory succeeded")
	}
	blocker := filepath.Join(dir, "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Connector().NewSink().Open(t.Context(), connect.Config{Values: map[string]string{"path": filepath.Join(blocker, "out.jsonl")}}); err == nil {
		t.Error("Open below a regular file succeeded")
	}
}

func TestSink_Open_SamePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	first := open(t, map[string]string{"path": path})
	second := Connector().NewSink()
	err := second.Open(t.Context(), connect.Config{Values: map[string]string{"path": path}})
	if err == nil || !strings.Contains(err.Error(), "another file sink") {
		t.Fatalf("second Open of one path = %v, want an error", err)
	}
	if err := first.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	open(t, map[string]string{"path": path})
}

func TestSink_Write_Closed(t *testing.T) {
	s := open(t, map[string]string{"path": filepath.Join(t.TempDir(), "out.jsonl")})
	if err := s.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(t.Context()); err != nil {
		t.Errorf("second Close = %v", err)
	}
	if err := s.Write(t.Context(), []connect.Record{value("1")}); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestSink_Write_Canceled(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": path})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Write(ctx, []connect.Record{value("1")}); !errors.Is(err, context.Canceled) {
		t.Errorf("Write = %v, want context.Canceled", err)
	}
	if got := readFile(t, path); got != "" {
		t.Errorf("file = %q", got)
	}
}

// TestStartWriteback checks that starting writeback of a file's range
// works where it is supported (and is a no-op elsewhere), and that a
// wrapped file is skipped.
func TestStartWriteback(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(make([]byte, 3*pageSize)); err != nil {
		t.Fatal(err)
	}
	if err := startWriteback(f, pageSize, 2*pageSize); err != nil {
		t.Errorf("startWriteback = %v", err)
	}
	if err := startWriteback(&spyFile{appendFile: f}, 0, pageSize); err != nil {
		t.Errorf("startWriteback of a wrapped file = %v", err)
	}
}

// TestDropCached checks that dropping the pages of a synced range keeps
// the file's bytes, that a wrapped file is skipped, and that Write drops
// the whole pages of what it wrote once it is fsync'ed.
func TestDropCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := bytes.Repeat([]byte("0123456789abcdef"), 3*pageSize/16+5)
	if _, err := f.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := dropCached(f, 0, int64(len(want))); err != nil {
		t.Errorf("dropCached = %v", err)
	}
	if err := dropCached(&spyFile{appendFile: f}, 0, pageSize); err != nil {
		t.Errorf("dropCached of a wrapped file = %v", err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the file changed: %d bytes, want %d", len(got), len(want))
	}

	out := filepath.Join(t.TempDir(), "out.jsonl")
	s := open(t, map[string]string{"path": out})
	var lines strings.Builder
	var prev int64
	for batch, n := range []int{50, 2000, 50, 3000} { // small batches wait for dropEvery bytes
		recs := make([]connect.Record, n)
		for i := range recs {
			v := fmt.Sprintf(`{"batch":%d,"i":%d,"pad":%q}`, batch, i, strings.Repeat("x", 100+i%500))
			recs[i] = value(v)
			lines.WriteString(v + "\n")
		}
		if err := s.Write(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		want := s.size &^ (pageSize - 1)
		if want-prev < dropEvery {
			want = prev // too little to drop yet
		}
		if s.dropped != want {
			t.Errorf("after batch %d: pages dropped below %d, want %d", batch, s.dropped, want)
		}
		prev = s.dropped
	}
	if s.dropped == 0 {
		t.Errorf("no page dropped after %d bytes", s.size)
	}
	if got := readFile(t, out); got != lines.String() {
		t.Errorf("file holds %d bytes, want %d", len(got), lines.Len())
	}
}

// BenchmarkSink_Write writes batches of 16 MiB of 1 KiB JSON events to a
// new file, fsync'ed per batch as the worker's sink task has them
// written, with the pages of each written batch dropped from the page
// cache (as the sink does) or kept. Compare cpu-ns/record (the process's
// CPU time, the file system's work in Write included): on a VM with
// free page reporting, fresh page-cache pages cost far more than the
// dropped ones the kernel hands out again (keep's figure depends on the
// pages the kernel has free: warm ones right after a big file was
// deleted, as by a previous run, cost little).
func BenchmarkSink_Write(b *testing.B) {
	const batch = 16 << 10 // records of 1 KiB
	pad := strings.Repeat("x", 1000)
	recs := make([]connect.Record, batch)
	for i := range recs {
		recs[i] = value(fmt.Sprintf(`{"seq":%d,"pad":"%s"}`, 100000+i, pad))
	}
	for _, drop := range []bool{false, true} {
		name := "drop"
		if !drop {
			name = "keep"
		}
		b.Run(name, func(b *testing.B) {
			defer func(was bool) { dropPages = was }(dropPages)
			dropPages = drop
			s := open(b, map[string]string{"path": filepath.Join(b.TempDir(), "out.jsonl")})
			b.SetBytes(int64(batch * len(recs[0].Value)))
			cpu0 := processCPU()
			for b.Loop() {
				if err := s.Write(b.Context(), recs); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := processCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/record")
			}
		})
	}
}

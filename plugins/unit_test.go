package plugins

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

func TestRecords_RoundTrip(t *testing.T) {
	in := []connect.Record{
		{}, // all nil: null key, tombstone, no position, zero time
		{Key: []byte{}, Value: []byte{}, Position: connect.Position{}, Headers: []connect.Header{{Key: "a"}, {Key: "a", Value: []byte{}}}},
		{Key: []byte("k"), Value: []byte(`{"n":1}`), Topic: "t", Partition: 3, Offset: 42, Position: connect.Position(`{"lsn":"0/1"}`),
			Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)},
		{Value: []byte("old"), Timestamp: time.Date(1500, 1, 1, 0, 0, 0, 1, time.UTC)},
		// A sink's record after a route: where it was read travels too.
		{Value: []byte("{}"), Topic: "shop.orders", Partition: 0, Offset: 7, OriginalTopic: "shop2.orders", OriginalPartition: 1, OriginalOffset: 7},
	}
	b, err := proto.Marshal(&pluginpb.WriteRequest{Records: toPBRecords(in)})
	if err != nil {
		t.Fatal(err)
	}
	var m pluginpb.WriteRequest
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	out := fromPBRecords(m.Records)
	if len(out) != len(in) {
		t.Fatalf("%d records, want %d", len(out), len(in))
	}
	for i := range in {
		if !in[i].Equal(out[i]) {
			t.Errorf("record %d:\n got %#v\nwant %#v", i, out[i], in[i])
		}
		if (in[i].Headers == nil) != (out[i].Headers == nil) {
			t.Errorf("record %d: headers %#v, want %#v", i, out[i].Headers, in[i].Headers)
		}
	}
}

func TestErrors_RoundTrip(t *testing.T) {
	base := errors.New("boom")
	for _, tc := range []struct {
		err   error
		check func(error) bool
	}{
		{connect.BadRecordAt(3, base), func(e error) bool {
			var bre *connect.BadRecordError
			return errors.As(e, &bre) && bre.Index == 3
		}},
		{connect.BadRecord(base), func(e error) bool {
			var bre *connect.BadRecordError
			return errors.As(e, &bre) && bre.Index == -1
		}},
		{connect.RetryAfter(time.Second, base), func(e error) bool {
			var re *connect.RetryableError
			return errors.As(e, &re) && re.After == time.Second && connect.IsRetryable(e)
		}},
		{fmt.Errorf("read: %w", context.Canceled), func(e error) bool { return errors.Is(e, context.Canceled) }},
		{context.DeadlineExceeded, func(e error) bool { return errors.Is(e, context.DeadlineExceeded) }},
		{base, func(e error) bool {
			return !connect.IsRetryable(e) && !connect.IsBadRecord(e) && !connect.IsPermanent(e) && connect.Attempts(e) == 0
		}},
		{connect.Permanent(base), func(e error) bool { return connect.IsPermanent(e) && !connect.IsRetryable(e) }},
		// Permanent wins over Retryable, in either order of marking.
		{connect.Permanent(connect.RetryAfter(time.Second, base)), func(e error) bool { return connect.IsPermanent(e) && !connect.IsRetryable(e) }},
		{connect.RetryAfter(time.Second, connect.Permanent(base)), func(e error) bool { return connect.IsPermanent(e) && !connect.IsRetryable(e) }},
		{connect.WithAttempts(5, connect.Permanent(base)), func(e error) bool { return connect.IsPermanent(e) && connect.Attempts(e) == 5 }},
		{connect.BadRecordAt(1, connect.WithAttempts(3, base)), func(e error) bool {
			var bre *connect.BadRecordError
			return errors.As(e, &bre) && bre.Index == 1 && connect.Attempts(e) == 3
		}},
		{connect.RetryAfter(time.Second, connect.WithAttempts(2, base)), func(e error) bool { return connect.IsRetryable(e) && connect.Attempts(e) == 2 }},
		{connect.WithAttempts(7, base), func(e error) bool { return connect.Attempts(e) == 7 && !connect.IsRetryable(e) }},
		// A stop wins over any other class, as the worker asks it first.
		{fmt.Errorf("deliver: %w", connect.ErrStopping), func(e error) bool { return connect.IsStopping(e) && !errors.Is(e, context.Canceled) }},
		{connect.RetryAfter(time.Second, fmt.Errorf("retry: %w", connect.ErrStopping)), func(e error) bool { return connect.IsStopping(e) }},
		{base, func(e error) bool { return !connect.IsStopping(e) }},
	} {
		got := fromPBError(toPBError(tc.err))
		if got == nil || got.Error() != tc.err.Error() || !tc.check(got) {
			t.Errorf("%v came back as %#v", tc.err, got)
		}
	}
	if fromPBError(toPBError(nil)) != nil {
		t.Error("nil did not come back nil")
	}
}

// TestErrors_FromAnOlderOrNewerPeer: an Error from a version-1/2 plugin
// has no attempts (0 says nothing) and a known kind; a kind this host does
// not know (from a newer plugin) is a plain error, as an older host reads
// PERMANENT.
func TestErrors_FromAnOlderOrNewerPeer(t *testing.T) {
	old := fromPBError(&pluginpb.Error{Message: "busy", Kind: pluginpb.Error_RETRYABLE, Index: -1})
	if !connect.IsRetryable(old) || connect.Attempts(old) != 0 {
		t.Errorf("a version-2 retryable error came back as %#v", old)
	}
	unknown := fromPBError(&pluginpb.Error{Message: "new", Kind: pluginpb.Error_Kind(99), Index: -1, Attempts: 2})
	if unknown.Error() != "new" || connect.IsRetryable(unknown) || connect.IsPermanent(unknown) || connect.IsBadRecord(unknown) || connect.Attempts(unknown) != 2 {
		t.Errorf("an unknown kind came back as %#v", unknown)
	}
}

func TestTail(t *testing.T) {
	var tl tail
	for i := range 20 {
		tl.add(fmt.Sprint("line ", i))
	}
	got := tl.last()
	if len(got) != tailLines || got[0] != "line 8" || got[tailLines-1] != "line 19" {
		t.Errorf("last = %q", got)
	}
	tl.add("panic: boom")
	for i := range 50 {
		tl.add(fmt.Sprint("frame ", i))
	}
	got = tl.last()
	if got[tailLines-1-panicLines] != "panic: boom" || got[tailLines-1] != fmt.Sprint("frame ", panicLines-1) {
		t.Errorf("after a panic, last = %q", got)
	}
}

func TestLineWriter(t *testing.T) {
	logs := &logBuffer{}
	tl := &tail{}
	w := &lineWriter{logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})), stream: "stderr", tail: tl, raw: true}
	fmt.Fprint(w, "plain ")
	fmt.Fprint(w, "line\r\n")
	fmt.Fprint(w, `{"@level":"warn","@message":"careful","@timestamp":"x","b":2,"a":"1"}`+"\n")
	fmt.Fprint(w, `{"@level":5,"@message":{"x":1}}`+"\n") // not hclog's shape: a plain line
	fmt.Fprint(w, strings.Repeat("y", 2*maxLine)+"\n")
	fmt.Fprint(w, "no newline")
	w.flush()
	out := logs.String()
	for _, want := range []string{
		`level=INFO msg="plain line" stream=stderr`,
		`level=WARN msg=careful a=1 b=2`,
		`level=INFO msg="{\"@level\":5,\"@message\":{\"x\":1}}" stream=stderr`,
		`msg="no newline"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log has no %s:\n%s", want, out)
		}
	}
	if got := tl.last(); len(got) != 5 || len(got[3]) != maxLine {
		t.Errorf("tail = %d lines (line 4: %d bytes)", len(got), len(got[3]))
	}
}

func FuzzParseLogLine(f *testing.F) {
	f.Add(`{"@level":"info","@message":"hi","k":[1,2]}`)
	f.Add(`{"@level":null}`)
	f.Add(`{`)
	f.Fuzz(func(t *testing.T, s string) {
		msg, _, _, ok := parseLogLine(s)
		if !ok && msg != "" {
			t.Fatal("a message from a line that did not parse")
		}
	})
}

func TestReadLockFile(t *testing.T) {
	dir := t.TempDir()
	if pins, err := readLockFile(dir); err != nil || pins != nil {
		t.Fatalf("no lock file: %v %v", pins, err)
	}
	sum := strings.Repeat("0f", 32)
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# pins\n" + sum + "  counter\n\n" + sum + " *bin/jsonl\n")
	pins, err := readLockFile(dir)
	if err != nil || len(pins) != 2 || pins["counter"] == nil || pins["jsonl"] == nil {
		t.Fatalf("pins %v, %v", pins, err)
	}
	for _, bad := range []string{"xyz counter\n", sum + "\n", sum[:10] + "  counter\n", sum + "  a\n" + sum + "  a\n"} {
		write(bad)
		if _, err := readLockFile(dir); err == nil || !strings.Contains(err.Error(), LockFile+":") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestPermissionErrorsSayHowToFix: a plugin directory or file the worker's
// user may not list, read or run gets an error that says so and names the
// chmod that fixes it. (The tests run as root, which may do all three, so
// the errors are made up; as another user the same come from the OS.)
func TestPermissionErrorsSayHowToFix(t *testing.T) {
	denied := &fs.PathError{Op: "open", Path: "/srv/plugins", Err: syscall.EACCES}
	if got, want := permissionHint(denied, "/srv/plugins", "list it: chmod a+rx"), "may not list it: chmod a+rx /srv/plugins"; !strings.Contains(got, want) {
		t.Errorf("hint %q does not say %q", got, want)
	}
	if got := permissionHint(fs.ErrNotExist, "/srv/plugins", "list it: chmod a+rx"); got != "" {
		t.Errorf("hint for a missing directory: %q, want none", got)
	}
	p := &process{path: "/srv/plugins/jsonl", tail: &tail{}}
	err := p.startError(&fs.PathError{Op: "fork/exec", Path: p.path, Err: syscall.EACCES}, nil, ProtocolVersion, time.Second)
	if !errors.Is(err, ErrNotPlugin) {
		t.Errorf("start error %v is not ErrNotPlugin", err)
	}
	for _, want := range []string{"/srv/plugins/jsonl could not be started: fork/exec /srv/plugins/jsonl: permission denied", "may not run it: chmod a+x /srv/plugins/jsonl"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("start error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "not a program this machine can run") {
		t.Errorf("start error %q calls a program the user may not run a program the machine cannot run", err)
	}
}

// TestReadLockFile_LongLine: a line longer than bufio.Scanner's 64 KiB
// token stopped the scan there, and the pins after it were dropped in
// silence, so a pinned plugin ran unchecked. The file is refused instead.
func TestReadLockFile_LongLine(t *testing.T) {
	dir := t.TempDir()
	sum := strings.Repeat("0f", 32)
	data := sum + "  a\n# " + strings.Repeat("x", 70<<10) + "\n" + sum + "  counter\n"
	if err := os.WriteFile(filepath.Join(dir, LockFile), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	pins, err := readLockFile(dir)
	if err == nil && pins["counter"] == nil {
		t.Fatalf("the pin after a long line was dropped: pins %v", pins)
	}
	if err != nil && !strings.Contains(err.Error(), LockFile) {
		t.Fatalf("error %q does not name the lock file", err)
	}
}

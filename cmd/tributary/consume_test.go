package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
	tlog "github.com/tributary-io/tributary/log"
)

// keyedTopic creates a topic of parts partitions holding n records "k<i>"
// => "v<i>" and returns the values per partition, in offset order.
func keyedTopic(t *testing.T, dir, topic string, parts, n int) map[int32][]string {
	t.Helper()
	mustRun(t, dir, "", "topics", "create", topic, "--partitions", strconv.Itoa(parts))
	var in strings.Builder
	want := map[int32][]string{}
	for i := range n {
		k, v := fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", i)
		fmt.Fprintf(&in, "%s\t%s\n", k, v)
		p := tlog.KeyPartition([]byte(k), parts)
		want[p] = append(want[p], v)
	}
	mustRun(t, dir, in.String(), "produce", topic, "-K", "\t", "-q")
	return want
}

// byPartition parses "%p %s" lines.
func byPartition(t *testing.T, out string) map[int32][]string {
	t.Helper()
	got := map[int32][]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if l == "" {
			continue
		}
		ps, v, _ := strings.Cut(l, " ")
		p, err := strconv.Atoi(ps)
		if err != nil {
			t.Fatalf("bad line %q", l)
		}
		got[int32(p)] = append(got[int32(p)], v)
	}
	return got
}

func TestConsume_LastNOfEachPartition(t *testing.T) {
	dir := t.TempDir()
	all := keyedTopic(t, dir, "web.tracking", 3, 60)
	out, errOut := mustRun(t, dir, "", "consume", "web.tracking", "-o", "-5", "-e", "-f", "%p %s\n")
	got := byPartition(t, out)
	for p := range int32(3) {
		want := all[p][max(0, len(all[p])-5):]
		if !slices.Equal(got[p], want) {
			t.Errorf("partition %d: got %v, want the last five %v", p, got[p], want)
		}
		wantContains(t, "stderr", errOut, fmt.Sprintf("%% Reached end of topic web.tracking [%d] at offset %d", p, len(all[p])))
	}
	if !strings.HasSuffix(errOut, ": exiting\n") {
		t.Errorf("stderr = %q, want the last notice to end with ': exiting'", errOut)
	}
}

func TestConsume_Offsets(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "a\nb\nc\nd\ne\n", "produce", "t", "-q")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-o", "beginning"}, "a\nb\nc\nd\ne\n"},
		{[]string{"-o", "3"}, "d\ne\n"},
		{[]string{"-o", "99"}, ""},
		{[]string{"-o", "end"}, ""},
		{[]string{"-o", "-2"}, "d\ne\n"},
		{[]string{"-o", "-20"}, "a\nb\nc\nd\ne\n"},
		{[]string{"-c", "2"}, "a\nb\n"},
		{[]string{"-o", "1", "-c", "3"}, "b\nc\nd\n"},
		{[]string{"-p", "0", "-o", "4"}, "e\n"},
		{[]string{"-K", "=", "-o", "-1"}, "=e\n"},
		{[]string{"-Z", "-K", "=", "-o", "-1"}, "NULL=e\n"},
	}
	for _, tt := range tests {
		args := append([]string{"consume", "t", "-e", "-q"}, tt.args...)
		if out, _ := mustRun(t, dir, "", args...); out != tt.want {
			t.Errorf("consume %v = %q, want %q", tt.args, out, tt.want)
		}
	}
}

func TestConsume_TimestampOffsets(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "old1\nold2\n", "produce", "t", "-q")
	time.Sleep(5 * time.Millisecond)
	mustRun(t, dir, "new1\nnew2\n", "produce", "t", "-q")
	out, _ := mustRun(t, dir, "", "consume", "t", "-e", "-q", "-f", "%T %s\n")
	var ts []int64
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		n, _ := strconv.ParseInt(f[0], 10, 64)
		ts = append(ts, n)
	}
	if len(ts) != 4 || ts[2] <= ts[1] {
		t.Fatalf("timestamps %v: want the second produce later", ts)
	}
	out, _ = mustRun(t, dir, "", "consume", "t", "-e", "-q", "-o", fmt.Sprintf("s@%d", ts[2]))
	if out != "new1\nnew2\n" {
		t.Errorf("-o s@%d = %q, want the newer records", ts[2], out)
	}
	out, _ = mustRun(t, dir, "", "consume", "t", "-e", "-q", "-o", fmt.Sprintf("e@%d", ts[2]))
	if out != "old1\nold2\n" {
		t.Errorf("-o e@%d = %q, want the older records", ts[2], out)
	}
	out, _ = mustRun(t, dir, "", "consume", "t", "-e", "-q", "-o", fmt.Sprintf("s@%d", ts[3]+60000))
	if out != "" {
		t.Errorf("-o s@future = %q, want nothing", out)
	}
}

func TestConsume_FormatTokens(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "key1|value one\n", "produce", "fmt", "-K", "|", "-H", "h1=x", "-H", "h2=y", "-q")
	out, _ := mustRun(t, dir, "", "consume", "fmt", "-e", "-q", "-f", `%t/%p/%o k=%k(%K) v=%s(%S) h=%h 100%%\t|\n`)
	want := "fmt/0/0 k=key1(4) v=value one(9) h=h1=x,h2=y 100%\t|\n"
	if out != want {
		t.Errorf("-f = %q, want %q", out, want)
	}
	err := mustFail(t, dir, "", "consume", "fmt", "-e", "-f", "%x")
	wantContains(t, "bad format", err.Error(), "unsupported field %x", "%s %S %k")
}

func TestConsume_JSON(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "k1:<v1>&\"\nno key\n", "produce", "j", "-K", ":", "-H", "h=1", "-q")
	mustRun(t, dir, "plain\n", "produce", "j", "-q")
	out, _ := mustRun(t, dir, "", "consume", "j", "-e", "-q", "-J")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("-J printed %d lines, want 3:\n%s", len(lines), out)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if first["topic"] != "j" || first["partition"] != 0.0 || first["offset"] != 0.0 || first["tstype"] != "create" ||
		first["key"] != "k1" || first["payload"] != "<v1>&\"" {
		t.Errorf("first record = %v", first)
	}
	if ts, ok := first["ts"].(float64); !ok || ts < 1e12 {
		t.Errorf("ts = %v, want unix ms", first["ts"])
	}
	if h, _ := first["headers"].([]any); len(h) != 2 || h[0] != "h" || h[1] != "1" {
		t.Errorf("headers = %v, want [h 1]", first["headers"])
	}
	if !strings.Contains(lines[0], `"payload":"<v1>&\""`) {
		t.Errorf("payload not kept verbatim (no HTML escaping): %s", lines[0])
	}
	if !strings.Contains(lines[1], `"key":null`) {
		t.Errorf("record without key: %s, want \"key\":null", lines[1])
	}
	if strings.Contains(lines[2], `"headers"`) {
		t.Errorf("record without headers has a headers field (kcat leaves it out): %s", lines[2])
	}
	wantOrder := []string{`{"topic":`, `"partition":`, `"offset":`, `"tstype":`, `"ts":`, `"headers":`, `"key":`, `"payload":`}
	pos := -1
	for _, f := range wantOrder {
		i := strings.Index(lines[0], f)
		if i <= pos {
			t.Errorf("field %s out of kcat's order in %s", f, lines[0])
		}
		pos = i
	}
}

func TestConsume_Errors(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "t", "--partitions", "2")
	err := mustFail(t, dir, "", "consume", "web.tracking", "-e")
	if got, want := err.Error(), "topic web.tracking does not exist; list topics with `tributary topics list`"; got != want {
		t.Errorf("error = %q, want %q", got, want)
	}
	err = mustFail(t, dir, "", "consume", "t", "-e", "-p", "5")
	wantContains(t, "bad partition", err.Error(), "no partition 5")
	err = mustFail(t, dir, "", "consume", "t", "-e", "-o", "stored")
	wantContains(t, "stored without group", err.Error(), "-g GROUP")
	err = mustFail(t, dir, "", "consume", "t", "-e", "-J", "-f", "%s")
	wantContains(t, "-J and -f", err.Error(), "-J and -f")
}

func TestConsume_FollowsUntilInterrupted(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "one\ntwo\nthree\n", "produce", "t", "-q")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errOut syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--data-dir", dir, "consume", "t", "-g", "follower"}, strings.NewReader(""), &out, &errOut)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "one\ntwo\nthree\n" {
		if time.Now().After(deadline) {
			t.Fatalf("consume printed %q, want the three records", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel() // as SIGINT does
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("interrupted consume: %v, want a clean exit", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("consume did not stop when its context ended")
	}
	desc, _ := mustRun(t, dir, "", "groups", "describe", "follower")
	wantContains(t, "describe after interrupt", desc, "follower t     0         3              3              0")
}

func TestParseFormat_Escapes(t *testing.T) {
	f, err := parseFormat(`a\tb\nc\x41\\%%`)
	if err != nil {
		t.Fatal(err)
	}
	got := string(f.appendRecord(nil, &tlog.Record{}))
	if want := "a\tb\ncA\\%"; got != want {
		t.Errorf("format = %q, want %q", got, want)
	}
	if _, err := parseFormat("trailing %"); err == nil {
		t.Error("lone % accepted")
	}
}

func TestParseOffsets(t *testing.T) {
	tests := []struct {
		vals  []string
		group string
		kind  string
		n     int64
		stop  bool
		bad   bool
	}{
		{nil, "", "beginning", 0, false, false},
		{nil, "g", "stored", 0, false, false},
		{[]string{"end"}, "g", "end", 0, false, false},
		{[]string{"-7"}, "", "rel", 7, false, false},
		{[]string{"7"}, "", "abs", 7, false, false},
		{[]string{"s@1700000000000", "e@1800000000000"}, "", "time", 0, true, false},
		{[]string{"e@1800000000000"}, "", "beginning", 0, true, false},
		{[]string{"stored"}, "", "", 0, false, true},
		{[]string{"1", "2"}, "", "", 0, false, true},
		{[]string{"s@x"}, "", "", 0, false, true},
		{[]string{"latest"}, "", "", 0, false, true},
	}
	for _, tt := range tests {
		start, stop, err := parseOffsets("tributary consume", tt.vals, tt.group)
		if tt.bad {
			if err == nil {
				t.Errorf("%v: accepted", tt.vals)
			}
			continue
		}
		if err != nil || start.kind != tt.kind || start.n != tt.n || (stop != nil) != tt.stop {
			t.Errorf("%v: start %+v stop %v err %v; want %s %d stop=%v", tt.vals, start, stop, err, tt.kind, tt.n, tt.stop)
		}
	}
}

// kcat's -o e@UNIXMS stops a partition at the first record whose
// timestamp is at or after UNIXMS; until such a record arrives it keeps
// consuming (without -e it follows the partition), so a stop time in the
// future does not end consume at the partition's current end.
func TestConsume_StopTimeInFutureKeepsFollowing(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "a\nb\n", "produce", "t", "-q")
	stop := time.Now().Add(time.Hour).UnixMilli()
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	var out, errOut syncbuf.Buffer
	started := time.Now()
	err := run(ctx, []string{"--data-dir", dir, "consume", "t", "-q", "-o", "beginning", "-o", fmt.Sprintf("e@%d", stop)}, strings.NewReader(""), &out, &errOut)
	if err != nil {
		t.Fatalf("consume: %v\n%s", err, errOut.String())
	}
	if out.String() != "a\nb\n" {
		t.Errorf("consume printed %q, want a and b", out.String())
	}
	if el := time.Since(started); ctx.Err() == nil {
		t.Errorf("consume -o e@<an hour from now> without -e exited after %s at the end of the partition; kcat keeps consuming until a record at or after the stop time", el.Round(time.Millisecond))
	}
}

// With a stop time no record has reached yet, consume follows the
// partition and stops it before the first record appended later whose
// timestamp is at or after the stop time.
func TestConsume_StopTimeInFutureStopsAtFirstLaterRecord(t *testing.T) {
	l, err := openEmbedded(t.TempDir(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := l.CreateTopic(ctx, "t", 1, nil); err != nil {
		t.Fatal(err)
	}
	stop := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	appendAt := func(v string, ts time.Time) {
		t.Helper()
		if _, err := l.Append(ctx, "t", 0, []tlog.Record{{Value: []byte(v), Timestamp: ts}}); err != nil {
			t.Fatal(err)
		}
	}
	appendAt("a", stop.Add(-2*time.Hour))
	var out, errOut syncbuf.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, client: l,
		logger: slog.New(slog.NewTextHandler(&errOut, nil))}
	cmd := newConsumeCmd(a)
	cmd.SetArgs([]string{"t", "-q", "-o", fmt.Sprintf("e@%d", stop.UnixMilli())})
	cmd.SetOut(&errOut)
	cmd.SetErr(&errOut)
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	for out.String() != "a\n" {
		if ctx.Err() != nil {
			t.Fatalf("consume printed %q, want a\n%s", out.String(), errOut.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	appendAt("b", stop.Add(-time.Millisecond))
	appendAt("c", stop)
	appendAt("d", stop.Add(-time.Millisecond))
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("consume: %v\n%s", err, errOut.String())
		}
	case <-ctx.Done():
		t.Fatalf("consume -o e@%d kept following after a record at the stop time; printed %q", stop.UnixMilli(), out.String())
	}
	if out.String() != "a\nb\n" {
		t.Errorf("consume printed %q, want a and b: the records before the first at or after the stop time", out.String())
	}
}

// -K beside -f or -J says how to get the key printed with the format given.
func TestConsume_KeyDelimiterBesideAFormatSaysWhatToDo(t *testing.T) {
	dir := t.TempDir()
	err := mustFail(t, dir, "", "consume", "t", "-K", ":", "-f", `%s\n`)
	wantContains(t, "-K with -f", err.Error(), "-f '%k:%s\\n'")
	err = mustFail(t, dir, "", "consume", "t", "-K", ":", "-J")
	wantContains(t, "-K with -J", err.Error(), `drop -K: -J prints the key in its "key" field`)
	if strings.Contains(err.Error(), "-f '") {
		t.Errorf("-K with -J: %q suggests a -f format, which -J does not take", err)
	}
}

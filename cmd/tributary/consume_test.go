package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

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
	var out, errOut syncBuffer
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

package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

func TestProduce_RoundTrip(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	for i := range 2500 {
		fmt.Fprintf(&in, "line %d\n", i)
	}
	_, errOut := mustRun(t, dir, in.String(), "produce", "numbers")
	if want := "% 2500 records acknowledged to numbers\n"; errOut != want {
		t.Errorf("produce stderr = %q, want %q", errOut, want)
	}
	out, errOut := mustRun(t, dir, "", "consume", "numbers", "-e")
	if out != in.String() {
		t.Errorf("consume printed %d bytes, want the %d produced", len(out), in.Len())
	}
	if want := "% Reached end of topic numbers [0] at offset 2500: exiting\n"; errOut != want {
		t.Errorf("consume stderr = %q, want %q", errOut, want)
	}
}

func TestProduce_LinesKcatStyle(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", 200<<10) // longer than bufio.Scanner's limit
	in := "first\n\n" + long + "\r\n\nlast without newline"
	mustRun(t, dir, in, "produce", "lines", "-q")
	out, _ := mustRun(t, dir, "", "consume", "lines", "-e", "-q", "-f", "%S\n")
	want := fmt.Sprintf("5\n%d\n20\n", len(long)+1) // empty lines skipped, \r kept
	if out != want {
		t.Errorf("value sizes = %q, want %q", out, want)
	}
}

func TestProduce_KeyDelimiterLandsOnMurmur2Partition(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "users", "--partitions", "12")
	keys := []string{"foobar", "21", "abc", "user-42", "a:b"}
	var in strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&in, "%s::value of %s\n", k, k)
	}
	in.WriteString("no delimiter here\n")
	mustRun(t, dir, in.String(), "produce", "users", "-K", "::")
	out, _ := mustRun(t, dir, "", "consume", "users", "-e", "-q", "-f", "%p|%k|%K|%s\n")
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		f := strings.Split(l, "|")
		got[f[3]] = f[0] + "|" + f[1] + "|" + f[2]
	}
	for _, k := range keys {
		want := fmt.Sprintf("%d|%s|%d", tlog.KeyPartition([]byte(k), 12), k, len(k))
		if g := got["value of "+k]; g != want {
			t.Errorf("key %q: partition|key|keylen = %q, want %q", k, g, want)
		}
	}
	// Kafka's vector: murmur2("foobar") lands on partition 6 of 12.
	if !strings.HasPrefix(got["value of foobar"], "6|") {
		t.Errorf("foobar landed on %q, want partition 6", got["value of foobar"])
	}
	// A line without the delimiter has no key.
	if g := got["no delimiter here"]; !strings.HasSuffix(g, "||-1") {
		t.Errorf("line without delimiter: %q, want a null key", g)
	}
}

func TestProduce_FixedKeyHeadersNullAndPartition(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "t", "--partitions", "4")
	mustRun(t, dir, "k1:v1\n:v2\nk3:\nplain\n", "produce", "t", "-K", ":", "-Z", "-k", "fixed", "-H", "source=test", "-H", "flag", "-p", "2")
	out, _ := mustRun(t, dir, "", "consume", "t", "-e", "-q", "-p", "2", "-f", "%o %k/%K %s/%S [%h]\n")
	want := "0 k1/2 v1/2 [source=test,flag=NULL]\n" +
		"1 fixed/5 v2/2 [source=test,flag=NULL]\n" + // -Z: empty key is null, then -k applies
		"2 k3/2 /-1 [source=test,flag=NULL]\n" + // -Z: empty value is null (a tombstone)
		"3 fixed/5 plain/5 [source=test,flag=NULL]\n"
	if out != want {
		t.Errorf("consume =\n%s\nwant\n%s", out, want)
	}
	err := mustFail(t, dir, "x\n", "produce", "t", "-p", "9")
	wantContains(t, "bad partition", err.Error(), "has 4 partition(s)")
}

func TestProduce_AutoCreatesTopic(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "a\n", "produce", "fresh")
	out, _ := mustRun(t, dir, "", "topics", "describe", "fresh")
	wantContains(t, "describe", out, "PartitionCount: 1\t", "LogEndOffset: 1\n")
}

func TestProduce_UnkeyedSpreadsStickyAndKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "spread", "--partitions", "3")
	var in bytes.Buffer
	for i := range 20000 {
		fmt.Fprintf(&in, "%06d\n", i)
	}
	// Small appends, so that many groups go out and move between partitions.
	mustRun(t, dir, in.String(), "produce", "spread", "-q", "--append-bytes", "4096")
	out, _ := mustRun(t, dir, "", "consume", "spread", "-e", "-q", "-f", "%p %s\n")
	last := map[string]string{}
	n := 0
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		p, v, _ := strings.Cut(l, " ")
		if v <= last[p] {
			t.Fatalf("partition %s: %s after %s: order lost", p, v, last[p])
		}
		last[p] = v
		n++
	}
	if n != 20000 {
		t.Errorf("consumed %d records, want 20000", n)
	}
	if len(last) < 2 {
		t.Errorf("records without a key used partitions %v, want them spread", last)
	}
}

func TestProduce_ErrorsSayWhatToDo(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "users", "--config", "cleanup.policy=compact")
	_, errOut, err := tributary(t, dir, "no key\n", "produce", "users")
	if err == nil {
		t.Fatal("unkeyed record accepted by a compacted topic")
	}
	wantContains(t, "compacted topic error", err.Error(), "-K DELIM or -k KEY")
	wantContains(t, "stderr", errOut, "% 0 records acknowledged to users")

	mustRun(t, dir, "", "topics", "create", "small", "--config", "max.message.bytes=1000")
	_, errOut, err = tributary(t, dir, "ok\n"+strings.Repeat("y", 2000)+"\n", "produce", "small", "-p", "0")
	if err == nil {
		t.Fatal("record larger than max.message.bytes accepted")
	}
	wantContains(t, "too large error", err.Error(), "max.message.bytes", "tributary topics alter small --config max.message.bytes=N")
	if !strings.Contains(errOut, "% 1 records acknowledged") && !strings.Contains(errOut, "% 0 records acknowledged") {
		t.Errorf("stderr = %q, want the count acknowledged before the error", errOut)
	}

	// An error before the first append (here a partition the topic does
	// not have) still prints the count, as the help promises.
	_, errOut, err = tributary(t, dir, "ok\n", "produce", "small", "-p", "7")
	if err == nil {
		t.Fatal("produce to partition 7 of a 1-partition topic succeeded")
	}
	wantContains(t, "stderr", errOut, "% 0 records acknowledged to small")
}

package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// kcat's -o e@UNIXMS stops a partition at the first record whose
// timestamp is at or after UNIXMS; until such a record arrives it keeps
// consuming (without -e it follows the partition). consume instead turns
// e@ into an offset up front (OffsetForTime, which answers the current end
// when no record is that late yet), so with a stop time in the future it
// exits at the current end, as if -e had been given, and never prints the
// records appended before the stop time.
func TestReviewPlug_ConsumeStopTimeInFutureKeepsFollowing(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "a\nb\n", "produce", "t", "-q")
	stop := time.Now().Add(time.Hour).UnixMilli()
	ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
	defer cancel()
	var out, errOut syncBuffer
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

// Through --server, produce and consume carry keys and values as JSON
// strings, which cannot hold bytes that are not UTF-8: such bytes become
// U+FFFD on the way, silently. The same commands without --server (and
// kcat) carry them byte for byte, so binary payloads (Avro, Protobuf,
// Latin-1 text) are corrupted when stored or printed through a worker.
func TestReviewPlug_ServerModeKeepsBinaryBytes(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out", "events.jsonl")
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", out).Replace(quickstartYAML))
	const line = "k\xff:caf\xe9 \x00\x80\xfe"
	// Stored byte for byte without --server, before the worker starts.
	mustRun(t, data, line+"\n", "produce", "exact", "-K", ":", "-q")
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	var runErr syncBuffer
	go func() {
		done <- run(ctx, []string{"run", file, "--rest-addr", addr}, strings.NewReader(""), &syncBuffer{}, &runErr)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, _, err := tributary(t, data, "", "topics", "list", "--server", addr); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker never answered\n%s", runErr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	got, _ := mustRun(t, data, "", "consume", "exact", "-e", "-q", "-f", "%k:%s\n", "--server", addr)
	if got != line+"\n" {
		t.Errorf("consume --server of a record stored exactly printed %q, want %q", got, line+"\n")
	}
	mustRun(t, data, line+"\n", "produce", "bin", "-K", ":", "-q", "--server", addr)
	got, _ = mustRun(t, data, "", "consume", "bin", "-e", "-q", "-f", "%k:%s\n", "--server", addr)
	if got != line+"\n" {
		t.Errorf("consume --server printed %q, want %q (as produced)", got, line+"\n")
	}
	stop()
	got, _ = mustRun(t, data, "", "consume", "bin", "-e", "-q", "-f", "%k:%s\n")
	if got != line+"\n" {
		t.Errorf("the log holds %q, want %q (as produced with --server)", got, line+"\n")
	}
}

package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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

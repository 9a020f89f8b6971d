package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRun_KafkaListenerAndBackend runs worker A on the embedded log with
// log.kafka.listen, reads its topic with franz-go, then runs worker B with
// backend: kafka against A's listener: B's pipeline moves events through
// A's log into B's file.
func TestRun_KafkaListenerAndBackend(t *testing.T) {
	dir := t.TempDir()
	kafkaAddr, restA, restB := freeAddr(t), freeAddr(t), freeAddr(t)
	pipeA := filepath.Join(dir, "a.yaml")
	writeFile(t, pipeA, `version: 1
name: a
log:
  dir: `+filepath.Join(dir, "data")+`
  kafka: {listen: `+kafkaAddr+`}
sources:
  - name: gen-a
    connector: generator
    topic: web.tracking
    config: {rate: 2000, max.events: 100}
`)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	doneA := make(chan error, 1)
	go func() {
		doneA <- run(ctx, []string{"run", pipeA, "--rest-addr", restA}, strings.NewReader(""), &syncBuffer{}, &syncBuffer{})
	}()

	cl, err := kgo.NewClient(kgo.SeedBrokers(kafkaAddr), kgo.ConsumeTopics("web.tracking"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := 0
	deadline := time.Now().Add(20 * time.Second)
	for seen < 100 && time.Now().Before(deadline) {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			if strings.Contains(string(r.Value), `"seq"`) {
				seen++
			}
		})
	}
	if seen < 100 {
		t.Fatalf("franz-go read %d generated events through the listener, want 100", seen)
	}

	pipeB := filepath.Join(dir, "b.yaml")
	out := filepath.Join(dir, "b.jsonl")
	writeFile(t, pipeB, `version: 1
name: b
log:
  backend: kafka
  kafka: {brokers: [`+kafkaAddr+`]}
sources:
  - name: gen-b
    connector: generator
    topic: b.events
    config: {rate: 2000, max.events: 50}
sinks:
  - name: file-b
    connector: file
    topics: [b.events]
    config: {path: `+out+`}
`)
	ctxB, cancelB := context.WithCancel(ctx)
	doneB := make(chan error, 1)
	go func() {
		doneB <- run(ctxB, []string{"run", pipeB, "--rest-addr", restB}, strings.NewReader(""), &syncBuffer{}, &syncBuffer{})
	}()
	deadline = time.Now().Add(30 * time.Second)
	for {
		data, _ := os.ReadFile(out)
		if strings.Count(string(data), "\n") >= 50 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker B on the kafka backend delivered %d of 50 events", strings.Count(string(data), "\n"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancelB()
	if err := <-doneB; err != nil {
		t.Fatalf("worker B: %v", err)
	}
	cancel()
	if err := <-doneA; err != nil {
		t.Fatalf("worker A: %v", err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

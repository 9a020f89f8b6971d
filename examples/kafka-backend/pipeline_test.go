// Package kafkabackend_test runs the kafka-backend example pipeline end to
// end: against the built-in log's Kafka listener, standing in for an
// external cluster (a real Kafka wire implementation, started by the test).
package kafkabackend_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/engine/kafkabackend"
	"github.com/tributary-io/tributary/internal/exampletest"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
	"github.com/tributary-io/tributary/pipelines"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The example runs on two independent Kafka implementations, each started
// by the test: the built-in log's Kafka listener and franz-go's kfake.
func TestExample_RunsOnKafka(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	t.Run("listener", func(t *testing.T) {
		l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		srv, err := kafka.Listen(t.Context(), "127.0.0.1:0", l, kafka.Options{Logger: quiet, InitialRebalanceDelay: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		runExample(t, []string{srv.Addr().String()})
	})
	t.Run("kfake", func(t *testing.T) {
		c, err := kfake.NewCluster(kfake.NumBrokers(3))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		runExample(t, c.ListenAddrs())
	})
}

// runExample runs pipeline.yaml on the cluster at brokers until 500 events
// reached the file.
func runExample(t *testing.T, brokers []string) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	out := t.TempDir()
	// One seed broker, as the file takes it; the client finds the others.
	env := map[string]string{"KAFKA_BROKERS": brokers[0], "OUT_DIR": out, "MAX_EVENTS": "500"}
	p := exampletest.Load(t, "pipeline.yaml", env, generator.Connector(), file.Connector())
	if p.Log.Backend != pipelines.BackendKafka {
		t.Fatalf("backend %q", p.Log.Backend)
	}
	b, err := kafkabackend.New(t.Context(), kafkabackend.Options{Brokers: p.Log.Kafka.Brokers, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	run := exampletest.Start(t, b, p, generator.Connector(), file.Connector())
	defer run.Shutdown() // before the backend and the cluster close
	if bounds, err := b.EndOffsets(t.Context(), "web.tracking"); err != nil || len(bounds) != 6 {
		t.Fatalf("topic web.tracking: %d partitions, %v", len(bounds), err)
	}
	exampletest.WaitFor(t, 20*time.Second, "500 events in the file", func() error {
		if n := lines(filepath.Join(out, "events.jsonl")); n < 500 {
			return fmt.Errorf("%d of 500", n)
		}
		return nil
	})
}

// Two workers run pipeline.yaml: one runs the generator (it holds the
// source's lease), the other stands by; both run the sink, one consumer
// group. Every event is produced once, and the two files hold each at
// least once between them.
func TestExample_TwoWorkersRunThePipeline(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const events = 500
	var outs []string
	var b *kafkabackend.Backend
	for range 2 {
		out := t.TempDir()
		outs = append(outs, out)
		env := map[string]string{"KAFKA_BROKERS": c.ListenAddrs()[0], "OUT_DIR": out, "MAX_EVENTS": fmt.Sprint(events)}
		p := exampletest.Load(t, "pipeline.yaml", env, generator.Connector(), file.Connector())
		b, err = kafkabackend.New(t.Context(), kafkabackend.Options{Brokers: p.Log.Kafka.Brokers, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		run := exampletest.Start(t, b, p, generator.Connector(), file.Connector())
		defer run.Shutdown()
	}
	exampletest.WaitFor(t, 20*time.Second, fmt.Sprintf("seq 1 to %d in the files", events), func() error {
		seen := make(map[int]bool)
		for _, out := range outs {
			for _, seq := range seqs(t, filepath.Join(out, "events.jsonl")) {
				seen[seq] = true
			}
		}
		for seq := 1; seq <= events; seq++ {
			if !seen[seq] {
				return fmt.Errorf("%d of %d distinct seqs, seq %d missing", len(seen), events, seq)
			}
		}
		return nil
	})
	bounds, err := b.EndOffsets(t.Context(), "web.tracking")
	if err != nil {
		t.Fatal(err)
	}
	var produced int64
	for _, pb := range bounds {
		produced += pb.End - pb.Start
	}
	if produced != events {
		t.Errorf("web.tracking holds %d records, want %d: one worker at a time runs the source", produced, events)
	}
}

// seqs returns the seq of every event in the JSON-lines file at path
// written so far, skipping a last line not yet complete.
func seqs(t *testing.T, path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var out []int
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		var e struct {
			Seq int `json:"seq"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s: line %q: %v", path, line, err)
		}
		out = append(out, e.Seq)
	}
	return out
}

func lines(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		n++
	}
	return n
}

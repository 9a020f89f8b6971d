package main

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// TestTopics_DeleteRecords deletes records with the embedded log and through
// a running worker (--server): the log start offset moves, describe shows
// it, consume -o beginning starts there, and the refusals are Kafka's.
func TestTopics_DeleteRecords(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	mustRun(t, data, "", "topics", "create", "ev", "--partitions", "2")
	mustRun(t, data, "", "topics", "create", "kv", "--config", "cleanup.policy=compact")
	mustRun(t, data, "a\nb\nc\nd\ne\nf\n", "produce", "ev", "-p", "0", "-q")

	out, _ := mustRun(t, data, "", "topics", "delete-records", "ev", "--partition", "0", "--offset", "2")
	if want := "partition: ev-0\tlow_watermark: 2\n"; out != want {
		t.Errorf("delete-records = %q, want %q", out, want)
	}
	out, _ = mustRun(t, data, "", "topics", "describe", "ev")
	wantContains(t, "describe", out, "\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 2\tLogEndOffset: 6\n")
	if out, _ := mustRun(t, data, "", "consume", "ev", "-p", "0", "-e", "-q"); out != "c\nd\ne\nf\n" {
		t.Errorf("consume -o beginning after delete-records = %q, want c..f", out)
	}
	if err := mustFail(t, data, "", "topics", "delete-records", "ev", "--partition", "0", "--offset", "7"); !errors.Is(err, tlog.ErrOffsetOutOfRange) {
		t.Errorf("delete-records past the end: %v, want ErrOffsetOutOfRange", err)
	}
	if err := mustFail(t, data, "", "topics", "delete-records", "kv", "--partition", "0", "--offset", "-1"); !errors.Is(err, tlog.ErrPolicyViolation) {
		t.Errorf("delete-records of a compacted topic: %v, want ErrPolicyViolation", err)
	} else {
		wantContains(t, "delete-records of a compacted topic", err.Error(), "tributary topics alter kv --config cleanup.policy=compact,delete")
	}
	err := mustFail(t, data, "", "topics", "delete-records", "ev", "--offset", "1")
	wantContains(t, "no --partition", err.Error(), "--partition P and --offset N")

	// Through a running worker's REST API.
	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", filepath.Join(dir, "out", "events.jsonl")).Replace(quickstartYAML))
	addr, _ := startWorker(t, data, file)
	out, _ = mustRun(t, data, "", "topics", "delete-records", "ev", "--partition", "0", "--offset", "-1", "--server", addr)
	if want := "partition: ev-0\tlow_watermark: 6\n"; out != want {
		t.Errorf("delete-records --server = %q, want %q", out, want)
	}
	out, _ = mustRun(t, data, "", "topics", "describe", "ev", "--server", addr)
	wantContains(t, "describe --server", out, "\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 6\tLogEndOffset: 6\n")
	if err := mustFail(t, data, "", "topics", "delete-records", "ev", "--partition", "0", "--offset", "9", "--server", addr); !errors.Is(err, tlog.ErrOffsetOutOfRange) {
		t.Errorf("delete-records --server past the end: %v, want ErrOffsetOutOfRange", err)
	}
	if err := mustFail(t, data, "", "topics", "delete-records", "nope", "--partition", "0", "--offset", "1", "--server", addr); !errors.Is(err, tlog.ErrUnknownTopic) {
		t.Errorf("delete-records --server of an unknown topic: %v, want ErrUnknownTopic", err)
	}
	if err := mustFail(t, data, "", "topics", "delete-records", "kv", "--partition", "0", "--offset", "-1", "--server", addr); !errors.Is(err, tlog.ErrPolicyViolation) {
		t.Errorf("delete-records --server of a compacted topic: %v, want ErrPolicyViolation", err)
	} else {
		wantContains(t, "delete-records --server of a compacted topic", err.Error(), "tributary topics alter kv --config cleanup.policy=compact,delete")
	}
}

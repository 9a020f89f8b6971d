package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

func TestTopics_Lifecycle(t *testing.T) {
	dir := t.TempDir()
	out, _ := mustRun(t, dir, "", "topics", "create", "web.tracking", "--partitions", "3", "--config", "retention.ms=86400000", "--config", "cleanup.policy=compact,delete")
	if want := "Created topic web.tracking.\n"; out != want {
		t.Errorf("create = %q, want %q", out, want)
	}
	mustRun(t, dir, "", "topics", "create", "audit")
	if out, _ := mustRun(t, dir, "", "topics", "list"); out != "audit\nweb.tracking\n" {
		t.Errorf("list = %q", out)
	}

	mustRun(t, dir, "a\nb\n", "produce", "web.tracking", "-p", "1", "-k", "x")
	out, _ = mustRun(t, dir, "", "topics", "describe", "web.tracking")
	idRE := regexp.MustCompile(`TopicId: ([0-9a-f]+)\t`)
	m := idRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("describe = %q: no TopicId", out)
	}
	want := "Topic: web.tracking\tTopicId: " + m[1] + "\tPartitionCount: 3\tReplicationFactor: 1\tConfigs: cleanup.policy=compact,delete,retention.ms=86400000\n" +
		"\tTopic: web.tracking\tPartition: 0\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 0\tLogEndOffset: 0\n" +
		"\tTopic: web.tracking\tPartition: 1\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 0\tLogEndOffset: 2\n" +
		"\tTopic: web.tracking\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0\tLogStartOffset: 0\tLogEndOffset: 0\n"
	if out != want {
		t.Errorf("describe =\n%q\nwant\n%q", out, want)
	}

	out, _ = mustRun(t, dir, "", "topics", "alter", "web.tracking", "--partitions", "5", "--config", "segment.bytes=1048576", "--delete-config", "retention.ms")
	if want := "Completed updating config for topic web.tracking.\nTopic web.tracking now has 5 partitions.\n"; out != want {
		t.Errorf("alter = %q, want %q", out, want)
	}
	out, _ = mustRun(t, dir, "", "topics", "describe", "web.tracking")
	wantContains(t, "describe after alter", out, "PartitionCount: 5\t", "Configs: cleanup.policy=compact,delete,segment.bytes=1048576\n", "\tPartition: 4\t")

	// describe without a name describes every topic.
	out, _ = mustRun(t, dir, "", "topics", "describe")
	if n := strings.Count(out, "\n"); n != 2+6 {
		t.Errorf("describe all: %d lines, want 8:\n%s", n, out)
	}

	out, _ = mustRun(t, dir, "", "topics", "delete", "web.tracking")
	if out != "Deleted topic web.tracking.\n" {
		t.Errorf("delete = %q", out)
	}
	if out, _ := mustRun(t, dir, "", "topics", "list"); out != "audit\n" {
		t.Errorf("list after delete = %q", out)
	}
	mustRun(t, dir, "", "topics", "delete", "web.tracking", "--if-exists")
	mustRun(t, dir, "", "topics", "create", "audit", "--if-not-exists")
}

func TestTopics_Errors(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "t", "--partitions", "2")

	err := mustFail(t, dir, "", "topics", "create", "u", "--config", "retension.ms=5")
	wantContains(t, "unknown config", err.Error(), `unknown topic config "retension.ms"`, "valid: ", "retention.ms")

	err = mustFail(t, dir, "", "topics", "create", "u", "--config", "cleanup.policy=sometimes")
	wantContains(t, "bad value", err.Error(), "cleanup.policy=sometimes", "compact")

	err = mustFail(t, dir, "", "topics", "create", "t")
	if !errors.Is(err, tlog.ErrTopicExists) {
		t.Errorf("create existing: %v, want ErrTopicExists", err)
	}
	wantContains(t, "exists", err.Error(), "topic t already exists")

	err = mustFail(t, dir, "", "topics", "describe", "nope")
	wantContains(t, "describe unknown", err.Error(), "topic nope does not exist; list topics with `tributary topics list`")

	err = mustFail(t, dir, "", "topics", "alter", "t", "--partitions", "1")
	wantContains(t, "shrink", err.Error(), "only grow")

	err = mustFail(t, dir, "", "topics", "create", "bad name")
	if !errors.Is(err, tlog.ErrInvalidTopicName) {
		t.Errorf("bad name: %v", err)
	}

	err = mustFail(t, dir, "", "topics", "create", "u", "--config", "novalue")
	var ue *usageError
	if !errors.As(err, &ue) {
		t.Errorf("--config novalue: %v, want a usage error", err)
	}
}

// TestTopics_ConfigUsageErrors: a --config name or value the log's topic
// config table refuses, and a --delete-config name it does not know, are
// usage errors (exit 2) found before any I/O: no data directory is opened
// or created.
func TestTopics_ConfigUsageErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	for _, args := range [][]string{
		{"topics", "create", "z", "--partitions", "1", "--config", "retention.ms=abc"},
		{"topics", "create", "z", "--partitions", "1", "--config", "retention.mss=5"},
		{"topics", "alter", "z", "--config", "retention.ms=abc"},
		{"topics", "alter", "z", "--config", "retention.mss=5"},
		{"topics", "alter", "z", "--delete-config", "retention.mss"},
	} {
		err := mustFail(t, dir, "", args...)
		var buf bytes.Buffer
		if code := report(&buf, err); code != exitUsage {
			t.Errorf("%s: exit %d (%v), want %d", strings.Join(args, " "), code, err, exitUsage)
		}
		if !errors.Is(err, tlog.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", strings.Join(args, " "), err)
		}
		wantContains(t, strings.Join(args, " "), buf.String(), "retention.ms", "Run 'tributary topics ")
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: the data directory was touched (%v)", strings.Join(args, " "), err)
		}
	}
}

func TestTopics_ListExcludeInternal(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "__internal")
	mustRun(t, dir, "", "topics", "create", "visible")
	if out, _ := mustRun(t, dir, "", "topics", "list", "--exclude-internal"); out != "visible\n" {
		t.Errorf("list --exclude-internal = %q", out)
	}
}

// TestTopics_CreatePartitionLimit: `topics create` and `topics alter
// --partitions` refuse more partitions than the limit, with an error naming
// it and how to change it, and leave no partition directory behind; the
// limit follows $TRIBUTARY_MAX_PARTITIONS.
func TestTopics_CreatePartitionLimit(t *testing.T) {
	dir := t.TempDir()
	err := mustFail(t, dir, "", "topics", "create", "n1", "--partitions", "100000000")
	if !errors.Is(err, tlog.ErrInvalidPartitions) {
		t.Fatalf("create 100000000 partitions: %v", err)
	}
	wantContains(t, "create 100000000", err.Error(), "at most 1000", "TRIBUTARY_MAX_PARTITIONS")
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "n1-") {
			t.Fatalf("a refused create left %s", e.Name())
		}
	}
	t.Setenv("TRIBUTARY_MAX_PARTITIONS", "4")
	mustRun(t, dir, "", "topics", "create", "n1", "--partitions", "4")
	err = mustFail(t, dir, "", "topics", "alter", "n1", "--partitions", "5")
	wantContains(t, "alter to 5", err.Error(), "at most 4")
	t.Setenv("TRIBUTARY_MAX_PARTITIONS", "many")
	err = mustFail(t, dir, "", "topics", "list")
	wantContains(t, "bad env", err.Error(), `TRIBUTARY_MAX_PARTITIONS="many"`)
}

// TestTopics_OverPartitionLimitNotOpened: a topic created under a higher
// $TRIBUTARY_MAX_PARTITIONS is not opened under a lower one: the commands
// that need its partitions (in process and through --server) say so and
// how to raise the limit, instead of saying that it does not exist, and
// topics list and topics describe show it from what is on disk, marked.
func TestTopics_OverPartitionLimitNotOpened(t *testing.T) {
	dir := t.TempDir()
	data, out := filepath.Join(dir, "data"), filepath.Join(dir, "out", "events.jsonl")
	t.Setenv("TRIBUTARY_MAX_PARTITIONS", "5")
	mustRun(t, data, "", "topics", "create", "big", "--partitions", "5", "--config", "retention.ms=86400000")
	described, _ := mustRun(t, data, "", "topics", "describe", "big")
	m := regexp.MustCompile(`TopicId: ([0-9a-f]+)\t`).FindStringSubmatch(described)
	if m == nil {
		t.Fatalf("describe = %q: no TopicId", described)
	}
	t.Setenv("TRIBUTARY_MAX_PARTITIONS", "4")
	want := []string{"topic big exists but was not opened", "5 partitions", "limit of 4", "TRIBUTARY_MAX_PARTITIONS=5"}
	for _, args := range [][]string{{"topics", "alter", "big", "--partitions", "6"}, {"consume", "big", "-e"}} {
		err := mustFail(t, data, "", args...)
		wantContains(t, strings.Join(args, " "), err.Error(), want...)
	}
	// topics describe shows it as an open topic, but for a status line and
	// partitions without a leader and with unknown offsets.
	notOpened := func(status string) string {
		s := "Topic: big\tTopicId: " + m[1] + "\tPartitionCount: 5\tReplicationFactor: 1\tConfigs: retention.ms=86400000\n" + status
		for p := range 5 {
			s += fmt.Sprintf("\tTopic: big\tPartition: %d\tLeader: none\tReplicas: 0\tIsr: 0\tLogStartOffset: -\tLogEndOffset: -\n", p)
		}
		return s
	}
	inProcess := notOpened("Status: not opened (5 partitions, more than the limit of 4 per topic): open it with TRIBUTARY_MAX_PARTITIONS=5, for this command and for `tributary run`, or delete it with `tributary topics delete big`\n")
	if got, _ := mustRun(t, data, "", "topics", "describe", "big"); got != inProcess {
		t.Errorf("topics describe big =\n%q\nwant\n%q", got, inProcess)
	}
	// topics list shows it, marked, in its place among the names; topics
	// describe without names describes it there too.
	const listed = "big\t(not opened: 5 partitions, more than the limit of 4; see tributary topics describe big)\n"
	mustRun(t, data, "", "topics", "create", "a")
	mustRun(t, data, "", "topics", "create", "c")
	if got, _ := mustRun(t, data, "", "topics", "list"); got != "a\n"+listed+"c\n" {
		t.Errorf("topics list = %q, want a, big (not opened), c", got)
	}
	all, _ := mustRun(t, data, "", "topics", "describe")
	if !strings.Contains(all, "\tTopic: a\tPartition: 0\t") || !strings.Contains(all, "\n"+inProcess+"Topic: c\t") {
		t.Errorf("topics describe =\n%s\nwant a, big (not opened), c", all)
	}

	file := filepath.Join(dir, "pipeline.yaml")
	writeFile(t, file, strings.NewReplacer("%DATA%", data, "%OUT%", out).Replace(quickstartYAML))
	addr, _ := startWorker(t, data, file)
	viaServer := notOpened("Status: not opened (5 partitions, more than the worker's limit of 4 per topic): restart the worker (`tributary run`) with TRIBUTARY_MAX_PARTITIONS=5 to open it, or delete it with `tributary topics delete big`\n")
	if got, _ := mustRun(t, data, "", "topics", "describe", "big", "--server", addr); got != viaServer {
		t.Errorf("topics describe big --server =\n%q\nwant\n%q", got, viaServer)
	}
	err := mustFail(t, data, "", "consume", "big", "-e", "--server", addr)
	wantContains(t, "consume --server", err.Error(), want...)
	got, _ := mustRun(t, data, "", "topics", "list", "--server", addr)
	wantContains(t, "list --server", got, "a\n"+listed+"c\n")
}

package main

import (
	"errors"
	"slices"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// table splits aligned columns into fields, header first.
func table(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func wantTable(t *testing.T, what, out string, want [][]string) {
	t.Helper()
	got := table(out)
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("%s =\n%s\nwant rows %q", what, out, want)
	}
}

var describeHeader = []string{"GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"}

func TestGroups_ConsumeCommitsAndDescribe(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "orders", "--partitions", "2")
	mustRun(t, dir, "a\nb\nc\nd\n", "produce", "orders", "-p", "0", "-q")
	mustRun(t, dir, "e\nf\n", "produce", "orders", "-p", "1", "-q")

	out, _ := mustRun(t, dir, "", "consume", "orders", "-g", "billing", "-e", "-q", "-p", "0", "-c", "3")
	if out != "a\nb\nc\n" {
		t.Fatalf("consume -c 3 = %q", out)
	}
	desc, errOut := mustRun(t, dir, "", "groups", "describe", "billing")
	wantTable(t, "describe after -c 3", desc, [][]string{
		describeHeader,
		{"billing", "orders", "0", "3", "4", "1", "-", "-", "-"},
		{"billing", "orders", "1", "-", "2", "-", "-", "-", "-"},
	})
	wantContains(t, "describe stderr", errOut, "Consumer group 'billing' has no active members.")

	// Without -o a group starts from its committed offsets (earliest where
	// it has none) and commits what it printed.
	out, _ = mustRun(t, dir, "", "consume", "orders", "-g", "billing", "-e", "-q", "-f", "%p %s\n")
	if got := byPartition(t, out); !slices.Equal(got[0], []string{"d"}) || !slices.Equal(got[1], []string{"e", "f"}) {
		t.Errorf("second consume = %q, want d from partition 0 and e, f from 1", out)
	}
	desc, _ = mustRun(t, dir, "", "groups", "describe", "--group", "billing") // as kafka-consumer-groups.sh takes it
	wantTable(t, "describe after catching up", desc, [][]string{
		describeHeader,
		{"billing", "orders", "0", "4", "4", "0", "-", "-", "-"},
		{"billing", "orders", "1", "2", "2", "0", "-", "-", "-"},
	})
	if out, _ := mustRun(t, dir, "", "consume", "orders", "-g", "billing", "-e", "-q"); out != "" {
		t.Errorf("consume with nothing new = %q", out)
	}

	if out, _ := mustRun(t, dir, "", "groups", "list"); out != "billing\n" {
		t.Errorf("groups list = %q", out)
	}
	err := mustFail(t, dir, "", "groups", "reset-offsets", "billing", "--all-topics", "--to-earliest")
	wantContains(t, "reset-offsets with a group argument", err.Error(), "--group billing")
	err = mustFail(t, dir, "", "groups", "describe", "nope")
	if !errors.Is(err, tlog.ErrUnknownGroup) {
		t.Errorf("describe unknown group: %v", err)
	}
	wantContains(t, "unknown group", err.Error(), "consumer group nope does not exist", "tributary groups list")

	out, _ = mustRun(t, dir, "", "groups", "delete", "billing")
	if want := "Deletion of requested consumer groups ('billing') was successful.\n"; out != want {
		t.Errorf("delete = %q, want %q", out, want)
	}
	if out, _ := mustRun(t, dir, "", "groups", "list"); out != "" {
		t.Errorf("groups list after delete = %q", out)
	}
}

func TestGroups_ResetOffsets(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "orders", "--partitions", "2")
	mustRun(t, dir, "a\nb\nc\nd\ne\n", "produce", "orders", "-p", "0", "-q")
	mustRun(t, dir, "f\ng\n", "produce", "orders", "-p", "1", "-q")
	mustRun(t, dir, "", "consume", "orders", "-g", "g1", "-e", "-q")

	resetHeader := []string{"GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"}
	out, errOut := mustRun(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--topic", "orders", "--to-earliest")
	wantTable(t, "dry run", out, [][]string{resetHeader, {"g1", "orders", "0", "0"}, {"g1", "orders", "1", "0"}})
	wantContains(t, "dry run stderr", errOut, "Dry run", "--execute")
	desc, _ := mustRun(t, dir, "", "groups", "describe", "g1")
	if rows := table(desc); rows[1][3] != "5" || rows[2][3] != "2" {
		t.Errorf("dry run changed the offsets:\n%s", desc)
	}

	out, _ = mustRun(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--topic", "orders:0", "--shift-by", "-2", "--execute")
	wantTable(t, "shift-by", out, [][]string{resetHeader, {"g1", "orders", "0", "3"}})
	desc, _ = mustRun(t, dir, "", "groups", "describe", "g1")
	wantTable(t, "describe after shift", desc, [][]string{
		describeHeader,
		{"g1", "orders", "0", "3", "5", "2", "-", "-", "-"},
		{"g1", "orders", "1", "2", "2", "0", "-", "-", "-"},
	})
	if out, _ := mustRun(t, dir, "", "consume", "orders", "-g", "g1", "-e", "-q"); out != "d\ne\n" {
		t.Errorf("consume after shift = %q, want d, e", out)
	}

	// Out of range: clamped with a warning.
	out, errOut = mustRun(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--all-topics", "--to-offset", "100", "--execute")
	wantTable(t, "to-offset 100", out, [][]string{resetHeader, {"g1", "orders", "0", "5"}, {"g1", "orders", "1", "2"}})
	wantContains(t, "clamp warning", errOut, "Warning: ", "100")

	for _, args := range [][]string{
		{"--group", "g1", "--topic", "orders"},
		{"--group", "g1", "--topic", "orders", "--to-earliest", "--to-latest"},
		{"--group", "g1", "--to-earliest"},
		{"--group", "g1", "--topic", "orders", "--all-topics", "--to-earliest"},
		{"--topic", "orders", "--to-earliest"},
		{"--group", "g1", "--topic", "orders", "--by-duration", "1 day"},
		{"--group", "g1", "--topic", "orders", "--to-datetime", "yesterday"},
		{"--group", "g1", "--topic", "orders:x", "--to-earliest"},
		{"--group", "g1", "--topic", "orders", "--to-earliest", "--execute", "--dry-run"},
	} {
		err := mustFail(t, dir, "", append([]string{"groups", "reset-offsets"}, args...)...)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("reset-offsets %q: %v, want a usage error", args, err)
		}
	}
	out, _ = mustRun(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--topic", "orders", "--by-duration", "P1D")
	wantTable(t, "by-duration P1D", out, [][]string{resetHeader, {"g1", "orders", "0", "0"}, {"g1", "orders", "1", "0"}})
	out, _ = mustRun(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--topic", "orders", "--to-datetime", "2999-01-01T00:00:00.000")
	wantTable(t, "to-datetime future", out, [][]string{resetHeader, {"g1", "orders", "0", "5"}, {"g1", "orders", "1", "2"}})
	err := mustFail(t, dir, "", "groups", "reset-offsets", "--group", "g1", "--topic", "nope", "--to-earliest")
	wantContains(t, "unknown topic", err.Error(), "nope")
}

// TestGroups_DescribeCommittedPastEnd: a committed offset past the end of
// its partition (the records it had read are gone) shows as a negative LAG,
// as kafka-consumer-groups.sh computes it, with a warning saying what
// happened and how to move on, not as a lag of 0.
func TestGroups_DescribeCommittedPastEnd(t *testing.T) {
	dir := t.TempDir()
	mustRun(t, dir, "", "topics", "create", "web.tracking", "--partitions", "2")
	mustRun(t, dir, "a\nb\n", "produce", "web.tracking", "-p", "1", "-q")
	l, err := tlog.Open(tlog.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	err = l.Groups().Commit(t.Context(), "sink", []tlog.OffsetCommit{{Topic: "web.tracking", Partition: 0, Offset: 296}, {Topic: "web.tracking", Partition: 1, Offset: 1}})
	if cerr := l.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	desc, errOut := mustRun(t, dir, "", "groups", "describe", "sink")
	wantTable(t, "describe", desc, [][]string{
		describeHeader,
		{"sink", "web.tracking", "0", "296", "0", "-296", "-", "-", "-"},
		{"sink", "web.tracking", "1", "1", "2", "1", "-", "-", "-"},
	})
	wantContains(t, "describe stderr", errOut, "web.tracking-0: committed offset 296 is past the log end offset 0",
		"tributary groups reset-offsets --group sink --topic web.tracking:0 --to-earliest --execute")
	if strings.Contains(errOut, "web.tracking-1") {
		t.Errorf("warning about a partition that is fine: %q", errOut)
	}
}

package log

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsClock is the fixed clock of the group tests.
var groupsClock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openGroupsLog(t *testing.T, dir string) *Log {
	t.Helper()
	return openTestLog(t, dir, func(o *Options) { o.Now = func() time.Time { return groupsClock } })
}

// produceN appends n one-record batches to a partition.
func produceN(t *testing.T, l *Log, topic string, part int32, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := l.Append(t.Context(), topic, part, []Record{{Value: []byte(fmt.Sprint("v", i))}}); err != nil {
			t.Fatalf("append to %s-%d: %v", topic, part, err)
		}
	}
}

func mustCommit(t *testing.T, l *Log, group string, offsets ...OffsetCommit) {
	t.Helper()
	if err := l.Groups().Commit(t.Context(), group, offsets); err != nil {
		t.Fatalf("Commit(%s): %v", group, err)
	}
}

func TestGroups_CommitAndReadBack(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	g := l.Groups()
	when := time.Date(2026, 2, 1, 10, 0, 0, 123_000_000, time.UTC)
	mustCommit(t, l, "g1",
		OffsetCommit{Topic: "u", Partition: 1, Offset: 7, Metadata: "m", CommitTime: when},
		OffsetCommit{Topic: "t", Partition: 2, Offset: 3},
		OffsetCommit{Topic: "t", Partition: 0, Offset: 5},
	)
	mustCommit(t, l, "a-group", OffsetCommit{Topic: "t", Partition: 0, Offset: 1})

	got := g.Committed("g1")
	want := []OffsetCommit{
		{Topic: "t", Partition: 0, Offset: 5, CommitTime: groupsClock},
		{Topic: "t", Partition: 2, Offset: 3, CommitTime: groupsClock},
		{Topic: "u", Partition: 1, Offset: 7, Metadata: "m", CommitTime: when},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed(g1) =\n%+v\nwant\n%+v", got, want)
	}
	if off, ok := g.CommittedOffset("g1", "t", 2); !ok || off != 3 {
		t.Fatalf("CommittedOffset(g1, t, 2) = %d, %v; want 3, true", off, ok)
	}
	if _, ok := g.CommittedOffset("g1", "t", 1); ok {
		t.Fatal("CommittedOffset(g1, t, 1) found an offset never committed")
	}
	if _, ok := g.CommittedOffset("nope", "t", 0); ok {
		t.Fatal("CommittedOffset of an unknown group found an offset")
	}
	if got := g.Committed("nope"); got != nil {
		t.Fatalf("Committed(unknown) = %v, want nil", got)
	}
	if got, want := g.List(), []string{"a-group", "g1"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List() = %v, want %v", got, want)
	}
}

func TestGroups_Commit_OneAppendForAll(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 1})
	before := l.Metrics().Batches.Load()
	var offs []OffsetCommit
	for p := int32(0); p < 50; p++ {
		offs = append(offs, OffsetCommit{Topic: "t", Partition: p, Offset: int64(p)})
	}
	mustCommit(t, l, "g", offs...)
	if n := l.Metrics().Batches.Load() - before; n != 1 {
		t.Fatalf("a commit of 50 partitions appended %d batches, want 1", n)
	}
}

func TestGroups_Commit_InvalidInput(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	g := l.Groups()
	cases := []struct {
		name, group string
		c           OffsetCommit
		want        string
	}{
		{"empty group", "", OffsetCommit{Topic: "t", Offset: 1}, "invalid group id"},
		{"bad topic", "g", OffsetCommit{Topic: "a/b", Offset: 1}, "invalid topic name"},
		{"negative partition", "g", OffsetCommit{Topic: "t", Partition: -1, Offset: 1}, "partitions start at 0"},
		{"negative offset", "g", OffsetCommit{Topic: "t", Offset: -1}, "offsets start at 0"},
		{"huge metadata", "g", OffsetCommit{Topic: "t", Offset: 1, Metadata: strings.Repeat("x", 5000)}, "offset.metadata.max.bytes"},
	}
	for _, c := range cases {
		err := g.Commit(t.Context(), c.group, []OffsetCommit{c.c})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Commit error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
	if got := g.List(); len(got) != 0 {
		t.Fatalf("refused commits left groups %v", got)
	}
	if _, err := l.Partitions(OffsetsTopic); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("refused commits created %s (err %v)", OffsetsTopic, err)
	}
}

func TestGroups_OffsetsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	mustCommit(t, l, "g1",
		OffsetCommit{Topic: "t", Partition: 0, Offset: 5, Metadata: "meta-0"},
		OffsetCommit{Topic: "t", Partition: 1, Offset: 9},
	)
	mustCommit(t, l, "g2", OffsetCommit{Topic: "other", Partition: 3, Offset: 42})
	want1, want2 := l.Groups().Committed("g1"), l.Groups().Committed("g2")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openGroupsLog(t, dir)
	defer l.Close()
	g := l.Groups()
	if got := g.Committed("g1"); !reflect.DeepEqual(got, want1) {
		t.Fatalf("after restart Committed(g1) = %+v, want %+v", got, want1)
	}
	if got := g.Committed("g2"); !reflect.DeepEqual(got, want2) {
		t.Fatalf("after restart Committed(g2) = %+v, want %+v", got, want2)
	}
	if got, want := g.List(), []string{"g1", "g2"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("after restart List() = %v, want %v", got, want)
	}
}

func TestGroups_LatestCommitWins(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	for _, off := range []int64{5, 10, 7} {
		mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: off})
	}
	// Within one commit, the later entry of a partition wins too.
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 1, Offset: 1}, OffsetCommit{Topic: "t", Partition: 1, Offset: 2})
	check := func(when string) {
		t.Helper()
		if off, _ := l.Groups().CommittedOffset("g", "t", 0); off != 7 {
			t.Fatalf("%s: t-0 = %d, want 7 (the latest commit)", when, off)
		}
		if off, _ := l.Groups().CommittedOffset("g", "t", 1); off != 2 {
			t.Fatalf("%s: t-1 = %d, want 2", when, off)
		}
	}
	check("before restart")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openGroupsLog(t, dir)
	defer l.Close()
	check("after restart")
}

// offsetsTopicRecords reads every record of __consumer_offsets.
func offsetsTopicRecords(t *testing.T, l *Log) []Record {
	t.Helper()
	n, err := l.Partitions(OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for p := int32(0); p < int32(n); p++ {
		out = append(out, readAll(t, l, OffsetsTopic, p, 0)...)
	}
	return out
}

func TestGroups_Delete_WritesTombstones(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	mustCommit(t, l, "doomed", OffsetCommit{Topic: "t", Partition: 0, Offset: 1}, OffsetCommit{Topic: "u", Partition: 2, Offset: 3})
	mustCommit(t, l, "keeper", OffsetCommit{Topic: "t", Partition: 0, Offset: 4})
	g := l.Groups()
	if err := g.Delete(t.Context(), "doomed"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if got, want := g.List(), []string{"keeper"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List() after Delete = %v, want %v", got, want)
	}
	if got := g.Committed("doomed"); got != nil {
		t.Fatalf("Committed(doomed) after Delete = %v", got)
	}
	if _, err := g.Describe("doomed"); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("Describe(doomed) after Delete: %v, want ErrUnknownGroup", err)
	}
	tombstones := map[string]bool{}
	for _, r := range offsetsTopicRecords(t, l) {
		if r.Value != nil {
			continue
		}
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(r.Key); err != nil {
			t.Fatalf("tombstone key at offset %d: %v", r.Offset, err)
		}
		tombstones[fmt.Sprintf("%s/%s/%d", k.Group, k.Topic, k.Partition)] = true
	}
	if want := map[string]bool{"doomed/t/0": true, "doomed/u/2": true}; !reflect.DeepEqual(tombstones, want) {
		t.Fatalf("tombstones %v, want %v", tombstones, want)
	}
	if err := g.Delete(t.Context(), "doomed"); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("second Delete: %v, want ErrUnknownGroup", err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openGroupsLog(t, dir)
	defer l.Close()
	if got, want := l.Groups().List(), []string{"keeper"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("List() after restart = %v, want %v", got, want)
	}
	if _, ok := l.Groups().CommittedOffset("doomed", "t", 0); ok {
		t.Fatal("a deleted group's offset came back after restart")
	}
	// A deleted group can be used again.
	mustCommit(t, l, "doomed", OffsetCommit{Topic: "t", Partition: 0, Offset: 8})
	if off, _ := l.Groups().CommittedOffset("doomed", "t", 0); off != 8 {
		t.Fatalf("recommit after delete: %d, want 8", off)
	}
}

func TestGroups_DeleteOffsets(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 1}, OffsetCommit{Topic: "t", Partition: 1, Offset: 2}, OffsetCommit{Topic: "u", Partition: 0, Offset: 3})
	g := l.Groups()
	if err := g.DeleteOffsets(t.Context(), "g", []TopicPartition{{"t", 1}, {"t", 9}}); err != nil {
		t.Fatalf("DeleteOffsets: %v", err)
	}
	if err := g.DeleteOffsets(t.Context(), "nope", []TopicPartition{{"t", 1}}); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("DeleteOffsets of unknown group: %v, want ErrUnknownGroup", err)
	}
	want := []OffsetCommit{
		{Topic: "t", Partition: 0, Offset: 1, CommitTime: groupsClock},
		{Topic: "u", Partition: 0, Offset: 3, CommitTime: groupsClock},
	}
	if got := g.Committed("g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed after DeleteOffsets = %+v, want %+v", got, want)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openGroupsLog(t, dir)
	defer l.Close()
	if got := l.Groups().Committed("g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed after restart = %+v, want %+v", got, want)
	}
	// Deleting the last offsets deletes the group.
	if err := l.Groups().DeleteOffsets(t.Context(), "g", []TopicPartition{{"t", 0}, {"u", 0}}); err != nil {
		t.Fatal(err)
	}
	if got := l.Groups().List(); len(got) != 0 {
		t.Fatalf("List() = %v after deleting every offset", got)
	}
}

func TestGroups_Describe_Lag(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 3, nil); err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "t", 0, 10)
	produceN(t, l, "t", 1, 4)
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 3}, OffsetCommit{Topic: "t", Partition: 2, Offset: 0})
	// A commit for a topic that does not exist is allowed, as in Kafka.
	mustCommit(t, l, "g", OffsetCommit{Topic: "ghost", Partition: 2, Offset: 5})

	got, err := l.Groups().Describe("g")
	if err != nil {
		t.Fatal(err)
	}
	want := []PartitionLag{
		{Group: "g", Topic: "ghost", Partition: 2, CurrentOffset: 5, LogEndOffset: -1, Lag: -1},
		{Group: "g", Topic: "t", Partition: 0, CurrentOffset: 3, LogEndOffset: 10, Lag: 7},
		{Group: "g", Topic: "t", Partition: 1, CurrentOffset: -1, LogEndOffset: 4, Lag: -1},
		{Group: "g", Topic: "t", Partition: 2, CurrentOffset: 0, LogEndOffset: 0, Lag: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Describe(g) =\n%+v\nwant\n%+v", got, want)
	}

	// Lag follows appends and commits.
	produceN(t, l, "t", 0, 5)
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 12})
	mustCommit(t, l, "h", OffsetCommit{Topic: "t", Partition: 1, Offset: 4})
	lag := l.Groups().Lag()
	var rows []string
	for _, r := range lag {
		rows = append(rows, fmt.Sprintf("%s %s-%d %d/%d/%d", r.Group, r.Topic, r.Partition, r.CurrentOffset, r.LogEndOffset, r.Lag))
	}
	wantRows := []string{
		"g ghost-2 5/-1/-1",
		"g t-0 12/15/3",
		"g t-1 -1/4/-1",
		"g t-2 0/0/0",
		"h t-0 -1/15/-1",
		"h t-1 4/4/0",
		"h t-2 -1/0/-1",
	}
	if !reflect.DeepEqual(rows, wantRows) {
		t.Fatalf("Lag() =\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(wantRows, "\n"))
	}

	if _, err := l.Groups().Describe("nope"); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("Describe(unknown): %v, want ErrUnknownGroup", err)
	}
}

func TestGroups_OffsetsTopicIsCompacted(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	if _, err := l.Partitions(OffsetsTopic); !errors.Is(err, ErrUnknownTopic) {
		t.Fatalf("%s exists before the first commit (err %v)", OffsetsTopic, err)
	}
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 11, Metadata: "md"})
	d, err := l.DescribeTopic(OffsetsTopic)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Config[ConfigCleanupPolicy]; got != "compact" {
		t.Fatalf("%s cleanup.policy = %q, want compact", OffsetsTopic, got)
	}
	if len(d.Partitions) != offsetsTopicPartitions {
		t.Fatalf("%s has %d partitions, want %d", OffsetsTopic, len(d.Partitions), offsetsTopicPartitions)
	}
	// The records use Kafka's schema, so Kafka tools can read them.
	recs := offsetsTopicRecords(t, l)
	if len(recs) != 1 {
		t.Fatalf("%d records in %s, want 1", len(recs), OffsetsTopic)
	}
	var k kmsg.OffsetCommitKey
	var v kmsg.OffsetCommitValue
	if err := k.ReadFrom(recs[0].Key); err != nil {
		t.Fatal(err)
	}
	if err := v.ReadFrom(recs[0].Value); err != nil {
		t.Fatal(err)
	}
	if k.Version != 1 || k.Group != "g" || k.Topic != "t" || k.Partition != 0 {
		t.Fatalf("key = %+v", k)
	}
	if v.Version != 3 || v.Offset != 11 || v.Metadata != "md" || v.CommitTimestamp != groupsClock.UnixMilli() || v.LeaderEpoch != -1 {
		t.Fatalf("value = %+v", v)
	}
}

func TestGroups_DeleteTopic_ForgetsOffsets(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 1}, OffsetCommit{Topic: "u", Partition: 0, Offset: 2})
	if err := l.DeleteTopic("t"); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Groups().CommittedOffset("g", "t", 0); ok {
		t.Fatal("offset of a deleted topic is still committed")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openGroupsLog(t, dir)
	defer l.Close()
	if _, ok := l.Groups().CommittedOffset("g", "t", 0); ok {
		t.Fatal("offset of a deleted topic came back after restart")
	}
	if off, ok := l.Groups().CommittedOffset("g", "u", 0); !ok || off != 2 {
		t.Fatalf("offset of another topic = %d, %v; want 2, true", off, ok)
	}
}

// consumerAssignment encodes a consumer protocol member assignment.
func consumerAssignment(topic string, partitions ...int32) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	t := kmsg.NewConsumerMemberAssignmentTopic()
	t.Topic, t.Partitions = topic, partitions
	a.Topics = append(a.Topics, t)
	return a.AppendTo(nil)
}

// addTestMember publishes one member owning t-0, as the Kafka listener does
// after a JoinGroup and SyncGroup.
func addTestMember(t *testing.T, l *Log, name string) {
	t.Helper()
	err := l.Groups().SetMembership(name, Membership{
		State: "Stable", Generation: 1, ProtocolType: "consumer", Protocol: "range", Leader: "consumer-1",
		Members: []GroupMember{{ID: "consumer-1", ClientID: "client", Host: "/10.0.0.1", Assignment: consumerAssignment("t", 0)}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestGroups_SetMembership(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 2, nil); err != nil {
		t.Fatal(err)
	}
	g := l.Groups()
	// A group with members and no commits exists, and shows its owners.
	addTestMember(t, l, "fresh")
	if got := g.List(); !reflect.DeepEqual(got, []string{"fresh"}) {
		t.Fatalf("List = %v", got)
	}
	rows, err := g.Describe("fresh")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ConsumerID != "consumer-1" || rows[0].ClientID != "client" || rows[1].ConsumerID != "" {
		t.Fatalf("Describe = %+v, want t-0 owned by consumer-1 and t-1 unowned", rows)
	}
	// The last member leaving forgets a group without commits.
	if err := g.SetMembership("fresh", Membership{Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Describe("fresh"); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("Describe after the last member left: %v, want ErrUnknownGroup", err)
	}
	// Unless its coordinator retains it Empty (as Kafka's keeps it until
	// its cleanup): listed, described without rows, deleted without error.
	addTestMember(t, l, "kept")
	if err := g.SetMembership("kept", Membership{State: "Empty", Generation: 2, Retained: true}); err != nil {
		t.Fatal(err)
	}
	if rows, err := g.Describe("kept"); err != nil || len(rows) != 0 || !slices.Contains(g.List(), "kept") {
		t.Fatalf("a retained group: Describe %+v, %v; List %v", rows, err, g.List())
	}
	if err := g.SetMembership("kept", Membership{State: "Empty", Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Describe("kept"); !errors.Is(err, ErrUnknownGroup) {
		t.Fatalf("Describe once no longer retained: %v, want ErrUnknownGroup", err)
	}
	if err := g.SetMembership("kept", Membership{State: "Empty", Retained: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.Delete(t.Context(), "kept"); err != nil || slices.Contains(g.List(), "kept") {
		t.Fatalf("Delete of a retained group: %v; List %v", err, g.List())
	}
	// Other protocols' assignments are opaque: no owners, but members.
	err = g.SetMembership("connect", Membership{ProtocolType: "connect", Members: []GroupMember{{ID: "w1", Assignment: []byte{0, 1, 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	if rows, err := g.Describe("connect"); err != nil || len(rows) != 0 {
		t.Fatalf("Describe of a connect group = %+v, %v", rows, err)
	}
	if err := g.Commit(t.Context(), "connect", []OffsetCommit{{Topic: "t", Offset: 1}}); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("simple commit to a group with members: %v, want ErrGroupNotEmpty", err)
	}
	for _, bad := range []Membership{{State: "Sleeping"}, {Members: []GroupMember{{ClientID: "no id"}}}} {
		if err := g.SetMembership("connect", bad); err == nil {
			t.Fatalf("SetMembership(%+v) accepted", bad)
		}
	}
	if err := g.SetMembership("", Membership{}); err == nil {
		t.Fatal("SetMembership of an empty group name accepted")
	}
}

func TestGroups_RefusesWhileMembersExist(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	produceN(t, l, "t", 0, 3)
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Partition: 0, Offset: 1})
	addTestMember(t, l, "g")
	g := l.Groups()

	err := g.Delete(t.Context(), "g")
	if !errors.Is(err, ErrGroupNotEmpty) || !strings.Contains(err.Error(), "stop its consumers") {
		t.Fatalf("Delete with members: %v, want ErrGroupNotEmpty saying to stop the consumers", err)
	}
	if err := g.DeleteOffsets(t.Context(), "g", []TopicPartition{{"t", 0}}); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("DeleteOffsets with members: %v, want ErrGroupNotEmpty", err)
	}
	plan, err := g.PlanReset("g", ResetSpec{Mode: ResetToEarliest, AllTopics: true})
	if err != nil {
		t.Fatalf("PlanReset (a dry run) with members: %v", err)
	}
	if err := g.ApplyReset(t.Context(), "g", plan); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("ApplyReset with members: %v, want ErrGroupNotEmpty", err)
	}
	if err := g.Commit(t.Context(), "g", []OffsetCommit{{Topic: "t", Offset: 2}}); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("simple Commit with members: %v, want ErrGroupNotEmpty", err)
	}
	// A member of the current generation may commit.
	if err := g.CommitMember(t.Context(), "g", "consumer-1", 1, []OffsetCommit{{Topic: "t", Offset: 2}}); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	if err := g.CommitMember(t.Context(), "g", "consumer-1", 0, []OffsetCommit{{Topic: "t", Offset: 2}}); err == nil {
		t.Fatal("commit of a stale generation accepted")
	}
	if err := g.CommitMember(t.Context(), "g", "consumer-2", 1, []OffsetCommit{{Topic: "t", Offset: 2}}); err == nil {
		t.Fatal("commit of an unknown member accepted")
	}
	if off, _ := g.CommittedOffset("g", "t", 0); off != 2 {
		t.Fatalf("offset = %d, want 2", off)
	}
	rows, err := g.Describe("g")
	if err != nil {
		t.Fatal(err)
	}
	if r := rows[0]; r.ConsumerID != "consumer-1" || r.Host != "/10.0.0.1" || r.ClientID != "client" {
		t.Fatalf("Describe row of an assigned partition = %+v", r)
	}

	// Once the last member left, the group is idle again: its commits stay
	// and the refused operations work.
	if err := g.SetMembership("g", Membership{State: "Empty", Generation: 2}); err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyReset(t.Context(), "g", plan); err != nil {
		t.Fatalf("ApplyReset after the members left: %v", err)
	}
	if off, _ := g.CommittedOffset("g", "t", 0); off != 0 {
		t.Fatalf("offset after the reset = %d, want 0", off)
	}
	if err := g.Delete(t.Context(), "g"); err != nil {
		t.Fatalf("Delete after the members left: %v", err)
	}
}

func TestGroups_ConcurrentCommitsMatchRestart(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				group := fmt.Sprint("g", w%2)
				err := l.Groups().Commit(context.Background(), group, []OffsetCommit{
					{Topic: "t", Partition: int32(i % 3), Offset: int64(w*1000 + i)},
				})
				if err != nil {
					errs <- err
					return
				}
				if i == 10 && w == 0 {
					if err := l.Groups().DeleteOffsets(context.Background(), group, []TopicPartition{{"t", 0}}); err != nil {
						errs <- err
						return
					}
				}
				_ = l.Groups().Lag()
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	before := map[string][]OffsetCommit{}
	for _, name := range l.Groups().List() {
		before[name] = l.Groups().Committed(name)
	}
	if len(before) != 2 {
		t.Fatalf("groups %v, want g0 and g1", l.Groups().List())
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openGroupsLog(t, dir)
	defer l.Close()
	after := map[string][]OffsetCommit{}
	for _, name := range l.Groups().List() {
		after[name] = l.Groups().Committed(name)
	}
	if !reflect.DeepEqual(before, after) {
		t.Fatalf("in memory before restart:\n%+v\nreplayed:\n%+v", before, after)
	}
}

func TestGroups_CommitAfterClose(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Offset: 1})
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	err := l.Groups().Commit(t.Context(), "g", []OffsetCommit{{Topic: "t", Offset: 2}})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v, want ErrClosed", err)
	}
	if off, _ := l.Groups().CommittedOffset("g", "t", 0); off != 1 {
		t.Fatalf("a failed commit changed the offset to %d", off)
	}
}

func TestGroups_ApplyOrder_OlderRecordNeverWins(t *testing.T) {
	g := &Groups{groups: map[string]*consumerGroup{}}
	gr := newGroup("g")
	g.groups["g"] = gr
	tp := TopicPartition{"t", 0}
	gr.inflight = 1 // a write is in flight: markers must stay
	gr.apply(tp, &OffsetCommit{Topic: "t", Offset: 10}, 5)
	gr.apply(tp, &OffsetCommit{Topic: "t", Offset: 7}, 3) // appended earlier, applied later
	if e := gr.offsets[tp]; e.commit.Offset != 10 {
		t.Fatalf("older record overwrote a newer one: offset %d", e.commit.Offset)
	}
	gr.apply(tp, nil, 6)                                  // tombstone
	gr.apply(tp, &OffsetCommit{Topic: "t", Offset: 8}, 4) // older commit must not resurrect it
	g.pruneLocked(gr)
	if gr.live() {
		t.Fatal("an older commit resurrected a deleted offset")
	}
	gr.inflight = 0
	g.pruneLocked(gr)
	if _, ok := g.groups["g"]; ok || gr.state != groupDead {
		t.Fatalf("quiet empty group not forgotten (state %s)", gr.state)
	}
}

func TestGroups_Load_SkipsForeignRecords(t *testing.T) {
	dir := t.TempDir()
	l := openGroupsLog(t, dir)
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Offset: 4})
	groupMetadataKey := kmsg.NewGroupMetadataKey()
	groupMetadataKey.Version, groupMetadataKey.Group = 2, "g"
	foreign := []Record{
		{Key: groupMetadataKey.AppendTo(nil), Value: []byte("group metadata, later")},
		{Key: []byte{0}, Value: []byte("short key")},
		{Key: encodeOffsetKey("g", TopicPartition{"t", 1}), Value: []byte{0, 3, 1}}, // truncated value
	}
	if _, err := l.Append(t.Context(), OffsetsTopic, 0, foreign); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openGroupsLog(t, dir)
	defer l.Close()
	want := []OffsetCommit{{Topic: "t", Offset: 4, CommitTime: groupsClock}}
	if got := l.Groups().Committed("g"); !reflect.DeepEqual(got, want) {
		t.Fatalf("Committed after loading foreign records = %+v, want %+v", got, want)
	}
}

func FuzzGroups_DecodeOffsetRecord(f *testing.F) {
	c := OffsetCommit{Topic: "t", Partition: 3, Offset: 99, Metadata: "m", CommitTime: groupsClock}
	f.Add(encodeOffsetKey("g", TopicPartition{"t", 3}), encodeOffsetValue(&c), false)
	f.Add(encodeOffsetKey("g", TopicPartition{"t", 3}), []byte(nil), true)
	f.Add([]byte{0, 2, 0, 1, 'g'}, []byte{1, 2, 3}, false)
	f.Fuzz(func(t *testing.T, key, value []byte, tombstone bool) {
		if tombstone {
			value = nil
		} else if value == nil {
			value = []byte{}
		}
		name, tp, oc, err := decodeOffsetRecord(Record{Key: key, Value: value})
		if err != nil || oc == nil {
			return
		}
		// What decodes re-encodes to a record that decodes the same.
		name2, tp2, oc2, err := decodeOffsetRecord(Record{Key: encodeOffsetKey(name, tp), Value: encodeOffsetValue(oc)})
		if err != nil || name2 != name || tp2 != tp || oc2.Offset != oc.Offset || oc2.Metadata != oc.Metadata || !oc2.CommitTime.Equal(oc.CommitTime) {
			t.Fatalf("round trip: %q %v %+v -> %q %v %+v %v", name, tp, oc, name2, tp2, oc2, err)
		}
	})
}

func FuzzParseReset(f *testing.F) {
	for _, s := range []string{"P1DT2H", "PT1.5S", "2026-01-01T00:00:00.000+02:00", "t:0,1", "-P1D", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseResetDuration(s); err == nil && d < 0 {
			t.Fatalf("ParseResetDuration(%q) = %v, negative", s, d)
		}
		_, _ = ParseResetDatetime(s)
		if sc, err := ParseTopicScope(s); err == nil {
			for _, p := range sc.Partitions {
				if p < 0 {
					t.Fatalf("ParseTopicScope(%q) gave partition %d", s, p)
				}
			}
		}
	})
}

func TestGroups_Commit_WithAutoCreateOff(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.DisableAutoCreate = true })
	defer l.Close()
	mustCommit(t, l, "g", OffsetCommit{Topic: "t", Offset: 3})
	if off, ok := l.Groups().CommittedOffset("g", "t", 0); !ok || off != 3 {
		t.Fatalf("CommittedOffset = %d, %v; want 3, true", off, ok)
	}
}

// Delete runs through the registered guards (the Kafka listener's), whoever
// calls it: a guard's refusal stops it, guards nest (the one registered
// last outermost), and an unregistered guard no longer runs.
func TestGroups_GuardDelete(t *testing.T) {
	l := openGroupsLog(t, t.TempDir())
	defer l.Close()
	g := l.Groups()
	commit := func(group string) {
		t.Helper()
		if err := g.Commit(t.Context(), group, []OffsetCommit{{Topic: "t", Partition: 0, Offset: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	var calls []string
	guard := func(name string, refuse bool) DeleteGuard {
		return func(_ context.Context, group string, del func() error) error {
			calls = append(calls, name+" "+group)
			if refuse {
				return fmt.Errorf("delete group %s: %w", group, ErrGroupNotEmpty)
			}
			return del()
		}
	}
	commit("a")
	unA := g.GuardDelete(guard("inner", false))
	unB := g.GuardDelete(guard("outer", true))
	if err := g.Delete(t.Context(), "a"); !errors.Is(err, ErrGroupNotEmpty) {
		t.Fatalf("Delete refused by a guard: %v, want ErrGroupNotEmpty", err)
	}
	if _, ok := g.CommittedOffset("a", "t", 0); !ok {
		t.Fatal("a refused Delete deleted the offsets")
	}
	unB()
	if err := g.Delete(t.Context(), "a"); err != nil {
		t.Fatalf("Delete through the remaining guard: %v", err)
	}
	if _, ok := g.CommittedOffset("a", "t", 0); ok {
		t.Fatal("offsets left after Delete")
	}
	unA()
	commit("b")
	if err := g.Delete(t.Context(), "b"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"outer a", "inner a"}; !slices.Equal(calls, want) {
		t.Fatalf("guards called %v, want %v", calls, want)
	}
}

// TestCreatePartitions_OffsetsTopicCannotGrow: a group's commits go to
// the partition its name hashes to, and reading keeps the one at the
// highest offset: grown, __consumer_offsets would send a group's new
// commits to another partition, at lower offsets, and they would lose to
// its old ones. The log refuses to grow it (and any internal topic), and
// to let anyone but the groups create it (a client's CreateTopics or an
// auto-create would make it with retention).
func TestCreatePartitions_OffsetsTopicCannotGrow(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	ctx := context.Background()
	if err := l.CreateTopic(OffsetsTopic, 1, nil); !errors.Is(err, ErrInternalTopic) {
		t.Fatalf("CreateTopic(%s) = %v, want ErrInternalTopic", OffsetsTopic, err)
	}
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	const group = "g"
	for off := int64(1); off <= 5; off++ {
		if err := l.Groups().Commit(ctx, group, []OffsetCommit{{Topic: "t", Partition: 0, Offset: off}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, topic := range []string{OffsetsTopic, "_tributary.offsets"} {
		if topic != OffsetsTopic {
			if err := l.CreateTopic(topic, 1, nil); err != nil {
				t.Fatal(err)
			}
		}
		err := l.CreatePartitions(topic, 4)
		if !errors.Is(err, ErrInternalTopic) || !strings.Contains(err.Error(), "cannot change") {
			t.Fatalf("CreatePartitions(%s, 4) = %v, want ErrInternalTopic saying the count cannot change", topic, err)
		}
		if n, _ := l.Partitions(topic); n != 1 {
			t.Fatalf("%s has %d partitions after the refusal, want 1", topic, n)
		}
	}
	if err := l.Groups().Commit(ctx, group, []OffsetCommit{{Topic: "t", Partition: 0, Offset: 42}}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	if off, _ := l.Groups().CommittedOffset(group, "t", 0); off != 42 {
		t.Fatalf("committed offset after reopen = %d, want 42", off)
	}
}

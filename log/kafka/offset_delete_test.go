package kafka

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// deleteOffsets deletes a group's committed offsets with kadm and returns
// each partition's answer, failing on a request error.
func deleteOffsets(t *testing.T, adm *kadm.Client, group string, s kadm.TopicsSet) kadm.DeleteOffsetsResponses {
	t.Helper()
	r, err := adm.DeleteOffsets(t.Context(), group, s)
	if err != nil {
		t.Fatalf("delete offsets of %s: %v", group, err)
	}
	return r
}

// wantPartitionErr fails unless the answer for topic/partition is want
// (nil: deleted).
func wantPartitionErr(t *testing.T, r kadm.DeleteOffsetsResponses, topic string, partition int32, want error) {
	t.Helper()
	got, ok := r[topic][partition]
	switch {
	case !ok:
		t.Errorf("delete offsets: no answer for %s/%d", topic, partition)
	case want == nil && got != nil:
		t.Errorf("delete offsets of %s/%d: %v, want it deleted", topic, partition, got)
	case want != nil && !errors.Is(got, want):
		t.Errorf("delete offsets of %s/%d: %v, want %v", topic, partition, got, want)
	}
}

// TestOffsetDelete_UnknownTopicOrPartition: as Kafka
// (KafkaApis.handleOffsetDeleteRequest asks the metadata before the group
// coordinator), OffsetDelete answers UNKNOWN_TOPIC_OR_PARTITION for each
// partition of a topic that does not exist and for a partition past a
// topic's count, and deletes the others; a topic the group's members
// subscribe to is GROUP_SUBSCRIBED_TO_TOPIC, unless it does not exist; a
// group nobody knows is GROUP_ID_NOT_FOUND, whatever its topics.
func TestOffsetDelete_UnknownTopicOrPartition(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "t", 2, nil)
	ts.createTopic(t, "sub", 1, nil)
	adm := kadm.NewClient(ts.client(t))
	ctx := t.Context()

	// An empty group (offsets committed from outside).
	var os kadm.Offsets
	os.AddOffset("t", 0, 5, -1)
	os.AddOffset("t", 1, 6, -1)
	if _, err := adm.CommitOffsets(ctx, "g", os); err != nil {
		t.Fatal(err)
	}
	r := deleteOffsets(t, adm, "g", kadm.TopicsSet{"t": {0: {}, 2: {}}, "nope": {0: {}, 1: {}}})
	wantPartitionErr(t, r, "t", 0, nil)
	wantPartitionErr(t, r, "t", 2, kerr.UnknownTopicOrPartition)
	wantPartitionErr(t, r, "nope", 0, kerr.UnknownTopicOrPartition)
	wantPartitionErr(t, r, "nope", 1, kerr.UnknownTopicOrPartition)
	fetched, err := adm.FetchOffsets(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("t", 0); ok {
		t.Errorf("t/0 still committed after its delete")
	}
	if o, ok := fetched.Lookup("t", 1); !ok || o.At != 6 {
		t.Errorf("t/1 = %+v (found %v), want 6 kept", o, ok)
	}

	// A group with a member consuming sub, and an offset of t committed
	// before the member came: the topic it does not subscribe to is
	// deleted while it is there, as in Kafka.
	var mos kadm.Offsets
	mos.AddOffset("t", 0, 7, -1)
	if _, err := adm.CommitOffsets(ctx, "m", mos); err != nil {
		t.Fatal(err)
	}
	m := ts.member(t, "m", "sub")
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go pollLoop(runCtx, m.c, make(chan *kgo.Record, 1))
	waitFor(t, "the member's assignment of sub", 10*time.Second, func() bool { return len(m.partitions()) == 1 })
	r = deleteOffsets(t, adm, "m", kadm.TopicsSet{"sub": {0: {}, 3: {}}, "t": {0: {}}, "nope": {0: {}}})
	wantPartitionErr(t, r, "sub", 0, kerr.GroupSubscribedToTopic)
	wantPartitionErr(t, r, "sub", 3, kerr.UnknownTopicOrPartition)
	wantPartitionErr(t, r, "t", 0, nil)
	wantPartitionErr(t, r, "nope", 0, kerr.UnknownTopicOrPartition)
	if err := r.Error(); err != nil && !errors.Is(err, kerr.GroupSubscribedToTopic) && !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Errorf("delete offsets of a group with a member: %v", err)
	}
	if fetched, err := adm.FetchOffsets(ctx, "m"); err != nil {
		t.Fatal(err)
	} else if o, ok := fetched.Lookup("t", 0); ok {
		t.Errorf("t/0 of the group with a member still committed (%+v) after its delete", o)
	}

	if _, err := adm.DeleteOffsets(ctx, "never", kadm.TopicsSet{"nope": {0: {}}}); !errors.Is(err, kerr.GroupIDNotFound) {
		t.Errorf("delete offsets of an unknown group of an unknown topic: %v, want GROUP_ID_NOT_FOUND", err)
	}
}

// TestOffsetDelete_NotOpenedTopic: a topic the log left closed is in the
// metadata with its partitions (offline), so, as Kafka for an offline
// topic, OffsetDelete deletes the committed offsets of its partitions and
// answers UNKNOWN_TOPIC_OR_PARTITION past its count.
func TestOffsetDelete_NotOpenedTopic(t *testing.T) {
	ns := startNotOpenedServer(t)
	adm := kadm.NewClient(ns.client(t))
	var os kadm.Offsets
	os.AddOffset("big", 1, 3, -1)
	if _, err := adm.CommitOffsets(t.Context(), "g", os); err != nil {
		t.Fatal(err)
	}
	r := deleteOffsets(t, adm, "g", kadm.TopicsSet{"big": {1: {}, 4: {}}})
	wantPartitionErr(t, r, "big", 1, nil)
	wantPartitionErr(t, r, "big", 4, kerr.UnknownTopicOrPartition)
	fetched, err := adm.FetchOffsets(t.Context(), "g")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("big", 1); ok {
		t.Errorf("big/1 still committed after its delete")
	}
	ns.checkStillNotOpened(t)
}

package kafka

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// runMember runs a franz-go group member of group on topic until it owns
// partition 0, and returns its records and a stop that closes it (kgo sends
// LeaveGroup), leaving the group Empty in the listener.
func runMember(t *testing.T, ts *testServer, group, topic string) (<-chan *kgo.Record, *groupMember, func()) {
	t.Helper()
	m := ts.member(t, group, topic)
	got := make(chan *kgo.Record, 100)
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); pollLoop(ctx, m.c, got) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			m.c.Close()
		})
	}
	t.Cleanup(stop)
	waitFor(t, "the member owning partition 0 of "+topic, 8*time.Second, func() bool { return len(m.partitions()) == 1 })
	return got, m, stop
}

// listenerState is the group's state as Kafka clients see it through the
// listener: DescribeGroups' state, and whether ListGroups lists it.
func listenerState(t *testing.T, adm *kadm.Client, group string) (string, bool) {
	t.Helper()
	lg, err := adm.ListGroups(t.Context())
	if err != nil {
		t.Fatalf("ListGroups: %v", err)
	}
	dg, err := adm.DescribeGroups(t.Context(), group)
	if err != nil {
		t.Fatalf("DescribeGroups: %v", err)
	}
	_, listed := lg[group]
	return dg[group].State, listed
}

// A group deleted through the log (tributary groups delete, the REST
// endpoint: Groups.Delete) is gone from the listener at once, as Kafka's
// DeleteGroups removes it from the coordinator: ListGroups leaves it out,
// DescribeGroups says Dead, OffsetFetch finds no offsets. Before, the
// listener kept it Empty for emptyGroupRetention. With members, both paths
// refuse alike.
func TestGroupsDeleteThroughLog_GoneFromListener(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "gd", 1, nil)
	if err := ts.log.Produce(t.Context(), "gd", []tlog.Record{{Value: []byte("a")}, {Value: []byte("b")}, {Value: []byte("c")}}); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(ts.client(t))
	g := ts.log.Groups()

	// An active group: the log refuses, as DeleteGroups does.
	_, m, stop := runMember(t, ts, "gd-offsets", "gd")
	if err := m.c.CommitRecords(t.Context(), &kgo.Record{Topic: "gd", Partition: 0, Offset: 1}); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	if err := g.Delete(t.Context(), "gd-offsets"); !errors.Is(err, tlog.ErrGroupNotEmpty) {
		t.Fatalf("log delete of an active group: %v, want ErrGroupNotEmpty", err)
	}
	if r, err := adm.DeleteGroup(t.Context(), "gd-offsets"); !errors.Is(r.Err, kerr.NonEmptyGroup) {
		t.Fatalf("DeleteGroups of an active group: %v %v, want NON_EMPTY_GROUP", err, r.Err)
	}
	if st, listed := listenerState(t, adm, "gd-offsets"); st != "Stable" || !listed {
		t.Fatalf("after refused deletes: state %q listed %v, want Stable, listed", st, listed)
	}
	stop()

	_, _, stop = runMember(t, ts, "gd-empty", "gd") // no commits
	stop()
	for _, name := range []string{"gd-offsets", "gd-empty"} {
		waitFor(t, name+" Empty through the listener", 5*time.Second, func() bool {
			st, listed := listenerState(t, adm, name)
			return st == "Empty" && listed
		})
		if err := g.Delete(t.Context(), name); err != nil {
			t.Fatalf("log delete of emptied group %s: %v", name, err)
		}
		if st, listed := listenerState(t, adm, name); st != "Dead" || listed {
			t.Fatalf("group %s after the log deleted it: DescribeGroups state %q, listed by ListGroups %v; want Dead, not listed", name, st, listed)
		}
		offs, err := adm.FetchOffsets(t.Context(), name)
		if err != nil {
			t.Fatalf("FetchOffsets of %s: %v", name, err)
		}
		if o, ok := offs.Lookup("gd", 0); ok && o.At >= 0 {
			t.Fatalf("group %s after delete: committed offset %d through the listener, want none", name, o.At)
		}
		if err := g.Delete(t.Context(), name); !errors.Is(err, tlog.ErrUnknownGroup) {
			t.Fatalf("second log delete of %s: %v, want ErrUnknownGroup", name, err)
		}
	}

	// A member joining afterwards starts a new group, from the start.
	got, _, stop := runMember(t, ts, "gd-offsets", "gd")
	defer stop()
	select {
	case r := <-got:
		if r.Offset != 0 {
			t.Fatalf("first record after the delete at offset %d, want 0 (no committed offset)", r.Offset)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("no record after rejoining the deleted group")
	}
}

// Offsets reset through the log (tributary groups reset-offsets --execute:
// Groups.ApplyReset) are what Kafka clients fetch at once: a consumer
// joining afterwards starts from them.
func TestGroupsResetThroughLog_SeenByListener(t *testing.T) {
	ts := startServer(t)
	ts.createTopic(t, "gr", 1, nil)
	var recs []tlog.Record
	for range 5 {
		recs = append(recs, tlog.Record{Value: []byte("x")})
	}
	if err := ts.log.Produce(t.Context(), "gr", recs); err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(ts.client(t))
	g := ts.log.Groups()

	_, m, stop := runMember(t, ts, "gr", "gr")
	if err := m.c.CommitRecords(t.Context(), &kgo.Record{Topic: "gr", Partition: 0, Offset: 0}); err != nil {
		t.Fatalf("member commit: %v", err)
	}
	plan, err := g.PlanReset("gr", tlog.ResetSpec{Mode: tlog.ResetToOffset, Offset: 3, AllTopics: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.ApplyReset(t.Context(), "gr", plan); !errors.Is(err, tlog.ErrGroupNotEmpty) {
		t.Fatalf("reset of an active group: %v, want ErrGroupNotEmpty", err)
	}
	stop()
	waitFor(t, "gr Empty through the listener", 5*time.Second, func() bool {
		st, _ := listenerState(t, adm, "gr")
		return st == "Empty"
	})
	if err := g.ApplyReset(t.Context(), "gr", plan); err != nil {
		t.Fatalf("reset of the emptied group: %v", err)
	}
	offs, err := adm.FetchOffsets(t.Context(), "gr")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup("gr", 0); !ok || o.At != 3 {
		t.Fatalf("OffsetFetch after the reset: %+v %v, want 3", o, ok)
	}
	got, _, stop := runMember(t, ts, "gr", "gr")
	defer stop()
	select {
	case r := <-got:
		if r.Offset != 3 {
			t.Fatalf("first record after the reset at offset %d, want 3", r.Offset)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("no record after the reset")
	}
}

package kafkabackend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// leaseSpec is the paced count source the lease tests run in two workers.
func leaseSpec(max, paceMS int) engine.ConnectorSpec {
	return engine.ConnectorSpec{Pipeline: "p", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers",
		Config: map[string]string{"max": strconv.Itoa(max), "pace": strconv.Itoa(paceMS)}}
}

// taskState returns the state and trace of a connector's task in a worker.
func taskState(t *testing.T, wt *workerUnderTest, name string) (engine.State, string) {
	t.Helper()
	st, err := wt.w.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 {
		return st.State, ""
	}
	return st.Tasks[0].State, st.Tasks[0].Trace
}

// activeOf waits until exactly one of the workers runs the source's task
// and the other stands by (UNASSIGNED), and returns them in that order.
func activeOf(t *testing.T, a, b *workerUnderTest) (active, standby *workerUnderTest) {
	t.Helper()
	waitFor(t, "one worker running the source, the other standing by", 15*time.Second, func() bool {
		sa, _ := taskState(t, a, "src")
		sb, _ := taskState(t, b, "src")
		switch {
		case sa == engine.StateRunning && sb == engine.StateUnassigned:
			active, standby = a, b
		case sb == engine.StateRunning && sa == engine.StateUnassigned:
			active, standby = b, a
		default:
			return false
		}
		return true
	})
	return active, standby
}

// topicCounts returns how often each n is in the topic numbers.
func topicCounts(t *testing.T, b engine.Backend) map[int]int {
	t.Helper()
	counts := map[int]int{}
	err := b.ReadAll(t.Context(), "numbers", func(r connect.Record) error {
		var v struct{ N int }
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("record %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		counts[v.N]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// Two workers load the same source: one runs it, the other stands by and
// says so in its status (not RUNNING, the lease and the holder named), and
// every record is produced once.
func TestLease_TwoWorkersProduceOnce(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		const n = 300
		for _, w := range []*workerUnderTest{w1, w2} {
			if err := w.w.Start(ctx, leaseSpec(n, 5), ""); err != nil {
				t.Fatal(err)
			}
		}
		active, standby := activeOf(t, w1, w2)
		waitFor(t, "the source acked every record", 15*time.Second, func() bool { return active.lastAcked() == n })
		counts := topicCounts(t, w1.b)
		for i := 1; i <= n; i++ {
			if counts[i] != 1 {
				t.Fatalf("record %d is in the topic %d times, want once (two workers, one lease)", i, counts[i])
			}
		}
		if len(counts) != n {
			t.Fatalf("the topic holds %d distinct records, want %d", len(counts), n)
		}
		if got := standby.lastAcked(); got != 0 {
			t.Fatalf("the standby's source acked %d: it ran", got)
		}
		holder := active.w.ID()
		waitFor(t, "the standby's status naming the holder", 10*time.Second, func() bool {
			_, trace := taskState(t, standby, "src")
			return strings.Contains(trace, "worker "+holder+" ")
		})
		st, err := standby.w.Status("src")
		if err != nil {
			t.Fatal(err)
		}
		ts := st.Tasks[0]
		if ts.State != engine.StateUnassigned || ts.WorkerID != standby.w.ID() ||
			!strings.Contains(ts.Trace, LeaseGroup("p", "src")) || !strings.Contains(ts.Trace, LeasesTopic) {
			t.Fatalf("standby task status = %+v; want UNASSIGNED on %s, the trace naming group %s on %s", ts, standby.w.ID(), LeaseGroup("p", "src"), LeasesTopic)
		}
		if s, _ := taskState(t, active, "src"); s != engine.StateRunning {
			t.Fatalf("the holder's task is %s, want RUNNING", s)
		}
		// The standby's offsets GET shows the position the holder stored,
		// not its own store's (empty: it never ran the task).
		var got, want []engine.OffsetEntry
		waitFor(t, "the standby's offsets to show the holder's position", 10*time.Second, func() bool {
			var err error
			if want, err = active.w.Offsets(ctx, "src"); err != nil {
				t.Fatal(err)
			}
			if got, err = standby.w.Offsets(ctx, "src"); err != nil {
				t.Fatal(err)
			}
			return len(want) == 1 && fmt.Sprint(got) == fmt.Sprint(want)
		})
	})
}

// The worker running the source shuts down (drained): the standby takes
// the lease over within the session timeout and continues from the stored
// position: nothing lost, nothing twice.
func TestLease_FailoverOnShutdown(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		testFailover(t, c, true)
	})
}

// The worker running the source is stopped hard (its drain cut short, as
// a kill leaves it): the standby takes over from the last stored position;
// nothing is lost, and only records past what the first worker acked come
// twice (at least once).
func TestLease_FailoverOnHardStop(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		testFailover(t, c, false)
	})
}

func testFailover(t *testing.T, c *cluster, drained bool) {
	ctx := t.Context()
	w1 := newWorker(t, c.backend(t), "w1")
	w2 := newWorker(t, c.backend(t), "w2")
	const n = 1500
	for _, w := range []*workerUnderTest{w1, w2} {
		if err := w.w.Start(ctx, leaseSpec(n, 5), ""); err != nil {
			t.Fatal(err)
		}
	}
	active, standby := activeOf(t, w1, w2)
	waitFor(t, "the active worker acked some records", 15*time.Second, func() bool { return active.lastAcked() >= 100 })
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	if !drained {
		cancel() // no time to drain: the task is cut off hard
	}
	err := active.w.Shutdown(sctx)
	cancel()
	if drained && err != nil {
		t.Fatal(err)
	}
	acked := active.lastAcked()
	if acked >= n {
		t.Fatalf("the active worker finished (acked %d) before it was stopped: pace the source slower", acked)
	}
	start := time.Now()
	waitFor(t, "the standby running the source", 10*time.Second, func() bool {
		s, _ := taskState(t, standby, "src")
		return s == engine.StateRunning
	})
	t.Logf("%s: fail-over after %d acked records took %v", c.name, acked, time.Since(start).Round(time.Millisecond))
	waitFor(t, "the standby acked every record", 15*time.Second, func() bool { return standby.lastAcked() == n })
	counts := topicCounts(t, standby.b)
	twice := 0
	for i := 1; i <= n; i++ {
		switch {
		case counts[i] == 0:
			t.Fatalf("record %d is lost", i)
		case counts[i] == 1:
		case drained:
			t.Fatalf("record %d is in the topic %d times after a drained stop, want once", i, counts[i])
		case i <= acked:
			t.Fatalf("record %d, acked by the first worker, is in the topic %d times", i, counts[i])
		default:
			twice++
		}
	}
	t.Logf("%d records past the first worker's last ack (%d) came twice", twice, acked)
}

// A pipeline of sinks joins no lease: its worker's groups are the sinks'.
func TestLease_SinksOnlyJoinNoLease(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		wt := newWorker(t, c.backend(t), "w1")
		produceValues(t, wt.b, "numbers", `"a"`, `"b"`)
		if err := wt.w.Start(ctx, engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}, ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "both records at the sink", 15*time.Second, func() bool { return len(wt.received()) == 2 })
		groups, err := wt.b.(*Backend).adm.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range groups.Groups() {
			if strings.HasPrefix(g, "_tributary-source.") {
				t.Fatalf("group %s exists: a pipeline of sinks joined a source lease (groups %v)", g, groups.Groups())
			}
		}
		if s, _ := taskState(t, wt, "dst"); s != engine.StateRunning {
			t.Fatalf("sink task is %s, want RUNNING", s)
		}
	})
}

// The embedded backend is owned by one worker: it leases nothing.
func TestLease_EmbeddedLeasesNothing(t *testing.T) {
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var b engine.Backend = engine.NewEmbedded(l, quiet())
	if _, ok := b.(engine.SourceLeaser); ok {
		t.Fatal("the embedded backend is a SourceLeaser; its sources must simply run")
	}
	if !tlog.IsInternalTopic(LeasesTopic) {
		t.Fatalf("%s is not an internal topic of the log", LeasesTopic)
	}
}

// The holder is cut off from the group coordinator (its group requests
// fail, as in a network partition; kfake only, which can drop them): the
// group gives the lease to the standby after the session timeout, the
// standby runs the source from the stored position, and the old holder,
// once it learns it lost the lease, stops its task and stands by. Nothing
// is lost; what the old holder produced between the end of its session and
// its noticing comes twice (at least once).
func TestLease_FailoverOnLostSession(t *testing.T) {
	ctx := t.Context()
	c := startKfake(t)
	w1 := newWorker(t, c.backend(t), "w1")
	w2 := newWorker(t, c.backend(t), "w2")
	spec := leaseSpec(1_000_000, 5) // never done within the test
	for _, w := range []*workerUnderTest{w1, w2} {
		if err := w.w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
	}
	active, standby := activeOf(t, w1, w2)
	waitFor(t, "the active worker acked some records", 15*time.Second, func() bool { return active.lastAcked() >= 100 })
	group := LeaseGroup("p", "src")
	adm := w1.b.(*Backend).adm
	var holder string
	waitFor(t, "the lease holder's member id", 10*time.Second, func() bool {
		d, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return false
		}
		for _, m := range d[group].Members {
			if a, ok := m.Assigned.AsConsumer(); ok && len(a.Topics) == 1 && m.ClientID == active.w.ID() {
				holder = m.MemberID
			}
		}
		return holder != ""
	})
	cutOff := func(member string) (kmsg.Response, error, bool) {
		c.fake.KeepControl()
		if member == holder {
			return nil, errors.New("the lease holder is cut off"), true
		}
		return nil, nil, false
	}
	c.fake.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return cutOff(req.(*kmsg.HeartbeatRequest).MemberID)
	})
	c.fake.ControlKey(int16(kmsg.JoinGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return cutOff(req.(*kmsg.JoinGroupRequest).MemberID)
	})
	c.fake.ControlKey(int16(kmsg.SyncGroup), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return cutOff(req.(*kmsg.SyncGroupRequest).MemberID)
	})
	cut := time.Now()
	waitFor(t, "the standby running the source", 15*time.Second, func() bool {
		s, _ := taskState(t, standby, "src")
		return s == engine.StateRunning
	})
	t.Logf("the standby took over %v after the holder was cut off", time.Since(cut).Round(time.Millisecond))
	waitFor(t, "the old holder standing by", 15*time.Second, func() bool {
		s, _ := taskState(t, active, "src")
		return s == engine.StateUnassigned
	})
	t.Logf("the old holder stood by %v after it was cut off", time.Since(cut).Round(time.Millisecond))
	last := active.lastAcked()
	waitFor(t, "the standby acking past the old holder", 15*time.Second, func() bool { return standby.lastAcked() >= last+200 })
	acked := standby.lastAcked()
	counts := topicCounts(t, standby.b)
	twice := 0
	for i := 1; i <= acked; i++ {
		if counts[i] == 0 {
			t.Fatalf("record %d is lost", i)
		}
		if counts[i] > 1 {
			twice++
		}
	}
	t.Logf("%d of %d records came twice", twice, acked)
}

// A source stopped (cluster-wide) while another worker is still in its
// lease group (here one that joined it directly, as a worker that has not
// yet stopped its task): changing its offsets waits for it, as Kafka alters
// a group's offsets only when the group is empty, and is refused as a
// conflict naming that worker when it stays; once it has left, the change
// goes through.
func TestLease_OffsetsChangeWaitsForEveryWorker(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		if err := w1.w.Start(ctx, leaseSpec(1000000, 5), ""); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "w1 running the source", 15*time.Second, func() bool {
			s, _ := taskState(t, w1, "src")
			return s == engine.StateRunning
		})
		other, err := c.backend(t).LeaseSource(ctx, "p", "src", "w9")
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := w1.w.Stop(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "w9 alone in the lease group", 15*time.Second, func() bool {
			members, err := w1.b.(*Backend).LeaseMembers(ctx, "p", "src")
			return err == nil && len(members) == 1 && strings.HasPrefix(members[0], "w9 ")
		})
		patch := []engine.OffsetEntry{{Partition: map[string]any{"pipeline": "p"}, Offset: map[string]any{"n": 7}}}
		// The changes wait for w9 to leave, here until the request's
		// context ends.
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		err = w1.w.AlterOffsets(rctx, "src", patch)
		cancel()
		if !errors.Is(err, engine.ErrConflict) || !strings.Contains(err.Error(), "worker w9 ") {
			t.Fatalf("PATCH offsets while w9 is in the lease group: %v; want a conflict naming w9", err)
		}
		rctx, cancel = context.WithTimeout(ctx, 500*time.Millisecond)
		err = w1.w.ResetOffsets(rctx, "src")
		cancel()
		if !errors.Is(err, engine.ErrConflict) {
			t.Fatalf("DELETE offsets while w9 is in the lease group: %v; want a conflict", err)
		}
		if err := other.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w1.w.AlterOffsets(ctx, "src", patch); err != nil {
			t.Fatalf("PATCH offsets once w9 left the lease group: %v", err)
		}
		got, err := w1.w.Offsets(ctx, "src")
		if err != nil || len(got) != 1 || fmt.Sprint(got[0].Offset) != fmt.Sprint(map[string]any{"n": float64(7)}) {
			t.Fatalf("offsets after the PATCH = %v, %v; want n 7", got, err)
		}
	})
}

// After a term ends (the lease was revoked and the task released it), the
// runner asks for the lease again at once (runLeasedSource loops back to
// standBy). Acquire must then wait for a new assignment: the lease is no
// longer held. It must not return at once, as it would if it ran before
// the revoked callback, woken by the release, replaced the term's closed
// acquired channel: the runner would then start a term (reload the
// position, open the source) without holding the lease.
func TestLease_AcquireRightAfterReleaseWaitsForANewAssignment(t *testing.T) {
	b := &Backend{logger: quiet()}
	ctx := t.Context()
	spurious := 0
	const rounds = 200
	for range rounds {
		l := &lease{b: b, group: "g", acquired: make(chan struct{})}
		l.assigned(ctx, nil, map[string][]int32{LeasesTopic: {0}})
		revoked, release, err := l.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { // kgo's OnPartitionsRevoked / OnPartitionsLost
			defer close(done)
			l.revoked(ctx, nil, map[string][]int32{LeasesTopic: {0}})
		}()
		<-revoked // the task stops
		release() // runLeasedSource: release(), then standBy → Acquire
		actx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, _, err = l.Acquire(actx)
		cancel()
		if err == nil {
			spurious++
		}
		<-done
	}
	if spurious > 0 {
		t.Fatalf("Acquire granted the lease %d times of %d right after it was revoked and released, with no new assignment", spurious, rounds)
	}
}

// A source's lease group that no worker ever joined has no members: a
// cluster may answer DescribeGroups for it GROUP_ID_NOT_FOUND (kfake
// does), which is not an error here, as it is not for a sink's group
// (GroupMembers). Creating a source over REST asks it (ResumedPipeline).
func TestLease_MembersOfAGroupNeverJoined(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		b := c.backend(t)
		members, err := b.LeaseMembers(t.Context(), "shop", "never-ran")
		if err != nil || len(members) != 0 {
			t.Fatalf("LeaseMembers of a group never joined = %v, %v; want none", members, err)
		}
	})
}

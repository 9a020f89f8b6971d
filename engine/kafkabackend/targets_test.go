package kafkabackend

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kerr"
)

// connectorState returns a connector's state (not its task's) in a worker.
func connectorState(t *testing.T, wt *workerUnderTest, name string) engine.State {
	t.Helper()
	st, err := wt.w.Status(name)
	if err != nil {
		t.Fatal(err)
	}
	return st.State
}

// allStopped reports whether every worker shows the connector STOPPED,
// without a task.
func allStopped(t *testing.T, name string, ws ...*workerUnderTest) bool {
	t.Helper()
	for _, w := range ws {
		st, err := w.w.Status(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.State != engine.StateStopped || len(st.Tasks) != 0 {
			return false
		}
	}
	return true
}

// producedEnd returns the number of records in the topic numbers.
func producedEnd(t *testing.T, b engine.Backend) int64 {
	t.Helper()
	bounds, err := b.EndOffsets(t.Context(), "numbers")
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, pb := range bounds {
		n += pb.End
	}
	return n
}

// waitDrained waits, once the holder's source task is PAUSED or being
// stopped, until every record it read is acked: the batch in flight when
// the pause or stop came is still appended and acked, nothing after it.
func waitDrained(t *testing.T, holder *workerUnderTest, what string) {
	t.Helper()
	waitFor(t, "the batch in flight at the "+what+" acked", 10*time.Second, func() bool {
		return holder.lastRead() > 0 && holder.lastAcked() == holder.lastRead()
	})
}

// waitLeaseEmpty waits until no worker is in the lease group of source
// src: each leaves it once its task has ended and stored its position.
func waitLeaseEmpty(t *testing.T, wt *workerUnderTest) {
	t.Helper()
	waitFor(t, "the lease group of src to empty", 15*time.Second, func() bool {
		members, err := wt.b.(*Backend).LeaseMembers(t.Context(), "p", "src")
		return err == nil && len(members) == 0
	})
}

// startSourceAndSink starts the paced source src and the sink dst (one
// consumer group across the workers) in every worker.
func startSourceAndSink(t *testing.T, ws ...*workerUnderTest) {
	t.Helper()
	sink := engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}
	for _, w := range ws {
		if err := w.w.Start(t.Context(), leaseSpec(1_000_000, 5), ""); err != nil {
			t.Fatal(err)
		}
		if err := w.w.Start(t.Context(), sink, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// A pause through the standby reaches the worker running the source: its
// task stops producing and both workers show the connector PAUSED. A
// resume through the other worker starts it again, and the topic holds
// every record once, all of which reach the sink.
func TestTargets_PauseResumeThroughAnyWorker(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		if err := w1.b.EnsureTopic(ctx, "numbers", 3, nil); err != nil {
			t.Fatal(err)
		}
		startSourceAndSink(t, w1, w2)
		active, standby := activeOf(t, w1, w2)
		waitFor(t, "the holder acked some records", 15*time.Second, func() bool { return active.lastAcked() >= 50 })

		if err := standby.w.PauseContext(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the holder's task PAUSED and both connectors PAUSED", 10*time.Second, func() bool {
			s, _ := taskState(t, active, "src")
			return s == engine.StatePaused && connectorState(t, active, "src") == engine.StatePaused &&
				connectorState(t, standby, "src") == engine.StatePaused
		})
		if s, _ := taskState(t, standby, "src"); s != engine.StateUnassigned {
			t.Fatalf("the standby's task is %s while paused, want UNASSIGNED (it still stands by)", s)
		}
		// The batch in flight when the pause came is still appended and
		// acked; nothing after it.
		waitDrained(t, active, "pause")
		paused := producedEnd(t, w1.b)
		time.Sleep(300 * time.Millisecond) // an observation window: a paused source must not produce meanwhile
		if now := producedEnd(t, w1.b); now != paused || active.lastRead() != active.lastAcked() {
			t.Fatalf("the topic grew from %d to %d records (read up to %d) while the source was paused through the standby", paused, now, active.lastRead())
		}
		ackedAtPause := active.lastAcked()

		if err := active.w.ResumeContext(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "both connectors RUNNING again", 10*time.Second, func() bool {
			return connectorState(t, active, "src") == engine.StateRunning && connectorState(t, standby, "src") == engine.StateRunning
		})
		waitFor(t, "production after the resume", 15*time.Second, func() bool { return active.lastAcked() >= ackedAtPause+100 })
		if err := standby.w.Stop(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the source stopped on both workers", 10*time.Second, func() bool { return allStopped(t, "src", w1, w2) })
		waitLeaseEmpty(t, w1)
		acked := active.lastAcked()
		counts := topicCounts(t, w1.b)
		for i := 1; i <= acked; i++ {
			if counts[i] != 1 {
				t.Fatalf("record %d is in the topic %d times, want once (acked %d, paused at %d)", i, counts[i], acked, ackedAtPause)
			}
		}
		deadline := time.Now().Add(15 * time.Second)
		for len(values(append(w1.received(), w2.received()...))) != len(counts) {
			if time.Now().After(deadline) {
				got := values(append(w1.received(), w2.received()...))
				var missing []int
				for n := range counts {
					if got[fmt.Sprintf(`{"n":%d}`, n)] == 0 {
						missing = append(missing, n)
					}
				}
				slices.Sort(missing)
				st1, _ := w1.w.Status("dst")
				st2, _ := w2.w.Status("dst")
				t.Fatalf("the sink received %d of %d records (w1 %d, w2 %d); missing %v; sink status w1 %+v, w2 %+v",
					len(got), len(counts), len(w1.received()), len(w2.received()), missing, st1, st2)
			}
			time.Sleep(20 * time.Millisecond)
		}
		for _, w := range []*workerUnderTest{w1, w2} {
			if s := connectorState(t, w, "dst"); s != engine.StateRunning {
				t.Fatalf("sink on %s is %s: pausing and stopping src changed it", w.w.ID(), s)
			}
		}
	})
}

// A stop through one worker stops the source everywhere; an offsets PATCH
// through either worker waits until the lease group is empty and goes
// through, and
// the source resumed through the other starts from the patched position.
func TestTargets_StopEverywhereThenPatchOffsets(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		startSourceAndSink(t, w1, w2)
		active, standby := activeOf(t, w1, w2)
		waitFor(t, "the holder acked some records", 15*time.Second, func() bool { return active.lastAcked() >= 50 })

		if err := active.w.Stop(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the source stopped on both workers", 10*time.Second, func() bool { return allStopped(t, "src", w1, w2) })
		const from = 500_000
		patch := []engine.OffsetEntry{{Partition: map[string]any{"pipeline": "p"}, Offset: map[string]any{"n": from}}}
		// The PATCH waits until every worker has left the lease group.
		if err := standby.w.AlterOffsets(ctx, "src", patch); err != nil {
			t.Fatalf("PATCH offsets through the standby after a cluster-wide stop: %v", err)
		}
		for _, w := range []*workerUnderTest{w1, w2} {
			got, err := w.w.Offsets(ctx, "src")
			if err != nil || len(got) != 1 || fmt.Sprint(got[0].Offset) != fmt.Sprint(map[string]any{"n": float64(from)}) {
				t.Fatalf("offsets on %s after the PATCH = %v, %v; want n %d", w.w.ID(), got, err, from)
			}
		}
		if err := active.w.AlterOffsets(ctx, "src", patch); err != nil {
			t.Fatalf("PATCH through the other worker: %v", err)
		}

		stoppedAt := 0 // the lease group is empty: every task has ended
		for n := range topicCounts(t, w1.b) {
			stoppedAt = max(stoppedAt, n)
		}
		if err := active.w.ResumeContext(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the source producing past the patched position", 15*time.Second, func() bool {
			return max(w1.lastAcked(), w2.lastAcked()) >= from+50
		})
		counts := topicCounts(t, w1.b)
		for n, k := range counts {
			if n > stoppedAt && n <= from {
				t.Fatalf("record %d (%d times) is in the topic: the resumed source did not start from the patched position %d (stopped at %d)", n, k, from, stoppedAt)
			}
		}
		if counts[from+1] != 1 {
			t.Fatalf("record %d is in the topic %d times, want once: the first after the patched position", from+1, counts[from+1])
		}
	})
}

// A worker that starts while a connector is stopped cluster-wide starts it
// STOPPED, and so does a worker restarted; a resume through the new worker
// reaches them all.
func TestTargets_NewAndRestartedWorkersKeepTheTarget(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		startSourceAndSink(t, w1, w2)
		activeOf(t, w1, w2)
		if err := w1.w.Stop(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the source stopped on both workers", 10*time.Second, func() bool { return allStopped(t, "src", w1, w2) })

		w3 := newWorker(t, c.backend(t), "w3")
		startSourceAndSink(t, w3)
		if !allStopped(t, "src", w3) {
			st, _ := w3.w.Status("src")
			t.Fatalf("a worker started while src is stopped cluster-wide shows %+v, want STOPPED", st)
		}

		if err := w2.w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		w2 = newWorker(t, c.backend(t), "w2")
		startSourceAndSink(t, w2)
		if !allStopped(t, "src", w2) {
			st, _ := w2.w.Status("src")
			t.Fatalf("a restarted worker shows %+v, want STOPPED as the cluster", st)
		}
		members, err := w1.b.(*Backend).LeaseMembers(ctx, "p", "src")
		if err != nil || len(members) != 0 {
			t.Fatalf("lease members of the stopped source = %v, %v; want none", members, err)
		}
		if got := w2.lastAcked() + w3.lastAcked(); got != 0 {
			t.Fatalf("the new workers' sources acked %d: they ran", got)
		}

		// A pause, made through a worker, also holds across a restart.
		if err := w3.w.PauseContext(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "every worker PAUSED", 10*time.Second, func() bool {
			return connectorState(t, w1, "src") == engine.StatePaused && connectorState(t, w2, "src") == engine.StatePaused
		})
		if err := w1.w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		w1 = newWorker(t, c.backend(t), "w1")
		startSourceAndSink(t, w1)
		if s := connectorState(t, w1, "src"); s != engine.StatePaused {
			t.Fatalf("a restarted worker shows src %s, want PAUSED as the cluster", s)
		}

		if err := w3.w.ResumeContext(ctx, "src"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "one worker running the source again", 15*time.Second, func() bool {
			running := 0
			for _, w := range []*workerUnderTest{w1, w2, w3} {
				if s, _ := taskState(t, w, "src"); s == engine.StateRunning {
					running++
				}
			}
			return running == 1 && max(w1.lastAcked(), w2.lastAcked(), w3.lastAcked()) > 0
		})
	})
}

// A connector created with initial_state STOPPED is stopped for every
// worker: one that loads it afterwards starts it STOPPED.
func TestTargets_InitialStateIsShared(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		if err := w1.w.Start(ctx, leaseSpec(100, 0), engine.StateStopped); err != nil {
			t.Fatal(err)
		}
		w2 := newWorker(t, c.backend(t), "w2")
		if err := w2.w.Start(ctx, leaseSpec(100, 0), ""); err != nil {
			t.Fatal(err)
		}
		if !allStopped(t, "src", w1, w2) {
			t.Fatal("a worker loading a source created STOPPED elsewhere did not start it STOPPED")
		}
	})
}

// The target states' topic is an internal topic of the log, and the
// embedded backend, owned by one worker, shares no target states.
func TestTargets_TopicInternalAndEmbeddedShareNothing(t *testing.T) {
	if !tlog.IsInternalTopic(engine.TargetsTopic) {
		t.Fatalf("%s is not an internal topic of the log", engine.TargetsTopic)
	}
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var b engine.Backend = engine.NewEmbedded(l, quiet())
	if _, ok := b.(engine.TargetSharer); ok {
		t.Fatal("the embedded backend is a TargetSharer; its target states are its one worker's")
	}
}

// The records of the target states' topic say what was set, by which
// worker and when, keyed by pipeline and connector.
func TestTargets_RecordShape(t *testing.T) {
	c := startKfake(t)
	ctx := t.Context()
	w1 := newWorker(t, c.backend(t), "w1")
	if err := w1.w.Start(ctx, leaseSpec(100, 0), ""); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	if err := w1.w.PauseContext(ctx, "src"); err != nil {
		t.Fatal(err)
	}
	var recs []connect.Record
	if err := w1.b.ReadAll(ctx, engine.TargetsTopic, func(r connect.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 {
		t.Fatalf("%s holds %d records, want 1", engine.TargetsTopic, len(recs))
	}
	if got, want := string(recs[0].Key), `["src",{"pipeline":"p"}]`; got != want {
		t.Fatalf("key %s, want %s", got, want)
	}
	var v struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
		TsMs     int64  `json:"ts_ms"`
	}
	if err := json.Unmarshal(recs[0].Value, &v); err != nil {
		t.Fatalf("value %s: %v", recs[0].Value, err)
	}
	if v.State != "PAUSED" || v.WorkerID != "w1" || v.TsMs < before {
		t.Fatalf("value %s; want state PAUSED, worker_id w1, ts_ms >= %d", recs[0].Value, before)
	}
	if err := w1.w.PauseContext(ctx, "nope"); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("pause of an unknown connector = %v, want ErrNotFound", err)
	}
}

// The internal topics exist set up in a way the workers cannot rely on
// (created by hand, or by a cluster's auto-creation with its defaults,
// before any worker created them): a worker refuses to start, as Kafka
// Connect does, and says how to fix the topic. (Tributary's own log, behind
// the listener, refuses to create a _tributary.* topic of several
// partitions in the first place.) _tributary.targets with several
// partitions: the workers write target states with the keyed
// partitioner, so most would land on partitions other than 0, the only one
// they follow, and a pause made through one worker would never reach the
// others. _tributary.offsets with several partitions: the records of one
// name under different pipelines would land on different partitions, which
// have no order among them, and a connector created anew over REST would
// take up the pipeline of whichever the worker happened to read last
// rather than the newest. Either topic with cleanup.policy delete: the log
// would delete the positions and target states once older than its
// retention.
func TestTargets_WorkerRefusesInternalTopicsItCannotRelyOn(t *testing.T) {
	compact := map[string]string{"cleanup.policy": "compact"}
	cases := []struct {
		name       string
		topic      string
		partitions int
		config     map[string]string
		want       []string
	}{
		{"targets with three partitions", engine.TargetsTopic, 3, compact,
			[]string{"topic _tributary.targets has 3 partitions, but it must have exactly one", "--delete --topic _tributary.targets"}},
		{"targets with delete", engine.TargetsTopic, 1, map[string]string{"cleanup.policy": "delete"},
			[]string{"topic _tributary.targets has cleanup.policy=delete, but it must be compact alone", "--entity-name _tributary.targets --add-config cleanup.policy=compact"}},
		{"offsets with delete", engine.OffsetsTopic, 1, map[string]string{"cleanup.policy": "delete"},
			[]string{"topic _tributary.offsets has cleanup.policy=delete, but it must be compact alone", "the sources start over", "tributary topics alter _tributary.offsets --config cleanup.policy=compact"}},
		{"offsets with compact,delete", engine.OffsetsTopic, 1, map[string]string{"cleanup.policy": "compact,delete"},
			[]string{"topic _tributary.offsets has cleanup.policy=compact,delete, but it must be compact alone"}},
		{"offsets with three partitions", engine.OffsetsTopic, 3, compact,
			[]string{"topic _tributary.offsets has 3 partitions, but it must have exactly one", "the newest record of its name",
				"--delete --topic _tributary.offsets", "the sources start over", "docs/kafka.md"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachCluster(t, func(t *testing.T, c *cluster) {
				b := c.backend(t)
				ctx := t.Context()
				err := b.EnsureTopic(ctx, tc.topic, tc.partitions, tc.config)
				if c.log != nil && tc.partitions != 1 {
					// Tributary's own log, which cannot delete the
					// topic later, does not create it.
					if !errors.Is(err, kerr.InvalidPartitions) {
						t.Fatalf("create %s with %d partitions on the listener: %v, want INVALID_PARTITIONS", tc.topic, tc.partitions, err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Logger: quiet(), WorkerID: "w1"})
				if err == nil {
					w.Shutdown(ctx)
					t.Fatalf("a worker started on %s with %d partitions and %v", tc.topic, tc.partitions, tc.config)
				}
				t.Logf("refused: %v", err)
				for _, want := range tc.want {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q\nlacks %q", err, want)
					}
				}
			})
		})
	}
}

package kafkabackend

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// _tributary.targets exists with more than one partition (created by hand
// or by a cluster's auto-creation with its num.partitions, before any
// worker created it): the workers write target states with the keyed
// partitioner, so most land on partitions other than 0, which is the only
// one the workers load and follow. A pause made through one worker then
// never reaches the other, which keeps running the connector. (Kafka
// Connect refuses to start on a config topic of more than one partition.)
func TestReviewKB_TargetsTopicWithSeveralPartitionsDiverges(t *testing.T) {
	c := startListener(t)
	ctx := t.Context()
	if err := c.backend(t).EnsureTopic(ctx, engine.TargetsTopic, 3, map[string]string{"cleanup.policy": "compact"}); err != nil {
		t.Fatal(err)
	}
	probe, err := engine.NewWorker(ctx, engine.Options{Backend: c.backend(t), Logger: quiet(), WorkerID: "probe"})
	if err != nil {
		t.Logf("a worker refuses to start: %v (as Kafka Connect does)", err)
		return
	}
	probe.Shutdown(ctx)
	w1 := newWorker(t, c.backend(t), "w1")
	w2 := newWorker(t, c.backend(t), "w2")
	sink := engine.ConnectorSpec{Pipeline: "p", Name: "sink", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}
	for _, w := range []*workerUnderTest{w1, w2} {
		if err := w.w.Start(ctx, sink, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := w2.w.PauseContext(ctx, "sink"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) && connectorState(t, w1, "sink") != engine.StatePaused {
		time.Sleep(50 * time.Millisecond)
	}
	if s1, s2 := connectorState(t, w1, "sink"), connectorState(t, w2, "sink"); s1 != s2 {
		t.Fatalf("after a pause through w2, w2 shows the connector %s and w1 %s: the target state diverged (it was written to a partition of %s no worker follows)", s2, s1, engine.TargetsTopic)
	}
}

// The sink's consumer loses its group session, as after a GC pause or a
// SIGSTOP longer than the session timeout: the coordinator answers its
// next heartbeat UNKNOWN_MEMBER_ID (kfake, told to answer so once). kgo
// handles this on its own: it calls OnPartitionsLost, rejoins and resumes
// from the committed offsets, and hands Poll an informational
// ErrGroupSession ("not worth restarting the client for"). Poll returns it
// as a fetch error, so the sink task FAILS (and the runner restarts it,
// leaving and joining the group again), where a Kafka Connect sink task
// carries on.
func TestReviewKB_SinkTaskFailsOnALostGroupSession(t *testing.T) {
	c := startKfake(t)
	ctx := t.Context()
	wt := newWorker(t, c.backend(t), "w1")
	produceValues(t, wt.b, "numbers", `"a"`, `"b"`, `"c"`)
	if err := wt.w.Start(ctx, engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "mem", Topics: []string{"numbers"}}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the three records at the sink", 10*time.Second, func() bool { return len(wt.received()) == 3 })
	var expired atomic.Bool
	c.fake.ControlKey(int16(kmsg.Heartbeat), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if expired.Swap(true) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil, true
	})
	start := time.Now()
	var failed string
	for time.Since(start) < 4*time.Second && failed == "" {
		st, err := wt.w.Status("dst")
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Tasks) == 1 && st.Tasks[0].State == engine.StateFailed {
			failed = st.Tasks[0].Trace
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !expired.Load() {
		t.Fatal("no heartbeat was answered UNKNOWN_MEMBER_ID")
	}
	if failed != "" {
		t.Fatalf("the sink task FAILED on a lost group session kgo rejoins by itself: %s", failed)
	}
}

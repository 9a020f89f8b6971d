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

package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// A sink whose topics regex matches its own dead-letter topic does not read
// it: one bad record makes one dead letter, not a loop of them.
func TestWorker_TopicsRegexSkipsOwnDeadLetterTopic(t *testing.T) {
	h := newHarness(t, t.TempDir())
	ctx := t.Context()
	h.worker.Registry().MustRegister(connect.Connector{Name: "hook", Kind: connect.KindSink, Version: "test",
		NewSink: func() connect.Sink { return &retryingSink{busy: new(atomic.Int32), tries: 1} }})
	for _, topic := range []string{"in", "dlq.rx"} {
		if err := h.log.CreateTopic(topic, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.log.Append(ctx, "in", 0, []tlog.Record{{Value: []byte("not json")}}); err != nil {
		t.Fatal(err)
	}
	spec := ConnectorSpec{Name: "dst", Kind: connect.KindSink, Connector: "hook", TopicsRegex: ".*",
		Errors: ErrorPolicy{Tolerance: "all", Retries: 0, BackoffInitial: time.Millisecond, BackoffMax: time.Millisecond, DeadLetterTopic: "dlq.rx"}}
	if err := h.worker.Start(ctx, spec, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a dead letter", func() bool {
		_, end, err := h.log.Offsets("dlq.rx", 0)
		return err == nil && end >= 1
	})
	time.Sleep(300 * time.Millisecond) // a sink reading its DLQ makes thousands by now
	if _, end, _ := h.log.Offsets("dlq.rx", 0); end != 1 {
		t.Fatalf("dead-letter topic holds %d records for one bad record", end)
	}
}

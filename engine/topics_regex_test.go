package engine

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/syncbuf"
	"github.com/tributary-io/tributary/pipelines"
)

// gatedRoute is a route transform for tests: it sends each record to
// events.<n mod 2> once gate is closed, and holds the source back until
// then, so that the topics appear only after the sink started.
type gatedRoute struct{ gate <-chan struct{} }

func (g gatedRoute) Apply(r connect.Record) ([]connect.Record, error) {
	<-g.gate
	var v struct{ N int }
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return nil, err
	}
	r.Topic = fmt.Sprintf("events.%d", v.N%2)
	return []connect.Record{r}, nil
}

// A sink whose topics regex matches no topic yet runs with nothing
// assigned, as a Kafka Connect sink with topics.regex does, and reads the
// topics a source's route creates later: no failure, no restart.
func TestWorker_TopicsRegexPicksUpTopicsCreatedLater(t *testing.T) {
	h := newHarness(t, t.TempDir())
	var logs syncbuf.Buffer
	h.worker.logger = slog.New(slog.NewTextHandler(&logs, nil))
	gate := make(chan struct{})
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	defer release()
	h.worker.opts.Transforms = func(typ string, cfg map[string]string) (Transformer, error) {
		return gatedRoute{gate: gate}, nil
	}
	p := &pipelines.Pipeline{Name: "fanout",
		Sources: []pipelines.Source{{Name: "src", Connector: "count", Topic: "raw", Tasks: 1, Config: map[string]string{"max": "20"},
			Transforms: []pipelines.Transform{{Type: "route"}}}},
		Sinks: []pipelines.Sink{{Name: "out", Connector: "mem", TopicsRegex: `events\..*`, Tasks: 1}},
	}
	if err := h.worker.StartPipeline(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the sink task RUNNING while no topic matches", func() bool {
		st, err := h.worker.Status("out")
		return err == nil && len(st.Tasks) == 1 && st.Tasks[0].State == StateRunning
	})
	if names := h.log.ListTopics(); strings.Contains(strings.Join(names, ","), "events.") {
		t.Fatalf("topics %v exist before the source routed a record", names)
	}
	release()
	waitFor(t, "20 records from both routed topics", func() bool { return len(h.received()) == 20 })
	seen := map[string]int{}
	for _, r := range h.received() {
		seen[r.Topic]++
	}
	if seen["events.0"] != 10 || seen["events.1"] != 10 {
		t.Errorf("records by topic %v, want 10 each of events.0 and events.1", seen)
	}
	st, err := h.worker.Status("out")
	if err != nil || st.Tasks[0].State != StateRunning {
		t.Errorf("sink status %+v (%v), want its task RUNNING", st, err)
	}
	if s := logs.String(); strings.Contains(s, "level=ERROR") || strings.Contains(s, "no topic matches") {
		t.Errorf("worker log has an error:\n%s", s)
	}
}

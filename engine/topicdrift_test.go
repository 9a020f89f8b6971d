package engine

import (
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/syncbuf"
	"github.com/tributary-io/tributary/pipelines"
)

func TestTopicDrift(t *testing.T) {
	got := TopicInfo{Partitions: 3, Config: map[string]string{"cleanup.policy": "delete", "retention.ms": "604800000"}}
	tests := []struct {
		name       string
		partitions int
		config     map[string]string
		want       []string // a fragment of each difference, in order
	}{
		{"same", 3, map[string]string{"cleanup.policy": "delete", "retention.ms": "604800000"}, nil},
		{"not declared", 0, nil, nil},
		{"more partitions", 6, nil, []string{"has 3 partitions, but the pipeline declares 6; add them with `tributary topics alter orders --partitions 6`"}},
		{"fewer partitions", 1, nil, []string{"has 3 partitions, but the pipeline declares 1; partitions cannot be removed"}},
		{"compact", 3, map[string]string{"cleanup.policy": "compact"}, []string{"has cleanup.policy=delete, but the pipeline declares cleanup.policy=compact; change it with `tributary topics alter orders --config cleanup.policy=compact`"}},
		{"policy as a set", 3, map[string]string{"cleanup.policy": " delete "}, nil},
		{"unknown config", 3, map[string]string{"min.insync.replicas": "2"}, nil},
		{"both", 6, map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}, []string{"declares 6", "cleanup.policy=compact", "retention.ms=1000"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := topicDrift("orders", tt.partitions, tt.config, got)
			if len(d) != len(tt.want) {
				t.Fatalf("differences %q, want %d", d, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(d[i], w) {
					t.Errorf("difference %d = %q, want it to contain %q", i, d[i], w)
				}
			}
		})
	}
	if !sameConfig("cleanup.policy", "compact,delete", "delete, compact") {
		t.Error(`cleanup.policy "compact,delete" differs from "delete, compact"`)
	}
}

// A pipeline that declares an existing topic differently runs on the
// topic as it is, and says so: a warning in the log and in the status of
// its connectors.
func TestWorker_StartPipeline_WarnsWhenTopicDiffers(t *testing.T) {
	h := newHarness(t, t.TempDir())
	var logs syncbuf.Buffer
	h.worker.logger = slog.New(slog.NewTextHandler(&logs, nil))
	ctx := t.Context()
	if err := h.log.CreateTopic("orders", 3, map[string]string{"cleanup.policy": "delete"}); err != nil {
		t.Fatal(err)
	}
	p := &pipelines.Pipeline{Name: "shop",
		Topics: []pipelines.Topic{
			{Name: "orders", Partitions: 6, Config: map[string]string{"cleanup.policy": "compact"}},
			{Name: "fresh", Partitions: 2, Config: map[string]string{"cleanup.policy": "compact"}},
		},
		Sources: []pipelines.Source{{Name: "src", Connector: "count", Topic: "orders", Tasks: 1, Config: map[string]string{"max": "10"}}},
	}
	if err := h.worker.StartPipeline(ctx, p); err != nil {
		t.Fatal(err)
	}
	if n, err := h.log.Partitions("orders"); err != nil || n != 3 {
		t.Fatalf("orders has %d partitions (%v), want 3: an existing topic is left as it is", n, err)
	}
	for _, want := range []string{"has 3 partitions, but the pipeline declares 6", "tributary topics alter orders --partitions 6",
		"has cleanup.policy=delete, but the pipeline declares cleanup.policy=compact", "tributary topics alter orders --config cleanup.policy=compact"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log does not say %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "topic fresh") {
		t.Errorf("the topic created as declared got a warning:\n%s", logs.String())
	}
	st, err := h.worker.Status("src")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].Report == nil {
		t.Fatalf("status %+v: no report with the topic's differences", st)
	}
	w := st.Tasks[0].Report.Warnings
	if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "declares 6") }) ||
		!slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "cleanup.policy=compact") }) {
		t.Errorf("status warnings %q, want the partitions and cleanup.policy differences", w)
	}
	// The count source's own report is kept beside them.
	waitFor(t, "the source's own report", func() bool {
		st, _ := h.worker.Status("src")
		return st.Tasks[0].Report != nil && st.Tasks[0].Report.Phase == "counting" && len(st.Tasks[0].Report.Warnings) == 2
	})
}

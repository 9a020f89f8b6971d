package kafkabackend

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/pipelines"
)

func TestBackend_DescribeTopic(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		b := c.backend(t)
		ctx := t.Context()
		if err := b.EnsureTopic(ctx, "users", 4, map[string]string{"cleanup.policy": "compact", "retention.ms": "3600000"}); err != nil {
			t.Fatal(err)
		}
		info, err := b.DescribeTopic(ctx, "users")
		if err != nil {
			t.Fatal(err)
		}
		if info.Partitions != 4 {
			t.Errorf("partitions = %d, want 4", info.Partitions)
		}
		for k, want := range map[string]string{"cleanup.policy": "compact", "retention.ms": "3600000"} {
			if got, ok := info.Config[k]; !ok || got != want {
				t.Errorf("config %s = %q (reported %v), want %q; all: %v", k, got, ok, want, info.Config)
			}
		}
		if _, err := b.DescribeTopic(ctx, "missing"); !errors.Is(err, kerr.UnknownTopicOrPartition) {
			t.Errorf("DescribeTopic(missing) = %v, want UnknownTopicOrPartition", err)
		}
	})
}

// A pipeline that declares an existing topic differently gets the
// differences in its connectors' status, on every backend: the worker
// compares through engine.TopicDescriber.
func TestPipeline_WarnsWhenDeclaredTopicDiffers(t *testing.T) {
	forEachBackend(t, func(t *testing.T, st *suiteTarget) {
		wt := newWorker(t, st.newBackend(t), "w1")
		ctx := t.Context()
		if err := wt.b.EnsureTopic(ctx, "orders", 3, map[string]string{"cleanup.policy": "delete"}); err != nil {
			t.Fatal(err)
		}
		p := &pipelines.Pipeline{Name: "shop",
			Topics:  []pipelines.Topic{{Name: "orders", Partitions: 6, Config: map[string]string{"cleanup.policy": "compact"}}},
			Sources: []pipelines.Source{{Name: "src", Connector: "count", Topic: "orders", Tasks: 1, Config: map[string]string{"max": "10"}}},
		}
		if err := wt.w.StartPipeline(ctx, p); err != nil {
			t.Fatal(err)
		}
		s, err := wt.w.Status("src")
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Tasks) != 1 || s.Tasks[0].Report == nil {
			t.Fatalf("status %+v: no report with the topic's differences", s)
		}
		w := s.Tasks[0].Report.Warnings
		if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, "has 3 partitions, but the pipeline declares 6") }) ||
			!slices.ContainsFunc(w, func(s string) bool {
				return strings.Contains(s, "has cleanup.policy=delete, but the pipeline declares cleanup.policy=compact")
			}) {
			t.Errorf("status warnings %q, want the partitions and cleanup.policy differences", w)
		}
	})
}

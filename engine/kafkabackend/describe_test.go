package kafkabackend

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
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

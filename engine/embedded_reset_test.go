package engine

import (
	"io"
	"log/slog"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
)

// TestEmbeddedConsumer_PositionPastEndResetsToEarliest: a group whose
// committed offset is past the end of its partition (the topic was deleted
// and created again while a sink still committed its old position) reads
// the partition from its start, as auto.offset.reset=earliest does, instead
// of waiting for the new topic to grow past the old position and skipping
// everything before it.
func TestEmbeddedConsumer_PositionPastEndResetsToEarliest(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := t.Context()
	if err := l.CreateTopic("web.tracking", 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := l.Groups().Commit(ctx, "sink", []tlog.OffsetCommit{{Topic: "web.tracking", Partition: 0, Offset: 296}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, "web.tracking", 0, []tlog.Record{{Value: []byte("new-0")}, {Value: []byte("new-1")}}); err != nil {
		t.Fatal(err)
	}
	c, err := NewEmbedded(l, logger).Consumer(ctx, ConsumerSpec{Group: "sink", Topics: []string{"web.tracking"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(5 * time.Second)
	var got []string
	for len(got) < 2 && time.Now().Before(deadline) {
		recs, err := c.Poll(ctx, 100*time.Millisecond)
		if err != nil {
			continue // the fetcher reports the out-of-range read before the fix
		}
		for _, r := range recs {
			got = append(got, string(r.Value))
		}
	}
	if len(got) != 2 || got[0] != "new-0" || got[1] != "new-1" {
		t.Fatalf("consumer read %q, want the new topic's records from its start", got)
	}
}

package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// appendAfterFailure is a produceClient on which an append to partition
// slow is under way (started, not yet written) when an append to another
// partition fails, and is written only after that failure: as when one
// partition's fsync is slower than a refusal on another.
type appendAfterFailure struct {
	*embeddedClient
	slow    int32
	started chan struct{}
	once    sync.Once
	failed  chan struct{}
}

func (c *appendAfterFailure) Append(ctx context.Context, topic string, partition int32, recs []tlog.Record) (int64, error) {
	if partition == c.slow {
		close(c.started)
		<-c.failed
		return c.embeddedClient.Append(ctx, topic, partition, recs)
	}
	<-c.started
	off, err := c.embeddedClient.Append(ctx, topic, partition, recs)
	c.once.Do(func() { close(c.failed) })
	return off, err
}

// TestProduce_CountIsExactWhenAPartitionFails: a record refused on one
// partition (no key on a compacted topic) must not make the producer
// abandon another partition's append that was already under way: that
// record gets written, so it must be counted, or a retry duplicates it.
func TestProduce_CountIsExactWhenAPartitionFails(t *testing.T) {
	dir := t.TempDir()
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { l.Close() }()
	if err := l.CreateTopic("c2", 6, map[string]string{tlog.ConfigCleanupPolicy: "compact"}); err != nil {
		t.Fatal(err)
	}
	keyed := tlog.KeyPartition([]byte("foobar"), 6)
	c := &appendAfterFailure{embeddedClient: &embeddedClient{l: l, autoPartitions: 1}, slow: keyed, started: make(chan struct{}), failed: make(chan struct{})}
	p, err := newProducer(t.Context(), c, "c2", produceOptions{keyDelim: ":", partition: -1, appendBytes: 8 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.sticky = (keyed + 1) % 6 // the keyless record goes elsewhere
	runErr := p.run(strings.NewReader("foobar:x\nnokey\n"))
	if runErr == nil {
		t.Fatal("run succeeded with a keyless record on a compacted topic")
	}
	// What the log holds is what a restart finds.
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if l, err = tlog.Open(tlog.Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}); err != nil {
		t.Fatal(err)
	}
	var stored int64
	for part := range int32(6) {
		_, end, err := l.Offsets("c2", part)
		if err != nil {
			t.Fatal(err)
		}
		stored += end
	}
	if got := p.acked.Load(); got != stored {
		t.Fatalf("acknowledged %d records, but the topic holds %d (error: %v)", got, stored, runErr)
	}
	if stored != 1 {
		t.Fatalf("the topic holds %d records, want foobar:x", stored)
	}
}

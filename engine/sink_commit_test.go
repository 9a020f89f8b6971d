package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// commitRecorder is a Consumer that records the commits it is given.
type commitRecorder struct {
	mu      sync.Mutex
	commits [][]PartitionOffset
	changed chan struct{} // gets a value after every commit
}

func newCommitRecorder() *commitRecorder {
	return &commitRecorder{changed: make(chan struct{}, 1000)}
}

func (c *commitRecorder) Poll(ctx context.Context, _ time.Duration) ([]connect.Record, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func (c *commitRecorder) Commit(_ context.Context, offs []PartitionOffset) error {
	c.mu.Lock()
	c.commits = append(c.commits, append([]PartitionOffset(nil), offs...))
	c.mu.Unlock()
	c.changed <- struct{}{}
	return nil
}

func (c *commitRecorder) Close() error { return nil }

func (c *commitRecorder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.commits)
}

func (c *commitRecorder) last() []PartitionOffset {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.commits[len(c.commits)-1]
}

// runCommitter runs commitSinkOffsets with the timing given; stop closes
// its input and returns its error.
func runCommitter(t *testing.T, c *commitRecorder, timing commitTiming) (chan<- []PartitionOffset, func() error) {
	t.Helper()
	r := &runner{spec: ConnectorSpec{Name: "s"}}
	in := make(chan []PartitionOffset)
	done := make(chan error, 1)
	go func() { done <- r.commitSinkOffsets(context.Background(), c, in, func() {}, timing) }()
	return in, func() error { close(in); return <-done }
}

// A burst of batches followed by quiet is committed after the idle delay,
// not the (here endless) interval: the group catches up when the sink does.
func TestCommitSinkOffsets_CommitsWhenIdle(t *testing.T) {
	c := newCommitRecorder()
	in, stop := runCommitter(t, c, commitTiming{interval: time.Hour, idle: 5 * time.Millisecond})
	in <- []PartitionOffset{{Topic: "t", Partition: 0, Offset: 1}} // the first batch commits at once
	<-c.changed
	for off := int64(2); off <= 50; off++ {
		in <- []PartitionOffset{{Topic: "t", Partition: 0, Offset: off}, {Topic: "t", Partition: 1, Offset: off * 10}}
	}
	select {
	case <-c.changed:
	case <-time.After(30 * time.Second):
		t.Fatal("no commit after the burst: the sink waits for the interval")
	}
	got := map[int32]int64{}
	for _, o := range c.last() {
		got[o.Partition] = o.Offset
	}
	if got[0] != 50 || got[1] != 500 {
		t.Fatalf("commit after the burst = %v, want partition 0 at 50 and 1 at 500", c.last())
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := c.count(); n < 2 || n > 50 {
		t.Fatalf("%d commits, want the first one, the idle ones, nothing for an empty close", n)
	}
}

// Batches that keep coming are merged into one commit per interval, however
// short the idle delay: an idle commit needs a pause.
func TestCommitSinkOffsets_MergesWhileBatchesKeepComing(t *testing.T) {
	c := newCommitRecorder()
	in, stop := runCommitter(t, c, commitTiming{interval: time.Hour, idle: time.Hour})
	for off := int64(1); off <= 1000; off++ {
		in <- []PartitionOffset{{Topic: "t", Partition: 0, Offset: off}}
	}
	if n := c.count(); n != 1 {
		t.Fatalf("%d commits during the stream, want 1 (the first batch; the rest wait for the interval or a pause)", n)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n, last := c.count(), c.last(); n != 2 || last[0].Offset != 1000 {
		t.Fatalf("after close: %d commits, last %v; want 2, the last at offset 1000", n, last)
	}
}

// Batches that come at a steady pace, further apart than the least idle
// wait (a sink whose writes take a while), are not committed one by one:
// the idle wait stretches to twice the gap.
func TestCommitSinkOffsets_IdleWaitFollowsThePace(t *testing.T) {
	c := newCommitRecorder()
	in, stop := runCommitter(t, c, commitTiming{interval: time.Hour, idle: time.Millisecond})
	const batches = 20
	for off := int64(1); off <= batches; off++ {
		in <- []PartitionOffset{{Topic: "t", Partition: 0, Offset: off}}
		time.Sleep(30 * time.Millisecond)
	}
	// Without the stretch, each 30 ms gap would end in a commit (~20);
	// a loaded machine may stretch a sleep past twice the gap now and then.
	if n := c.count(); n > 5 {
		t.Fatalf("%d commits for %d batches 30 ms apart, want the first and hardly any more", n, batches)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if last := c.last(); last[0].Offset != batches {
		t.Fatalf("last commit %v, want offset %d", last, batches)
	}
}

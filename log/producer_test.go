package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// producerClient appends batches of one record as an idempotent producer,
// one sequence after the other.
type producerClient struct {
	t     *testing.T
	topic string
	id    int64
	epoch int16
	seq   int32 // of the next batch
}

func newProducerClient(t *testing.T, l *Log, topic string) *producerClient {
	t.Helper()
	id, epoch, err := l.InitProducerID()
	if err != nil {
		t.Fatal(err)
	}
	return &producerClient{t: t, topic: topic, id: id, epoch: epoch}
}

func (c *producerClient) info(seq int32) ProducerInfo {
	return ProducerInfo{ID: c.id, Epoch: c.epoch, Sequence: seq}
}

// send appends the next batch.
func (c *producerClient) send(l *Log) int64 {
	c.t.Helper()
	base, err := l.AppendIdempotent(c.t.Context(), c.topic, 0, []Record{{Value: []byte(fmt.Sprint(c.seq))}}, c.info(c.seq))
	if err != nil {
		c.t.Fatalf("producer %d, sequence %d: %v", c.id, c.seq, err)
	}
	c.seq++
	return base
}

// known reports whether the partition has state for the producer: a batch
// with a sequence gap is refused (and not appended) only then; for a
// producer it does not know, the gap is appended (KIP-360).
func (c *producerClient) known(l *Log) bool {
	c.t.Helper()
	gap := c.seq + 5
	_, err := l.AppendIdempotent(c.t.Context(), c.topic, 0, []Record{{Value: []byte("gap")}}, c.info(gap))
	switch {
	case errors.Is(err, ErrOutOfOrderSequence):
		return true
	case err != nil:
		c.t.Fatalf("producer %d, sequence %d: %v", c.id, gap, err)
	}
	c.seq = gap + 1
	return false
}

// TestIdempotentProducer_ExpiresWhenIdle checks Kafka's
// producer.id.expiration.ms (default one day): a producer that appended
// nothing for that long is forgotten by the next check, so its next batch
// is taken at any sequence; one that appended within it is kept; and the
// snapshot written afterwards no longer holds the forgotten one.
func TestIdempotentProducer_ExpiresWhenIdle(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	l := openTestLog(t, dir, func(o *Options) {
		o.Now = clock.now
		o.RetentionCheckInterval, o.CleanerInterval, o.ProducerIDExpirationCheckInterval = time.Hour, time.Hour, time.Hour
	})
	defer l.Close()
	if err := l.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	idle, active := newProducerClient(t, l, "idem"), newProducerClient(t, l, "idem")
	idle.send(l)
	active.send(l)
	clock.advance(12 * time.Hour)
	active.send(l)

	clock.advance(12*time.Hour - time.Millisecond) // idle for a day less 1 ms
	l.expireProducers()
	if !idle.known(l) {
		t.Fatal("a producer idle for less than producer.id.expiration.ms was forgotten")
	}
	clock.advance(time.Millisecond) // idle for a day
	l.expireProducers()
	if idle.known(l) {
		t.Fatal("a producer idle for producer.id.expiration.ms is still known")
	}
	if !active.known(l) {
		t.Fatal("a producer that appended 12 hours ago was forgotten")
	}
	if got := l.Metrics().ExpiredProducers.Load(); got != 1 {
		t.Fatalf("ExpiredProducers = %d, want 1", got)
	}
	// The forgotten producer is tracked again from the batch it sent.
	if !idle.known(l) {
		t.Fatal("a forgotten producer that sent again is not tracked")
	}

	// The snapshot the close writes holds no producer that expired: expire
	// them all, and check the file itself (an open would also drop them).
	clock.advance(24 * time.Hour)
	l.expireProducers()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	state, _ := readProducerSnapshot(partitionDir(dir, "idem", 0), clock.now())
	if len(state.m) != 0 {
		t.Fatalf("the snapshot holds %d expired producers", len(state.m))
	}
}

// TestIdempotentProducer_ExpirationAcrossReopen checks that the time of a
// producer's last append is kept in the snapshot: reopening does not make
// an idle producer young again, and one that expired while the log was
// closed is forgotten on open.
func TestIdempotentProducer_ExpirationAcrossReopen(t *testing.T) {
	dir := t.TempDir()
	clock := newTestClock()
	open := func() *Log {
		return openTestLog(t, dir, func(o *Options) {
			o.Now = clock.now
			o.RetentionCheckInterval, o.CleanerInterval, o.ProducerIDExpirationCheckInterval = time.Hour, time.Hour, time.Hour
			o.ProducerIDExpiration = time.Hour
		})
	}
	l := open()
	if err := l.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	a, b := newProducerClient(t, l, "idem"), newProducerClient(t, l, "idem")
	a.send(l)
	clock.advance(30 * time.Minute)
	b.send(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	clock.advance(45 * time.Minute) // a idle 75 minutes, b 45
	l = open()
	defer func() { l.Close() }()
	if a.known(l) {
		t.Fatal("a producer that expired while the log was closed is known after the open")
	}
	if !b.known(l) {
		t.Fatal("a producer idle for less than the expiration was forgotten on open")
	}
	l.Close()

	clock.advance(14 * time.Minute) // b idle 59 minutes (its gap batches were refused)
	l = open()
	l.expireProducers()
	if !b.known(l) {
		t.Fatal("a producer idle for 59 minutes of 60 was forgotten")
	}
	clock.advance(time.Minute)
	l.expireProducers()
	if b.known(l) {
		t.Fatal("the open reset the time of the producer's last append: it did not expire")
	}
}

// TestIdempotentProducer_ExpirationRunsInBackground checks that the log
// checks for expired producers by itself, every
// ProducerIDExpirationCheckInterval.
func TestIdempotentProducer_ExpirationRunsInBackground(t *testing.T) {
	clock := newTestClock()
	l := openTestLog(t, t.TempDir(), func(o *Options) {
		o.Now = clock.now
		o.RetentionCheckInterval, o.CleanerInterval = time.Hour, time.Hour
		o.ProducerIDExpirationCheckInterval = time.Millisecond
	})
	defer l.Close()
	if err := l.CreateTopic("idem", 1, nil); err != nil {
		t.Fatal(err)
	}
	newProducerClient(t, l, "idem").send(l)
	clock.advance(24 * time.Hour)
	deadline := time.Now().Add(10 * time.Second)
	for l.Metrics().ExpiredProducers.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no background check expired the idle producer within 10 s")
		}
		time.Sleep(time.Millisecond)
	}
}

// TestIdempotentProducer_RetentionKeepsState checks that retention deleting
// every batch of a producer leaves its state alone, as Kafka does since 2.4
// (KIP-360, KAFKA-7190): only producer.id.expiration.ms removes it, so a
// producer writing slowly to a topic with a short retention keeps its
// sequence checks.
func TestIdempotentProducer_RetentionKeepsState(t *testing.T) {
	clock := newTestClock()
	l := openTestLog(t, t.TempDir(), func(o *Options) {
		o.Now = clock.now
		o.RetentionCheckInterval, o.CleanerInterval, o.ProducerIDExpirationCheckInterval = time.Hour, time.Hour, time.Hour
	})
	defer l.Close()
	if err := l.CreateTopic("idem", 1, map[string]string{ConfigRetentionMs: "60000"}); err != nil {
		t.Fatal(err)
	}
	c := newProducerClient(t, l, "idem")
	c.send(l)
	c.send(l)
	clock.advance(2 * time.Minute)
	l.EnforceRetention()
	l.expireProducers()
	if start, end, _ := l.Offsets("idem", 0); start != 2 || end != 2 {
		t.Fatalf("offsets %d..%d after retention, want 2..2 (every batch deleted)", start, end)
	}
	if !c.known(l) {
		t.Fatal("retention deleting a producer's batches dropped its state")
	}
	if base := c.send(l); base != 2 {
		t.Fatalf("the next batch in sequence went to offset %d, want 2", base)
	}
}

// TestProducerSnapshot_WithoutLastAppend checks that a snapshot written
// before producers expired (no last_append_ms) keeps its producers for a
// whole ProducerIDExpiration from the open, instead of dropping them all as
// idle since 1970.
func TestProducerSnapshot_WithoutLastAppend(t *testing.T) {
	dir := t.TempDir()
	old := `{"offset":3,"producers":{"7":{"epoch":0,"batches":[{"first_seq":0,"last_seq":2,"base_offset":0,"last_offset":2}]}}}`
	if err := writeFileAtomic(filepath.Join(dir, producerSnapshotFile), []byte(old)); err != nil {
		t.Fatal(err)
	}
	now := time.UnixMilli(1_700_000_000_000)
	state, from := readProducerSnapshot(dir, now)
	if from != 3 || len(state.m) != 1 || state.m[7] == nil {
		t.Fatalf("read the snapshot as %d producers from %d, want producer 7 from 3", len(state.m), from)
	}
	if n := state.expire(now.Add(DefaultProducerIDExpiration-time.Millisecond), DefaultProducerIDExpiration); n != 0 {
		t.Fatalf("%d producers of an old snapshot expired before a day from the open", n)
	}
	if n := state.expire(now.Add(DefaultProducerIDExpiration), DefaultProducerIDExpiration); n != 1 {
		t.Fatalf("%d producers of an old snapshot expired a day after the open, want 1", n)
	}
}

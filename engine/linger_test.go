package engine

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// lingerTopic is the topic of lingerSource's records.
const lingerTopic = "lin"

// gatedBackend is the embedded backend whose appends to lingerTopic are
// counted and do not become durable (their wait blocks) until gate is
// closed: the first append stays in flight while the source reads on.
type gatedBackend struct {
	Backend
	gate  chan struct{}
	once  sync.Once
	first chan struct{} // closed at the first append to lingerTopic
	delay time.Duration // each append becomes durable this long after the gate opens, at the earliest

	mu      sync.Mutex
	appends []time.Time // when each append to lingerTopic was made
}

func (b *gatedBackend) Append(ctx context.Context, recs []connect.Record) (func(context.Context) error, error) {
	wait, err := b.Backend.Append(ctx, recs)
	if err != nil || len(recs) == 0 || recs[0].Topic != lingerTopic {
		return wait, err
	}
	b.mu.Lock()
	b.appends = append(b.appends, time.Now())
	if len(b.appends) == 1 {
		close(b.first)
	}
	b.mu.Unlock()
	return func(ctx context.Context) error {
		select {
		case <-b.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
		if b.delay > 0 {
			select {
			case <-time.After(b.delay):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return wait(ctx)
	}, nil
}

// open lets the appends become durable.
func (b *gatedBackend) open() { b.once.Do(func() { close(b.gate) }) }

func (b *gatedBackend) appended() []time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Time(nil), b.appends...)
}

// lingerSource reads one record per Read, as fast as it is asked, until it
// has read n; it notes when it read each. Reads after the first wait until
// after is closed, so that they come while the first append is in flight.
type lingerSource struct {
	n     int
	after <-chan struct{}
	pause time.Duration // before each read

	mu    sync.Mutex
	reads []time.Time
}

func (s *lingerSource) Open(context.Context, connect.Config) error  { return nil }
func (s *lingerSource) Ack(context.Context, connect.Position) error { return nil }
func (s *lingerSource) Close(context.Context) error                 { return nil }

func (s *lingerSource) Read(ctx context.Context) ([]connect.Record, error) {
	if len(s.readTimes()) > 0 {
		select {
		case <-s.after:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if s.pause > 0 {
		select {
		case <-time.After(s.pause):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.mu.Lock()
	i := len(s.reads)
	if i >= s.n {
		s.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.reads = append(s.reads, time.Now())
	s.mu.Unlock()
	v := strconv.Itoa(i + 1)
	return []connect.Record{{Value: []byte(v), Position: connect.Position(`{"n":` + v + `}`)}}, nil
}

func (s *lingerSource) readTimes() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.reads...)
}

// startLinger runs src as a source with the given linger on a real
// embedded log whose appends wait for the returned backend's gate, and
// then for delay.
func startLinger(t *testing.T, src *lingerSource, linger, delay time.Duration) *gatedBackend {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b := &gatedBackend{Backend: NewEmbedded(l, logger), gate: make(chan struct{}), first: make(chan struct{}), delay: delay}
	src.after = b.first
	ctx := t.Context()
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "linsrc", Kind: connect.KindSource, Version: "test", NewSource: func() connect.Source { return src }})
	w, err := NewWorker(ctx, Options{Backend: b, Connectors: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Error(err)
		}
	})
	t.Cleanup(b.open) // runs before Shutdown
	if err := w.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "linsrc", Topic: lingerTopic, Linger: linger}, ""); err != nil {
		t.Fatal(err)
	}
	return b
}

// countRecords counts the records of lingerTopic in the log.
func countRecords(t *testing.T, b Backend) int {
	t.Helper()
	n := 0
	if err := b.ReadAll(t.Context(), lingerTopic, func(connect.Record) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSource_LingerAppendsTogether holds the first append in flight while
// the source reads 40 more records: with a linger they are held and
// appended together once it is durable. Without one each append carries
// only the reads waiting for the appender when it takes one (7 appends
// when this test was written).
func TestSource_LingerAppendsTogether(t *testing.T) {
	const n = 41
	src := &lingerSource{n: n}
	b := startLinger(t, src, time.Minute, 0) // ends when the append in flight is durable
	waitFor(t, "the source to read every record", func() bool { return len(src.readTimes()) == n })
	time.Sleep(50 * time.Millisecond) // let the appender take what the reader handed over
	b.open()
	waitFor(t, "every record in the log", func() bool { return countRecords(t, b) == n })
	// The first record alone, then the rest; a record still on its way
	// from the reader when the first became durable may make a third.
	if got := len(b.appended()); got > 3 {
		t.Errorf("%d appends of %d records with a linger, want at most 3 (the first, then the rest together)", got, n)
	}
}

// TestSource_LingerEndsAfterItsTime keeps the first append in flight: a
// record read meanwhile is held for the linger, no longer than about that,
// and then appended although the first is not durable yet.
func TestSource_LingerEndsAfterItsTime(t *testing.T) {
	const linger = 200 * time.Millisecond
	src := &lingerSource{n: 2}
	b := startLinger(t, src, linger, 0)
	waitFor(t, "the second append", func() bool { return len(b.appended()) == 2 })
	reads, appends := src.readTimes(), b.appended()
	if held := appends[1].Sub(reads[1]); held < linger {
		t.Errorf("the record read while an append was in flight was appended %v after it was read, before the linger of %v", held, linger)
	}
	// waitFor's 10 s bound the generous upper bound: the linger ended
	// while the first append was still in flight (gate closed only now).
	b.open()
	waitFor(t, "both records in the log", func() bool { return countRecords(t, b) == 2 })
}

// TestSource_LingerStoresPositionsLazily runs a steady source (a record
// every 1 ms) with a linger, its appends durable after 5 ms: the
// committer then finds its window empty after each append (the next reads
// are held until it is durable), yet a batch waits, held by the appender. Its positions are stored once per
// sourcePositionInterval while reads keep coming, not once per append
// (each store is an append and fsync of the offsets topic), and the last
// one is stored at once.
func TestSource_LingerStoresPositionsLazily(t *testing.T) {
	const n = 400 // 1 ms apart: at least 400 ms, two intervals
	var mu sync.Mutex
	var stored []string
	testHookBeforePositionStore = func(_ string, pos connect.Position) error {
		mu.Lock()
		defer mu.Unlock()
		stored = append(stored, string(pos))
		return nil
	}
	t.Cleanup(func() { testHookBeforePositionStore = nil })
	src := &lingerSource{n: n, pause: time.Millisecond}
	start := time.Now()
	b := startLinger(t, src, time.Minute, 5*time.Millisecond) // ends when the append in flight is durable
	b.open()
	last := `{"n":` + strconv.Itoa(n) + `}`
	waitFor(t, "the last position to be stored", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(stored) > 0 && stored[len(stored)-1] == last
	})
	elapsed := time.Since(start)
	mu.Lock()
	stores := len(stored)
	mu.Unlock()
	appends := len(b.appended())
	// The first and the last are stored at once, and so is one when the
	// source's next read is late (a loaded machine); allow a few.
	if most := min(appends/4, int(elapsed/sourcePositionInterval)+4); stores > most {
		t.Errorf("%d position stores for %d appends in %v, want at most %d (one per %v, the first and the last)", stores, appends, elapsed, most, sourcePositionInterval)
	}
}

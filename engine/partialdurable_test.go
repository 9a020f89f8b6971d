package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// partSource is a lazy-acking connect.PartialDurableNotifier: each Read
// returns units of one record keyed over every partition; its calls are
// recorded in order.
type partSource struct {
	perRead, reads int
	max            int

	mu    *sync.Mutex
	calls *[]partCall
	busy  *bool
	clash *bool
}

type partCall struct {
	kind string // "part", "durable" or "ack"
	ns   []int
}

var _ connect.PartialDurableNotifier = (*partSource)(nil)

func (s *partSource) Open(context.Context, connect.Config) error { return nil }
func (s *partSource) Close(context.Context) error                { return nil }
func (s *partSource) AcksLazily() bool                           { return true }

func (s *partSource) Read(ctx context.Context) ([]connect.Record, error) {
	if s.reads == s.max {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	s.reads++
	recs := make([]connect.Record, s.perRead)
	for i := range recs {
		n := (s.reads-1)*s.perRead + i + 1
		recs[i] = connect.Record{Key: fmt.Appendf(nil, "user-%d", n), Value: []byte(`{}`), Position: fmt.Appendf(nil, `{"n":%d}`, n)}
	}
	return recs, nil
}

func (s *partSource) note(kind string, positions ...connect.Position) error {
	s.mu.Lock()
	if *s.busy {
		*s.clash = true
	}
	*s.busy = true
	s.mu.Unlock()
	time.Sleep(100 * time.Microsecond) // room for an overlapping call to show
	c := partCall{kind: kind}
	for _, pos := range positions {
		var p struct{ N int }
		if err := json.Unmarshal(pos, &p); err != nil {
			return err
		}
		c.ns = append(c.ns, p.N)
	}
	s.mu.Lock()
	*s.calls = append(*s.calls, c)
	*s.busy = false
	s.mu.Unlock()
	return nil
}

func (s *partSource) DurablePart(_ context.Context, positions []connect.Position) error {
	return s.note("part", positions...)
}
func (s *partSource) Durable(_ context.Context, pos connect.Position) error {
	return s.note("durable", pos)
}
func (s *partSource) Ack(_ context.Context, pos connect.Position) error { return s.note("ack", pos) }

// TestSource_PartialDurable: a lazy acker whose batches spread over three
// partitions hears DurablePart for units of the partitions made durable
// first, each unit at most once and before the Durable that covers it,
// never concurrently with Durable or Ack; and the records are all in the
// log.
func TestSource_PartialDurable(t *testing.T) {
	const perRead, reads = 30, 20
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger, NumPartitions: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	var (
		mu          sync.Mutex
		calls       []partCall
		busy, clash bool
	)
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "partsrc", Kind: connect.KindSource, Version: "test", NewSource: func() connect.Source {
		return &partSource{perRead: perRead, max: reads, mu: &mu, calls: &calls, busy: &busy, clash: &clash}
	}})
	ctx := t.Context()
	w, err := NewWorker(ctx, Options{Backend: NewEmbedded(l, logger), Connectors: reg, Logger: logger})
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
	if err := w.Start(ctx, ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "partsrc", Topic: "parts"}, ""); err != nil {
		t.Fatal(err)
	}
	const total = perRead * reads
	waitFor(t, "the last position to be acked", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) > 0 && calls[len(calls)-1].kind == "ack" && calls[len(calls)-1].ns[0] == total
	})

	mu.Lock()
	defer mu.Unlock()
	if clash {
		t.Error("two notices ran at once")
	}
	told := map[int]bool{}
	durable, parts := 0, 0
	for _, c := range calls {
		switch c.kind {
		case "part":
			parts++
			for _, n := range c.ns {
				if n <= durable {
					t.Errorf("DurablePart named %d after Durable(%d) covered it", n, durable)
				}
				if told[n] {
					t.Errorf("DurablePart named %d twice", n)
				}
				told[n] = true
				if batch := (n - 1) / perRead; batch != (durable)/perRead {
					t.Errorf("DurablePart named %d (batch %d) while Durable was at %d", n, batch, durable)
				}
			}
		case "durable":
			durable = c.ns[0]
		}
	}
	// Each batch spreads over the 3 partitions: two of them are announced
	// before Durable, so about two thirds of the units are named early.
	if parts < reads || len(told) < total/3 {
		t.Errorf("%d DurablePart calls naming %d units for %d batches of %d: want at least one call per batch and a third of the units", parts, len(told), reads, perRead)
	}
	bounds, err := NewEmbedded(l, logger).EndOffsets(ctx, "parts")
	if err != nil {
		t.Fatal(err)
	}
	n := int64(0)
	for _, b := range bounds {
		n += b.End - b.Start
	}
	if n != total {
		t.Errorf("%d records in the log, want %d", n, total)
	}
}

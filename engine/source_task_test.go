package engine

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func batchOf(n int, pos string) readBatch {
	b := readBatch{recs: make([]connect.Record, n), bytes: n * 10, start: time.Now()}
	if pos != "" {
		b.pos = connect.Position(pos)
	}
	return b
}

// TestGather_Idle checks that with nothing in flight a read is appended at
// once, with only the reads already waiting merged into it.
func TestGather_Idle(t *testing.T) {
	reads := make(chan readBatch, 4)
	reads <- batchOf(2, `{"p":2}`)
	b := batchOf(1, `{"p":1}`)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	start := time.Now()
	if closed := gather(t.Context(), &b, reads, nil, 5*time.Millisecond, timer); closed {
		t.Fatal("gather says reads is closed")
	}
	if took := time.Since(start); took > 5*time.Millisecond {
		t.Errorf("gather with nothing in flight took %v", took)
	}
	if len(b.recs) != 3 || string(b.pos) != `{"p":2}` || b.bytes != 30 {
		t.Errorf("gathered %d records, position %s, %d bytes; want 3, {\"p\":2}, 30", len(b.recs), b.pos, b.bytes)
	}
}

// TestGather_Linger checks that reads arriving while an append is in flight
// are merged until it is durable, and that lingering ends after its time
// when it stays in flight.
func TestGather_Linger(t *testing.T) {
	const d = 5 * time.Millisecond
	reads := make(chan readBatch)
	done := make(chan struct{})
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	go func() {
		reads <- batchOf(1, `{"p":2}`)
		reads <- batchOf(1, "")
		close(done)
	}()
	b := batchOf(1, `{"p":1}`)
	gather(t.Context(), &b, reads, done, time.Minute, timer)
	if len(b.recs) != 3 || string(b.pos) != `{"p":2}` {
		t.Errorf("gathered %d records, position %s; want 3 and the last one given", len(b.recs), b.pos)
	}

	start := time.Now()
	b = batchOf(1, "")
	gather(t.Context(), &b, reads, make(chan struct{}), d, timer)
	if took := time.Since(start); took < d || took > d+time.Second {
		t.Errorf("gather with an append stuck in flight returned after %v, want about %v", took, d)
	}

	// Full: no lingering at all.
	b = batchOf(sourceLingerRecords, "")
	start = time.Now()
	gather(t.Context(), &b, reads, make(chan struct{}), time.Minute, timer)
	if took := time.Since(start); took >= time.Second {
		t.Errorf("gather of a full batch took %v", took)
	}

	// No lingering: only what waits is merged.
	b = batchOf(1, "")
	start = time.Now()
	gather(t.Context(), &b, reads, make(chan struct{}), 0, timer)
	if took := time.Since(start); took >= time.Second || len(b.recs) != 1 {
		t.Errorf("gather without lingering took %v and gathered %d records", took, len(b.recs))
	}

	close(reads)
	b = batchOf(1, "")
	if !gather(t.Context(), &b, reads, make(chan struct{}), d, timer) {
		t.Error("gather does not report a closed reads")
	}
}

// BenchmarkChain_AppendApplied runs a batch of 500 records through an
// empty chain, as every source and sink task without transforms does: one
// allocation per batch, none per record.
func BenchmarkChain_AppendApplied(b *testing.B) {
	recs := make([]connect.Record, 500)
	var c chain
	b.ReportAllocs()
	for b.Loop() {
		out := make([]connect.Record, 0, len(recs))
		for _, r := range recs {
			var err error
			if out, err = c.appendApplied(out, r); err != nil {
				b.Fatal(err)
			}
		}
	}
}

package log

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// A read that stops at the end of its byte budget knows the size of the
// batch after the last one it hands out from that batch's header alone: it
// neither reads the rest of it nor checks its CRC. Reads that go on get it
// whole and checked.
func TestCheckedIter_ConfirmsWithTheNextHeaderOnly(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	// Raw appends: the tail cache does not keep them, reads go to the file.
	var stored [][]byte
	for i := range 3 {
		recs := []Record{{Value: bytes.Repeat([]byte{byte('a' + i)}, 4000)}, {Value: []byte("x")}}
		raw := encodeBatch(recs, time.Now(), "none", noProducer)
		base, err := l.AppendRaw(t.Context(), "t", 0, raw)
		if err != nil {
			t.Fatal(err)
		}
		setBaseOffset(raw, base)
		stored = append(stored, raw)
	}
	p, err := l.partition("t", 0)
	if err != nil {
		t.Fatal(err)
	}
	v, err := p.snapshot(0)
	if err != nil {
		t.Fatal(err)
	}
	defer v.release()
	it := v.segs[0].checkedIter(v.indexes[0], v.sizes[0], 0, v.end, false)
	it.setWant(len(stored[0]))
	b, err := it.next()
	if err != nil || !bytes.Equal(b.raw, stored[0]) {
		t.Fatalf("first batch: %v, equal %v", err, bytes.Equal(b.raw, stored[0]))
	}
	if got := it.pendingSize(); got != len(stored[1]) {
		t.Fatalf("pendingSize = %d, want %d", got, len(stored[1]))
	}
	if it.pending.raw != nil {
		t.Fatal("the confirming batch was read whole")
	}
	if end := it.it.bufPos + int64(len(it.it.buf)); end > int64(len(stored[0])) {
		t.Fatalf("the iterator read up to byte %d, past the first batch (%d bytes)", end, len(stored[0]))
	}
	for i := 1; i < 3; i++ {
		b, err := it.next()
		if err != nil || !bytes.Equal(b.raw, stored[i]) || b.meta.BaseOffset != int64(2*i) {
			t.Fatalf("batch %d: %v, base %d, equal %v", i, err, b.meta.BaseOffset, bytes.Equal(b.raw, stored[i]))
		}
		if len(b.kb.Records) != len(stored[i])-batchHeaderSize {
			t.Fatalf("batch %d: %d bytes of records, want %d", i, len(b.kb.Records), len(stored[i])-batchHeaderSize)
		}
	}
	if _, err := it.next(); err != io.EOF {
		t.Fatalf("after the last batch: %v, want io.EOF", err)
	}
}

// The verified watermark covers what this process appended, starts at 0 for
// a segment written by an earlier process, and grows as reads check it.
func TestSegment_VerifiedWatermark(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		raw := encodeBatch([]Record{{Value: bytes.Repeat([]byte{byte('a' + i)}, 3000)}}, time.Now(), "none", noProducer)
		if _, err := l.AppendRaw(t.Context(), "t", 0, raw); err != nil {
			t.Fatal(err)
		}
	}
	active := func(l *Log) *segment {
		p, err := l.partition("t", 0)
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.segments[len(p.segments)-1]
	}
	if s := active(l); s.verified.Load() != s.size {
		t.Fatalf("after appends: verified %d, size %d", s.verified.Load(), s.size)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	s := active(l)
	if s.verified.Load() != 0 {
		t.Fatalf("after open: verified %d, want 0", s.verified.Load())
	}
	res, err := l.ReadBatches(t.Context(), "t", 0, 0, ReadOptions{MaxBytes: 5000})
	if err != nil || len(res.Batches) != 1 {
		t.Fatalf("ReadBatches: %d batches, %v", len(res.Batches), err)
	}
	if got := s.verified.Load(); got != int64(len(res.Batches[0])) {
		t.Fatalf("after reading the first batch: verified %d, want %d", got, len(res.Batches[0]))
	}
	if got := len(readAll(t, l, "t", 0, 0)); got != 4 {
		t.Fatalf("read %d records, want 4", got)
	}
	if s.verified.Load() != s.size {
		t.Fatalf("after reading everything: verified %d, size %d", s.verified.Load(), s.size)
	}
}

// Released read buffers go to later reads: what each read hands out is the
// stored bytes, however buffers were reused, and releasing twice (or a copy
// of a result) gives nothing back twice.
func TestReadBatches_ReleaseReusesBuffers(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for i := range 6 {
		raw := encodeBatch([]Record{{Value: bytes.Repeat([]byte{byte('a' + i)}, 100<<10)}}, time.Now(), "none", noProducer)
		base, err := l.AppendRaw(t.Context(), "t", 0, raw)
		if err != nil {
			t.Fatal(err)
		}
		setBaseOffset(raw, base)
		stored = append(stored, raw)
	}
	for round := range 3 {
		var held []BatchReadResult
		for i := range stored {
			res, err := l.ReadBatches(t.Context(), "t", 0, int64(i), ReadOptions{MaxBytes: 1})
			if err != nil || len(res.Batches) != 1 || !bytes.Equal(res.Batches[0], stored[i]) {
				t.Fatalf("round %d, offset %d: %d batches, %v", round, i, len(res.Batches), err)
			}
			held = append(held, res)
			if i%2 == 1 {
				// Release the one before, twice, and through a copy: its
				// buffer goes back once, and the batch held now is intact.
				prev := held[i-1]
				prev.Release()
				held[i-1].Release()
				if !bytes.Equal(res.Batches[0], stored[i]) {
					t.Fatalf("round %d, offset %d: the batch changed when another read was released", round, i)
				}
			}
		}
		for i := range held {
			if i%2 == 1 && !bytes.Equal(held[i].Batches[0], stored[i]) {
				t.Fatalf("round %d, offset %d: an unreleased batch changed", round, i)
			}
			held[i].Release()
		}
	}
}

package log

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestPartition_Write_RollsWithinOneCall appends one call whose batches fill
// several segments: each run of the call goes to its own segment, and every
// record reads back at its offset, before and after a reopen.
func TestPartition_Write_RollsWithinOneCall(t *testing.T) {
	dir := t.TempDir()
	l := openTestLog(t, dir, func(o *Options) { o.StartWriteback = true })
	if err := l.CreateTopic("r", 1, map[string]string{ConfigSegmentBytes: "3000", ConfigMaxMessageBytes: "1000"}); err != nil {
		t.Fatal(err)
	}
	recs := make([]Record, 100)
	for i := range recs {
		recs[i].Value = fmt.Appendf(nil, "%03d-%s", i, strings.Repeat("r", 100))
	}
	if base, err := l.Append(t.Context(), "r", 0, recs); err != nil || base != 0 {
		t.Fatalf("Append = %d, %v; want 0, nil", base, err)
	}
	check := func(l *Log) {
		t.Helper()
		got := readAll(t, l, "r", 0, 0)
		if len(got) != len(recs) {
			t.Fatalf("read %d records, want %d", len(got), len(recs))
		}
		for i, r := range got {
			if r.Offset != int64(i) || !bytes.Equal(r.Value, recs[i].Value) {
				t.Fatalf("record %d: offset %d %q", i, r.Offset, r.Value)
			}
		}
	}
	check(l)
	if segs := scanLayout(t, partitionDir(dir, "r", 0)); len(segs) < 3 {
		t.Fatalf("about 11 KB in segments of 3000 bytes went into %d segments, want at least 3", len(segs))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l = openTestLog(t, dir)
	defer l.Close()
	check(l)
}

// TestPartition_Write_OneProducerTwiceInACall writes two batches of one
// idempotent producer and a retry of the first in a single call: the
// second batch's sequence check needs the first one published, and the
// retry is answered with the first one's offset.
func TestPartition_Write_OneProducerTwiceInACall(t *testing.T) {
	l := openTestLog(t, t.TempDir())
	defer l.Close()
	p, err := l.partitionForWrite("idem", 0)
	if err != nil {
		t.Fatal(err)
	}
	two := []Record{{Value: []byte("a")}, {Value: []byte("b")}}
	prod := ProducerInfo{ID: 7, Epoch: 0, Sequence: 0}
	first := encodeBatch(two, time.Now(), "none", prod)
	prod.Sequence = 2
	second := encodeBatch(two, time.Now(), "none", prod)
	retry := append([]byte(nil), first...)
	bases, end, err := p.write([][]byte{first, second, retry}, writeUnchecked)
	if err != nil {
		t.Fatalf("write: %v", err)
	}
	if want := []int64{0, 2, 0}; fmt.Sprint(bases) != fmt.Sprint(want) || end != 4 {
		t.Fatalf("write = %v, end %d; want %v, end 4", bases, end, want)
	}
	if _, err := p.waitDurable(t.Context(), end); err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, l, "idem", 0, 0); len(got) != 4 {
		t.Fatalf("read %d records, want 4", len(got))
	}
}

// TestPartition_Write_ReadersSeeWrittenPrefix reads while one writer
// appends (run it with -race): every read returns records that follow each
// other from its offset, each holding the value written at its offset, so
// no reader ever sees an offset before its bytes are written.
func TestPartition_Write_ReadersSeeWrittenPrefix(t *testing.T) {
	for _, interval := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("FlushInterval=%v", interval), func(t *testing.T) {
			l := openTestLog(t, t.TempDir(), func(o *Options) {
				o.FlushInterval = interval
				o.TailCacheBytes = -1 // reads go to the file, where unwritten bytes would show
			})
			defer l.Close()
			if err := l.CreateTopic("w", 1, map[string]string{ConfigSegmentBytes: "2000"}); err != nil {
				t.Fatal(err)
			}
			const calls, per = 40, 25
			done := make(chan struct{})
			var wg sync.WaitGroup
			errs := make(chan error, 3)
			for range 2 {
				wg.Go(func() {
					for from := int64(0); ; {
						select {
						case <-done:
							return
						default:
						}
						res, err := l.Read(t.Context(), "w", 0, from, ReadOptions{MaxBytes: 4 << 10, MaxWait: time.Millisecond})
						if err != nil {
							errs <- err
							return
						}
						for i, r := range res.Records {
							if want := strconv.FormatInt(r.Offset, 10); r.Offset != from+int64(i) || string(r.Value) != want {
								errs <- fmt.Errorf("read from %d: record %d is offset %d %q, want offset %d %q", from, i, r.Offset, r.Value, from+int64(i), want)
								return
							}
						}
						if from += int64(len(res.Records)); from >= calls*per {
							from = 0
						}
					}
				})
			}
			for c := range calls {
				recs := make([]Record, per)
				for i := range recs {
					recs[i].Value = strconv.AppendInt(nil, int64(c*per+i), 10)
				}
				if _, err := l.Append(t.Context(), "w", 0, recs); err != nil {
					t.Fatal(err)
				}
			}
			close(done)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
		})
	}
}

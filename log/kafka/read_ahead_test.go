package kafka

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchRecords sends one Fetch (v11) for topic/partition 0 at offset and
// returns the answer's error code, high watermark and record values.
func fetchRecords(t *testing.T, rc *rawConn, topic string, offset int64, maxBytes int32) (int16, int64, []string) {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 0, 50<<20, -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = offset, maxBytes, -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := do[*kmsg.FetchResponse](rc, req, 11)
	p := resp.Topics[0].Partitions[0]
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, Offset: offset}, &p, kgo.DefaultDecompressor(), nil)
	var vals []string
	for _, r := range fp.Records {
		vals = append(vals, string(r.Value))
	}
	return p.ErrorCode, p.HighWatermark, vals
}

// A consumer walking a partition window by window gets what a fresh read
// gives, whether the listener read the window ahead or not; a read ahead of
// a partition that is gone is not served.
func TestFetch_ReadAheadServesTheNextWindow(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("ra", 1, nil); err != nil {
		t.Fatal(err)
	}
	const n = 200
	appendNumbered(t, ts.log, "ra", "v%03d", n)
	rc := ts.raw(t)
	var got []string
	off, end := int64(0), int64(n)
	for rounds := 0; off < n; rounds++ {
		code, hw, vals := fetchRecords(t, rc, "ra", off, 300) // about two batches a window
		if code != 0 || hw != end || len(vals) == 0 {
			t.Fatalf("fetch at %d: code %d, hw %d, %d records", off, code, hw, len(vals))
		}
		got = append(got, vals...)
		off += int64(len(vals))
		if rounds == 3 {
			// Append meanwhile: the next answer's high watermark is current.
			if _, err := ts.log.Append(t.Context(), "ra", 0, []tlog.Record{{Value: []byte("late")}}); err != nil {
				t.Fatal(err)
			}
			end++
			code, hw, vals := fetchRecords(t, rc, "ra", off, 300)
			if code != 0 || hw != end {
				t.Fatalf("after an append: code %d, hw %d, want %d", code, hw, n+1)
			}
			got = append(got, vals...)
			off += int64(len(vals))
		}
	}
	for i := range n {
		if got[i] != fmt.Sprintf("v%03d", i) {
			t.Fatalf("record %d = %s", i, got[i])
		}
	}
	if ts.srv.aheadServed.Load() == 0 {
		t.Fatal("no window was served from a read ahead")
	}
	// Jump back (a seek): the read ahead is dropped, the answer is right.
	if _, _, vals := fetchRecords(t, rc, "ra", 5, 300); len(vals) == 0 || vals[0] != "v005" {
		t.Fatalf("after a seek: %v", vals)
	}
	// The next window was read ahead; the topic goes away before it is
	// asked for.
	_, _, vals := fetchRecords(t, rc, "ra", 20, 300)
	next := int64(20 + len(vals))
	if err := ts.log.DeleteTopic("ra"); err != nil {
		t.Fatal(err)
	}
	if code, _, vals := fetchRecords(t, rc, "ra", next, 300); code == 0 || len(vals) != 0 {
		t.Fatalf("fetch of a deleted topic: code %d, %d records", code, len(vals))
	}
	// Read ahead, then the topic is deleted and made again under its name
	// with other records: the new records are served, not the old ones.
	if err := ts.log.CreateTopic("ra", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendNumbered(t, ts.log, "ra", "v%03d", n)
	_, _, vals = fetchRecords(t, rc, "ra", 20, 300)
	next = int64(20 + len(vals))
	if err := ts.log.DeleteTopic("ra"); err != nil {
		t.Fatal(err)
	}
	if err := ts.log.CreateTopic("ra", 1, nil); err != nil {
		t.Fatal(err)
	}
	appendNumbered(t, ts.log, "ra", "w%03d", n)
	served := ts.srv.aheadServed.Load()
	if _, _, vals := fetchRecords(t, rc, "ra", next, 300); len(vals) == 0 || vals[0] != fmt.Sprintf("w%03d", next) {
		t.Fatalf("after the topic was made again: %v, want w%03d first", vals, next)
	}
	if ts.srv.aheadServed.Load() != served {
		t.Fatal("a read ahead of the deleted topic was served")
	}
	rc.c.Close()
	waitFor(t, "the connection's reads ahead released", 5*time.Second, func() bool { return ts.srv.aheadBytes.Load() == 0 })
}

// Fetch answers of big batches are written from the log's pooled read
// buffers, which go back to the log once written and are then read into
// again (by the reads ahead above all): every answer still carries exactly
// the stored records, through windows, a seek back, and two partitions.
func TestFetch_PooledReadBuffersKeepAnswersIntact(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("big", 2, nil); err != nil {
		t.Fatal(err)
	}
	const batches, perBatch = 12, 10
	pad := strings.Repeat("x", 8<<10) // 10 records of 8 KiB: ~80 KiB batches, pooled reads
	value := func(part int32, off int64) string { return fmt.Sprintf("p%d-%04d-%s", part, off, pad) }
	for part := range int32(2) {
		for b := range batches {
			var vals []string
			for r := range perBatch {
				vals = append(vals, value(part, int64(b*perBatch+r)))
			}
			// Raw appends: not in the tail cache, so reads go to the file.
			if _, err := ts.log.AppendRaw(t.Context(), "big", part, testBatch(-1, -1, -1, vals...)); err != nil {
				t.Fatal(err)
			}
		}
	}
	rc := ts.raw(t)
	fetch := func(part int32, off int64) []string {
		req := kmsg.NewPtrFetchRequest()
		req.ReplicaID, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = -1, 0, 50<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "big"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = part, off, 200<<10, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp := do[*kmsg.FetchResponse](rc, req, 11)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("fetch p%d at %d: error %d", part, off, p.ErrorCode)
		}
		fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "big", Partition: part, Offset: off}, &p, kgo.DefaultDecompressor(), nil)
		if fp.Err != nil {
			t.Fatalf("fetch p%d at %d: %v", part, off, fp.Err)
		}
		var vals []string
		for _, r := range fp.Records {
			if r.Offset != off+int64(len(vals)) || string(r.Value) != value(part, r.Offset) {
				t.Fatalf("fetch p%d at %d: record at offset %d is %.12q", part, off, r.Offset, r.Value)
			}
			vals = append(vals, string(r.Value))
		}
		if len(vals) == 0 {
			t.Fatalf("fetch p%d at %d: no records", part, off)
		}
		return vals
	}
	const end = batches * perBatch
	for round := range 2 {
		for part := range int32(2) {
			for off := int64(0); off < end; {
				off += int64(len(fetch(part, off)))
			}
		}
		if round == 0 {
			fetch(0, 35) // a seek back: the reads ahead are dropped
		}
	}
	if ts.srv.aheadServed.Load() == 0 {
		t.Fatal("no window was served from a read ahead")
	}
}

// A read ahead that reached the partition's end is not served once records
// came after it: the answer is read again, so that, as in Kafka, an answer
// with room to spare holds every record up to its high watermark, and a
// consumer at the tail of a partition being written gets the new records
// in the same round trip.
func TestFetch_ReadAheadAtTheEndIsReadAgainAfterAppends(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("tail", 1, nil); err != nil {
		t.Fatal(err)
	}
	const n = 200
	appendNumbered(t, ts.log, "tail", "v%03d", n)
	rc := ts.raw(t)
	// A window of about half the partition: the listener reads the rest
	// ahead, up to the end.
	const limit = 2000 // about 110 records
	code, hw, vals := fetchRecords(t, rc, "tail", 0, limit)
	if code != 0 || hw != n || len(vals) < n/2 || len(vals) >= n {
		t.Fatalf("first fetch: code %d, hw %d, %d records", code, hw, len(vals))
	}
	off := int64(len(vals))
	time.Sleep(200 * time.Millisecond) // the read ahead of [off, n) is done
	if _, err := ts.log.Append(t.Context(), "tail", 0, []tlog.Record{{Value: []byte("late")}}); err != nil {
		t.Fatal(err)
	}
	served := ts.srv.aheadServed.Load()
	code, hw, vals = fetchRecords(t, rc, "tail", off, limit)
	next := off + int64(len(vals))
	if code != 0 || next != hw || hw != n+1 || vals[len(vals)-1] != "late" {
		t.Fatalf("fetch at %d after an append: code %d, %d records up to %d, hw %d: want every record up to the high watermark %d, the late one last",
			off, code, len(vals), next, hw, n+1)
	}
	if ts.srv.aheadServed.Load() != served {
		t.Fatal("the read ahead that ended before the late record was served")
	}
}

package kafka

import (
	"encoding/binary"
	"io"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// readAny reads the next response of rc and returns its correlation id
// and body (after the header).
func (rc *rawConn) readAny(resp kmsg.Response, version int16) int32 {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var sz [4]byte
	if _, err := io.ReadFull(rc.c, sz[:]); err != nil {
		rc.t.Fatalf("read response: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(rc.c, body); err != nil {
		rc.t.Fatal(err)
	}
	corr := int32(binary.BigEndian.Uint32(body))
	body = body[4:]
	resp.SetVersion(version)
	if resp.IsFlexible() {
		body = body[1:]
	}
	if err := resp.ReadFrom(body); err != nil {
		rc.t.Fatalf("decode %T (correlation id %d): %v", resp, corr, err)
	}
	return corr
}

// Requests sent back to back on one connection, without waiting for
// answers (as clients pipeline produce requests), are appended in order and
// answered in order, an acks=0 request not at all; a request that needs no
// fsync still waits for the answers before it.
func TestProduce_PipelinedAnsweredInOrder(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("pipe", 1, nil); err != nil {
		t.Fatal(err)
	}
	rc := ts.raw(t)
	ip := do[*kmsg.InitProducerIDResponse](rc, kmsg.NewPtrInitProducerIDRequest(), 4)
	first := rc.corr + 1
	// Idempotent batches 0..4 (sequences in order: an append out of order
	// would be refused), a Metadata request, an acks=0 produce, one more.
	for i := range 5 {
		rc.send(produceReq("pipe", testBatch(ip.ProducerID, ip.ProducerEpoch, int32(2*i), "a", "b")), 9)
	}
	rc.send(kmsg.NewPtrMetadataRequest(), 12)
	noAck := produceReq("pipe", testBatch(-1, -1, -1, "fire-and-forget"))
	noAck.Acks = 0
	rc.send(noAck, 9)
	rc.send(produceReq("pipe", testBatch(ip.ProducerID, ip.ProducerEpoch, 10, "last")), 9)

	for i := range 5 {
		var resp kmsg.ProduceResponse
		if corr := rc.readAny(&resp, 9); corr != first+int32(i) {
			t.Fatalf("answer %d has correlation id %d, want %d", i, corr, first+int32(i))
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 || p.BaseOffset != int64(2*i) {
			t.Fatalf("produce %d: code %d base %d, want 0 %d", i, p.ErrorCode, p.BaseOffset, 2*i)
		}
	}
	var md kmsg.MetadataResponse
	if corr := rc.readAny(&md, 12); corr != first+5 {
		t.Fatalf("metadata answer has correlation id %d, want %d", corr, first+5)
	}
	var last kmsg.ProduceResponse
	if corr := rc.readAny(&last, 9); corr != first+7 {
		t.Fatalf("last answer has correlation id %d, want %d (acks=0 gets none)", corr, first+7)
	}
	if p := last.Topics[0].Partitions[0]; p.ErrorCode != 0 || p.BaseOffset != 11 {
		t.Fatalf("last produce: code %d base %d, want 0 11", p.ErrorCode, p.BaseOffset)
	}
	res, err := ts.log.Read(t.Context(), "pipe", 0, 0, tlog.ReadOptions{})
	if err != nil || len(res.Records) != 12 || string(res.Records[10].Value) != "fire-and-forget" {
		t.Fatalf("log holds %d records (%v), want 12 with the acks=0 one at 10", len(res.Records), err)
	}
}

package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// allocated returns the bytes f allocates (all goroutines: keep the
// server idle).
func allocated(f func()) uint64 {
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	f()
	runtime.ReadMemStats(&m1)
	return m1.TotalAlloc - m0.TotalAlloc
}

// requestFrame is a request header (without the size) for key and
// version, then body.
func requestFrame(key, version int16, flexible bool, body []byte) []byte {
	f := binary.BigEndian.AppendUint16(nil, uint16(key))
	f = binary.BigEndian.AppendUint16(f, uint16(version))
	f = binary.BigEndian.AppendUint32(f, 7)      // correlation id
	f = binary.BigEndian.AppendUint16(f, 0xffff) // null client id
	if flexible {
		f = append(f, 0) // no header tags
	}
	return append(f, body...)
}

// TestHandle_CountFieldsDoNotAmplify: a request whose array count claims
// as many entries as its bytes allow is refused before kmsg allocates
// them. Before, an 8 MiB Produce frame of empty topic entries made the
// decoder allocate 256 MiB (a 100 MiB one, 3.2 GiB), and a Fetch or
// DescribeGroups frame of any size up to 100 MiB did the same.
func TestHandle_CountFieldsDoNotAmplify(t *testing.T) {
	ts := startServer(t)
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &conn{s: ts.srv, c: a, host: "test", authed: true}

	const n = 8 << 20
	for _, v := range []int16{3, 9, 11} {
		flexible := v >= 9
		body := make([]byte, n) // zero bytes: null txn id, acks 0, timeout 0, then topics
		count := uint32(n / 3)  // each empty topic entry: 3 zero bytes when flexible
		if flexible {
			binary.PutUvarint(body[7:], uint64(count)+1)
		} else {
			binary.BigEndian.PutUint16(body, 0xffff) // null transactional id
			binary.BigEndian.PutUint32(body[8:], count)
		}
		frame := requestFrame(0, v, flexible, body)
		var err error
		got := allocated(func() { _, err = cc.handle(t.Context(), frame) })
		if !errors.Is(err, errMalformed) {
			t.Errorf("Produce v%d with %d topic entries: err = %v, want errMalformed", v, count, err)
		}
		if got > 4<<20 {
			t.Errorf("Produce v%d with %d topic entries: decoding allocated %d MiB from a %d MiB frame", v, count, got>>20, n>>20)
		}
	}

	// Requests other than Produce are bounded at maxOtherRequestBytes.
	body := make([]byte, maxOtherRequestBytes)
	binary.BigEndian.PutUint32(body[4:], uint32(len(body)/2)) // a Fetch v4 topic count
	frame := requestFrame(1, 4, false, body)
	var err error
	got := allocated(func() { _, err = cc.handle(t.Context(), frame) })
	if err == nil {
		t.Errorf("Fetch of %d bytes accepted", len(body))
	}
	if got > 4<<20 {
		t.Errorf("Fetch of %d MiB: decoding allocated %d MiB", len(body)>>20, got>>20)
	}
}

// TestCheckProduceShape_AcceptsClientRequests: every Produce request a
// client encodes passes the shape check, in every version served.
func TestCheckProduceShape_AcceptsClientRequests(t *testing.T) {
	fr := kmsg.NewRequestFormatter()
	for v := apis[0].min; v <= apis[0].max; v++ {
		req := produceReq("t", testBatch(-1, -1, -1, "a", "b"))
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "other"
		for p := range int32(3) {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = p, testBatch(-1, -1, -1, "c")
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		req.TransactionID = kmsg.StringPtr("txn")
		req.SetVersion(v)
		h, body, err := parseHeader(fr.AppendRequest(nil, req, 1)[4:])
		if err != nil || h.key != 0 {
			t.Fatal(h, err)
		}
		if req.IsFlexible() {
			if body, err = skipTags(body); err != nil {
				t.Fatal(err)
			}
		}
		if err := checkProduceShape(body, req.IsFlexible()); err != nil {
			t.Errorf("v%d: %v", v, err)
		}
		for cut := 1; cut < len(body); cut += 7 {
			_ = checkProduceShape(body[:cut], req.IsFlexible()) // must not panic
		}
	}
}

// FuzzProduceShape checks checkProduceShape against kmsg: it never panics,
// and it accepts every Produce body kmsg decodes with at most
// maxProduceEntries entries, so it refuses no request a client may send.
func FuzzProduceShape(f *testing.F) {
	fr := kmsg.NewRequestFormatter()
	for _, v := range []int16{3, 8, 9, 11} {
		req := produceReq("t", testBatch(-1, -1, -1, "a"))
		req.SetVersion(v)
		_, body, err := parseHeader(fr.AppendRequest(nil, req, 1)[4:])
		if err != nil {
			f.Fatal(err)
		}
		if v >= 9 {
			body = body[1:] // the header's empty tag section
		}
		f.Add(body, v)
	}
	f.Fuzz(func(t *testing.T, body []byte, v int16) {
		v = apis[0].min + v%(apis[0].max-apis[0].min+1)
		if v < apis[0].min {
			v += apis[0].max - apis[0].min + 1
		}
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		shapeErr := checkProduceShape(body, req.IsFlexible())
		if req.ReadFrom(body) != nil {
			return
		}
		entries := len(req.Topics)
		for _, tp := range req.Topics {
			entries += len(tp.Partitions)
		}
		if entries <= maxProduceEntries && shapeErr != nil {
			t.Fatalf("v%d: kmsg decodes %d topics, %d entries, but the shape check refuses: %v", v, len(req.Topics), entries, shapeErr)
		}
	})
}

// TestFetch_AnswerBoundedByBrokerMax: a Fetch asking for 2 GiB gets at
// most fetch.max.bytes (55 MiB, plus the batch that crosses it), as from
// a Kafka broker; before, the answer was built in memory up to what the
// request asked for.
func TestFetch_AnswerBoundedByBrokerMax(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("big", 1, map[string]string{"max.message.bytes": "2000000"}); err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1<<20)
	for range brokerFetchMaxBytes/len(value) + 8 {
		if _, err := ts.log.Append(t.Context(), "big", 0, []tlog.Record{{Value: value}}); err != nil {
			t.Fatal(err)
		}
	}
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(11)
	req.MaxBytes = 1<<31 - 1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "big"
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1<<31 - 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := ts.srv.fetch(t.Context(), req, nil)
	got := len(resp.Topics[0].Partitions[0].RecordBatches)
	if got == 0 || got > brokerFetchMaxBytes+len(value)+1024 {
		t.Fatalf("Fetch of MaxBytes 2 GiB answered %d record bytes; want (0, %d]", got, brokerFetchMaxBytes+len(value)+1024)
	}
}

// TestSASL_PreAuthFrameBound: before a client authenticates, a frame over
// sasl.server.max.receive.size (512 KiB) closes the connection at once,
// without the server buffering it; before, an unauthenticated client could
// make the server hold a 100 MiB frame per connection.
func TestSASL_PreAuthFrameBound(t *testing.T) {
	ts := startServer(t, func(o *Options) {
		o.SASLPlain = func(user, pass string) bool { return user == "alice" && pass == "s3cret" }
	})
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hdr := binary.BigEndian.AppendUint32(nil, saslMaxReceiveSize+1)
	if _, err := c.Write(append(hdr, requestFrame(18, 3, true, nil)...)); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	var buf [1]byte
	_, err = c.Read(buf[:])
	var ne net.Error
	if err == nil || errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("read after an oversized pre-auth frame: %v; want the connection closed", err)
	}
}

// TestReadFrame_AllocatesWhatArrives: a frame that announces 64 MiB and
// brings 2 MiB costs a few MiB, not 64; a whole frame reads back intact.
func TestReadFrame_AllocatesWhatArrives(t *testing.T) {
	const announced = 64 << 20
	data := make([]byte, 4+2<<20)
	binary.BigEndian.PutUint32(data, announced)
	var err error
	got := allocated(func() { _, err = readFrame(bufio.NewReader(bytes.NewReader(data)), 100<<20) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("readFrame of a cut frame: %v, want io.ErrUnexpectedEOF", err)
	}
	if got > 8<<20 {
		t.Fatalf("a frame announcing %d MiB with 2 MiB sent allocated %d MiB", announced>>20, got>>20)
	}
	for _, n := range []int{0, 10, frameGrowStart - 1, frameGrowStart, frameGrowStart + 1, 5*frameGrowStart + 3} {
		body := make([]byte, n)
		for i := range body {
			body[i] = byte(i * 7)
		}
		in := append(binary.BigEndian.AppendUint32(nil, uint32(n)), body...)
		frame, err := readFrame(bufio.NewReader(bytes.NewReader(in)), 100<<20)
		if err != nil || !bytes.Equal(frame, body) {
			t.Fatalf("readFrame of %d bytes: %d bytes back, %v", n, len(frame), err)
		}
	}
}

// TestProduce_MalformedBatchRefusesTheWholeSet: a partition's records with
// a sound batch followed by bytes that are no batch are refused whole;
// before, the first batch was stored and then reported failed, so the
// client's retry stored it twice.
func TestProduce_MalformedBatchRefusesTheWholeSet(t *testing.T) {
	ts := startServer(t)
	if err := ts.log.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	cc := &conn{s: ts.srv, c: a, host: "test", authed: true}
	records := append(testBatch(-1, -1, -1, "a"), make([]byte, 20)...)
	req := produceReq("t", records)
	req.SetVersion(9)
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)[4:]
	rep, err := cc.handle(t.Context(), frame)
	if err != nil || rep.finish == nil {
		t.Fatalf("handle: %v", err)
	}
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(9)
	out := rep.finish()
	if err := resp.ReadFrom(out[9:]); err != nil { // size, correlation id, header tags
		t.Fatal(err)
	}
	if code := resp.Topics[0].Partitions[0].ErrorCode; code == 0 {
		t.Fatalf("produce of a malformed record set answered without an error")
	}
	// The next append (durable when it returns) shows what was stored.
	if base, err := ts.log.Append(t.Context(), "t", 0, []tlog.Record{{Value: []byte("next")}}); err != nil || base != 0 {
		t.Fatalf("next append at offset %d, %v after a refused record set; want 0", base, err)
	}
}

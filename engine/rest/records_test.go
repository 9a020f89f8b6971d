package rest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// TestREST_Records_BadQueryIs400: a query parameter that is not a
// non-negative number is a 400 with Kafka Connect's error body, never a
// read from offset 0.
func TestREST_Records_BadQueryIs400(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/topics", `{"name":"t","partitions":1}`); code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/topics/t/records", `{"records":[{"partition":0,"value":"a"},{"partition":0,"value":"b"}]}`); code != 200 {
		t.Fatalf("produce = %d %s", code, body)
	}
	for _, q := range []string{"offset=abc", "offset=-1", "offset=1x", "max_bytes=lots", "max_wait_ms=1.5"} {
		code, body := call(t, srv, "GET", "/topics/t/partitions/0/records?"+q, "")
		var e apiError
		if code != 400 || json.Unmarshal([]byte(body), &e) != nil || e.ErrorCode != 400 || !strings.Contains(e.Message, strings.SplitN(q, "=", 2)[0]) {
			t.Errorf("?%s = %d %s, want 400 naming the parameter", q, code, body)
		}
	}
	code, body := call(t, srv, "GET", "/topics/t/partitions/0/records?offset=1", "")
	var res ReadJSON
	if code != 200 || json.Unmarshal([]byte(body), &res) != nil || len(res.Records) != 1 || res.Records[0].Offset != 1 {
		t.Fatalf("?offset=1 = %d %s, want the record at 1", code, body)
	}
	if code, body := call(t, srv, "GET", "/topics/t/partitions/0/records", ""); code != 200 || !strings.Contains(body, `"offset":0`) {
		t.Fatalf("no offset = %d %s, want a read from 0", code, body)
	}
}

// TestREST_Groups_CommitChecksTopicAndOffset: committing offsets over REST
// refuses an unknown topic or partition (404) and a negative offset or an
// unknown field (400), with Kafka Connect's error body, and commits nothing.
func TestREST_Groups_CommitChecksTopicAndOffset(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/topics", `{"name":"t","partitions":2}`); code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}
	for _, c := range []struct {
		body string
		code int
	}{
		{`{"offsets":[{"topic":"nope","partition":0,"current_offset":5}]}`, 404},
		{`{"offsets":[{"topic":"t","partition":2,"current_offset":5}]}`, 404},
		{`{"offsets":[{"topic":"t","partition":-1,"current_offset":5}]}`, 404},
		{`{"offsets":[{"topic":"t","partition":0,"current_offset":-3}]}`, 400},
		{`{"offsets":[{"topic":"t","partition":0,"offset":7}]}`, 400},
		{`{"offsets":[{"topic":"t","partition":0,"current_offset":1},{"topic":"nope","partition":0,"current_offset":5}]}`, 404},
	} {
		code, body := call(t, srv, "POST", "/groups/g/offsets", c.body)
		var e apiError
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || e.ErrorCode != c.code || e.Message == "" {
			t.Errorf("commit %s = %d %s, want %d with an error body", c.body, code, body, c.code)
		}
	}
	if code, body := call(t, srv, "GET", "/groups/g", ""); code != 404 {
		t.Fatalf("group after refused commits = %d %s, want 404 (nothing committed)", code, body)
	}
	if code, body := call(t, srv, "POST", "/groups/g/offsets", `{"offsets":[{"topic":"t","partition":1,"current_offset":0}]}`); code != 204 {
		t.Fatalf("valid commit = %d %s", code, body)
	}
}

// TestREST_Records_NullHeaderValue: a header whose value is null stays
// null through the record endpoints (["h",null], as kcat -J writes it),
// distinct from an empty one.
func TestREST_Records_NullHeaderValue(t *testing.T) {
	srv, _, _ := newTestServer(t)
	if code, body := call(t, srv, "POST", "/topics", `{"name":"t","partitions":1}`); code != 201 {
		t.Fatalf("create topic = %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/topics/t/records", `{"records":[{"partition":0,"value":"a","headers":[["null",null],["empty",""]]}]}`); code != 200 {
		t.Fatalf("produce = %d %s", code, body)
	}
	code, body := call(t, srv, "GET", "/topics/t/partitions/0/records?offset=0", "")
	if code != 200 || !strings.Contains(body, `"headers":[["null",null],["empty",""]]`) {
		t.Fatalf("read = %d %s, want the null header value as null and the empty one as \"\"", code, body)
	}
	var res ReadJSON
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if h := res.Records[0].Headers; h[0].Header().Value != nil || h[1].Header().Value == nil {
		t.Errorf("decoded headers %+v %+v: want a nil and an empty value", h[0].Header(), h[1].Header())
	}
}

// A partition number beyond int32 must not wrap around: partition
// 4294967296 is a 400, not partition 0 (queryInt's own rule: a typo must
// not read from somewhere else than asked).
func TestREST_Records_PartitionBeyondInt32(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(t.Context(), "t", 0, []tlog.Record{{Value: []byte("in-partition-0")}}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/topics/t/partitions/4294967296/records", "/topics/t/partitions/4294967296/offsets", "/topics/t/partitions/4294967296/offsets?timestamp=0"} {
		code, body := call(t, srv, "GET", path, "")
		if code != 400 || !strings.Contains(body, `partition \"4294967296\" is not a partition number`) {
			t.Errorf("GET %s: %d %s; want 400 (partition 4294967296 does not exist; this is partition 0)", path, code, body)
		}
	}
}

// TestREST_Records_Base64KeepsBytes: with ?encoding=base64 the record
// endpoints carry keys, values and header values byte for byte (bytes that
// are not UTF-8 included), null stays null and "" stays empty; the default
// text encoding keeps its JSON strings.
func TestREST_Records_Base64KeepsBytes(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	const key, value, hval = "k\xff", "caf\xe9 \x00\x80", "\xfe"
	body := fmt.Sprintf(`{"records":[{"partition":0,"key":%q,"value":%q,"headers":[["h",%q],["n",null]]},{"partition":0,"key":null,"value":""}]}`, b64(key), b64(value), b64(hval))
	code, ans := call(t, srv, "POST", "/topics/t/records?encoding=base64", body)
	var ack ProducedJSON
	if code != 200 || json.Unmarshal([]byte(ans), &ack) != nil || ack != (ProducedJSON{Acknowledged: 2, Encoding: EncodingBase64}) {
		t.Fatalf("produce = %d %s, want 200 acknowledging 2 in base64", code, ans)
	}
	res, err := l.Read(t.Context(), "t", 0, 0, tlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 2 {
		t.Fatalf("the log holds %d records, want 2", len(res.Records))
	}
	r0, r1 := res.Records[0], res.Records[1]
	if string(r0.Key) != key || string(r0.Value) != value || len(r0.Headers) != 2 || string(r0.Headers[0].Value) != hval || r0.Headers[1].Value != nil {
		t.Errorf("stored %q %q %+v, want %q %q and headers h=%q, n=null", r0.Key, r0.Value, r0.Headers, key, value, hval)
	}
	if r1.Key != nil || r1.Value == nil || len(r1.Value) != 0 {
		t.Errorf("stored key %v value %v, want a null key and an empty value", r1.Key, r1.Value)
	}

	code, ans = call(t, srv, "GET", "/topics/t/partitions/0/records?encoding=base64", "")
	var got ReadJSON
	if code != 200 || json.Unmarshal([]byte(ans), &got) != nil || len(got.Records) != 2 || got.Encoding != EncodingBase64 {
		t.Fatalf("read = %d %s, want the two records in base64", code, ans)
	}
	g0, g1 := got.Records[0], got.Records[1]
	if *g0.Key != b64(key) || *g0.Value != b64(value) || *g0.Headers[0][0] != "h" || *g0.Headers[0][1] != b64(hval) || g0.Headers[1][1] != nil {
		t.Errorf("read %s, want key, value and header value in base64, header names as text", ans)
	}
	if g1.Key != nil || g1.Value == nil || *g1.Value != "" {
		t.Errorf("read %s, want a null key and an empty value", ans)
	}

	// The default stays text: readable, though not byte-exact.
	code, ans = call(t, srv, "GET", "/topics/t/partitions/0/records?encoding=text", "")
	if code != 200 || !strings.Contains(ans, `"value":"caf\ufffd \u0000\ufffd"`) || !strings.Contains(ans, `"encoding":"text"`) {
		t.Errorf("read as text = %d %s, want the value as a JSON string", code, ans)
	}
}

// TestREST_Records_BadEncodingIs400: an unknown encoding, or a record that
// is not base64 under encoding=base64, is a 400 naming it, and nothing of
// the request is produced.
func TestREST_Records_BadEncodingIs400(t *testing.T) {
	srv, _, _, l := newTestServerLog(t)
	if err := l.CreateTopic("t", 1, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/topics/t/partitions/0/records?encoding=binary", "", `encoding=\"binary\"`},
		{"POST", "/topics/t/records?encoding=hex", `{"records":[{"value":"YQ=="}]}`, `encoding=\"hex\"`},
		{"POST", "/topics/t/records?encoding=base64", `{"records":[{"value":"YQ=="},{"value":"not base64!"}]}`, `records[1]: value: not standard base64`},
		{"POST", "/topics/t/records?encoding=base64", `{"records":[{"value":"YQ==","headers":[["h","??"]]}]}`, `records[0]: value of header \"h\": not standard base64`},
	} {
		code, body := call(t, srv, c.method, c.path, c.body)
		var e apiError
		if code != 400 || json.Unmarshal([]byte(body), &e) != nil || e.ErrorCode != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s = %d %s, want 400 containing %s", c.method, c.path, c.body, code, body, c.want)
		}
	}
	if _, end, err := l.Offsets("t", 0); err != nil || end != 0 {
		t.Errorf("log end offset after refused produces = %d (%v), want 0", end, err)
	}
}

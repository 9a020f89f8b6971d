package httptrack

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite generated docs")

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	goleak.VerifyTestMain(m)
}

const testKey = "wk-test"

// harness runs a Source on 127.0.0.1:0 and a worker loop driving it as
// the engine does: Read, "append" (keep the records), Ack the last
// position.
type harness struct {
	t      *testing.T
	src    *Source
	url    string
	client *http.Client

	refuse atomic.Bool // the "log" refuses: read records are not acked
	// hold: read records are appended to held (durable in the "log") but
	// their position is neither stored nor acked, as when the worker
	// crashes between its append and its position store.
	hold atomic.Bool
	// announce: with hold, held records are announced with Durable (the
	// worker crashes after Durable, before its position store).
	announce atomic.Bool
	// slowAcks is how many of the next batches are acked only after
	// ackDelay, as when the log is slow to fsync.
	slowAcks atomic.Int32
	ackDelay time.Duration

	mu      sync.Mutex
	recs    []connect.Record // durable records, in order
	held    []connect.Record // durable records whose position was never stored
	lastPos connect.Position // the last stored position

	ctx     context.Context // of the worker loop
	running bool            // run was called
	cancel  context.CancelFunc
	done    chan struct{}
}

func start(t *testing.T, values map[string]string, pos connect.Position) *harness {
	t.Helper()
	h := open(t, values, pos)
	h.run()
	return h
}

// open opens a Source as start does, without the worker loop: run starts
// it.
func open(t *testing.T, values map[string]string, pos connect.Position) *harness {
	t.Helper()
	v := map[string]string{"listen": "127.0.0.1:0", "write.keys": testKey}
	for k, x := range values {
		v[k] = x
	}
	src := Connector().NewSource().(*Source)
	cfg := connect.Config{Pipeline: "p", Connector: "web", Values: v, Spec: Connector().Spec, Position: pos}
	if err := src.Open(t.Context(), cfg); err != nil {
		t.Fatalf("open: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{
		t: t, src: src, url: "http://" + src.Addr().String(), cancel: cancel, done: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second},
	}
	h.ctx = ctx
	t.Cleanup(h.stop)
	return h
}

// run starts the worker loop.
func (h *harness) run() {
	h.running = true
	go h.work(h.ctx)
}

func (h *harness) work(ctx context.Context) {
	defer close(h.done)
	for {
		recs, err := h.src.Read(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			h.t.Errorf("read: %v", err)
			return
		}
		if len(recs) == 0 || h.refuse.Load() {
			continue
		}
		var pos connect.Position
		for _, r := range recs {
			if r.Position != nil {
				pos = r.Position
			}
		}
		if h.hold.Load() {
			h.mu.Lock()
			h.held = append(h.held, recs...)
			h.mu.Unlock()
			if h.announce.Load() && pos != nil {
				if err := h.src.Durable(ctx, pos); err != nil {
					h.t.Errorf("durable: %v", err)
				}
			}
			continue
		}
		h.mu.Lock()
		h.recs = append(h.recs, recs...)
		if pos != nil {
			h.lastPos = pos
		}
		h.mu.Unlock()
		if h.slowAcks.Add(-1) >= 0 {
			time.Sleep(h.ackDelay)
		}
		if pos != nil {
			if err := h.src.Ack(ctx, pos); err != nil {
				h.t.Errorf("ack: %v", err)
			}
		}
	}
}

// stop stops the worker and closes the source; it is safe to call twice.
func (h *harness) stop() {
	if h.cancel == nil {
		return
	}
	h.cancel()
	if h.running {
		<-h.done
	}
	if err := h.src.Close(context.Background()); err != nil {
		h.t.Errorf("close: %v", err)
	}
	h.client.CloseIdleConnections()
	h.cancel = nil
}

func (h *harness) records() []connect.Record {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]connect.Record(nil), h.recs...)
}

func (h *harness) position() connect.Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastPos
}

// answer is an HTTP answer, decoded.
type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

// errorAt returns the index, field and code of the answer's i-th error.
func (a answer) errorAt(i int) (int, string, string, string) {
	errs, _ := a.body["errors"].([]any)
	if i >= len(errs) {
		return -2, "", "", ""
	}
	e := errs[i].(map[string]any)
	field, _ := e["field"].(string)
	return int(e["index"].(float64)), field, e["code"].(string), e["message"].(string)
}

// post sends body to path with the given headers; "auth" in hdr is a write
// key to send as Basic auth.
func (h *harness) post(path, body string, hdr map[string]string) answer {
	h.t.Helper()
	return h.do(http.MethodPost, path, strings.NewReader(body), hdr)
}

func (h *harness) do(method, path string, body io.Reader, hdr map[string]string) answer {
	h.t.Helper()
	req, err := http.NewRequest(method, h.url+path, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "auth" {
			req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(v+":")))
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	json.Unmarshal(raw, &a.body)
	return a
}

var auth = map[string]string{"auth": testKey}

func wantStatus(t *testing.T, a answer, want int) {
	t.Helper()
	if a.status != want {
		t.Fatalf("status %d, want %d; body %s", a.status, want, a.raw)
	}
}

func value(t *testing.T, r connect.Record) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("record value is not JSON: %v: %s", err, r.Value)
	}
	return v
}

func TestEndpoints(t *testing.T) {
	h := start(t, nil, nil)
	cases := []struct{ path, typ, body string }{
		{"/v1/track", "track", `{"userId":"u1","event":"Signed Up"}`},
		{"/v1/identify", "identify", `{"userId":"u1","traits":{"plan":"pro"}}`},
		{"/v1/page", "page", `{"anonymousId":"a1","name":"Home"}`},
		{"/v1/screen", "screen", `{"userId":"u1","name":"Settings"}`},
		{"/v1/group", "group", `{"userId":"u1","groupId":"g1"}`},
		{"/v1/alias", "alias", `{"userId":"u1","previousId":"a1"}`},
		{"/v1/t", "track", `{"userId":"u2","event":"Clicked"}`},
		{"/v1/i", "identify", `{"userId":"u2"}`},
		{"/v1/p", "page", `{"userId":"u2"}`},
		{"/v1/s", "screen", `{"userId":"u2"}`},
		{"/v1/g", "group", `{"userId":"u2","groupId":"g2"}`},
		{"/v1/a", "alias", `{"userId":"u2","previousId":"a2"}`},
		{"/v1/batch", "track", `{"batch":[{"type":"track","userId":"u3","event":"A"}]}`},
		{"/v1/import", "identify", `{"batch":[{"type":"identify","userId":"u3"}]}`},
		{"/v1/b", "page", `{"batch":[{"type":"page","userId":"u3"}]}`},
	}
	for _, c := range cases {
		a := h.post(c.path, c.body, auth)
		if a.status != 200 || a.raw != `{"success":true}` {
			t.Errorf("POST %s: %d %s", c.path, a.status, a.raw)
		}
	}
	recs := h.records()
	if len(recs) != len(cases) {
		t.Fatalf("%d records, want %d", len(recs), len(cases))
	}
	for i, c := range cases {
		v := value(t, recs[i])
		if v["type"] != c.typ {
			t.Errorf("%s: type %v, want %s", c.path, v["type"], c.typ)
		}
		if recs[i].Topic != "" {
			t.Errorf("%s: topic %q, want the pipeline's (empty)", c.path, recs[i].Topic)
		}
	}
	if k := string(recs[2].Key); k != "a1" {
		t.Errorf("page by anonymousId: key %q, want a1", k)
	}
	if k := string(recs[0].Key); k != "u1" {
		t.Errorf("track: key %q, want u1", k)
	}

	if a := h.do(http.MethodGet, "/health", nil, nil); a.status != 200 || a.body["status"] != "healthy" {
		t.Errorf("GET /health: %d %s", a.status, a.raw)
	}
	if a := h.do(http.MethodGet, "/v1/track", nil, auth); a.status != 405 || a.header.Get("Allow") == "" {
		t.Errorf("GET /v1/track: %d %s, want 405 with Allow", a.status, a.raw)
	}
	if a := h.post("/v2/track", `{}`, auth); a.status != 404 {
		t.Errorf("POST /v2/track: %d, want 404", a.status)
	}
	m := h.do(http.MethodGet, "/metrics", nil, nil)
	if !strings.Contains(m.raw, `tributary_httptrack_events_total{key="1"} 15`) || !strings.Contains(m.raw, `tributary_httptrack_requests_total{key="1",code="200"} 15`) {
		t.Errorf("metrics do not count the 15 events:\n%s", m.raw)
	}
}

func TestAuth(t *testing.T) {
	h := start(t, map[string]string{"write.keys": "k1, k2:mobile.events"}, nil)
	const msg = `{"userId":"u","event":"E"%s}`
	cases := []struct {
		name string
		body string
		hdr  map[string]string
		want int
	}{
		{"basic", fmt.Sprintf(msg, ""), map[string]string{"auth": "k1"}, 200},
		{"body", fmt.Sprintf(msg, `,"writeKey":"k1"`), nil, 200},
		{"both", fmt.Sprintf(msg, `,"writeKey":"k1"`), map[string]string{"auth": "k1"}, 200},
		{"header wins", fmt.Sprintf(msg, `,"writeKey":"k1"`), map[string]string{"auth": "nope"}, 401},
		{"missing", fmt.Sprintf(msg, ""), nil, 401},
		{"wrong body key", fmt.Sprintf(msg, `,"writeKey":"k3"`), nil, 401},
		{"bearer", fmt.Sprintf(msg, ""), map[string]string{"Authorization": "Bearer k1"}, 401},
		// A token of another scheme (a proxy's, an OAuth one) holds no
		// write key of ours: the body's key authenticates.
		{"bearer and body key", fmt.Sprintf(msg, `,"writeKey":"k1"`), map[string]string{"Authorization": "Bearer proxy-token"}, 200},
		{"missing, invalid JSON", `{"userId":`, nil, 401},
		{"routed key", fmt.Sprintf(msg, ""), map[string]string{"auth": "k2"}, 200},
	}
	for _, c := range cases {
		a := h.post("/v1/track", c.body, c.hdr)
		if a.status != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, a.status, a.raw, c.want)
		}
		if c.want == 401 {
			if _, field, code, _ := a.errorAt(0); field != "writeKey" || code != "invalid_write_key" {
				t.Errorf("%s: error %s, want writeKey invalid_write_key", c.name, a.raw)
			}
		}
	}
	recs := h.records()
	if len(recs) != 5 {
		t.Fatalf("%d records, want 5", len(recs))
	}
	for _, r := range recs {
		if bytes.Contains(r.Value, []byte("writeKey")) || bytes.Contains(r.Value, []byte("k1")) {
			t.Errorf("the write key is stored: %s", r.Value)
		}
	}
	if recs[4].Topic != "mobile.events" || recs[0].Topic != "" {
		t.Errorf("topics %q, %q; want \"\" and mobile.events", recs[0].Topic, recs[4].Topic)
	}
	if a := h.post("/v1/track", fmt.Sprintf(msg, ""), map[string]string{"Authorization": "Bearer k1"}); !strings.Contains(a.raw, "not HTTP Basic") {
		t.Errorf("a Bearer header without a body key: %s, want the answer to say the header is not HTTP Basic", a.raw)
	}
}

func TestValidation(t *testing.T) {
	h := start(t, nil, nil)
	cases := []struct {
		name, path, body   string
		index              int
		field, code, inMsg string
	}{
		{"not JSON", "/v1/track", `{"userId":`, -1, "", "invalid_json", "not a JSON object"},
		{"array", "/v1/track", `[1]`, -1, "", "invalid_json", "not a JSON object"},
		{"no user", "/v1/track", `{"event":"E"}`, 0, "userId", "no_user_anon_id", `neither "userId" nor "anonymousId"`},
		{"empty user", "/v1/identify", `{"userId":""}`, 0, "userId", "no_user_anon_id", "identify message"},
		{"user is object", "/v1/identify", `{"userId":{}}`, 0, "userId", "invalid_field", "want a string or a number"},
		{"no event", "/v1/track", `{"userId":"u"}`, 0, "event", "missing_event", `track without "event"`},
		{"event not string", "/v1/track", `{"userId":"u","event":5}`, 0, "event", "invalid_field", "non-empty string"},
		{"no groupId", "/v1/group", `{"userId":"u"}`, 0, "groupId", "missing_group_id", `group without "groupId"`},
		{"no previousId", "/v1/alias", `{"userId":"u"}`, 0, "previousId", "missing_previous_id", `alias without "previousId"`},
		{"alias no userId", "/v1/alias", `{"anonymousId":"a","previousId":"p"}`, 0, "userId", "missing_user_id", `alias without "userId"`},
		{"long messageId", "/v1/track", `{"userId":"u","event":"E","messageId":"` + strings.Repeat("m", 100) + `"}`, 0, "messageId", "message_id_too_long", "shorter than 100"},
		{"bad timestamp", "/v1/track", `{"userId":"u","event":"E","timestamp":"yesterday"}`, 0, "timestamp", "invalid_timestamp", "ISO-8601"},
		{"properties not object", "/v1/track", `{"userId":"u","event":"E","properties":[1]}`, 0, "properties", "invalid_field", "want an object"},
		{"context not object", "/v1/page", `{"userId":"u","context":"x"}`, 0, "context", "invalid_field", "want an object"},
		{"no batch", "/v1/batch", `{"writeKey":"x"}`, -1, "batch", "missing_batch", `no "batch"`},
		{"empty batch", "/v1/batch", `{"batch":[]}`, -1, "batch", "empty_batch", `"batch" is empty`},
		{"batch not array", "/v1/batch", `{"batch":{}}`, -1, "batch", "invalid_batch", "not an array"},
		{"batch item no type", "/v1/batch", `{"batch":[{"userId":"u"}]}`, 0, "type", "missing_type", `batch[0] has no "type"`},
		{"batch item bad type", "/v1/batch", `{"batch":[{"userId":"u","event":"E","type":"tarck"}]}`, 0, "type", "invalid_type", `batch[0] has "type" "tarck"`},
		{"batch item not object", "/v1/batch", `{"batch":[7]}`, 0, "", "invalid_message", "batch[0] is not a JSON object"},
		{"batch item no event", "/v1/batch", `{"batch":[{"type":"track","userId":"u"}]}`, 0, "event", "missing_event", `batch[0] is a track without "event"`},
		{"batch sentAt", "/v1/batch", `{"batch":[],"sentAt":5}`, -1, "sentAt", "invalid_timestamp", "sentAt"},
		{"bad gzip", "/v1/track", `not gzip`, -1, "", "invalid_gzip", "not gzip"},
	}
	for _, c := range cases {
		hdr := map[string]string{"auth": testKey}
		if c.name == "bad gzip" {
			hdr["Content-Encoding"] = "gzip"
		}
		a := h.post(c.path, c.body, hdr)
		if a.status != 400 {
			t.Errorf("%s: %d %s, want 400", c.name, a.status, a.raw)
			continue
		}
		index, field, code, msg := a.errorAt(0)
		if index != c.index || field != c.field || code != c.code || !strings.Contains(msg, c.inMsg) {
			t.Errorf("%s: error (index %d, field %q, code %q, %q), want (%d, %q, %q, containing %q)", c.name, index, field, code, msg, c.index, c.field, c.code, c.inMsg)
		}
		if a.body["success"] != false || a.body["message"] == "" {
			t.Errorf("%s: body %s lacks success:false and a message", c.name, a.raw)
		}
	}
	if n := len(h.records()); n != 0 {
		t.Errorf("%d records stored from invalid requests", n)
	}
	// Numeric ids are accepted and become strings, as with Segment.
	wantStatus(t, h.post("/v1/identify", `{"userId":42}`, auth), 200)
	if v := value(t, h.records()[0]); v["userId"] != "42" {
		t.Errorf("numeric userId became %v, want \"42\"", v["userId"])
	}
}

// TestBatch_OneBad checks the documented choice: the good messages of a
// batch are accepted (and durable) and the answer is 400 listing the bad
// one, so that an SDK does not retry the batch.
func TestBatch_OneBad(t *testing.T) {
	h := start(t, nil, nil)
	body := `{"batch":[
		{"type":"track","userId":"u1","event":"A","messageId":"m1"},
		{"type":"track","userId":"u1","messageId":"m2"},
		{"type":"identify","anonymousId":"a","messageId":"m3"}]}`
	a := h.post("/v1/batch", body, auth)
	wantStatus(t, a, 400)
	if a.body["accepted"] != 2.0 || a.body["rejected"] != 1.0 {
		t.Errorf("accepted/rejected %v/%v, want 2/1: %s", a.body["accepted"], a.body["rejected"], a.raw)
	}
	if index, field, code, msg := a.errorAt(0); index != 1 || field != "event" || code != "missing_event" || !strings.Contains(msg, "batch[1]") {
		t.Errorf("error %d %q %q %q, want batch[1] event missing_event", index, field, code, msg)
	}
	recs := h.records()
	if len(recs) != 2 || value(t, recs[0])["messageId"] != "m1" || value(t, recs[1])["messageId"] != "m3" {
		t.Fatalf("records %d, want m1 and m3", len(recs))
	}
}

func TestSizeLimits(t *testing.T) {
	h := start(t, map[string]string{"max.batch.events": "10"}, nil)
	pad := func(n int) string { return strings.Repeat("x", n) }
	big := `{"userId":"u","event":"E","properties":{"p":"` + pad(33<<10) + `"}}`
	a := h.post("/v1/track", big, auth)
	wantStatus(t, a, 400)
	if _, _, code, _ := a.errorAt(0); code != "request_too_large" {
		t.Errorf("oversize message: code %q, want request_too_large", code)
	}
	// A batch item over 32 KiB is rejected alone.
	item := `{"type":"track","userId":"u","event":"E","properties":{"p":"` + pad(33<<10) + `"}}`
	a = h.post("/v1/batch", `{"batch":[`+item+`,{"type":"track","userId":"u","event":"ok"}]}`, auth)
	wantStatus(t, a, 400)
	if index, _, code, _ := a.errorAt(0); index != 0 || code != "message_too_large" || a.body["accepted"] != 1.0 {
		t.Errorf("oversize item: %s", a.raw)
	}
	// A batch body over 500 KiB.
	items := make([]string, 20)
	for i := range items {
		items[i] = `{"type":"track","userId":"u","event":"E","properties":{"p":"` + pad(30<<10) + `"}}`
	}
	a = h.post("/v1/batch", `{"batch":[`+strings.Join(items, ",")+`]}`, auth)
	wantStatus(t, a, 400)
	if _, _, code, _ := a.errorAt(0); code != "request_too_large" {
		t.Errorf("oversize batch: %s", a.raw)
	}
	// More events than max.batch.events.
	small := strings.TrimSuffix(strings.Repeat(`{"type":"track","userId":"u","event":"E"},`, 11), ",")
	a = h.post("/v1/batch", `{"batch":[`+small+`]}`, auth)
	wantStatus(t, a, 400)
	if _, field, code, msg := a.errorAt(0); field != "batch" || code != "too_many_events" || !strings.Contains(msg, "11 messages") {
		t.Errorf("too many events: %s", a.raw)
	}
	// A gzip bomb: small compressed, huge decompressed.
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(`{"batch":[` + strings.Repeat(" ", 10<<20) + `]}`))
	zw.Close()
	a = h.do(http.MethodPost, "/v1/batch", &zb, map[string]string{"auth": testKey, "Content-Encoding": "gzip"})
	wantStatus(t, a, 400)
	if len(h.records()) != 1 {
		t.Errorf("%d records, want the 1 good batch item", len(h.records()))
	}
}

func TestGzipAndContentTypes(t *testing.T) {
	h := start(t, nil, nil)
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(`{"batch":[{"type":"track","userId":"u","event":"Zipped"}],"writeKey":"` + testKey + `"}`))
	zw.Close()
	a := h.do(http.MethodPost, "/v1/batch", &zb, map[string]string{"Content-Encoding": "gzip", "Content-Type": "application/json"})
	wantStatus(t, a, 200)
	// analytics.js sends JSON as text/plain.
	wantStatus(t, h.post("/v1/t", `{"userId":"u","event":"Plain","writeKey":"`+testKey+`"}`, map[string]string{"Content-Type": "text/plain"}), 200)
	wantStatus(t, h.post("/v1/t", `{"userId":"u","event":"None"}`, map[string]string{"auth": testKey, "Content-Type": ""}), 200)
	a = h.post("/v1/t", `{"userId":"u","event":"E"}`, map[string]string{"auth": testKey, "Content-Encoding": "br"})
	wantStatus(t, a, 400)
	recs := h.records()
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3", len(recs))
	}
	for i, want := range []string{"Zipped", "Plain", "None"} {
		if got := value(t, recs[i])["event"]; got != want {
			t.Errorf("record %d event %v, want %s", i, got, want)
		}
	}
}

func TestEnrichment(t *testing.T) {
	h := start(t, map[string]string{"trusted.proxy.header": "X-Forwarded-For"}, nil)
	before := time.Now().UTC()
	// The device clock is 1h fast: it stamps the event at 10:00:00 and
	// sends it at 10:00:05; the server receives it "now".
	body := `{"batch":[
		{"type":"track","userId":"u","event":"Skewed","timestamp":"2030-01-01T10:00:00.000Z","context":{"locale":"de"}},
		{"type":"track","userId":"u","event":"NoTime","messageId":"given","context":{"ip":"10.9.9.9"}}],
		"sentAt":"2030-01-01T10:00:05.000Z","context":{"library":{"name":"test"},"locale":"en"}}`
	wantStatus(t, h.post("/v1/batch", body, auth), 200)
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"Proxied"}`, map[string]string{"auth": testKey, "X-Forwarded-For": "203.0.113.7, 198.51.100.1"}), 200)
	after := time.Now().UTC()

	recs := h.records()
	v := value(t, recs[0])
	id, _ := v["messageId"].(string)
	if !strings.HasPrefix(id, "api-") || len(id) != 40 {
		t.Errorf("generated messageId %q, want api-<uuid>", id)
	}
	received, err := time.Parse(time.RFC3339, v["receivedAt"].(string))
	if err != nil || received.Before(before.Truncate(time.Millisecond)) || received.After(after) {
		t.Errorf("receivedAt %v not between %v and %v", v["receivedAt"], before, after)
	}
	ts, _ := time.Parse(time.RFC3339, v["timestamp"].(string))
	if want := received.Add(-5 * time.Second); !ts.Equal(want) {
		t.Errorf("timestamp %v, want receivedAt - (sentAt - originalTimestamp) = %v", ts, want)
	}
	if !recs[0].Timestamp.Equal(ts) {
		t.Errorf("record timestamp %v, want %v", recs[0].Timestamp, ts)
	}
	if v["originalTimestamp"] != "2030-01-01T10:00:00.000Z" || v["sentAt"] != "2030-01-01T10:00:05.000Z" {
		t.Errorf("originalTimestamp %v sentAt %v, want the client's", v["originalTimestamp"], v["sentAt"])
	}
	ctx := v["context"].(map[string]any)
	if ctx["ip"] != "127.0.0.1" || ctx["locale"] != "de" || ctx["library"] == nil {
		t.Errorf("context %v: want ip from the peer, the item's locale over the batch's, the batch's library", ctx)
	}

	v = value(t, recs[1])
	if v["messageId"] != "given" || v["context"].(map[string]any)["ip"] != "10.9.9.9" {
		t.Errorf("a client's messageId and context.ip are kept: %s", recs[1].Value)
	}
	if v["timestamp"] != v["receivedAt"] {
		t.Errorf("without a client timestamp, timestamp %v, want receivedAt %v", v["timestamp"], v["receivedAt"])
	}
	v = value(t, recs[2])
	if ip := v["context"].(map[string]any)["ip"]; ip != "198.51.100.1" {
		t.Errorf("context.ip %v behind the trusted proxy, want the entry the proxy added: 198.51.100.1", ip)
	}
}

func TestDedup(t *testing.T) {
	h := start(t, nil, nil)
	msg := `{"userId":"u","event":"E","messageId":"%s"}`
	for _, id := range []string{"m1", "m2", "m1", "m1"} {
		wantStatus(t, h.post("/v1/track", fmt.Sprintf(msg, id), auth), 200)
	}
	wantStatus(t, h.post("/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E","messageId":"m3"},{"type":"track","userId":"u","event":"E","messageId":"m3"},{"type":"track","userId":"u","event":"E","messageId":"m2"}]}`, auth), 200)
	// Another write key may reuse an id.
	var ids []string
	for _, r := range h.records() {
		ids = append(ids, value(t, r)["messageId"].(string))
	}
	if got := strings.Join(ids, ","); got != "m1,m2,m3" {
		t.Errorf("records %s, want m1,m2,m3", got)
	}
}

func TestDedup_Window(t *testing.T) {
	h := start(t, map[string]string{"dedup.window": "200ms"}, nil)
	msg := `{"userId":"u","event":"E","messageId":"m1"}`
	wantStatus(t, h.post("/v1/track", msg, auth), 200)
	wantStatus(t, h.post("/v1/track", msg, auth), 200)
	time.Sleep(250 * time.Millisecond)
	wantStatus(t, h.post("/v1/track", msg, auth), 200)
	if n := len(h.records()); n != 2 {
		t.Errorf("%d records, want 2 (a repeat after the window is new)", n)
	}
}

// TestDedup_Restart checks that the messageIds of durable requests are
// remembered after a restart, and those of requests that never became
// durable are not (their clients got 503 and retry).
func TestDedup_Restart(t *testing.T) {
	dir := t.TempDir()
	values := map[string]string{"state.dir": dir, "ack.timeout": "300ms"}
	msg := `{"userId":"u","event":"E","messageId":"%s"}`
	h := start(t, values, nil)
	wantStatus(t, h.post("/v1/track", fmt.Sprintf(msg, "durable-1"), auth), 200)
	wantStatus(t, h.post("/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E","messageId":"durable-2"}]}`, auth), 200)
	pos := h.position()
	h.refuse.Store(true) // the log stops acknowledging
	a := h.post("/v1/track", fmt.Sprintf(msg, "lost"), auth)
	wantStatus(t, a, 503)
	if a.header.Get("Retry-After") == "" {
		t.Error("503 without Retry-After")
	}
	h.stop()

	h2 := start(t, values, pos)
	for _, id := range []string{"durable-1", "durable-2", "lost", "new"} {
		wantStatus(t, h2.post("/v1/track", fmt.Sprintf(msg, id), auth), 200)
	}
	var ids []string
	for _, r := range h2.records() {
		ids = append(ids, value(t, r)["messageId"].(string))
	}
	if got := strings.Join(ids, ","); got != "lost,new" {
		t.Errorf("after restart the records are %s, want lost,new", got)
	}
	// And once more, from the new position: all four are remembered.
	pos = h2.position()
	h2.stop()
	h3 := start(t, values, pos)
	for _, id := range []string{"durable-1", "lost", "new"} {
		wantStatus(t, h3.post("/v1/track", fmt.Sprintf(msg, id), auth), 200)
	}
	if n := len(h3.records()); n != 0 {
		t.Errorf("%d records after the second restart, want 0", n)
	}
}

// TestDedup_Pending checks that a retry of a message whose first request
// is not yet durable waits for it rather than answering 200 at once.
func TestDedup_Pending(t *testing.T) {
	h := start(t, map[string]string{"ack.timeout": "300ms"}, nil)
	h.refuse.Store(true)
	msg := `{"userId":"u","event":"E","messageId":"m"}`
	wantStatus(t, h.post("/v1/track", msg, auth), 503)
	wantStatus(t, h.post("/v1/track", msg, auth), 503) // the duplicate is not durable either
}

func TestRateLimit(t *testing.T) {
	h := start(t, map[string]string{"rate.limit": "5"}, nil)
	batch := `{"batch":[` + strings.TrimSuffix(strings.Repeat(`{"type":"track","userId":"u","event":"E"},`, 4), ",") + `]}`
	wantStatus(t, h.post("/v1/batch", batch, auth), 200)
	a := h.post("/v1/batch", batch, auth)
	wantStatus(t, a, 429)
	if ra := a.header.Get("Retry-After"); ra != "1" {
		t.Errorf("Retry-After %q, want 1", ra)
	}
	if _, _, code, _ := a.errorAt(0); code != "rate_limited" {
		t.Errorf("code %q, want rate_limited", code)
	}
	if n := len(h.records()); n != 4 {
		t.Errorf("%d records, want 4", n)
	}
}

func TestCORS(t *testing.T) {
	h := start(t, map[string]string{"cors.origins": "https://shop.example.com"}, nil)
	a := h.do(http.MethodOptions, "/v1/t", nil, map[string]string{
		"Origin": "https://shop.example.com", "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"})
	if a.status != 204 || a.header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" ||
		!strings.Contains(a.header.Get("Access-Control-Allow-Methods"), "POST") || a.header.Get("Access-Control-Allow-Headers") != "content-type" {
		t.Errorf("preflight: %d %v", a.status, a.header)
	}
	a = h.do(http.MethodOptions, "/v1/t", nil, map[string]string{"Origin": "https://evil.example.net", "Access-Control-Request-Method": "POST"})
	if a.status != 403 || a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %d %v", a.status, a.header)
	}
	a = h.post("/v1/t", `{"userId":"u","event":"E","writeKey":"`+testKey+`"}`, map[string]string{"Origin": "https://shop.example.com", "Content-Type": "text/plain"})
	if a.status != 200 || a.header.Get("Access-Control-Allow-Origin") != "https://shop.example.com" {
		t.Errorf("POST with Origin: %d %v", a.status, a.header)
	}
	// A simple (text/plain) POST from another site, which browsers send
	// without a preflight, is refused too, and stores nothing.
	n := len(h.records())
	a = h.post("/v1/t", `{"userId":"u","event":"Evil","writeKey":"`+testKey+`"}`, map[string]string{"Origin": "https://evil.example.net", "Content-Type": "text/plain"})
	if _, _, code, _ := a.errorAt(0); a.status != 403 || code != "origin_not_allowed" || a.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("POST from another origin: %d %s %v", a.status, a.raw, a.header)
	}
	// A page this host served itself is not cross-origin; a server-side
	// SDK sends no Origin.
	a = h.post("/v1/t", `{"userId":"u","event":"Own","writeKey":"`+testKey+`"}`, map[string]string{"Origin": h.url, "Content-Type": "text/plain"})
	wantStatus(t, a, 200)
	wantStatus(t, h.post("/v1/t", `{"userId":"u","event":"Server","writeKey":"`+testKey+`"}`, nil), 200)
	if got := len(h.records()) - n; got != 2 {
		t.Errorf("%d records stored after the refused POST and two accepted ones, want 2", got)
	}
}

// TestUnavailable checks 503 with Retry-After when the log does not
// acknowledge in time and when too much is waiting (backpressure).
func TestUnavailable(t *testing.T) {
	h := start(t, map[string]string{"ack.timeout": "200ms", "max.pending.bytes": "1KiB"}, nil)
	h.refuse.Store(true)
	a := h.post("/v1/track", `{"userId":"u","event":"E"}`, auth)
	wantStatus(t, a, 503)
	if a.header.Get("Retry-After") != "1" {
		t.Errorf("Retry-After %q, want 1", a.header.Get("Retry-After"))
	}
	h.stop() // the worker no longer reads: requests pile up

	h2 := start(t, map[string]string{"ack.timeout": "5s", "max.pending.bytes": "1KiB"}, nil)
	h2.cancel() // stop the worker but keep the server
	<-h2.done
	big := `{"userId":"u","event":"E","properties":{"p":"` + strings.Repeat("x", 2000) + `"}}`
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // fills the queue and waits
		defer wg.Done()
		h2.post("/v1/track", big, auth)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		h2.src.mu.Lock()
		n := len(h2.src.queue)
		h2.src.mu.Unlock()
		if n > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	a = h2.post("/v1/track", big, auth)
	wantStatus(t, a, 503)
	if _, _, code, _ := a.errorAt(0); code != "backpressure" || a.header.Get("Retry-After") == "" {
		t.Errorf("backpressure answer %s %v", a.raw, a.header)
	}
	// Close answers the waiting request 503 and stops.
	if err := h2.src.Close(context.Background()); err != nil {
		t.Error(err)
	}
	wg.Wait()
	h2.client.CloseIdleConnections()
	h2.cancel = nil
}

// TestOrder checks that one user's events keep their order: same key, and
// records in the order the requests were answered.
func TestOrder(t *testing.T) {
	h := start(t, nil, nil)
	const n = 30
	var wg sync.WaitGroup
	for u := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				a := h.post("/v1/track", fmt.Sprintf(`{"userId":"user-%d","event":"E","properties":{"i":%d}}`, u, i), auth)
				if a.status != 200 {
					t.Errorf("status %d", a.status)
				}
			}
		}()
	}
	wg.Wait()
	next := map[string]float64{}
	for _, r := range h.records() {
		v := value(t, r)
		u := string(r.Key)
		if i := v["properties"].(map[string]any)["i"].(float64); i != next[u] {
			t.Fatalf("%s: event %v, want %v", u, i, next[u])
		}
		next[u]++
	}
	if len(next) != 3 || next["user-0"] != n {
		t.Errorf("counts %v", next)
	}
}

// TestMalformed sends garbage and huge bodies: each gets a 4xx, none
// panics or is stored.
func TestMalformed(t *testing.T) {
	h := start(t, nil, nil)
	bodies := []string{
		"", "null", "{}", "[]", `"s"`, "{", `{"batch":null}`, `{"batch":[null]}`, `{"batch":[[]]}`,
		`{"batch":[{"type":null}]}`, `{"userId":"\ud800"}`, strings.Repeat("[", 100000), "\x00\xff\xfe",
		`{"userId":"u","event":"E","context":{"ip":` + strings.Repeat("[", 5000) + `}}`,
		strings.Repeat("a", 2<<20),
	}
	for _, path := range []string{"/v1/track", "/v1/batch"} {
		for _, b := range bodies {
			a := h.post(path, b, auth)
			if a.status < 400 || a.status >= 500 {
				t.Errorf("%s %.40q: %d %s", path, b, a.status, a.raw)
			}
		}
	}
	if n := len(h.records()); n != 0 {
		t.Errorf("%d records stored", n)
	}
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"listen": "127.0.0.1:0"}, "write.keys"},
		{map[string]string{"listen": "127.0.0.1:0", "write.keys": "k", "tls.cert": "c.pem"}, "tls.cert"},
		{map[string]string{"listen": "127.0.0.1:0", "write.keys": "k", "rate.limit": "-1"}, "rate.limit"},
		{map[string]string{"listen": "127.0.0.1:0", "write.keys": "k,k"}, "repeats"},
		{map[string]string{"listen": "256.0.0.1:0", "write.keys": "k"}, "listen on"},
		{map[string]string{"listen": "127.0.0.1:0", "write.keys": "k", "tls.cert": "/nonexistent.pem", "tls.key": "/nonexistent.key"}, "tls"},
	}
	for _, c := range cases {
		src := Connector().NewSource()
		err := src.Open(t.Context(), connect.Config{Values: c.values, Spec: Connector().Spec})
		if err == nil {
			src.Close(context.Background())
			t.Errorf("%v: opened", c.values)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want it to mention %s", c.values, err, c.want)
		}
		if strings.Contains(err.Error(), "wk-") {
			t.Errorf("error shows a key: %v", err)
		}
	}
	// The write keys are secret: masked in the config's printed form.
	cfg := connect.Config{Values: map[string]string{"write.keys": "s3cret"}, Spec: Connector().Spec}
	if s := fmt.Sprint(cfg); strings.Contains(s, "s3cret") {
		t.Errorf("config prints the key: %s", s)
	}
}

func TestAck_Contract(t *testing.T) {
	src := Connector().NewSource().(*Source)
	err := src.Open(t.Context(), connect.Config{Values: map[string]string{"listen": "127.0.0.1:0", "write.keys": "k"}, Spec: Connector().Spec, Position: connect.Position(`{"seq":7}`)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close(context.Background())
	if err := src.Ack(t.Context(), connect.Position(`{"seq":9}`)); err == nil {
		t.Error("ack of a position never given out succeeded")
	}
	if err := src.Ack(t.Context(), connect.Position(`{"nope":1}`)); err == nil {
		t.Error("ack of a malformed position succeeded")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := src.Read(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("idle read: %v, want the context's error", err)
	}
}

// TestParsePosition checks that positions round-trip through the fast
// path and that what is not {"seq":N} is refused as encoding/json would.
func TestParsePosition(t *testing.T) {
	for _, seq := range []uint64{0, 1, 9, 10, 123456789, math.MaxUint64} {
		got, err := parsePosition(position(seq))
		if err != nil || got != seq {
			t.Errorf("parsePosition(%s) = %d, %v; want %d", position(seq), got, err, seq)
		}
	}
	for _, ok := range []string{`{"seq": 7}`, `{ "seq":7 }`, `{"x":1,"seq":7}`} {
		if got, err := parsePosition(connect.Position(ok)); err != nil || got != 7 {
			t.Errorf("parsePosition(%s) = %d, %v; want 7", ok, got, err)
		}
	}
	for _, bad := range []string{``, `{}`, `{"seq":}`, `{"seq":-1}`, `{"seq":01}`, `{"seq":+1}`, `{"seq":1.5}`, `{"seq":18446744073709551616}`, `{"seq":"7"}`, `{"seq":7`} {
		if got, err := parsePosition(connect.Position(bad)); err == nil {
			t.Errorf("parsePosition(%s) = %d, want an error", bad, got)
		}
	}
}

package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite generated docs")

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fast are settings that keep retries quick in tests.
func fast(values map[string]string) map[string]string {
	out := map[string]string{"backoff.initial": "2ms", "backoff.max": "20ms", "timeout": "2s"}
	for k, v := range values {
		out[k] = v
	}
	return out
}

func open(t *testing.T, values map[string]string) *Sink {
	t.Helper()
	s := Connector().NewSink().(*Sink)
	cfg := connect.Config{Pipeline: "p", Connector: "crm", Values: spec().WithDefaults(values), Spec: spec()}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// received is one request a test receiver accepted.
type received struct {
	method string
	path   string // with the query
	header http.Header
	body   []byte
}

// receiver is an httptest server that answers with handle (nil: 200) and
// keeps the requests answered 2xx.
type receiver struct {
	srv    *httptest.Server
	handle func(w http.ResponseWriter, r *http.Request, body []byte) // writes an answer, or nothing for 200

	mu   sync.Mutex
	reqs []received
}

func newReceiver(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, body []byte)) *receiver {
	t.Helper()
	rc := &receiver{handle: handle}
	rc.srv = httptest.NewServer(rc)
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	rw := &statusRecorder{ResponseWriter: w, code: 200}
	if rc.handle != nil {
		rc.handle(rw, r, body)
	}
	if rw.code/100 != 2 || rw.hijacked {
		return
	}
	rc.mu.Lock()
	rc.reqs = append(rc.reqs, received{r.Method, r.URL.RequestURI(), r.Header.Clone(), body})
	rc.mu.Unlock()
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

type statusRecorder struct {
	http.ResponseWriter
	code     int
	hijacked bool
}

func (w *statusRecorder) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

// reset closes the connection without an answer.
func (w *statusRecorder) reset() {
	w.hijacked = true
	conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		conn.Close()
	}
}

// event is the value of the test records.
type event struct {
	Key string `json:"key"`
	Seq int    `json:"seq"`
}

// events returns n records of each of keys, the keys interleaved, with
// values {"key":…,"seq":…} (seq from 1 per key) and offsets from 0.
func events(keys []string, n int) []connect.Record {
	var out []connect.Record
	for seq := 1; seq <= n; seq++ {
		for _, k := range keys {
			v, _ := json.Marshal(event{k, seq})
			out = append(out, connect.Record{Topic: "crm.contacts", Partition: 0, Offset: int64(len(out)), Key: []byte(k), Value: v})
		}
	}
	return out
}

func keys(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("k%d", i)
	}
	return out
}

// writeLikeWorker writes recs as the worker does (engine/sink_task.go,
// write): on BadRecordAt(i) it checks with delivered that the records
// before i were delivered, dead-letters record i and writes the rest
// again. It returns the dead-lettered records' errors by offset.
func writeLikeWorker(t *testing.T, s *Sink, recs []connect.Record, delivered func(connect.Record) bool) map[int64]string {
	t.Helper()
	dead := map[int64]string{}
	for len(recs) > 0 {
		err := s.Write(t.Context(), recs)
		if err == nil {
			return dead
		}
		var bad *connect.BadRecordError
		if !errors.As(err, &bad) || bad.Index < 0 || bad.Index >= len(recs) {
			t.Fatalf("Write: %v, want nil or a BadRecordAt error", err)
		}
		for _, r := range recs[:bad.Index] {
			if delivered != nil && !delivered(r) {
				t.Fatalf("Write returned BadRecordAt(%d) but record at offset %d before it was not delivered", bad.Index, r.Offset)
			}
		}
		dead[recs[bad.Index].Offset] = err.Error()
		recs = recs[bad.Index+1:]
	}
	return dead
}

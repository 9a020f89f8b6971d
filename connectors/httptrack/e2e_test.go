//go:build unix

package httptrack_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/crashtest"
	tlog "github.com/tributary-io/tributary/log"
)

// The crash test re-executes its own test binary as a worker process: the
// child sees e2eChildEnv set to the test directory and e2eAddrEnv to the
// address to listen on; e2eSeedEnv replays the delays of an earlier run.
const (
	e2eChildEnv = "TRIBUTARY_HTTPTRACK_E2E_CHILD"
	e2eAddrEnv  = "TRIBUTARY_HTTPTRACK_E2E_ADDR"
	e2eSeedEnv  = "TRIBUTARY_HTTPTRACK_E2E_SEED"
)

const (
	e2eTopic      = "web.tracking"
	e2ePartitions = 3
	e2eSource     = "web"
	e2eKey        = "wk-e2e"
)

func e2eLogOptions(dir string, logger *slog.Logger) tlog.Options {
	return tlog.Options{Dir: filepath.Join(dir, "data"), NumPartitions: e2ePartitions, Logger: logger}
}

func e2eSpec(dir, addr string) engine.ConnectorSpec {
	return engine.ConnectorSpec{
		Pipeline: "e2e", Name: e2eSource, Kind: connect.KindSource, Connector: httptrack.Name, Topic: e2eTopic,
		Config: map[string]string{
			// The key uses the pipeline's topic: TailTopics names it "",
			// which the worker maps to the topic it configures.
			"listen": addr, "write.keys": e2eKey, "state.dir": filepath.Join(dir, "state"),
			"ack.timeout": "3s",
		},
	}
}

// startWorker runs the pipeline httptrack → log on dir: the embedded log,
// the worker and the source.
func startWorker(ctx context.Context, dir, addr string, logger *slog.Logger) (*engine.Worker, *tlog.Log, error) {
	l, err := tlog.Open(e2eLogOptions(dir, logger))
	if err != nil {
		return nil, nil, err
	}
	b := engine.NewEmbedded(l, logger)
	if err := b.EnsureTopic(ctx, e2eTopic, e2ePartitions, nil); err != nil {
		l.Close()
		return nil, nil, err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		l.Close()
		return nil, nil, err
	}
	if err := w.Start(ctx, e2eSpec(dir, addr), ""); err != nil {
		w.Shutdown(ctx)
		l.Close()
		return nil, nil, err
	}
	return w, l, nil
}

// TestE2E_SIGKILL runs the worker with httptrack → log in a child process
// and kills it with SIGKILL at random moments while clients post events
// with unique messageIds from several goroutines, retrying every request
// that was not answered 200 as the SDKs do (through the kills, until the
// next child answers). Some clients also resend requests that were already
// answered 200, as an SDK does when the answer is lost. At the end:
//
//   - every event answered 200 is in the topic (durable before 200);
//   - no messageId is in the topic twice: the resends of answered requests
//     are dropped (the dedup set survives the restarts, state.dir), and so
//     are the retries of requests a kill interrupted after their records
//     reached the log but before the worker stored the position (the
//     worker hands the source that tail of the log: RecoverTail).
func TestE2E_SIGKILL(t *testing.T) {
	crashtest.Child(e2eChildEnv, func(dir string) error { // in the child: runs until killed
		logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		_, _, err := startWorker(context.Background(), dir, os.Getenv(e2eAddrEnv), logger)
		return err
	})
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(e2eSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", e2eSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay the delays with %s=%d)", seed, e2eSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	kills := 4
	if testing.Short() {
		kills = 2
	}
	dir := t.TempDir()
	addr := freeAddr(t)

	c := newE2EClients(t, "http://"+addr, 4, seed)
	c.start()
	for run := 1; run <= kills; run++ {
		child := startE2EChild(t, dir, addr, run)
		delay := 200*time.Millisecond + time.Duration(rng.IntN(600))*time.Millisecond
		time.Sleep(delay)
		before := c.acked.Load()
		c.gen.Add(1) // before and after: a request that overlaps the kill sees a change
		child.Kill()
		c.gen.Add(1)
		t.Logf("run %d: SIGKILL %v after the source answered; %d requests answered 200 so far", run, delay, before)
	}
	// The last child: the clients finish what they have in flight, then
	// it is killed too (everything answered is durable by then).
	child := startE2EChild(t, dir, addr, kills+1)
	c.stopAndWait(60 * time.Second)
	c.gen.Add(1)
	child.Kill()

	// Read the topic as the next worker would.
	l, err := tlog.Open(e2eLogOptions(dir, slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	count := map[string]int{}
	err = engine.NewEmbedded(l, slog.New(slog.DiscardHandler)).ReadAll(t.Context(), e2eTopic, func(r connect.Record) error {
		var v struct {
			MessageID string `json:"messageId"`
			UserID    string `json:"userId"`
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		if string(r.Key) != v.UserID {
			return fmt.Errorf("%s/%d@%d: key %q, want the userId %q", r.Topic, r.Partition, r.Offset, r.Key, v.UserID)
		}
		count[v.MessageID]++
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", e2eTopic, err)
	}

	var events, interrupted, resends int
	for _, req := range c.done {
		events += len(req.ids)
		resends += req.resends
		if req.interrupted {
			interrupted++
		}
		for _, id := range req.ids {
			switch n := count[id]; {
			case n == 0:
				t.Errorf("%s was answered 200 but is not in the topic", id)
			case n > 1 && !req.interrupted:
				t.Errorf("%s is in the topic %d times, but its request was never interrupted by a kill: dedup failed", id, n)
			case n > 1:
				t.Errorf("%s is in the topic %d times: its request was interrupted by a kill and retried, and the retry was not dropped (log tail recovery failed)", id, n)
			}
		}
	}
	for id := range count {
		if _, ok := c.sent[id]; !ok {
			t.Errorf("the topic holds %s, which no client sent", id)
		}
	}
	if len(c.done) == 0 || c.newAfterKill.Load() == 0 {
		t.Fatalf("%d requests answered, %d after a kill: the workers never got going", len(c.done), c.newAfterKill.Load())
	}
	t.Logf("%d kills; %d requests (%d events) answered 200, %d of them interrupted by a kill and retried; %d resends of answered requests; every event stored once",
		kills, len(c.done), events, interrupted, resends)
}

// startE2EChild starts a worker process on dir and waits until its source
// answers /health.
func startE2EChild(t *testing.T, dir, addr string, run int) *crashtest.Proc {
	t.Helper()
	p := crashtest.Start(t, fmt.Sprintf("run %d", run), "TestE2E_SIGKILL", e2eChildEnv+"="+dir, e2eAddrEnv+"="+addr)
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	p.WaitFor(func() bool {
		resp, err := client.Get("http://" + addr + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, "the source answers /health")
	return p
}

// e2eRequest is one request a client sends until it is answered 200.
type e2eRequest struct {
	path        string
	body        []byte
	ids         []string
	interrupted bool // an attempt was cut by a kill, or answered 5xx, and a kill came before the 200
	resends     int  // times it was sent again after its 200
}

// e2eClients are the goroutines posting events.
type e2eClients struct {
	t      *testing.T
	base   string
	n      int
	seed   uint64
	client *http.Client

	gen          atomic.Int64 // moves on just before and just after each kill
	acked        atomic.Int64 // requests answered 200
	newAfterKill atomic.Int64 // requests answered 200 whose first attempt came after the first kill
	stop         chan struct{}
	wg           sync.WaitGroup

	mu   sync.Mutex
	done []*e2eRequest       // answered 200
	sent map[string]struct{} // every messageId sent
}

func newE2EClients(t *testing.T, base string, n int, seed uint64) *e2eClients {
	tr := &http.Transport{MaxIdleConnsPerHost: n}
	t.Cleanup(tr.CloseIdleConnections)
	return &e2eClients{
		t: t, base: base, n: n, seed: seed, stop: make(chan struct{}), sent: map[string]struct{}{},
		client: &http.Client{Transport: tr, Timeout: 10 * time.Second},
	}
}

func (c *e2eClients) start() {
	for g := range c.n {
		c.wg.Add(1)
		go c.loop(g)
	}
}

// stopAndWait lets every client finish its request in flight (answered
// 200), then waits for them.
func (c *e2eClients) stopAndWait(timeout time.Duration) {
	close(c.stop)
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		c.t.Fatalf("the clients did not finish within %s", timeout)
	}
}

func (c *e2eClients) loop(g int) {
	defer c.wg.Done()
	rng := rand.New(rand.NewPCG(c.seed, uint64(g)+100))
	var mine []*e2eRequest
	lastGen := c.gen.Load()
	for n := 0; ; n++ {
		select {
		case <-c.stop:
			return
		default:
		}
		// After every kill at least one resend, so that the dedup set is
		// tested across each restart, and more at random.
		gen := c.gen.Load()
		if len(mine) > 0 && (gen != lastGen || rng.IntN(8) == 0) {
			lastGen = gen
			// The answer of an earlier request was lost: send it again.
			req := mine[rng.IntN(len(mine))]
			if c.send(req) {
				req.resends++
			}
			continue
		}
		req := c.newRequest(g, n, rng)
		gen = c.gen.Load()
		if !c.send(req) {
			return
		}
		if gen > 0 {
			c.newAfterKill.Add(1)
		}
		c.acked.Add(1)
		mine = append(mine, req)
		c.mu.Lock()
		c.done = append(c.done, req)
		c.mu.Unlock()
	}
}

// newRequest makes request n of client g: a single track message or a
// batch of up to 30 events, each with a unique messageId.
func (c *e2eClients) newRequest(g, n int, rng *rand.Rand) *e2eRequest {
	events := 1
	if rng.IntN(2) == 0 {
		events = 1 + rng.IntN(30)
	}
	req := &e2eRequest{path: "/v1/track"}
	var b bytes.Buffer
	event := func(i int, typed bool) {
		id := fmt.Sprintf("c%d-r%d-e%d", g, n, i)
		req.ids = append(req.ids, id)
		b.WriteByte('{')
		if typed {
			b.WriteString(`"type":"track",`)
		}
		fmt.Fprintf(&b, `"userId":"user-%d","event":"Clicked","messageId":%q,"properties":{"n":%d,"i":%d}}`, rng.IntN(50), id, n, i)
	}
	if events == 1 && rng.IntN(2) == 0 {
		event(0, false)
	} else {
		req.path = "/v1/batch"
		b.WriteString(`{"batch":[`)
		for i := range events {
			if i > 0 {
				b.WriteByte(',')
			}
			event(i, true)
		}
		b.WriteString(`]}`)
	}
	req.body = b.Bytes()
	c.mu.Lock()
	for _, id := range req.ids {
		c.sent[id] = struct{}{}
	}
	c.mu.Unlock()
	return req
}

// send posts req until it is answered 200, retrying after a short pause
// as the SDKs do (they retry 5xx, 429 and network errors). It returns
// false only when the test is over.
func (c *e2eClients) send(req *e2eRequest) bool {
	startGen := c.gen.Load()
	failed := false
	deadline := time.Now().Add(2 * time.Minute)
	for {
		status, err := c.post(req)
		switch {
		case err == nil && status == http.StatusOK:
			if failed && c.gen.Load() != startGen {
				req.interrupted = true
			}
			return true
		case err == nil && status != http.StatusServiceUnavailable && status != http.StatusTooManyRequests && status < 500:
			c.t.Errorf("%s %s: answered %d; SDKs do not retry it", req.path, req.ids[0], status)
			return false
		case err != nil && errors.Is(err, syscall.ECONNREFUSED):
			// Never reached a server: cannot have stored anything.
		default:
			failed = true
		}
		if time.Now().After(deadline) {
			c.t.Errorf("%s %s: not answered 200 within 2 minutes: %v %d", req.path, req.ids[0], err, status)
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *e2eClients) post(req *e2eRequest) (int, error) {
	r, err := http.NewRequest(http.MethodPost, c.base+req.path, bytes.NewReader(req.body))
	if err != nil {
		return 0, err
	}
	r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(e2eKey+":")))
	r.Header.Set("Content-Type", "text/plain")
	resp, err := c.client.Do(r)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestWorker_Report runs the source in the worker and checks that the
// worker exports the source's gauges on its /metrics and shows them in the
// task status.
func TestWorker_Report(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	w, l, err := startWorker(ctx, dir, addr, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	c := newE2EClients(t, "http://"+addr, 1, 1)
	waitHTTP(t, "http://"+addr+"/health")
	for i := range 3 {
		req := &e2eRequest{path: "/v1/track", body: fmt.Appendf(nil, `{"userId":"u","event":"E","messageId":"m%d"}`, i%2)}
		if status, err := c.post(req); err != nil || status != 200 {
			t.Fatalf("post: %d %v", status, err)
		}
	}

	st, err := w.Status(e2eSource)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 1 || st.Tasks[0].Report == nil {
		t.Fatalf("status %+v: want one task with a report", st)
	}
	rep := st.Tasks[0].Report
	if rep.Phase != "listening" || rep.Gauges["httptrack_events_accepted"] != 2 || rep.Gauges["httptrack_events_duplicate"] != 1 {
		t.Errorf("task report %+v: want listening, 2 accepted, 1 duplicate", rep)
	}
	for _, name := range []string{"httptrack_pending_requests", "httptrack_pending_bytes", "httptrack_unacked_requests", "httptrack_waiting_requests"} {
		if _, ok := rep.Gauges[name]; !ok {
			t.Errorf("task report lacks the backlog gauge %s", name)
		}
	}

	fams, err := w.Metrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if !strings.HasPrefix(f.GetName(), "tributary_connector_httptrack_") {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "connector" && lp.GetValue() == e2eSource {
					got[f.GetName()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if got["tributary_connector_httptrack_events_accepted"] != 2 || got["tributary_connector_httptrack_requests_ok"] != 3 {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range got {
				if !yield(k) {
					return
				}
			}
		})
		t.Errorf("worker metrics: want events_accepted 2 and requests_ok 3 for connector %q; got %v (%s)", e2eSource, got, strings.Join(names, ", "))
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func waitHTTP(t *testing.T, url string) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200", url)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

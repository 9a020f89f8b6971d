// Command webhookbench measures the webhook sink (issue 8, "Benchmark"):
// deliveries per second to a local server that answers 200 at once, and
// the p99 delivery latency, beside a bare Go HTTP client loop that sends
// the same requests (the limit).
//
// Records are handed over in batches of -batch, as the worker hands a
// polled batch to Write; the delivery latency of a record is the time from
// the start of its batch to the server reading it. Phases:
//
//   - bare: -concurrency goroutines POST the records one per request with a
//     plain net/http client, batch after batch;
//   - single: the sink (batch.size 1, concurrency -concurrency), one Write
//     per batch;
//   - bare-batched: the bare loop sending JSON arrays of -batch-size records;
//   - batched: the sink with batch.size -batch-size.
//
// Records cycle through -keys keys, so that per-key ordering is exercised
// the way a real topic does. Target: single deliveries at least 60% of the
// bare loop's.
//
//	go run ./bench/webhook -records 100000
package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/webhook"
	"github.com/tributary-io/tributary/internal/procs"
)

// targetSingleRatio is issue 8's target for single deliveries.
const targetSingleRatio = 0.6

// benchSecret signs requests with -sign; benchKey is its key.
const benchSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

var benchKey, _ = base64.StdEncoding.DecodeString(strings.TrimPrefix(benchSecret, "whsec_"))

type config struct {
	records     int
	batch       int
	concurrency int
	batchSize   int
	keys        int
	valueBytes  int
	phases      string
	sign        bool
	rounds      int
	cpuprofile  string
}

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	var c config
	flag.IntVar(&c.records, "records", 100000, "records per phase")
	flag.IntVar(&c.batch, "batch", 500, "records per Write (the worker's poll batch)")
	flag.IntVar(&c.concurrency, "concurrency", 16, "requests in flight (the sink's concurrency, the bare loop's goroutines)")
	flag.IntVar(&c.batchSize, "batch-size", 100, "records per request in the batched phases")
	flag.IntVar(&c.keys, "keys", 1000, "distinct record keys")
	flag.IntVar(&c.valueBytes, "value-bytes", 200, "approximate size of a record value")
	flag.StringVar(&c.phases, "phases", "bare,single,bare-batched,batched", "phases to run, comma-separated")
	flag.IntVar(&c.rounds, "rounds", 3, "times the phases run, interleaved; the table shows each phase's median run (by records/s)")
	flag.BoolVar(&c.sign, "sign", false, "sign requests with Standard Webhooks signatures (sink and bare loop)")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "webhookbench:", err)
		os.Exit(1)
	}
}

// receiver is the local server: it answers 200 at once and notes when it
// read each record (by the "o" field of the values).
type receiver struct {
	srv      *http.Server
	url      string
	received []atomic.Int64 // unix ns, by offset
	requests atomic.Int64
}

func newReceiver(n int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	rc := &receiver{url: "http://" + ln.Addr().String() + "/hook", received: make([]atomic.Int64, n)}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go rc.srv.Serve(ln)
	return rc, nil
}

var offsetField = []byte(`"o":`)

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	now := time.Now().UnixNano()
	rc.requests.Add(1)
	for {
		i := bytes.Index(body, offsetField)
		if i < 0 {
			break
		}
		body = body[i+len(offsetField):]
		j := 0
		for j < len(body) && body[j] >= '0' && body[j] <= '9' {
			j++
		}
		if off, err := strconv.Atoi(string(body[:j])); err == nil && off < len(rc.received) {
			rc.received[off].CompareAndSwap(0, now)
		}
	}
	w.WriteHeader(http.StatusOK)
}

func (rc *receiver) reset() {
	for i := range rc.received {
		rc.received[i].Store(0)
	}
	rc.requests.Store(0)
}

func records(c config) []connect.Record {
	pad := strings.Repeat("x", max(0, c.valueBytes-60))
	out := make([]connect.Record, c.records)
	for i := range out {
		out[i] = connect.Record{
			Topic: "crm.contacts", Offset: int64(i),
			Key:   []byte("contact-" + strconv.Itoa(i%c.keys)),
			Value: fmt.Appendf(nil, `{"o":%d,"email":"user%d@example.org","pad":%q}`, i, i%c.keys, pad),
		}
	}
	return out
}

type result struct {
	name      string
	elapsed   time.Duration
	records   int
	requests  int64
	p50, p99  time.Duration
	missing   int
	recordsPS float64
}

func run(c config) error {
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	recs := records(c)
	rc, err := newReceiver(len(recs))
	if err != nil {
		return err
	}
	defer rc.srv.Close()
	fmt.Printf("webhook bench: %d records of ~%d bytes, %d keys, batches of %d per Write, concurrency %d, GOMAXPROCS %d\n",
		c.records, c.valueBytes, c.keys, c.batch, c.concurrency, runtime.GOMAXPROCS(0))
	var results []result
	var phases []string
	for range c.rounds {
		phases = append(phases, strings.Split(c.phases, ",")...)
	}
	for _, phase := range phases {
		phase = strings.TrimSpace(phase)
		rc.reset()
		runtime.GC()
		var (
			started []int64
			elapsed time.Duration
			err     error
		)
		switch phase {
		case "bare":
			started, elapsed, err = bare(c, rc.url, recs, 1)
		case "bare-batched":
			started, elapsed, err = bare(c, rc.url, recs, c.batchSize)
		case "single":
			started, elapsed, err = sink(c, rc.url, recs, 1)
		case "batched":
			started, elapsed, err = sink(c, rc.url, recs, c.batchSize)
		default:
			return fmt.Errorf("unknown phase %q", phase)
		}
		if err != nil {
			return fmt.Errorf("phase %s: %w", phase, err)
		}
		results = append(results, measure(phase, rc, started, elapsed))
	}
	printTable(medians(results))
	return nil
}

// measure computes throughput and latency of a phase from the batch start
// times and the receipt times.
func measure(name string, rc *receiver, started []int64, elapsed time.Duration) result {
	r := result{name: name, elapsed: elapsed, records: len(started), requests: rc.requests.Load()}
	lat := make([]time.Duration, 0, len(started))
	for i, s := range started {
		got := rc.received[i].Load()
		if got == 0 {
			r.missing++
			continue
		}
		lat = append(lat, time.Duration(got-s))
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.p50 = lat[len(lat)*50/100]
		r.p99 = lat[min(len(lat)-1, len(lat)*99/100)]
	}
	r.recordsPS = float64(len(started)) / elapsed.Seconds()
	return r
}

// sink delivers recs with the webhook sink, one Write per batch.
func sink(c config, url string, recs []connect.Record, batchSize int) ([]int64, time.Duration, error) {
	conn := webhook.Connector()
	s := conn.NewSink()
	values := map[string]string{
		"url": url, "concurrency": strconv.Itoa(c.concurrency), "batch.size": strconv.Itoa(batchSize),
	}
	if c.sign {
		values["signing.secret"] = benchSecret
	}
	cfg := connect.Config{Pipeline: "bench", Connector: "webhook", Values: conn.Spec.WithDefaults(values), Spec: conn.Spec}
	ctx := context.Background()
	if err := s.Open(ctx, cfg); err != nil {
		return nil, 0, err
	}
	defer s.Close(ctx)
	started := make([]int64, len(recs))
	start := time.Now()
	for i := 0; i < len(recs); i += c.batch {
		batch := recs[i:min(i+c.batch, len(recs))]
		t0 := time.Now().UnixNano()
		for j := range batch {
			started[i+j] = t0
		}
		if err := s.Write(ctx, batch); err != nil {
			return nil, 0, err
		}
	}
	return started, time.Since(start), nil
}

// bare delivers recs with a plain client: per batch, concurrency
// goroutines take requests of perRequest records off a shared counter. It
// sends what the sink sends (with -sign, the Standard Webhooks headers
// too), minus the ordering per key and the retries.
func bare(c config, url string, recs []connect.Record, perRequest int) ([]int64, time.Duration, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = c.concurrency
	client := &http.Client{Transport: t}
	defer t.CloseIdleConnections()
	started := make([]int64, len(recs))
	var failed atomic.Value
	start := time.Now()
	for i := 0; i < len(recs); i += c.batch {
		batch := recs[i:min(i+c.batch, len(recs))]
		t0 := time.Now().UnixNano()
		for j := range batch {
			started[i+j] = t0
		}
		var next atomic.Int64
		var wg sync.WaitGroup
		for range c.concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					j := int(next.Add(int64(perRequest))) - perRequest
					if j >= len(batch) {
						return
					}
					part := batch[j:min(j+perRequest, len(batch))]
					if err := post(client, url, part, perRequest > 1, c.sign); err != nil {
						failed.Store(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if err, _ := failed.Load().(error); err != nil {
			return nil, 0, err
		}
	}
	return started, time.Since(start), nil
}

func post(client *http.Client, url string, part []connect.Record, array, sign bool) error {
	var body []byte
	if array {
		body = append(body, '[')
		for i, r := range part {
			if i > 0 {
				body = append(body, ',')
			}
			body = append(body, r.Value...)
		}
		body = append(body, ']')
	} else {
		body = part[0].Value
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	id := "msg_crm.contacts_0_" + strconv.FormatInt(part[0].Offset, 10)
	req.Header.Set("Idempotency-Key", id)
	if sign {
		ts := strconv.FormatInt(time.Now().Unix(), 10)
		mac := hmac.New(sha256.New, benchKey)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		req.Header.Set("Webhook-Id", id)
		req.Header.Set("Webhook-Timestamp", ts)
		req.Header.Set("Webhook-Signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return errors.New(resp.Status)
	}
	return nil
}

// medians returns, per phase in first-run order, the run with the median
// records/s: the machine's load swings between runs, and interleaving the
// phases and taking medians keeps the ratios honest.
func medians(results []result) []result {
	var order []string
	runs := map[string][]result{}
	for _, r := range results {
		if _, ok := runs[r.name]; !ok {
			order = append(order, r.name)
		}
		runs[r.name] = append(runs[r.name], r)
	}
	out := make([]result, 0, len(order))
	for _, name := range order {
		rs := runs[name]
		slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.recordsPS, b.recordsPS) })
		out = append(out, rs[len(rs)/2])
	}
	return out
}

func printTable(results []result) {
	base := map[string]float64{}
	for _, r := range results {
		if strings.HasPrefix(r.name, "bare") {
			base[strings.TrimPrefix(strings.TrimPrefix(r.name, "bare"), "-")] = r.recordsPS
		}
	}
	fmt.Println()
	fmt.Println("| phase | records/s | requests/s | p50 | p99 | of bare |")
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, r := range results {
		ratio := "—"
		key := r.name
		if key == "single" {
			key = ""
		}
		if b, ok := base[key]; ok && !strings.HasPrefix(r.name, "bare") && b > 0 {
			ratio = fmt.Sprintf("%.0f%%", 100*r.recordsPS/b)
		}
		fmt.Printf("| %s | %.0f | %.0f | %s | %s | %s |\n", r.name, r.recordsPS,
			float64(r.requests)/r.elapsed.Seconds(), r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), ratio)
		if r.missing > 0 {
			fmt.Printf("  %s: %d records never reached the server\n", r.name, r.missing)
		}
	}
	if b, ok := base[""]; ok {
		for _, r := range results {
			if r.name == "single" {
				verdict := "met"
				if r.recordsPS < targetSingleRatio*b {
					verdict = "NOT met"
				}
				fmt.Printf("\ntarget: single deliveries >= %.0f%% of the bare loop: %s (%.0f%%)\n", 100*targetSingleRatio, verdict, 100*r.recordsPS/b)
			}
		}
	}
}

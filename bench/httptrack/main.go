// Command httptrackbench measures the httptrack source end to end (issue 6,
// "Benchmark"): a Go load generator on the same machine posts to the
// source running in the engine on the embedded log, where every 200 means
// the events were appended and fsync'ed. In one run it measures:
//
//   - bare: a bare net/http handler that reads the body and answers 200,
//     sent the same single-event requests: the limit of HTTP on this box;
//   - single: single-event POST /v1/track requests, durable;
//   - batch: POST /v1/batch requests of -batch events, durable;
//   - src-single, src-batch: the same requests straight to the source's
//     ServeHTTP, without network, and acknowledged at once without a log:
//     the source's own cost;
//   - nostore-single, nostore-batch: the source on the embedded log with a
//     minimal worker that acknowledges once the records are durable,
//     without storing a position.
//
// Each phase runs closed-loop clients for -duration (over keep-alive
// connections where there is a network) and reports requests/s, events/s,
// the p50/p99 latency of the answers and the process's CPU time per
// request. With -rounds the phases run that many times, interleaved, and
// each phase's rounds are added up. It prints a table with the targets:
// single events at least 50% of the bare handler's requests/s; batches at
// least 200k events/s.
//
//	go run ./bench/httptrack -duration 4s -rounds 3
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/httptrack"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/procs"
	tlog "github.com/tributary-io/tributary/log"
)

// Targets of issue 6.
const (
	targetSingleRatio = 0.5
	targetBatchEvents = 200_000
)

const (
	topic    = "web.tracking"
	writeKey = "bench-key"
)

type config struct {
	dir        string
	duration   time.Duration
	conns      int   // clients of the phase being run (one of connsList)
	connsList  []int // -conns: the client counts bare and single run at
	batchConns int
	batch      int
	partitions int
	writeback  bool
	stateDir   bool
	phases     string
	rounds     int
	cpuprofile string
	trace      string
	memprofile string
}

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	var c config
	flag.StringVar(&c.dir, "dir", "", "directory for the log (the disk under test); default a temp dir in /var/tmp")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "how long each phase runs")
	conns := flag.String("conns", "64", "concurrent clients (connections) for bare, single, src-single and nostore-single; a comma-separated list runs bare and single at each count and compares their best")
	flag.IntVar(&c.batchConns, "batch-conns", 16, "concurrent clients (connections) for batch")
	flag.IntVar(&c.batch, "batch", 100, "events per /v1/batch request")
	flag.IntVar(&c.partitions, "partitions", 3, "partitions of the topic")
	flag.BoolVar(&c.writeback, "start-writeback", false, "start the kernel's writeback of each log append at once (log.Options.StartWriteback)")
	flag.BoolVar(&c.stateDir, "journal", true, "keep the dedup journal (state.dir) on the disk under test")
	flag.StringVar(&c.phases, "phases", "bare,single,batch", "phases to run")
	flag.IntVar(&c.rounds, "rounds", 1, "run the phases this many times, interleaved, and add up each phase's rounds: on a loaded machine the phases then share its ups and downs")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run (load generator included) to this file")
	flag.StringVar(&c.trace, "trace", "", "write an execution trace of the whole run (load generator included) to this file (go tool trace); use with -phases single -duration 2s, as traces grow fast")
	flag.StringVar(&c.memprofile, "memprofile", "", "write an allocation profile of the whole run (load generator included) to this file")
	flag.Parse()
	for _, s := range splitComma(*conns) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "httptrackbench: -conns %q: want positive client counts separated by commas, as 32,64,128,256\n", *conns)
			os.Exit(2)
		}
		c.connsList = append(c.connsList, n)
	}
	if len(c.connsList) == 0 {
		c.connsList = []int{64}
	}
	c.conns = c.connsList[0]
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "httptrackbench:", err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if c.trace != "" {
		f, err := os.Create(c.trace)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "httptrackbench:", err)
			os.Exit(1)
		}
		defer func() {
			trace.Stop()
			f.Close()
			// How much the scheduler left the Ps without work to run
			// while work waited (see schedShares).
			if sh, err := readSchedShares(c.trace); err != nil {
				fmt.Fprintln(os.Stderr, "httptrackbench:", err)
			} else {
				fmt.Printf("scheduler (GOMAXPROCS %d, from the trace): %s\n", runtime.GOMAXPROCS(0), sh)
			}
		}()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if c.memprofile != "" {
		runtime.MemProfileRate = 4096
	}
	if err := run(c); err != nil {
		pprof.StopCPUProfile()
		trace.Stop()
		fmt.Fprintln(os.Stderr, "httptrackbench:", err)
		os.Exit(1)
	}
	if c.memprofile != "" {
		f, err := os.Create(c.memprofile)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "httptrackbench:", err)
			os.Exit(1)
		}
	}
}

// result is one phase's figures.
type result struct {
	name      string // the phase, with "@clients" in a sweep
	phase     string
	conns     int
	requests  int64
	events    int64
	failed    int64
	elapsed   time.Duration
	p50, p99  time.Duration
	lat       []time.Duration // of the 200s, sorted
	cpu       time.Duration   // CPU time of the whole process (user + system) during the phase
	firstFail string
	stores    int64 // position stores (acknowledgements) of a durable phase
	fsyncs    int64 // log fsyncs of a durable phase
	fsyncTime time.Duration
	reads     int64 // source Reads that returned records
}

func (r result) reqPerSec() float64 { return float64(r.requests) / r.elapsed.Seconds() }
func (r result) evPerSec() float64  { return float64(r.events) / r.elapsed.Seconds() }

func run(c config) error {
	dir := c.dir
	if dir == "" {
		d, err := os.MkdirTemp("/var/tmp", "httptrackbench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	fmt.Printf("httptrack benchmark: %d CPUs (GOMAXPROCS %d), %s per phase, %s clients (batch: %d), batch %d events, log in %s\n",
		runtime.NumCPU(), runtime.GOMAXPROCS(0), c.duration, joinInts(c.connsList), c.batchConns, c.batch, dir)
	jobs := planJobs(splitComma(c.phases), c.connsList)
	results := make([]result, len(jobs))
	perRound := make([][]result, len(jobs))
	for round := 1; round <= max(c.rounds, 1); round++ {
		var rates []string
		for i, job := range jobs {
			var r result
			var err error
			phase := job.phase
			c.conns = job.conns
			switch phase {
			case "bare":
				r, err = runBare(c)
			case "single", "batch":
				r, err = runSource(c, filepath.Join(dir, fmt.Sprintf("%s-%d", phase, round)), phase)
			case "src-single", "src-batch":
				r, err = runHandler(c, filepath.Join(dir, fmt.Sprintf("%s-%d", phase, round)), phase)
			case "nostore-single", "nostore-batch":
				r, err = runNoStore(c, filepath.Join(dir, fmt.Sprintf("%s-%d", phase, round)), phase)
			default:
				err = fmt.Errorf("unknown phase %q (bare, single, batch, src-single, src-batch, nostore-single, nostore-batch)", phase)
			}
			if err != nil {
				return fmt.Errorf("phase %s: %w", job.name, err)
			}
			r.name, r.phase, r.conns = job.name, phase, job.conns
			acks := ""
			if r.stores > 0 {
				acks = fmt.Sprintf(", %d position stores (%.1f requests each)", r.stores, float64(r.requests)/float64(r.stores))
			}
			if r.fsyncs > 0 {
				acks += fmt.Sprintf(", %d fsyncs (%.0f/s, %.2f ms each, %.1f requests each)", r.fsyncs, float64(r.fsyncs)/r.elapsed.Seconds(), float64(r.fsyncTime)/float64(r.fsyncs)/1e6, float64(r.requests)/float64(r.fsyncs))
			}
			if r.reads > 0 {
				acks += fmt.Sprintf(", %d reads (%.1f requests each)", r.reads, float64(r.requests)/float64(r.reads))
			}
			fmt.Printf("  round %d %-10s done: %d requests, %d events, %d failed (%.0f requests/s, CPU %.0f%% of one core)%s\n", round, r.name, r.requests, r.events, r.failed, r.reqPerSec(), 100*r.cpu.Seconds()/r.elapsed.Seconds(), acks)
			rates = append(rates, fmt.Sprintf("%s %.0f/s", job.name, r.reqPerSec()))
			results[i] = results[i].add(r)
			perRound[i] = append(perRound[i], r)
		}
		if c.rounds > 1 {
			fmt.Printf("  round %d: %s\n", round, strings.Join(rates, ", "))
		}
	}
	printTable(results)
	printMedians(results, perRound)
	return nil
}

// job is one phase at one client count.
type job struct {
	phase string
	conns int
	name  string // the phase, with "@conns" when the phase runs at several
}

// planJobs lists the phases in order, bare and single once per client
// count; the other single-event phases (src-single, nostore-single) run
// once, at 64 clients when the list has it, else at its first count.
func planJobs(phases []string, conns []int) []job {
	one := conns[0]
	if slices.Contains(conns, 64) {
		one = 64
	}
	var jobs []job
	for _, p := range phases {
		switch {
		case (p == "bare" || p == "single") && len(conns) > 1:
			for _, n := range conns {
				jobs = append(jobs, job{phase: p, conns: n, name: fmt.Sprintf("%s@%d", p, n)})
			}
		default:
			jobs = append(jobs, job{phase: p, conns: one, name: p})
		}
	}
	return jobs
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// add merges the figures of another round of the same phase.
func (r result) add(o result) result {
	if r.name == "" {
		return o
	}
	r.requests += o.requests
	r.events += o.events
	r.failed += o.failed
	r.elapsed += o.elapsed
	r.cpu += o.cpu
	r.stores += o.stores
	r.fsyncs += o.fsyncs
	r.fsyncTime += o.fsyncTime
	r.reads += o.reads
	if r.firstFail == "" {
		r.firstFail = o.firstFail
	}
	r.lat = append(r.lat, o.lat...)
	slices.Sort(r.lat)
	r.p50, r.p99 = percentiles(r.lat)
	return r
}

func percentiles(sorted []time.Duration) (p50, p99 time.Duration) {
	if len(sorted) == 0 {
		return 0, 0
	}
	return sorted[len(sorted)/2], sorted[min(len(sorted)-1, len(sorted)*99/100)]
}

// runBare serves a handler that reads the body and answers 200.
func runBare(c config) (result, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"success":true}`)
	})}
	go srv.Serve(ln)
	defer srv.Close()
	return load(c, "bare", "http://"+ln.Addr().String()+"/v1/track", c.conns, 1)
}

// runHandler measures the source alone: requests go straight to its
// ServeHTTP (no network), and a loop reads and acknowledges every batch at
// once, as a worker with an instant log would. The CPU per event is the
// source's own cost (and the load generator's, which builds the bodies).
func runHandler(c config, dir, phase string) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := httptrack.Connector()
	src := conn.NewSource().(*httptrack.Source)
	values := map[string]string{"listen": "127.0.0.1:0", "write.keys": writeKey}
	if c.stateDir {
		values["state.dir"] = filepath.Join(dir, "state")
	}
	if err := src.Open(ctx, connect.Config{Pipeline: "bench", Connector: "web", Values: values, Spec: conn.Spec}); err != nil {
		return result{}, err
	}
	defer src.Close(context.Background())
	worker := make(chan error, 1)
	go func() {
		for {
			recs, err := src.Read(ctx)
			if ctx.Err() != nil {
				worker <- nil
				return
			}
			if err != nil {
				worker <- err
				return
			}
			for i := len(recs) - 1; i >= 0; i-- {
				if recs[i].Position != nil {
					if err := src.Ack(ctx, recs[i].Position); err != nil {
						worker <- err
						return
					}
					break
				}
			}
		}
	}()
	path, conns, per := "/v1/track", c.conns, 1
	if phase == "src-batch" {
		path, conns, per = "/v1/batch", c.batchConns, c.batch
	}
	r, err := loadWith(c, phase, conns, per, func(body []byte) (int, string) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.SetBasicAuth(writeKey, "")
		w := httptest.NewRecorder()
		src.ServeHTTP(w, req)
		return w.Code, w.Body.String()
	})
	cancel()
	if werr := <-worker; err == nil {
		err = werr
	}
	return r, err
}

// runNoStore runs the source on a fresh embedded log in dir with a
// minimal worker that acknowledges a batch as soon as its records are
// durable, without storing a position (nor transforms, metrics, ...): what
// the engine would give if it answered on durability before the position
// store (see the README). Like the engine, it reads and appends the next
// batch while the previous ones wait for their fsync.
func runNoStore(c config, dir, phase string) (result, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := tlog.Open(tlog.Options{Dir: filepath.Join(dir, "log"), NumPartitions: c.partitions, Logger: slog.Default(), StartWriteback: c.writeback})
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	if err := l.CreateTopic(topic, c.partitions, nil); err != nil {
		return result{}, err
	}
	conn := httptrack.Connector()
	src := conn.NewSource().(*httptrack.Source)
	values := map[string]string{"listen": "127.0.0.1:0", "write.keys": writeKey}
	if c.stateDir {
		values["state.dir"] = filepath.Join(dir, "state")
	}
	if err := src.Open(ctx, connect.Config{Pipeline: "bench", Connector: "web", Values: values, Spec: conn.Spec}); err != nil {
		return result{}, err
	}
	defer src.Close(context.Background())
	type inflight struct {
		pd  *tlog.Pending
		pos connect.Position
	}
	window := make(chan inflight, 8)
	worker := make(chan error, 2)
	go func() { // read and append
		defer close(window)
		for {
			recs, err := src.Read(ctx)
			if ctx.Err() != nil {
				worker <- nil
				return
			}
			if err != nil {
				worker <- err
				return
			}
			if len(recs) == 0 {
				continue
			}
			out := make([]tlog.Record, len(recs))
			var pos connect.Position
			for i, r := range recs {
				out[i] = tlog.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
				if r.Position != nil {
					pos = r.Position
				}
			}
			pd, err := l.ProduceAsync(ctx, topic, out)
			if err != nil {
				worker <- err
				return
			}
			select {
			case window <- inflight{pd, pos}:
			case <-ctx.Done():
				worker <- nil
				return
			}
		}
	}()
	go func() { // wait for durability and acknowledge
		for f := range window {
			if err := f.pd.Wait(ctx); err != nil {
				if ctx.Err() != nil {
					break
				}
				worker <- err
				return
			}
			if f.pos != nil {
				if err := src.Ack(ctx, f.pos); err != nil {
					worker <- err
					return
				}
			}
		}
		worker <- nil
	}()
	path, conns, per := "/v1/track", c.conns, 1
	if phase == "nostore-batch" {
		path, conns, per = "/v1/batch", c.batchConns, c.batch
	}
	r, err := load(c, phase, "http://"+src.Addr().String()+path, conns, per)
	cancel()
	for range 2 {
		if werr := <-worker; err == nil && werr != nil && !errors.Is(werr, context.Canceled) {
			err = werr
		}
	}
	return r, err
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runSource runs the httptrack source in the engine on a fresh embedded
// log in dir and loads it.
func runSource(c config, dir, phase string) (result, error) {
	ctx := context.Background()
	l, err := tlog.Open(tlog.Options{Dir: filepath.Join(dir, "log"), NumPartitions: c.partitions, Logger: slog.Default(), StartWriteback: c.writeback})
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	b := engine.NewEmbedded(l, slog.Default())
	if err := b.EnsureTopic(ctx, topic, c.partitions, nil); err != nil {
		return result{}, err
	}
	reg := connect.NewRegistry()
	conn := httptrack.Connector()
	var src *httptrack.Source // the task's source, for its Report
	conn.NewSource = func() connect.Source { src = new(httptrack.Source); return src }
	reg.MustRegister(conn)
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: reg, Logger: slog.Default()})
	if err != nil {
		return result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		w.Shutdown(sctx)
	}()
	addr, err := freeAddr()
	if err != nil {
		return result{}, err
	}
	cfg := map[string]string{"listen": addr, "write.keys": writeKey}
	if c.stateDir {
		cfg["state.dir"] = filepath.Join(dir, "state")
	}
	spec := engine.ConnectorSpec{Pipeline: "bench", Name: "web", Kind: connect.KindSource, Connector: httptrack.Name, Topic: topic, Config: cfg}
	if err := w.Start(ctx, spec, ""); err != nil {
		return result{}, err
	}
	base := "http://" + addr
	if err := waitHealthy(base, 30*time.Second); err != nil {
		return result{}, err
	}
	path, conns, per := "/v1/track", c.conns, 1
	if phase == "batch" {
		path, conns, per = "/v1/batch", c.batchConns, c.batch
	}
	m := l.Metrics()
	fsyncs0, fsyncNs0 := m.Fsyncs.Load(), m.FsyncNanos.Load()
	reads0 := src.Report().Gauges["httptrack_reads"]
	r, err := load(c, phase, base+path, conns, per)
	if err != nil {
		return r, err
	}
	r.fsyncs, r.fsyncTime = m.Fsyncs.Load()-fsyncs0, time.Duration(m.FsyncNanos.Load()-fsyncNs0)
	r.reads = int64(src.Report().Gauges["httptrack_reads"] - reads0)
	// Every acknowledged event is in the log.
	var appended int64
	for p := range int32(c.partitions) {
		_, end, _ := l.Offsets(topic, p)
		appended += end
	}
	if appended < r.events {
		return r, fmt.Errorf("%d events answered 200 but only %d in the log", r.events, appended)
	}
	// How many requests one position store (one acknowledgement) covered:
	// the group commit at work.
	if _, stores, err := l.Offsets(engine.OffsetsTopic, 0); err == nil && stores > 0 {
		r.stores = stores
	}
	return r, nil
}

// load runs conns closed-loop clients against url for c.duration, each
// request carrying per events (1: a single track message).
func load(c config, name, url string, conns, per int) (result, error) {
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	// The same headers for every request and phase, built once.
	authz := []string{"Basic " + base64.StdEncoding.EncodeToString([]byte(writeKey+":"))}
	ctype := []string{"application/json"}
	return loadWith(c, name, conns, per, func(body []byte) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header["Authorization"] = authz
		req.Header["Content-Type"] = ctype
		resp, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, resp.Status
	})
}

// loadWith runs conns closed-loop clients for c.duration, each sending
// requests of per events with send, which returns the status (0 on an
// error) and what to report of a failure.
func loadWith(c config, name string, conns, per int, send func(body []byte) (int, string)) (result, error) {
	var (
		requests, events, failed atomic.Int64
		mu                       sync.Mutex
		lat                      []time.Duration
		firstFail                string
		seq                      atomic.Int64
	)
	// Warm up the connections for a moment before measuring.
	stop := time.Now().Add(c.duration)
	start := time.Now()
	cpu0 := cpuTime()
	var wg sync.WaitGroup
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]time.Duration, 0, 1<<16)
			var buf bytes.Buffer
			for time.Now().Before(stop) {
				buf.Reset()
				body(&buf, g, per, &seq)
				t0 := time.Now()
				status, what := send(buf.Bytes())
				d := time.Since(t0)
				if status != http.StatusOK {
					failed.Add(1)
					mu.Lock()
					if firstFail == "" {
						firstFail = what
					}
					mu.Unlock()
					continue
				}
				requests.Add(1)
				events.Add(int64(per))
				local = append(local, d)
			}
			mu.Lock()
			lat = append(lat, local...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := result{name: name, requests: requests.Load(), events: events.Load(), failed: failed.Load(), elapsed: elapsed, firstFail: firstFail, cpu: cpuTime() - cpu0}
	if len(lat) > 0 {
		slices.Sort(lat)
		r.lat = lat
		r.p50, r.p99 = percentiles(lat)
	}
	if r.requests == 0 {
		return r, fmt.Errorf("no request succeeded: %s", firstFail)
	}
	return r, nil
}

// body writes a request of per realistic events (about 400 bytes each,
// like analytics-node's) with unique messageIds.
func body(b *bytes.Buffer, g, per int, seq *atomic.Int64) {
	ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	event := func(typeField bool) {
		n := seq.Add(1)
		b.WriteString(`{`)
		if typeField {
			b.WriteString(`"type":"track",`)
		}
		b.WriteString(`"userId":"user-`)
		b.WriteString(strconv.Itoa(int(n % 10000)))
		b.WriteString(`","event":"Product Viewed","messageId":"bench-`)
		b.WriteString(strconv.FormatInt(n, 10))
		b.WriteString(`-`)
		b.WriteString(strconv.Itoa(g))
		b.WriteString(`","properties":{"product_id":"p-`)
		b.WriteString(strconv.FormatInt(n%977, 10))
		b.WriteString(`","price":19.99,"currency":"EUR","path":"/products/p","referrer":"https://www.google.com/"},`)
		b.WriteString(`"context":{"library":{"name":"@segment/analytics-node","version":"3.1.0"},"userAgent":"Mozilla/5.0 (X11; Linux x86_64)"},`)
		b.WriteString(`"integrations":{},"timestamp":"`)
		b.WriteString(ts)
		b.WriteString(`"}`)
	}
	if per == 1 {
		event(false)
		return
	}
	b.WriteString(`{"batch":[`)
	for i := range per {
		if i > 0 {
			b.WriteByte(',')
		}
		event(true)
	}
	b.WriteString(`],"sentAt":"`)
	b.WriteString(ts)
	b.WriteString(`"}`)
}

func printTable(rs []result) {
	fmt.Println()
	fmt.Printf("%-18s %12s %12s %10s %10s %12s %8s\n", "phase", "requests/s", "events/s", "p50", "p99", "cpu/request", "failed")
	for _, r := range rs {
		fmt.Printf("%-18s %12.0f %12.0f %10s %10s %12s %8d\n", r.name, r.reqPerSec(), r.evPerSec(), ms(r.p50), ms(r.p99), us(r.cpuPerRequest()), r.failed)
	}
	fmt.Println()
	bare, single := byPhase(rs, "bare"), byPhase(rs, "single")
	if len(bare) > 0 && len(single) > 0 {
		if len(bare) > 1 && len(bare) == len(single) {
			var each []string
			for i := range bare {
				each = append(each, fmt.Sprintf("%d clients %.0f%%", bare[i].conns, 100*single[i].reqPerSec()/bare[i].reqPerSec()))
			}
			fmt.Printf("single vs bare at the same client count: %s\n", strings.Join(each, ", "))
		}
		b, s := peak(bare), peak(single)
		ratio := s.reqPerSec() / b.reqPerSec()
		what := "single vs bare"
		if len(bare) > 1 || len(single) > 1 {
			what = fmt.Sprintf("single's peak (%d clients) vs bare's peak (%d clients)", s.conns, b.conns)
		}
		fmt.Printf("%s: %.0f%% of the bare handler's requests/s (target >= %.0f%%): %s\n", what, 100*ratio, 100*targetSingleRatio, verdict(ratio >= targetSingleRatio))
		if b.cpuPerRequest() > 0 {
			fmt.Printf("%s: %.1fx the bare handler's CPU per request (process total, load generator included)\n", what, float64(s.cpuPerRequest())/float64(b.cpuPerRequest()))
		}
	}
	if batch := byPhase(rs, "batch"); len(batch) > 0 {
		fmt.Printf("batch: %.0f events/s (target >= %d): %s\n", batch[0].evPerSec(), targetBatchEvents, verdict(batch[0].evPerSec() >= targetBatchEvents))
	}
	for _, r := range rs {
		if r.failed > 0 {
			fmt.Printf("%s: %d requests failed, first: %s\n", r.name, r.failed, r.firstFail)
		}
	}
}

// byPhase returns the results of one phase, one per client count.
func byPhase(rs []result, phase string) []result {
	var out []result
	for _, r := range rs {
		if r.phase == phase {
			out = append(out, r)
		}
	}
	return out
}

// peak returns the result with the most requests/s: a phase's throughput
// at the client count that suits it best.
func peak(rs []result) result {
	return slices.MaxFunc(rs, func(a, b result) int { return cmp.Compare(a.reqPerSec(), b.reqPerSec()) })
}

// printMedians prints, over the rounds, the median of each round's
// single/bare ratio (of their peaks, in a sweep of client counts) and of
// its batch events/s: a round's phases ran back to back, so their ratio
// shares the machine's load of that moment.
func printMedians(results []result, perRound [][]result) {
	if len(perRound) == 0 || len(perRound[0]) < 2 {
		return
	}
	median := func(v []float64) float64 {
		slices.Sort(v)
		return v[len(v)/2]
	}
	round := func(k int, phase string) []result {
		var out []result
		for i, r := range results {
			if r.phase == phase {
				out = append(out, perRound[i][k])
			}
		}
		return out
	}
	rounds := len(perRound[0])
	fmt.Println()
	if len(byPhase(results, "bare")) > 0 && len(byPhase(results, "single")) > 0 {
		var ratios []string
		var vals []float64
		for k := range rounds {
			r := peak(round(k, "single")).reqPerSec() / peak(round(k, "bare")).reqPerSec()
			vals = append(vals, r)
			ratios = append(ratios, fmt.Sprintf("%.0f%%", 100*r))
		}
		what := "single vs bare"
		if len(byPhase(results, "bare")) > 1 || len(byPhase(results, "single")) > 1 {
			what = "single vs bare (each at its best client count)"
		}
		m := median(vals)
		fmt.Printf("%s, per round: %s; median %.0f%% (target >= %.0f%%): %s\n", what, strings.Join(ratios, ", "), 100*m, 100*targetSingleRatio, verdict(m >= targetSingleRatio))
	}
	if len(byPhase(results, "batch")) > 0 {
		var rates []string
		var vals []float64
		for k := range rounds {
			r := round(k, "batch")[0]
			vals = append(vals, r.evPerSec())
			rates = append(rates, fmt.Sprintf("%.0f", r.evPerSec()))
		}
		m := median(vals)
		fmt.Printf("batch events/s, per round: %s; median %.0f (target >= %d): %s\n", strings.Join(rates, ", "), m, targetBatchEvents, verdict(m >= targetBatchEvents))
	}
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

func us(d time.Duration) string { return fmt.Sprintf("%.1fµs", float64(d)/float64(time.Microsecond)) }

func (r result) cpuPerRequest() time.Duration {
	if r.requests == 0 {
		return 0
	}
	return r.cpu / time.Duration(r.requests)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func waitHealthy(base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		resp, err := http.Get(base + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return errors.New("the source did not become healthy at " + base)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func splitComma(s string) []string {
	var out []string
	for _, p := range bytes.Split([]byte(s), []byte(",")) {
		if p = bytes.TrimSpace(p); len(p) > 0 {
			out = append(out, string(p))
		}
	}
	return out
}

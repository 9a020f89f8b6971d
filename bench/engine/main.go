// Command enginebench measures the worker against the log it runs on, for
// bench/engine/run.sh (issue 3, "Benchmark"). In one run, on one disk, it
// measures:
//
//   - append: the log's own durable append throughput: -inflight appenders,
//     each appending batches of -batch records of -size bytes through the
//     public API (fsync before every acknowledgement, group commit), spread
//     over -partitions partitions like the pipeline's topic.
//   - e2e: generator (rate 0, value.size -size, batch.size -gen-batch,
//     max.events -records) → log → file sink through the engine at full
//     speed, from the start of the connectors until the sink's group has
//     committed every record.
//   - latency: the same pipeline with the generator at a fixed -rate for
//     -duration, and a file sink wrapped to note, for every record, the
//     time from its event timestamp (the generator's due time, carried as
//     the record timestamp) to the return of the sink's fsync'ed write.
//
// It prints a table with the targets: end to end at least 50% of the log's
// append records/s, and p99 event-to-sink latency under 50 ms at 10k
// events/s. Byte rates count record values in MB of 10^6 bytes, as dd does.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/file"
	"github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// Targets of issue 3.
const (
	targetRatio = 0.5
	targetP99   = 50 * time.Millisecond
)

// The pipeline's names, as in examples/quickstart.
const (
	topic      = "web.tracking"
	sourceName = "web-events"
	sinkName   = "events-file"
)

type config struct {
	dir        string
	phases     string
	records    int64
	size       int
	batch      int
	genBatch   int
	inflight   int
	partitions int
	rate       float64
	duration   time.Duration
	cpuprofile string
}

func main() {
	var c config
	flag.StringVar(&c.dir, "dir", "", "directory for the logs and files (the disk under test); required")
	flag.StringVar(&c.phases, "phases", "append,e2e,latency", "phases to run, comma-separated")
	flag.Int64Var(&c.records, "records", 200000, "records for the append and end-to-end phases")
	flag.IntVar(&c.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&c.batch, "batch", 500, "records per Append call in the append phase")
	flag.IntVar(&c.genBatch, "gen-batch", 500, "the generator's batch.size (its default is 500)")
	flag.IntVar(&c.inflight, "inflight", 8, "concurrent appenders in the append phase")
	flag.IntVar(&c.partitions, "partitions", 3, "partitions of the topic")
	flag.Float64Var(&c.rate, "rate", 10000, "events per second in the latency phase")
	flag.DurationVar(&c.duration, "duration", 10*time.Second, "length of the latency phase")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if err := run(context.Background(), c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "enginebench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config, out io.Writer) error {
	if c.dir == "" {
		return errors.New("-dir is required")
	}
	if c.records <= 0 || c.size <= 0 || c.batch <= 0 || c.genBatch <= 0 || c.inflight <= 0 || c.partitions <= 0 || c.rate <= 0 || c.duration <= 0 {
		return errors.New("-records, -size, -batch, -gen-batch, -inflight, -partitions, -rate and -duration must be positive")
	}
	phases := map[string]bool{}
	for p := range strings.SplitSeq(c.phases, ",") {
		switch p = strings.TrimSpace(p); p {
		case "append", "e2e", "latency":
			phases[p] = true
		case "":
		default:
			return fmt.Errorf("unknown phase %q (valid: append, e2e, latency)", p)
		}
	}
	if c.cpuprofile != "" {
		f, err := os.Create(c.cpuprofile)
		if err != nil {
			return fmt.Errorf("create profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var (
		res results
		err error
	)
	if phases["append"] {
		progress("log append: %d records of %d B, %d x %d in flight over %d partitions", c.records, c.size, c.inflight, c.batch, c.partitions)
		if res.append, err = runAppend(ctx, c, filepath.Join(c.dir, "append")); err != nil {
			return fmt.Errorf("append: %w", err)
		}
	}
	if phases["e2e"] {
		progress("end to end: generator → log → file sink, %d records of %d B, generator batch.size %d", c.records, c.size, c.genBatch)
		if res.e2e, err = runE2E(ctx, c, filepath.Join(c.dir, "e2e")); err != nil {
			return fmt.Errorf("end to end: %w", err)
		}
	}
	if phases["latency"] {
		progress("latency: generator at %.0f events/s for %v → log → file sink", c.rate, c.duration)
		if res.latency, err = runLatency(ctx, c, filepath.Join(c.dir, "latency")); err != nil {
			return fmt.Errorf("latency: %w", err)
		}
	}
	res.print(out, c)
	return nil
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "== "+format+"\n", args...)
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

// throughput is records moved in a time, with what it cost: the process's
// CPU time and the log's fsyncs.
type throughput struct {
	records, bytes int64
	elapsed        time.Duration
	cpu            time.Duration
	fsyncs         int64
	fsyncTime      time.Duration
	fsyncP99       time.Duration // upper bound of the log's bucket holding the p99; 0 past the last
}

// cost fills in t's costs: CPU time since cpu0 and the fsyncs of l.
func (t *throughput) cost(cpu0 time.Duration, l *tlog.Log) {
	t.cpu = cpuTime() - cpu0
	m := l.Metrics()
	t.fsyncs, t.fsyncTime = m.Fsyncs.Load(), time.Duration(m.FsyncNanos.Load())
	var total, seen int64
	for i := range m.FsyncBuckets {
		total += m.FsyncBuckets[i].Load()
	}
	for i := range m.FsyncBuckets {
		if seen += m.FsyncBuckets[i].Load(); seen*100 >= total*99 {
			if i < len(tlog.FsyncBucketBounds) {
				t.fsyncP99 = tlog.FsyncBucketBounds[i]
			}
			break
		}
	}
}

func (t throughput) recordsPerSec() float64 { return float64(t.records) / t.elapsed.Seconds() }
func (t throughput) mbPerSec() float64      { return float64(t.bytes) / 1e6 / t.elapsed.Seconds() }

type appendResult struct{ throughput }

// runAppend appends c.records records with c.inflight appenders, each
// taking the next batch of c.batch records and appending it to the next
// partition in turn.
func runAppend(ctx context.Context, c config, dir string) (appendResult, error) {
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: discard()})
	if err != nil {
		return appendResult{}, err
	}
	defer l.Close()
	if err := l.CreateTopic(topic, c.partitions, nil); err != nil {
		return appendResult{}, err
	}
	vals := values(c.batch, c.size)
	cpu0 := cpuTime()
	var (
		claimed  atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	start := time.Now()
	for range c.inflight {
		wg.Go(func() {
			recs := make([]tlog.Record, c.batch)
			for {
				from := claimed.Add(int64(c.batch)) - int64(c.batch)
				if from >= c.records {
					return
				}
				n := int(min(int64(c.batch), c.records-from))
				for i := range recs[:n] {
					recs[i] = tlog.Record{Value: vals[i]}
				}
				p := int32(from / int64(c.batch) % int64(c.partitions))
				if _, err := l.Append(ctx, topic, p, recs[:n]); err != nil {
					errMu.Lock()
					firstErr = cmp.Or(firstErr, err)
					errMu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if firstErr != nil {
		return appendResult{}, firstErr
	}
	res := appendResult{throughput{records: c.records, bytes: c.records * int64(c.size), elapsed: elapsed}}
	res.cost(cpu0, l)
	if err := l.Close(); err != nil {
		return appendResult{}, err
	}
	return res, os.RemoveAll(dir)
}

// values returns n printable values of size bytes (the log copies them).
func values(n, size int) [][]byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		v := make([]byte, size)
		for j := range v {
			v[j] = alphabet[r.IntN(len(alphabet))]
		}
		out[i] = v
	}
	return out
}

// pipeline is a worker on a fresh log running generator → topic → a sink.
type pipeline struct {
	log *tlog.Log
	w   *engine.Worker
}

// openPipeline opens a log in dir with the topic and a worker on it.
func openPipeline(ctx context.Context, c config, dir string, reg *connect.Registry) (*pipeline, error) {
	l, err := tlog.Open(tlog.Options{Dir: dir, NumPartitions: c.partitions, Logger: discard()})
	if err != nil {
		return nil, err
	}
	b := engine.NewEmbedded(l, discard())
	if err := b.EnsureTopic(ctx, topic, c.partitions, nil); err != nil {
		l.Close()
		return nil, err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: reg, Logger: discard()})
	if err != nil {
		l.Close()
		return nil, err
	}
	return &pipeline{log: l, w: w}, nil
}

// start starts the generator with genCfg and the sink connector sink
// writing to dir/out/events.jsonl.
func (p *pipeline) start(ctx context.Context, dir string, genCfg map[string]string, sink string) error {
	specs := []engine.ConnectorSpec{
		{Pipeline: "bench", Name: sourceName, Kind: connect.KindSource, Connector: generator.Name, Topic: topic, Config: genCfg},
		{Pipeline: "bench", Name: sinkName, Kind: connect.KindSink, Connector: sink, Topics: []string{topic},
			Config: map[string]string{"path": filepath.Join(dir, "out", "events.jsonl")}},
	}
	for _, s := range specs {
		if err := p.w.Start(ctx, s, ""); err != nil {
			return err
		}
	}
	return nil
}

// close drains the worker and closes the log.
func (p *pipeline) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return errors.Join(p.w.Shutdown(ctx), p.log.Close())
}

// appended returns the records in the topic, which is new: its offsets
// count from 0.
func (p *pipeline) appended() int64 {
	var n int64
	for i := range p.partitions() {
		_, end, _ := p.log.Offsets(topic, i)
		n += end
	}
	return n
}

// committed returns the records below the sink group's committed offsets.
func (p *pipeline) committed() int64 {
	var n int64
	for _, o := range p.log.Groups().Committed(sinkName) {
		if o.Topic == topic {
			n += o.Offset
		}
	}
	return n
}

func (p *pipeline) partitions() int32 {
	n, _ := p.log.Partitions(topic)
	return int32(n)
}

// failure returns the trace of a failed task, if any.
func (p *pipeline) failure() error {
	for _, name := range []string{sourceName, sinkName} {
		st, err := p.w.Status(name)
		if err != nil {
			return err
		}
		for _, t := range st.Tasks {
			if t.State == engine.StateFailed {
				return fmt.Errorf("connector %s failed: %s", name, t.Trace)
			}
		}
	}
	return nil
}

// waitUntil polls cond every interval until it holds, a task fails or
// timeout passes.
func (p *pipeline) waitUntil(what string, interval, timeout time.Duration, cond func() bool) error {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if err := p.failure(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(interval)
	}
	return nil
}

func registry(latency *latencyRecorder) *connect.Registry {
	reg := connect.NewRegistry()
	reg.MustRegister(generator.Connector())
	reg.MustRegister(file.Connector())
	fc := file.Connector()
	reg.MustRegister(connect.Connector{
		Name: "latency-file", Kind: connect.KindSink, Version: "bench",
		Description: "The file sink, noting each record's time from its timestamp to its fsync'ed write.",
		Spec:        fc.Spec,
		NewSink:     func() connect.Sink { return &latencySink{inner: fc.NewSink(), rec: latency} },
	})
	return reg
}

type e2eResult struct {
	throughput
	sourceElapsed time.Duration // until every record was appended
}

// runE2E runs generator → log → file sink at full speed for c.records
// records and times it until the sink's group has committed them all.
func runE2E(ctx context.Context, c config, dir string) (e2eResult, error) {
	gen := map[string]string{
		"rate": "0", "seed": "42", "batch.size": strconv.Itoa(c.genBatch),
		"max.events": strconv.FormatInt(c.records, 10), "value.size": strconv.Itoa(c.size),
	}
	p, err := openPipeline(ctx, c, dir, registry(nil))
	if err != nil {
		return e2eResult{}, err
	}
	start, cpu0 := time.Now(), cpuTime()
	var sourceDone time.Duration
	err = p.start(ctx, dir, gen, file.Name)
	if err == nil {
		err = p.waitUntil("the sink to commit every record", 5*time.Millisecond, 30*time.Minute, func() bool {
			if sourceDone == 0 && p.appended() >= c.records {
				sourceDone = time.Since(start)
			}
			return p.committed() >= c.records
		})
	}
	res := e2eResult{
		throughput:    throughput{records: c.records, bytes: c.records * int64(c.size), elapsed: time.Since(start)},
		sourceElapsed: sourceDone,
	}
	res.cost(cpu0, p.log)
	if err := errors.Join(err, p.close()); err != nil {
		return e2eResult{}, err
	}
	lines, err := countLines(filepath.Join(dir, "out", "events.jsonl"))
	if err != nil {
		return e2eResult{}, err
	}
	if lines < c.records {
		return e2eResult{}, fmt.Errorf("the file holds %d lines, want %d", lines, c.records)
	}
	return res, os.RemoveAll(dir)
}

func countLines(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' {
				n++
			}
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

type latencyResult struct {
	throughput // from the start of the connectors to the last commit
	p50, p99   time.Duration
	p90, max   time.Duration
}

// runLatency runs the pipeline with the generator at c.rate for
// c.duration and returns the distribution of event-to-sink latencies.
func runLatency(ctx context.Context, c config, dir string) (latencyResult, error) {
	events := int64(c.rate * c.duration.Seconds())
	rec := &latencyRecorder{lat: make([]time.Duration, 0, events)}
	gen := map[string]string{
		"rate": strconv.FormatFloat(c.rate, 'f', -1, 64), "seed": "42", "batch.size": strconv.Itoa(c.genBatch),
		"max.events": strconv.FormatInt(events, 10), "value.size": strconv.Itoa(c.size),
	}
	p, err := openPipeline(ctx, c, dir, registry(rec))
	if err != nil {
		return latencyResult{}, err
	}
	start, cpu0 := time.Now(), cpuTime()
	err = p.start(ctx, dir, gen, "latency-file")
	if err == nil {
		err = p.waitUntil("the sink to commit every event", 20*time.Millisecond, c.duration+5*time.Minute, func() bool {
			return p.committed() >= events
		})
	}
	res := latencyResult{throughput: throughput{records: events, bytes: events * int64(c.size), elapsed: time.Since(start)}}
	res.cost(cpu0, p.log)
	if err := errors.Join(err, p.close()); err != nil {
		return latencyResult{}, err
	}
	lat := rec.sorted()
	if int64(len(lat)) < events {
		return latencyResult{}, fmt.Errorf("the sink noted %d events, want %d", len(lat), events)
	}
	res.p50, res.p90, res.p99, res.max = quantile(lat, 0.50), quantile(lat, 0.90), quantile(lat, 0.99), lat[len(lat)-1]
	return res, os.RemoveAll(dir)
}

// quantile returns the q-quantile of sorted samples (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// latencyRecorder collects latencies noted by the sink's task.
type latencyRecorder struct {
	mu  sync.Mutex
	lat []time.Duration
}

func (r *latencyRecorder) note(now time.Time, recs []connect.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range recs {
		r.lat = append(r.lat, now.Sub(recs[i].Timestamp))
	}
}

func (r *latencyRecorder) sorted() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.lat)
	slices.Sort(out)
	return out
}

// latencySink is the file sink, noting for every record of a write that
// returned (so is fsync'ed) the time since its timestamp. Record timestamps
// are stored in milliseconds, so a latency reads up to 1 ms long.
type latencySink struct {
	inner connect.Sink
	rec   *latencyRecorder
}

var _ connect.Sink = (*latencySink)(nil)

func (s *latencySink) Open(ctx context.Context, cfg connect.Config) error {
	return s.inner.Open(ctx, cfg)
}

func (s *latencySink) Write(ctx context.Context, recs []connect.Record) error {
	if err := s.inner.Write(ctx, recs); err != nil {
		return err
	}
	s.rec.note(time.Now(), recs)
	return nil
}

func (s *latencySink) Close(ctx context.Context) error { return s.inner.Close(ctx) }

type results struct {
	append  appendResult
	e2e     e2eResult
	latency latencyResult
}

func (r results) print(w io.Writer, c config) {
	host, _ := os.Hostname()
	fmt.Fprintf(w, "\nTributary engine benchmark: %d records of %d B, %d partitions, %d CPUs (%s), load %s, %s\n\n",
		c.records, c.size, c.partitions, runtime.NumCPU(), host, loadavg(), time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Fprintf(w, "%s %7s %10s %7s %7s %8s %7s %8s %9s\n", pad("", labelWidth), "MB/s", "records/s", "seconds", "CPU s", "CPU/rec", "fsyncs", "fsync", "fsync p99")
	row := func(label string, t throughput, note string) {
		cpu, fsyncs, fsync, fsyncP99 := "-", "-", "-", "-"
		if t.cpu > 0 {
			cpu = fmt.Sprintf("%.2f", t.cpu.Seconds())
		}
		if t.fsyncs > 0 {
			fsyncs, fsync = strconv.FormatInt(t.fsyncs, 10), ms(t.fsyncTime/time.Duration(t.fsyncs))
			fsyncP99 = "> " + ms(tlog.FsyncBucketBounds[len(tlog.FsyncBucketBounds)-1])
			if t.fsyncP99 > 0 {
				fsyncP99 = "<= " + ms(t.fsyncP99)
			}
		}
		perRec := "-"
		if t.cpu > 0 && t.records > 0 {
			perRec = fmt.Sprintf("%.1f µs", float64(t.cpu)/float64(t.records)/1e3)
		}
		line := fmt.Sprintf("%s %7.1f %10.0f %7.2f %7s %8s %7s %8s %9s  %s",
			pad(label, labelWidth), t.mbPerSec(), t.recordsPerSec(), t.elapsed.Seconds(), cpu, perRec, fsyncs, fsync, fsyncP99, note)
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	if r.append.elapsed > 0 {
		row(fmt.Sprintf("log append, fsync per ack (%d x %d rec in flight)", c.inflight, c.batch), r.append.throughput, "")
	}
	ratio := 0.0
	if r.e2e.elapsed > 0 {
		e := r.e2e
		if e.sourceElapsed > 0 {
			row("  generator → log (until all appended)", throughput{records: e.records, bytes: e.bytes, elapsed: e.sourceElapsed}, "")
		}
		note := ""
		if r.append.elapsed > 0 {
			ratio = e.recordsPerSec() / r.append.recordsPerSec()
			note = fmt.Sprintf("x%.2f of log append", ratio)
		}
		row(fmt.Sprintf("generator → log → file sink, batch.size %d (to commit)", c.genBatch), e.throughput, note)
	}
	if r.latency.elapsed > 0 {
		l := r.latency
		row(fmt.Sprintf("generator at %.0f/s → log → file sink", c.rate), l.throughput, "")
		fmt.Fprintf(w, "\nevent-to-sink latency at %.0f events/s, %d events (event due time → file sink's fsync'ed write returned):\n", c.rate, l.records)
		fmt.Fprintf(w, "  p50 %s   p90 %s   p99 %s   max %s\n", ms(l.p50), ms(l.p90), ms(l.p99), ms(l.max))
	}
	fmt.Fprintln(w, "\nCPU s: CPU time of the whole process (user + system) in the phase; CPU/rec: per record.")
	fmt.Fprintln(w, "fsyncs, fsync: the log's fsyncs in the phase and their mean time (the file sink's own fsyncs are not counted);")
	fmt.Fprintln(w, "fsync p99: the bound of the log's fsync latency bucket that holds the 99th percentile.")
	fmt.Fprintf(w, "\nTargets (issue 3)\n%-52s %12s %10s\n", "", "measured", "target")
	if r.append.elapsed > 0 && r.e2e.elapsed > 0 {
		fmt.Fprintf(w, "%-52s %12.2f %10s %s\n", "end-to-end / log append, records/s", ratio, fmt.Sprintf(">= %.2f", targetRatio), verdict(ratio >= targetRatio))
	}
	if r.latency.elapsed > 0 {
		fmt.Fprintf(w, "%-52s %12s %10s %s\n", fmt.Sprintf("p99 event-to-sink latency at %.0f events/s", c.rate), ms(r.latency.p99),
			"< "+ms(targetP99), verdict(r.latency.p99 < targetP99))
	}
}

// labelWidth is the width of the table's first column, in characters.
const labelWidth = 58

// pad pads s with spaces to n characters (not bytes: labels hold arrows).
func pad(s string, n int) string {
	return s + strings.Repeat(" ", max(n-utf8.RuneCountInString(s), 0))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

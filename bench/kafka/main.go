// Command kafkabench measures the Kafka listener (log/kafka) with franz-go
// beside the in-process append path, in one run, for bench/kafka/run.sh:
//
//	in-process   Log.Append of the records, -inflight appenders each
//	             appending batches of -batch records, fsync before every
//	             acknowledgement. The defaults (5 x 1000 records of 1 KiB)
//	             keep as much in flight as franz-go does: at most 5 produce
//	             requests per broker with idempotence, each with one batch
//	             of at most 1 MB per partition.
//	produce      the same records produced with franz-go (kgo, acks=all,
//	             idempotent, no compression) to a listener on a fresh log
//	             in the same process, until every record is acknowledged
//	consume      every record produced read back with franz-go from
//	             offset 0 (direct partition consumption, no group)
//	kafka        the same franz-go produce against -brokers, when set (an
//	             Apache Kafka or other Kafka-API cluster)
//
// It prints a table with the targets of issue 10 (produce through the
// listener at least 60% of in-process, as the median of the runs' ratios,
// each run measuring both back to back; consume at least 1M records/s) and
// PASS or MISS. Byte rates count record payload (value) bytes, in MB of
// 10^6 bytes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/procs"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/log/kafka"
)

type config struct {
	dir        string
	records    int64
	size       int
	partitions int
	batch      int
	inflight   int
	runs       int
	brokers    string
	cpuprofile string
	fetchBytes int
}

// result is one measured step.
type result struct {
	records int64
	bytes   int64
	seconds float64
	cpu     float64 // CPU seconds of the process during the step
	fsyncs  int64
	fsyncMs float64 // total time in fsync
}

func (r result) mbps() float64 { return float64(r.bytes) / 1e6 / r.seconds }
func (r result) rps() float64  { return float64(r.records) / r.seconds }

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	var c config
	flag.StringVar(&c.dir, "dir", "", "work directory (the logs go under it; required)")
	flag.Int64Var(&c.records, "records", 256*1024, "records per step")
	flag.IntVar(&c.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&c.partitions, "partitions", 1, "partitions of the topic")
	flag.IntVar(&c.batch, "batch", 1000, "records per Append call (in-process step)")
	flag.IntVar(&c.inflight, "inflight", 5, "concurrent appenders (in-process step); 5 is what franz-go keeps in flight")
	flag.IntVar(&c.runs, "runs", 1, "run every step this many times and keep the best")
	flag.IntVar(&c.fetchBytes, "fetch-partition-bytes", 0, "franz-go FetchMaxPartitionBytes of the consumer (0: its default, 1 MiB)")
	flag.StringVar(&c.brokers, "brokers", "", "a Kafka cluster (host:port,...) to run the franz-go produce against too")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write CPU profiles of the listener steps to this prefix + .produce / .consume")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fmt.Fprintln(os.Stderr, "kafkabench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if c.dir == "" {
		return errors.New("-dir is required")
	}
	if c.records <= 0 || c.size <= 0 || c.partitions <= 0 || c.batch <= 0 || c.inflight <= 0 || c.runs <= 0 {
		return errors.New("-records, -size, -partitions, -batch, -inflight and -runs must be positive")
	}
	vals := values(c.batch, c.size)
	best := map[string]result{}
	var ratios []float64 // produce / in-process of each run: the two ran back to back
	keep := func(id string, r result) {
		if b, ok := best[id]; !ok || r.seconds < b.seconds {
			best[id] = r
		}
	}
	for run := 1; run <= c.runs; run++ {
		say("== run %d of %d: %d records of %d B, %d partition(s)", run, c.runs, c.records, c.size, c.partitions)
		dir := filepath.Join(c.dir, fmt.Sprintf("run%d", run))

		say("-- in-process Log.Append (%d x %d records in flight)", c.inflight, c.batch)
		r, err := inProcess(ctx, c, filepath.Join(dir, "inproc"), vals)
		if err != nil {
			return fmt.Errorf("in-process append: %w", err)
		}
		say("   %.1f MB/s, %.0f records/s, %.2f s, %d fsyncs (%.0f ms)", r.mbps(), r.rps(), r.seconds, r.fsyncs, r.fsyncMs)
		keep("inproc", r)

		say("-- franz-go produce through the listener, then consume")
		p, cons, err := throughListener(ctx, c, filepath.Join(dir, "listener"), vals)
		if err != nil {
			return fmt.Errorf("through the listener: %w", err)
		}
		say("   produce %.1f MB/s, %.0f records/s, %.2f s, %d fsyncs (%.0f ms)", p.mbps(), p.rps(), p.seconds, p.fsyncs, p.fsyncMs)
		say("   consume %.1f MB/s, %.0f records/s, %.2f s", cons.mbps(), cons.rps(), cons.seconds)
		keep("produce", p)
		keep("consume", cons)
		ratios = append(ratios, p.mbps()/r.mbps())
		say("   produce / in-process = %.2f", ratios[len(ratios)-1])

		if c.brokers != "" {
			say("-- franz-go produce to %s", c.brokers)
			k, err := produceTo(ctx, c, []string{c.brokers}, vals, fmt.Sprintf("kafkabench-%d-%d", time.Now().Unix(), run), true)
			if err != nil {
				return fmt.Errorf("produce to %s: %w", c.brokers, err)
			}
			say("   %.1f MB/s, %.0f records/s, %.2f s", k.mbps(), k.rps(), k.seconds)
			keep("kafka", k)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	printTable(c, best, ratios)
	return nil
}

func say(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// values returns n record values of size bytes: printable, varied, and
// backed by one buffer (neither path modifies them).
func values(n, size int) [][]byte {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	r := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, n*size)
	for i := range buf {
		buf[i] = alphabet[r.IntN(len(alphabet))]
	}
	out := make([][]byte, n)
	for i := range out {
		out[i] = buf[i*size : (i+1)*size : (i+1)*size]
	}
	return out
}

// profile starts a CPU profile to prefix.step when asked; the returned
// func stops it.
func profile(prefix, step string) (func(), error) {
	if prefix == "" {
		return func() {}, nil
	}
	f, err := os.Create(prefix + "." + step)
	if err != nil {
		return nil, fmt.Errorf("create profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func openLog(dir string) (*tlog.Log, error) {
	return tlog.Open(tlog.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
}

// inProcess appends the records with Log.Append: c.inflight appenders, each
// taking the next c.batch records, partitions in turn.
func inProcess(ctx context.Context, c config, dir string, vals [][]byte) (result, error) {
	l, err := openLog(dir)
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	if err := l.CreateTopic("bench", c.partitions, nil); err != nil {
		return result{}, err
	}
	runtime.GC()
	var (
		claimed  atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	cpu0, start := cpuSeconds(), time.Now()
	for range c.inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
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
				part := int32(from / int64(c.batch) % int64(c.partitions))
				if _, err := l.Append(ctx, "bench", part, recs[:n]); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	res := result{records: c.records, bytes: c.records * int64(c.size), seconds: time.Since(start).Seconds(), cpu: cpuSeconds() - cpu0}
	if firstErr != nil {
		return result{}, firstErr
	}
	res.fsyncs, res.fsyncMs = l.Metrics().Fsyncs.Load(), float64(l.Metrics().FsyncNanos.Load())/1e6
	return res, l.Close()
}

// throughListener serves a fresh log with the Kafka listener, produces the
// records to it with franz-go, checks they all landed, and consumes them
// back with franz-go.
func throughListener(ctx context.Context, c config, dir string, vals [][]byte) (result, result, error) {
	l, err := openLog(dir)
	if err != nil {
		return result{}, result{}, err
	}
	defer l.Close()
	srv, err := kafka.Listen(ctx, "127.0.0.1:0", l, kafka.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return result{}, result{}, err
	}
	defer srv.Close()
	if err := l.CreateTopic("bench", c.partitions, nil); err != nil {
		return result{}, result{}, err
	}
	addr := []string{srv.Addr().String()}
	stop, err := profile(c.cpuprofile, "produce")
	if err != nil {
		return result{}, result{}, err
	}
	p, err := produceTo(ctx, c, addr, vals, "bench", false)
	stop()
	if err != nil {
		return result{}, result{}, err
	}
	p.fsyncs, p.fsyncMs = l.Metrics().Fsyncs.Load(), float64(l.Metrics().FsyncNanos.Load())/1e6
	var stored int64
	for part := int32(0); part < int32(c.partitions); part++ {
		_, end, err := l.Offsets("bench", part)
		if err != nil {
			return result{}, result{}, err
		}
		stored += end
	}
	if stored != c.records {
		return result{}, result{}, fmt.Errorf("the log holds %d records after the produce, want %d", stored, c.records)
	}
	if stop, err = profile(c.cpuprofile, "consume"); err != nil {
		return result{}, result{}, err
	}
	cons, err := consume(ctx, c, addr)
	stop()
	if err != nil {
		return result{}, result{}, err
	}
	if err := srv.Close(); err != nil {
		return result{}, result{}, err
	}
	return p, cons, l.Close()
}

// produceTo produces the records with franz-go (acks=all, idempotent, no
// compression, its other defaults) and waits for every acknowledgement.
func produceTo(ctx context.Context, c config, brokers []string, vals [][]byte, topic string, create bool) (result, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(brokers...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
		kgo.MaxBufferedRecords(1<<20),
		kgo.MaxBufferedBytes(256<<20),
	)
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	if create {
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, int32(c.partitions), -1, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			return result{}, fmt.Errorf("create topic %s: %w", topic, err)
		}
	}
	// One record first, so that metadata and the producer id are there
	// before the clock starts (as the in-process log has its topic).
	if err := cl.ProduceSync(ctx, &kgo.Record{Value: vals[0]}).FirstErr(); err != nil {
		return result{}, err
	}
	recs := make([]kgo.Record, c.records-1)
	for i := range recs {
		recs[i].Value = vals[(i+1)%len(vals)]
	}
	runtime.GC()
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { firstErr = err })
		}
		wg.Done()
	}
	cpu0, start := cpuSeconds(), time.Now()
	wg.Add(len(recs))
	for i := range recs {
		cl.Produce(ctx, &recs[i], done)
	}
	wg.Wait()
	res := result{records: c.records, bytes: c.records * int64(c.size), seconds: time.Since(start).Seconds(), cpu: cpuSeconds() - cpu0}
	if firstErr != nil {
		return result{}, firstErr
	}
	// The first record was not timed: count what was.
	res.records--
	res.bytes -= int64(c.size)
	return res, nil
}

// consume reads every record of the topic from offset 0 with franz-go.
func consume(ctx context.Context, c config, brokers []string) (result, error) {
	parts := map[int32]kgo.Offset{}
	for p := int32(0); p < int32(c.partitions); p++ {
		parts[p] = kgo.NewOffset().AtStart()
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"bench": parts}),
	}
	if c.fetchBytes > 0 {
		opts = append(opts, kgo.FetchMaxPartitionBytes(int32(c.fetchBytes)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return result{}, err
	}
	defer cl.Close()
	runtime.GC()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	var got, bytes int64
	cpu0, start := cpuSeconds(), time.Now()
	for got < c.records {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return result{}, fmt.Errorf("consumed %d of %d records: %w", got, c.records, err)
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return result{}, fmt.Errorf("fetch %s-%d: %w", errs[0].Topic, errs[0].Partition, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			got++
			bytes += int64(len(r.Value))
		})
	}
	return result{records: got, bytes: bytes, seconds: time.Since(start).Seconds(), cpu: cpuSeconds() - cpu0}, nil
}

func printTable(c config, best map[string]result, ratios []float64) {
	host, _ := os.Hostname()
	load := "unknown"
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			load = strings.Join(f[:3], " ")
		}
	}
	fmt.Printf("\nTributary Kafka listener benchmark: %d records of %d B, %d partition(s), best of %d run(s)\n", c.records, c.size, c.partitions, c.runs)
	fmt.Printf("%s, %d CPUs, %s, load average %s\n\n", host, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02T15:04Z"), load)
	rows := []struct{ id, label string }{
		{"inproc", fmt.Sprintf("in-process Log.Append (%d x %d rec in flight), fsync per ack", c.inflight, c.batch)},
		{"produce", "franz-go produce through the listener, acks=all, idempotent"},
		{"consume", "franz-go consume through the listener, from offset 0"},
		{"kafka", "franz-go produce to " + c.brokers + ", acks=all, idempotent"},
	}
	fmt.Printf("%-68s %9s %12s %8s %8s\n", "", "MB/s", "records/s", "seconds", "CPU-s")
	for _, row := range rows {
		r, ok := best[row.id]
		if !ok {
			if row.id == "kafka" {
				fmt.Printf("%-68s %9s %12s %8s %8s\n", "franz-go produce to Apache Kafka", "-", "-", "-", "-")
			}
			continue
		}
		fmt.Printf("%-68s %9.1f %12.0f %8.2f %8.2f\n", row.label, r.mbps(), r.rps(), r.seconds, r.cpu)
	}
	if _, ok := best["kafka"]; !ok {
		fmt.Println("Apache Kafka: not measured, no Kafka cluster here (set KAFKA_BROKERS=host:port to add the row).")
	}
	fmt.Println()
	fmt.Println("Targets (issue 10)")
	fmt.Printf("%-68s %12s %12s\n", "", "measured", "target")
	verdict := func(v, target float64) string {
		if v >= target {
			return "PASS"
		}
		return "MISS"
	}
	if len(ratios) > 0 {
		sorted := slices.Sorted(slices.Values(ratios))
		median := sorted[len(sorted)/2]
		if len(sorted)%2 == 0 {
			median = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
		}
		fmt.Printf("%-68s %12.2f %12s %s\n", "produce through the listener / in-process append (median of runs)", median, ">= 0.60", verdict(median, 0.6))
	}
	if cons, ok := best["consume"]; ok {
		fmt.Printf("%-68s %12.0f %12s %s\n", "consume through the listener, records/s", cons.rps(), ">= 1000000", verdict(cons.rps(), 1e6))
	}
	fmt.Println()
}

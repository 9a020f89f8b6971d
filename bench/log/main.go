// Command logbench measures the partition log and the baselines it is
// compared with, for bench/log/run.sh. Each run does one thing and prints one
// JSON line on stdout:
//
//	-mode append     durable (or, with -flush-interval, interval-flushed)
//	                 appends through the public API, -inflight appenders each
//	                 appending batches of -batch records
//	-mode read       reads a partition written by -mode append from offset 0
//	                 to its end
//	-mode jetstream  publishes the same records to a NATS JetStream stream on
//	                 file storage, with a window of -window unacknowledged
//	                 publishes, and waits for every ack
//	-mode lines      writes the records as lines to -out, for `tributary
//	                 produce` (value bytes are printable, one record a line)
//
// Byte rates count record payload (value) bytes, in MB of 10^6 bytes, like dd.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tributary-io/tributary/internal/procs"
	tlog "github.com/tributary-io/tributary/log"
)

type config struct {
	mode          string
	dir           string
	topic         string
	records       int64
	size          int
	batch         int
	inflight      int
	flushInterval time.Duration
	writeback     bool
	url           string
	window        int
	out           string
	cpuprofile    string
}

// result is the one line a run prints.
type result struct {
	Mode          string  `json:"mode"`
	Records       int64   `json:"records"`
	Bytes         int64   `json:"bytes"` // record payload bytes
	Seconds       float64 `json:"seconds"`
	MBPerSec      float64 `json:"mb_per_s"`
	RecordsPerSec float64 `json:"records_per_s"`
	Batch         int     `json:"batch,omitempty"`
	Inflight      int     `json:"inflight,omitempty"`
	FlushInterval string  `json:"flush_interval,omitempty"`
	Writeback     bool    `json:"start_writeback,omitempty"`
	Fsyncs        int64   `json:"fsyncs,omitempty"`
	FsyncAvgUs    float64 `json:"fsync_avg_us,omitempty"`
	RecordsPerFsy float64 `json:"records_per_fsync,omitempty"`
	DiskBytes     int64   `json:"disk_bytes,omitempty"` // bytes of batches appended
	Window        int     `json:"window,omitempty"`
	ServerVersion string  `json:"server_version,omitempty"` // nats-server's
	// CPUSeconds is the user+system CPU time of this process over the
	// whole run (setup included): what the work cost, whatever the load.
	CPUSeconds float64 `json:"cpu_seconds"`
}

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	var c config
	flag.StringVar(&c.mode, "mode", "append", "append, read, jetstream or lines")
	flag.StringVar(&c.dir, "dir", "", "log data directory (append, read)")
	flag.StringVar(&c.topic, "topic", "bench", "topic (partition 0)")
	flag.Int64Var(&c.records, "records", 512*1024, "records to write")
	flag.IntVar(&c.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&c.batch, "batch", 1000, "records per Append call")
	flag.IntVar(&c.inflight, "inflight", 8, "concurrent appenders")
	flag.DurationVar(&c.flushInterval, "flush-interval", 0, "log FlushInterval; 0 fsyncs before every acknowledgement")
	flag.BoolVar(&c.writeback, "start-writeback", false, "log StartWriteback: start writeback of each append before its fsync")
	flag.StringVar(&c.url, "url", nats.DefaultURL, "NATS server (jetstream)")
	flag.IntVar(&c.window, "window", 1024, "unacknowledged JetStream publishes in flight")
	flag.StringVar(&c.out, "out", "", "file to write (lines)")
	flag.StringVar(&c.cpuprofile, "cpuprofile", "", "write a CPU profile of the measured part to this file")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "logbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, c config) error {
	if c.records <= 0 || c.size <= 0 || c.batch <= 0 || c.inflight <= 0 || c.window <= 0 {
		return errors.New("-records, -size, -batch, -inflight and -window must be positive")
	}
	var (
		res result
		err error
	)
	switch c.mode {
	case "append":
		res, err = runAppend(ctx, c)
	case "read":
		res, err = runRead(ctx, c)
	case "jetstream":
		res, err = runJetStream(ctx, c)
	case "lines":
		return writeLines(c)
	default:
		return fmt.Errorf("unknown -mode %q (valid: append, read, jetstream, lines)", c.mode)
	}
	if err != nil {
		return err
	}
	res.Mode = c.mode
	res.CPUSeconds = cpuSeconds()
	if res.Seconds > 0 {
		res.MBPerSec = float64(res.Bytes) / 1e6 / res.Seconds
		res.RecordsPerSec = float64(res.Records) / res.Seconds
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// values returns n record values of size bytes: printable, varied, and
// backed by one buffer (the log copies them into its batches).
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

// profile starts a CPU profile when asked; the returned func stops it.
func profile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("start profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func openLog(c config) (*tlog.Log, error) {
	if c.dir == "" {
		return nil, errors.New("-dir is required")
	}
	return tlog.Open(tlog.Options{
		Dir:            c.dir,
		FlushInterval:  c.flushInterval,
		StartWriteback: c.writeback,
		Logger:         slog.New(slog.DiscardHandler),
	})
}

func runAppend(ctx context.Context, c config) (result, error) {
	l, err := openLog(c)
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	if err := l.CreateTopic(c.topic, 1, nil); err != nil {
		return result{}, err
	}
	vals := values(c.batch, c.size)
	stop, err := profile(c.cpuprofile)
	if err != nil {
		return result{}, err
	}
	var (
		claimed atomic.Int64
		wg      sync.WaitGroup
		errMu   sync.Mutex
		firstEr error
	)
	start := time.Now()
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
				if _, err := l.Append(ctx, c.topic, 0, recs[:n]); err != nil {
					errMu.Lock()
					if firstEr == nil {
						firstEr = err
					}
					errMu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	if firstEr != nil {
		return result{}, firstEr
	}
	m := l.Metrics()
	res := result{
		Records: c.records, Bytes: c.records * int64(c.size), Seconds: elapsed.Seconds(),
		Batch: c.batch, Inflight: c.inflight, Writeback: c.writeback,
		Fsyncs: m.Fsyncs.Load(), DiskBytes: m.BytesAppended.Load(),
	}
	if c.flushInterval > 0 {
		res.FlushInterval = c.flushInterval.String()
	}
	if res.Fsyncs > 0 {
		res.FsyncAvgUs = float64(m.FsyncNanos.Load()) / float64(res.Fsyncs) / 1e3
		res.RecordsPerFsy = float64(c.records) / float64(res.Fsyncs)
	}
	return res, l.Close()
}

func runRead(ctx context.Context, c config) (result, error) {
	l, err := openLog(c)
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	from, end, err := l.Offsets(c.topic, 0)
	if err != nil {
		return result{}, err
	}
	stop, err := profile(c.cpuprofile)
	if err != nil {
		return result{}, err
	}
	var records, bytes int64
	start := time.Now()
	for from < end {
		res, err := l.Read(ctx, c.topic, 0, from, tlog.ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			stop()
			return result{}, err
		}
		for i := range res.Records {
			bytes += int64(len(res.Records[i].Value))
		}
		records += int64(len(res.Records))
		if res.NextOffset <= from {
			stop()
			return result{}, fmt.Errorf("read made no progress at offset %d", from)
		}
		from = res.NextOffset
	}
	elapsed := time.Since(start)
	stop()
	return result{Records: records, Bytes: bytes, Seconds: elapsed.Seconds()}, l.Close()
}

func runJetStream(ctx context.Context, c config) (result, error) {
	nc, err := nats.Connect(c.url)
	if err != nil {
		return result{}, fmt.Errorf("connect to %s: %w", c.url, err)
	}
	defer nc.Close()
	var pubErrs atomic.Int64
	var lastErr atomic.Value
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(c.window),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, _ *nats.Msg, err error) {
			pubErrs.Add(1)
			lastErr.Store(err.Error())
		}))
	if err != nil {
		return result{}, err
	}
	name := fmt.Sprintf("LOGBENCH_%d_%d", os.Getpid(), time.Now().UnixNano())
	subject := "logbench." + name
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{subject}, Storage: jetstream.FileStorage,
	}); err != nil {
		return result{}, fmt.Errorf("create stream %s: %w", name, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := js.DeleteStream(dctx, name); err != nil {
			fmt.Fprintf(os.Stderr, "logbench: delete stream %s: %v\n", name, err)
		}
	}()
	vals := values(c.batch, c.size)
	stop, err := profile(c.cpuprofile)
	if err != nil {
		return result{}, err
	}
	start := time.Now()
	for i := int64(0); i < c.records; i++ {
		if _, err := js.PublishAsync(subject, vals[i%int64(len(vals))], jetstream.WithStallWait(time.Minute)); err != nil {
			stop()
			return result{}, fmt.Errorf("publish record %d: %w", i, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		stop()
		return result{}, fmt.Errorf("%d publishes still unacknowledged after 5 minutes", js.PublishAsyncPending())
	}
	elapsed := time.Since(start)
	stop()
	if n := pubErrs.Load(); n > 0 {
		return result{}, fmt.Errorf("%d publishes failed, the last with: %v", n, lastErr.Load())
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return result{}, err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return result{}, err
	}
	if got := int64(info.State.Msgs); got != c.records {
		return result{}, fmt.Errorf("stream %s holds %d messages, want %d", name, got, c.records)
	}
	return result{
		Records: c.records, Bytes: c.records * int64(c.size), Seconds: elapsed.Seconds(),
		Window: c.window, DiskBytes: int64(info.State.Bytes), ServerVersion: nc.ConnectedServerVersion(),
	}, nil
}

// writeLines writes -records lines of -size printable bytes each to -out.
func writeLines(c config) error {
	if c.out == "" {
		return errors.New("-out is required")
	}
	f, err := os.Create(c.out)
	if err != nil {
		return err
	}
	vals := values(c.batch, c.size)
	w := bufio.NewWriterSize(f, 1<<20)
	for i := int64(0); i < c.records; i++ {
		w.Write(vals[i%int64(len(vals))])
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", c.out, err)
	}
	return f.Close()
}

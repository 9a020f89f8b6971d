// Command pluginbench measures the plugin boundary (issue 9, "Benchmark"):
// records/s through the example connectors of examples/plugins run as
// plugins — a process of their own, over go-plugin's gRPC — beside the very
// same connector code compiled in (the limit), for bench/plugins/run.sh.
//
//   - source: the counter source at rate 0 with pad set so that each value
//     is -size bytes; Read until -records records have come, and Ack the
//     last position of every batch, as the worker does.
//   - sink: the jsonl sink; Write batches of -batch records of -size bytes
//     (one batch built before timing and written again and again) until
//     -records records are written. jsonl fsyncs before Write returns, so
//     the disk under -dir takes part: run it on tmpfs to see the boundary
//     alone.
//   - pipeline: counter (with max set) → a topic of the embedded log in
//     -dir → jsonl, through the worker (engine), from the start of the
//     connectors until the sink's group has committed -records records:
//     the records/s a user of `tributary run` sees, with both connectors
//     as plugins or both built in.
//
// Open and Close are not timed (a plugin's Open starts its process; that is
// shown on its own). The rounds alternate which side runs first. The table
// shows the median of the rounds, the spread (min–max), and the plugin's
// ratio to the limit per round; CPU-seconds per million records count this
// process and, for a plugin, the plugin process too (from /proc), which is
// steadier than wall time on a shared machine. Byte rates count record
// values in MB of 10^6 bytes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/examples/plugins/counter/counter"
	"github.com/tributary-io/tributary/examples/plugins/jsonl/jsonl"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/plugins"
)

// targetRatio is issue 9's target: a plugin reaches at least half the
// records/s of the same connector built in, for 1 KiB records.
const targetRatio = 0.5

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "pluginbench:", err)
		os.Exit(1)
	}
}

type config struct {
	pluginDir string
	dir       string
	records   int
	size      int
	batch     int
	runs      int
	phases    []string
}

func run() error {
	var c config
	var phases string
	flag.StringVar(&c.pluginDir, "plugins", "", "directory holding the built counter and jsonl plugins (required)")
	flag.StringVar(&c.dir, "dir", os.TempDir(), "where the sink's files go (the disk under test)")
	flag.IntVar(&c.records, "records", 200_000, "records per measurement")
	flag.IntVar(&c.size, "size", 1024, "bytes of each record value")
	flag.IntVar(&c.batch, "batch", 1000, "records per sink Write (the worker hands a sink up to 1 MiB a poll)")
	flag.IntVar(&c.runs, "runs", 3, "rounds of every measurement")
	flag.StringVar(&phases, "phases", "source,sink,pipeline", "what to measure: source, sink, pipeline")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of this process (the host side) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if c.pluginDir == "" {
		return errors.New("-plugins is required (build examples/plugins/counter and jsonl into it; run.sh does)")
	}
	if c.records <= 0 || c.batch <= 0 || c.runs <= 0 || c.size < 32 {
		return errors.New("-records, -batch and -runs must be positive, -size at least 32")
	}
	c.phases = strings.Split(phases, ",")
	for _, p := range c.phases {
		if p != "source" && p != "sink" && p != "pipeline" {
			return fmt.Errorf("unknown phase %q (source, sink, pipeline)", p)
		}
	}
	ctx := context.Background()
	host := plugins.NewHost(plugins.Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	found := map[string]*plugins.Plugin{}
	for _, name := range []string{"counter", "jsonl"} {
		p := host.Inspect(ctx, filepath.Join(c.pluginDir, name))
		if !p.Valid() {
			return p.Err
		}
		found[name] = p
	}

	fmt.Fprintf(os.Stderr, "== %d rounds of %d records of %d bytes; sink batches of %d; files in %s; GOMAXPROCS %d; load average %s\n",
		c.runs, c.records, c.size, c.batch, c.dir, runtime.GOMAXPROCS(0), loadAverage())
	type side struct {
		name   string
		plugin bool
	}
	results := map[string][]result{} // by phase + "/" + side
	for round := range c.runs {
		sides := []side{{"built in", false}, {"plugin", true}}
		if round%2 == 1 {
			slices.Reverse(sides)
		}
		for _, phase := range c.phases {
			for _, s := range sides {
				var (
					r   result
					err error
				)
				switch phase {
				case "source":
					src := counter.Connector().NewSource()
					if s.plugin {
						src = found["counter"].Connector().NewSource()
					}
					r, err = benchSource(ctx, c, src, found["counter"].Spec)
				case "sink":
					sink := jsonl.Connector().NewSink()
					if s.plugin {
						sink = found["jsonl"].Connector().NewSink()
					}
					r, err = benchSink(ctx, c, sink, found["jsonl"].Spec, round)
				case "pipeline":
					conns := []connect.Connector{counter.Connector(), jsonl.Connector()}
					if s.plugin {
						conns = []connect.Connector{found["counter"].Connector(), found["jsonl"].Connector()}
					}
					r, err = benchPipeline(ctx, c, conns, round)
				}
				if err != nil {
					return fmt.Errorf("%s %s, round %d: %w", phase, s.name, round+1, err)
				}
				fmt.Fprintf(os.Stderr, "round %d: %-6s %-8s %9.0f records/s  %6.1f MB/s  %5.2f CPU-s/M records  (open %s)\n",
					round+1, phase, s.name, r.rate(), r.mbps(), r.cpuPerM(), r.open.Round(time.Millisecond))
				results[phase+"/"+s.name] = append(results[phase+"/"+s.name], r)
			}
		}
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "connector\tas\trecords/s (median)\tmin–max\tMB/s\tCPU-s / M records\tof built in (median)\tmin–max\ttarget\t")
	for _, phase := range c.phases {
		conn := map[string]string{"source": "counter (source)", "sink": "jsonl (sink)", "pipeline": "counter → log → jsonl"}[phase]
		in, pl := results[phase+"/built in"], results[phase+"/plugin"]
		var ratios, cpuRatios []float64
		for i := range in {
			ratios = append(ratios, pl[i].rate()/in[i].rate())
			cpuRatios = append(cpuRatios, in[i].cpuPerM()/pl[i].cpuPerM())
		}
		for _, row := range []struct {
			as string
			rs []result
		}{{"built in", in}, {"plugin", pl}} {
			rates := collect(row.rs, result.rate)
			ratio, spread, target := "100%", "", ""
			if row.as == "plugin" {
				ratio = pct(median(ratios))
				spread = pct(slices.Min(ratios)) + "–" + pct(slices.Max(ratios))
				target = "≥ 50%: "
				if median(ratios) >= targetRatio {
					target += "met"
				} else {
					target += "NOT met"
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.0f–%.0f\t%.1f\t%.2f\t%s\t%s\t%s\t\n", conn, row.as,
				median(rates), slices.Min(rates), slices.Max(rates), median(collect(row.rs, result.mbps)),
				median(collect(row.rs, result.cpuPerM)), ratio, spread, target)
		}
		fmt.Fprintf(tw, "%s\tper CPU-second\t\t\t\t\t%s\t%s\t\t\n", conn, pct(median(cpuRatios)), pct(slices.Min(cpuRatios))+"–"+pct(slices.Max(cpuRatios)))
	}
	return tw.Flush()
}

// result is one measurement.
type result struct {
	records int
	bytes   int64
	elapsed time.Duration
	cpu     time.Duration // this process, plus the plugin process
	open    time.Duration
}

func (r result) rate() float64    { return float64(r.records) / r.elapsed.Seconds() }
func (r result) mbps() float64    { return float64(r.bytes) / 1e6 / r.elapsed.Seconds() }
func (r result) cpuPerM() float64 { return r.cpu.Seconds() / float64(r.records) * 1e6 }

// pad returns the pad setting that makes the counter's values (for n of
// six digits) size bytes long.
func pad(size int) int {
	return max(size-len(`{"n":100000,"pad":""}`), 0)
}

func benchSource(ctx context.Context, c config, src connect.Source, spec connect.Spec) (result, error) {
	cfg := connect.Config{Pipeline: "bench", Connector: "numbers", Spec: spec,
		Values: spec.WithDefaults(map[string]string{"rate": "0", "pad": strconv.Itoa(pad(c.size))})}
	start := time.Now()
	if err := src.Open(ctx, cfg); err != nil {
		return result{}, err
	}
	defer src.Close(context.Background())
	r := result{open: time.Since(start)}
	cpu := startCPU()
	start = time.Now()
	for r.records < c.records {
		recs, err := src.Read(ctx)
		if err != nil {
			return r, err
		}
		for _, rec := range recs {
			r.bytes += int64(len(rec.Value))
		}
		r.records += len(recs)
		if len(recs) > 0 {
			if err := src.Ack(ctx, recs[len(recs)-1].Position); err != nil {
				return r, err
			}
		}
	}
	r.elapsed, r.cpu = time.Since(start), cpu.used()
	return r, nil
}

func benchSink(ctx context.Context, c config, sink connect.Sink, spec connect.Spec, round int) (result, error) {
	path := filepath.Join(c.dir, fmt.Sprintf("pluginbench-%d-%d.jsonl", os.Getpid(), round))
	defer os.Remove(path)
	cfg := connect.Config{Pipeline: "bench", Connector: "file", Spec: spec, Values: spec.WithDefaults(map[string]string{"path": path})}
	batch := make([]connect.Record, c.batch)
	padding := strings.Repeat("x", pad(c.size))
	for i := range batch {
		batch[i] = connect.Record{Topic: "numbers", Offset: int64(i), Timestamp: time.Now(),
			Value: fmt.Appendf(nil, `{"n":%d,"pad":"%s"}`, 100000+i, padding)}
	}
	start := time.Now()
	if err := sink.Open(ctx, cfg); err != nil {
		return result{}, err
	}
	defer sink.Close(context.Background())
	r := result{open: time.Since(start)}
	cpu := startCPU()
	start = time.Now()
	for r.records < c.records {
		n := min(len(batch), c.records-r.records)
		if err := sink.Write(ctx, batch[:n]); err != nil {
			return r, err
		}
		for _, rec := range batch[:n] {
			r.bytes += int64(len(rec.Value))
		}
		r.records += n
	}
	r.elapsed, r.cpu = time.Since(start), cpu.used()
	return r, nil
}

// benchPipeline runs counter → topic → jsonl through the worker on a fresh
// embedded log (fsync'ed appends, as by default) in c.dir, from the start
// of the two connectors until the sink's group has committed c.records
// records: the throughput a user sees.
func benchPipeline(ctx context.Context, c config, conns []connect.Connector, round int) (result, error) {
	const topic, sourceName, sinkName = "numbers", "numbers", "numbers-file"
	dir, err := os.MkdirTemp(c.dir, fmt.Sprintf("pipeline-%d-", round))
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	quiet := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: filepath.Join(dir, "data"), Logger: quiet})
	if err != nil {
		return result{}, err
	}
	defer l.Close()
	reg := connect.NewRegistry()
	for _, conn := range conns {
		if err := reg.Register(conn); err != nil {
			return result{}, err
		}
	}
	backend := engine.NewEmbedded(l, quiet)
	if err := backend.EnsureTopic(ctx, topic, 1, nil); err != nil {
		return result{}, err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: backend, Connectors: reg, Logger: quiet})
	if err != nil {
		return result{}, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w.Shutdown(sctx)
	}()
	var r result
	cpu := startCPU()
	start := time.Now()
	specs := []engine.ConnectorSpec{
		{Pipeline: "bench", Name: sourceName, Kind: connect.KindSource, Connector: "counter", Topic: topic,
			Config: map[string]string{"rate": "0", "pad": strconv.Itoa(pad(c.size)), "max": strconv.Itoa(c.records)}},
		{Pipeline: "bench", Name: sinkName, Kind: connect.KindSink, Connector: "jsonl", Topics: []string{topic},
			Config: map[string]string{"path": filepath.Join(dir, "numbers.jsonl")}},
	}
	for _, s := range specs {
		if err := w.Start(ctx, s, ""); err != nil {
			return result{}, err
		}
	}
	for {
		var n int64
		for _, o := range l.Groups().Committed(sinkName) {
			n += o.Offset
		}
		if n >= int64(c.records) {
			break
		}
		for _, name := range []string{sourceName, sinkName} {
			if st, err := w.Status(name); err == nil && len(st.Tasks) > 0 && st.Tasks[0].State == engine.StateFailed {
				return result{}, fmt.Errorf("%s failed: %s", name, st.Tasks[0].Trace)
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.elapsed, r.cpu = time.Since(start), cpu.used()
	r.records = c.records
	fi, err := os.Stat(filepath.Join(dir, "numbers.jsonl"))
	if err != nil {
		return result{}, err
	}
	r.bytes = fi.Size() - int64(c.records) // the values, without their line breaks
	return r, nil
}

// cpuMeter measures the CPU time of this process and of its child
// processes that run now (the plugin, when one runs).
type cpuMeter struct {
	self     time.Duration
	children map[int]time.Duration
}

func startCPU() cpuMeter {
	return cpuMeter{self: selfCPU(), children: childrenCPU()}
}

func (m cpuMeter) used() time.Duration {
	d := selfCPU() - m.self
	for pid, t := range childrenCPU() {
		d += t - m.children[pid]
	}
	return d
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTicks is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux).
const clockTicks = 100

// childrenCPU returns the user+system CPU time of each running child
// process, from /proc (empty where there is no /proc).
func childrenCPU() map[int]time.Duration {
	out := map[int]time.Duration{}
	entries, _ := os.ReadDir("/proc")
	me := os.Getpid()
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ... utime stime: fields 4, 14 and 15; comm
		// may hold spaces, so count from its closing parenthesis.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			continue
		}
		if ppid, _ := strconv.Atoi(f[1]); ppid != me {
			continue
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(ut+st) * time.Second / clockTicks
	}
	return out
}

func loadAverage() string {
	f, err := os.Open("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 64))
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func collect(rs []result, f func(result) float64) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = f(r)
	}
	return out
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", x*100) }

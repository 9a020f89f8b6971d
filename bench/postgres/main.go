// Command pgbench measures the postgres source (issue 4, "Benchmark")
// against one throwaway PostgreSQL server that it starts itself (initdb
// into a temporary directory; as the postgres OS user when run as root):
//
//   - snapshot: rows/s of an initial_only snapshot of a table of ~200-byte
//     rows, beside COPY (SELECT …) TO STDOUT of the same table (the limit),
//     with the peak RSS of this process.
//
//   - stream: -txns small transactions (one ~200-byte row each, -clients
//     connections) are written first; then pg_recvlogical (pgoutput, the
//     same protocol options) streams them from its own slot to /dev/null
//     (the limit), and the source streams them from another slot through
//     Read and Ack, as the worker would, without a log. It reports
//     changes/s of both and the source's CPU-seconds per million changes.
//
//   - latency: pgbench commits single-row inserts at -rate transactions/s
//     for -seconds (synchronous_commit on) while the source runs in the
//     worker with the embedded log (fsync on); it reports commit-to-log
//     latency p50/p99 (from source.ts_us to the moment a reader sees the
//     durable record) and CPU-seconds per million changes of this process.
//
//     go run ./bench/postgres -rows 1000000 -txns 50000 -rate 5000 -seconds 20
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/internal/procs"
)

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	rows := flag.Int("rows", 1000000, "rows of the snapshot table")
	txns := flag.Int("txns", 100000, "small transactions of the streaming workload")
	clients := flag.Int("clients", 4, "connections writing the streaming workload")
	rate := flag.Int("rate", 5000, "transactions/s of the latency workload (pgbench -R)")
	seconds := flag.Int("seconds", 20, "duration of the latency workload")
	runs := flag.Int("runs", 3, "interleaved runs of the snapshot and streaming phases; medians are reported")
	blockProfile := flag.String("blockprofile", "", "write a blocking profile of the run to this file")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the snapshot and streaming phases (this process: the source, and the COPY and workload clients) to this file")
	flag.Parse()
	if *blockProfile != "" {
		runtime.SetBlockProfileRate(int(time.Millisecond))
		defer func() {
			f, err := os.Create(*blockProfile)
			if err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err := run(*rows, *txns, *clients, *rate, *seconds, max(*runs, 1), *cpuProfile); err != nil {
		fmt.Fprintln(os.Stderr, "pgbench:", err)
		os.Exit(1) //nolint:gocritic // the profile is only for good runs
	}
}

// profiler profiles the snapshot and streaming phases (not the setup nor
// the latency phase).
type profiler struct {
	f *os.File
}

func newProfiler(path string) (*profiler, error) {
	if path == "" {
		return &profiler{}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		return nil, err
	}
	return &profiler{f: f}, nil
}

func (p *profiler) stop() {
	if p.f != nil {
		pprof.StopCPUProfile()
		p.f.Close()
	}
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func rateOf(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }

func run(rows, txns, clients, latRate, seconds, runs int, cpuProfile string) error {
	ctx := context.Background()
	dsn, stop, err := startServer()
	if err != nil {
		return err
	}
	defer stop()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	setup := []string{
		"CREATE TABLE snap (id bigint PRIMARY KEY, payload text)",
		fmt.Sprintf("INSERT INTO snap SELECT g, repeat(md5(g::text), 6) FROM generate_series(1, %d) g", rows),
		"VACUUM ANALYZE snap",
		"CREATE TABLE stream (id bigserial PRIMARY KEY, payload text)",
		"CREATE PUBLICATION bench_pub FOR TABLE stream",
	}
	// Every streaming run reads the same WAL, from slots created before
	// the workload: pg_recvlogical in text mode, in binary mode, and the
	// source.
	for i := 0; i < runs; i++ {
		for _, who := range []string{"recv", "recvbin", "ours"} {
			setup = append(setup, fmt.Sprintf("SELECT pg_create_logical_replication_slot('bench_%s_%d', 'pgoutput')", who, i))
		}
	}
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	prof, err := newProfiler(cpuProfile)
	if err != nil {
		return err
	}
	defer prof.stop()

	// Snapshot: COPY and the source, interleaved.
	var copyRates, snapRates, snapRatios, snapCPUs []float64
	for i := 0; i < runs; i++ {
		start := time.Now()
		if _, err := conn.PgConn().CopyTo(ctx, io.Discard, "COPY (SELECT * FROM snap ORDER BY id) TO STDOUT"); err != nil {
			return fmt.Errorf("copy: %w", err)
		}
		copyTook := time.Since(start)
		cpu0 := cpuSeconds()
		start = time.Now()
		n, err := readSource(ctx, map[string]string{"dsn": dsn, "tables": "public.snap", "snapshot.mode": "initial_only", "heartbeat.interval": "0"}, rows, 0)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		if n != rows {
			return fmt.Errorf("snapshot: %d rows, want %d", n, rows)
		}
		snapTook := time.Since(start)
		snapCPUs = append(snapCPUs, (cpuSeconds()-cpu0)/float64(n)*1e6)
		copyRates = append(copyRates, rateOf(rows, copyTook))
		snapRates = append(snapRates, rateOf(n, snapTook))
		snapRatios = append(snapRatios, copyTook.Seconds()/snapTook.Seconds())
		fmt.Fprintf(os.Stderr, "snapshot run %d: source %.0f rows/s, COPY %.0f rows/s, ratio %.2f, %.2f CPU-µs/row\n", i+1, snapRates[i], copyRates[i], snapRatios[i], snapCPUs[i])
	}

	// Streaming: write the workload once, then read it back from each run's slots.
	start := time.Now()
	if err := writeWorkload(ctx, dsn, txns, clients); err != nil {
		return err
	}
	writeTook := time.Since(start)
	var end string
	if err := conn.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&end); err != nil {
		return err
	}
	endLSN, err := parseLSN(end)
	if err != nil {
		return err
	}
	recvlogical := func(slot string, binary bool) (time.Duration, error) {
		args := []string{"-d", dsn, "-S", slot, "--start", "--no-loop", "-E", end,
			"-o", "proto_version=2", "-o", "streaming=on", "-o", "publication_names=bench_pub", "-o", "messages=true", "-f", "/dev/null"}
		if binary {
			args = append(args, "-o", "binary=true")
		}
		start := time.Now()
		out, err := exec.Command(pgBin("pg_recvlogical"), args...).CombinedOutput()
		if err != nil {
			return 0, fmt.Errorf("pg_recvlogical: %v\n%s", err, out)
		}
		return time.Since(start), nil
	}
	var recvRates, binRates, ourRates, streamRatios, streamCPUs []float64
	for i := 0; i < runs; i++ {
		var recvTook, binTook, ourTook time.Duration
		var streamed int
		ours := func() error {
			cpu0 := cpuSeconds()
			start := time.Now()
			n, err := readSource(ctx, map[string]string{"dsn": dsn, "tables": "public.stream", "snapshot.mode": "never",
				"slot": fmt.Sprintf("bench_ours_%d", i), "publication": "bench_pub", "heartbeat.interval": "0"}, txns, endLSN)
			if err != nil {
				return fmt.Errorf("stream: %w", err)
			}
			ourTook, streamed = time.Since(start), n
			streamCPUs = append(streamCPUs, (cpuSeconds()-cpu0)/float64(n)*1e6)
			return nil
		}
		// Alternate who goes first, so that neither always meets a warm
		// (or a cold) WAL cache.
		if i%2 == 1 {
			if err := ours(); err != nil {
				return err
			}
		}
		// Text and binary pg_recvlogical alternate too.
		for _, binary := range []bool{i%2 == 1, i%2 == 0} {
			slot, took := fmt.Sprintf("bench_recv_%d", i), &recvTook
			if binary {
				slot, took = fmt.Sprintf("bench_recvbin_%d", i), &binTook
			}
			if *took, err = recvlogical(slot, binary); err != nil {
				return err
			}
		}
		if i%2 == 0 {
			if err := ours(); err != nil {
				return err
			}
		}
		recvRates = append(recvRates, rateOf(txns, recvTook))
		binRates = append(binRates, rateOf(txns, binTook))
		ourRates = append(ourRates, rateOf(streamed, ourTook))
		streamRatios = append(streamRatios, recvTook.Seconds()/ourTook.Seconds())
		fmt.Fprintf(os.Stderr, "stream run %d: source %.0f changes/s, pg_recvlogical %.0f (binary %.0f) changes/s, ratio %.2f, %.1f CPU-s per million\n",
			i+1, ourRates[i], recvRates[i], binRates[i], streamRatios[i], streamCPUs[i])
	}
	prof.stop()

	fmt.Printf("snapshot  rows=%d runs=%d (medians)  source %.0f rows/s  COPY %.0f rows/s  ratio %.2f (target 0.30)  cpu %.2f µs/row  peak RSS %d MB\n",
		rows, runs, median(snapRates), median(copyRates), median(snapRatios), median(snapCPUs), peakRSSMB())
	fmt.Printf("stream    changes=%d runs=%d (medians; written at %.0f txn/s)  source %.0f changes/s  pg_recvlogical %.0f changes/s (binary=true %.0f)  ratio %.2f (target 0.85)  cpu %.1f s per million changes\n",
		txns, runs, rateOf(txns, writeTook), median(ourRates), median(recvRates), median(binRates), median(streamRatios), median(streamCPUs))
	if latRate > 0 && seconds > 0 {
		lr, err := measureLatency(ctx, dsn, latRate, seconds, clients)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		fmt.Printf("latency   changes=%d at %.0f changes/s (asked %d) through the worker and the embedded log (fsync on): commit-to-log p50 %s  p99 %s (target < 100ms)  max %s  cpu %.1f s per million changes (worker, log, reader)\n",
			lr.changes, lr.rate, latRate, lr.p50.Round(100*time.Microsecond), lr.p99.Round(100*time.Microsecond), lr.pmax.Round(time.Millisecond), lr.cpuPerMillion)
	}
	return nil
}

// readSource opens a source and reads (acking as a worker would) until it
// has want records and, when endLSN is set, a position at or after it.
func readSource(ctx context.Context, values map[string]string, want int, endLSN uint64) (int, error) {
	c := postgres.Connector()
	s := c.NewSource()
	cfg := connect.Config{Pipeline: "bench", Connector: "bench", Values: values, Spec: c.Spec}
	if err := s.Open(ctx, cfg); err != nil {
		return 0, err
	}
	defer s.Close(context.Background())
	n := 0
	for {
		recs, err := s.Read(ctx)
		if err != nil {
			return n, err
		}
		var last connect.Position
		for _, r := range recs {
			if r.Value != nil {
				n++
			}
			if r.Position != nil {
				last = r.Position
			}
		}
		if last != nil {
			if err := s.Ack(ctx, last); err != nil {
				return n, err
			}
			if n >= want && (endLSN == 0 || lsnOf(last) >= endLSN) {
				return n, nil
			}
		}
	}
}

func lsnOf(p connect.Position) uint64 {
	s := string(p)
	i := strings.Index(s, `"lsn":`)
	if i < 0 {
		return 0
	}
	s = s[i+6:]
	j := strings.IndexAny(s, ",}")
	v, _ := strconv.ParseUint(s[:j], 10, 64)
	return v
}

func parseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("bad LSN %q", s)
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad LSN %q", s)
	}
	return h<<32 | l, nil
}

// writeWorkload commits txns single-row inserts of ~200 bytes over clients
// connections.
func writeWorkload(ctx context.Context, dsn string, txns, clients int) error {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				errs <- err
				return
			}
			defer conn.Close(ctx)
			for i := c; i < txns; i += clients {
				if _, err := conn.Exec(ctx, "INSERT INTO stream (payload) VALUES (repeat(md5($1::bigint::text), 6))", int64(i)); err != nil {
					errs <- err
					return
				}
			}
		}(c)
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// startServer runs initdb into a temporary directory and starts postgres
// with wal_level=logical on a free port.
func startServer() (dsn string, stop func(), err error) {
	root, err := os.MkdirTemp("", "tributary-pgbench-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(root) }
	os.Chmod(root, 0o755)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			cleanup()
			return "", nil, fmt.Errorf("running as root needs a postgres OS user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		os.Chown(root, uid, gid)
	}
	command := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(pgBin(name), args...)
		if cred != nil {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		}
		return cmd
	}
	dir := filepath.Join(root, "data")
	if out, err := command("initdb", "-D", dir, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return "", nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := command("postgres", "-D", dir, "-p", strconv.Itoa(port), "-c", "wal_level=logical",
		"-c", "max_wal_senders=10", "-c", "max_replication_slots=10", "-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+dir, "-c", "shared_buffers=128MB", "-c", "synchronous_commit=off")
	if err := cmd.Start(); err != nil {
		cleanup()
		return "", nil, err
	}
	stop = func() {
		cmd.Process.Signal(syscall.SIGINT)
		cmd.Wait()
		cleanup()
	}
	dsn = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	for deadline := time.Now().Add(60 * time.Second); ; {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			conn.Close(context.Background())
			return dsn, stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("postgres did not start: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func peakRSSMB() int64 {
	b, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb / 1024
		}
	}
	return 0
}

// pgBin finds a PostgreSQL program on PATH or under
// /usr/lib/postgresql/*/bin.
func pgBin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return name
}

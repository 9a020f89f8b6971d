// Command mysqlbench measures the mysql source (issue 5, "Benchmark")
// against one throwaway MariaDB server that it starts itself
// (mariadb-install-db into a temporary directory, mariadbd with the binary
// log in ROW format, FULL row images and FULL row metadata):
//
//   - snapshot: rows/s of an initial_only snapshot of a table of ~200-byte
//     rows, beside a plain full-table read by the mariadb client to
//     /dev/null (the limit), with the peak RSS of this process.
//
//   - stream: -txns small transactions (one ~200-byte row each, -clients
//     connections) are written into a binlog file of their own first; then
//     the same binlog is read by go-mysql's BinlogSyncer in raw mode (no
//     event parsing: the limit), by mariadb-binlog --read-from-remote-server
//     --raw, by the BinlogSyncer parsing events (go-mysql's whole decoding, which
//     the source no longer uses: it reads raw events and decodes them itself),
//     and by the source through Read and Ack, as the worker would, without
//     a log. It reports changes/s of each and the source's CPU-seconds per
//     million changes.
//
//   - latency: a writer process commits single-row inserts at -rate
//     transactions/s for -seconds while the source runs in the worker with
//     the embedded log (fsync on); it reports commit-to-log latency p50/p99
//     (from the moment COMMIT returned in the writer to the moment a reader
//     sees the durable record) and CPU-seconds per million changes of this
//     process (worker, log, reader).
//
//     go run ./bench/mysql -rows 1000000 -txns 50000 -rate 5000 -seconds 20
package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/mysql"
	"github.com/tributary-io/tributary/internal/procs"
)

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	rows := flag.Int("rows", 200000, "rows of the snapshot table")
	txns := flag.Int("txns", 50000, "small transactions of the streaming workload")
	clients := flag.Int("clients", 4, "connections writing the workloads")
	rate := flag.Int("rate", 5000, "transactions/s of the latency workload")
	seconds := flag.Int("seconds", 10, "duration of the latency workload")
	runs := flag.Int("runs", 3, "rounds of the stream phase's readers (medians reported)")
	writer := flag.String("writer", "", "internal: run as the latency phase's writer process with this DSN")
	out := flag.String("out", "", "internal: the writer's output file")
	cpuProfile := flag.String("cpuprofile", "", "write CPU profiles of the source in the snapshot and stream phases to this path + .snapshot and .stream")
	blockProfile := flag.String("blockprofile", "", "write a blocking profile of the run to this file")
	memProfile := flag.String("memprofile", "", "write allocation profiles taken before and after the source's snapshot and stream phases to this path + .snapshot.0, .snapshot.1, .stream0.0, … (go tool pprof -sample_index=alloc_space -diff_base PATH.stream0.0 PATH.stream0.1)")
	traceFile := flag.String("trace", "", "write execution traces of the source in the snapshot and stream phases to this path + .snapshot and .stream (go tool trace)")
	flag.Parse()
	if *blockProfile != "" {
		runtime.SetBlockProfileRate(int(time.Millisecond))
		defer func() {
			if f, err := os.Create(*blockProfile); err == nil {
				pprof.Lookup("block").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	profilePath, tracePath, memPath = *cpuProfile, *traceFile, *memProfile
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	var err error
	if *writer != "" {
		err = runWriter(*writer, *out, *rate, *seconds, *clients)
	} else {
		err = run(*rows, *txns, *clients, *rate, *seconds, max(*runs, 1))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "mysqlbench:", err)
		os.Exit(1) //nolint:gocritic // the profile is only for good runs
	}
}

// profilePath is -cpuprofile, tracePath -trace, memPath -memprofile.
var profilePath, tracePath, memPath string

// writeAllocs writes the allocation profile (all allocations since the
// process started) to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return pprof.Lookup("allocs").WriteTo(f, 0)
}

// startProfile starts a CPU profile and an execution trace of a phase when
// -cpuprofile or -trace is given; the function it returns stops them.
func startProfile(phase string) (func(), error) {
	stop := func() {}
	if memPath != "" {
		runtime.GC() // the profile shows allocations as of the last GC
		if err := writeAllocs(memPath + "." + phase + ".0"); err != nil {
			return nil, err
		}
		stop = func() {
			runtime.GC()
			if err := writeAllocs(memPath + "." + phase + ".1"); err != nil {
				fmt.Fprintln(os.Stderr, "mysqlbench:", err)
			}
		}
	}
	if profilePath != "" {
		f, err := os.Create(profilePath + "." + phase)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stopMem := stop
		stop = func() { pprof.StopCPUProfile(); f.Close(); stopMem() }
	}
	if tracePath != "" {
		f, err := os.Create(tracePath + "." + phase)
		if err != nil {
			stop()
			return nil, err
		}
		if err := trace.Start(f); err != nil {
			f.Close()
			stop()
			return nil, err
		}
		stopProfile := stop
		stop = func() { trace.Stop(); f.Close(); stopProfile() }
	}
	return stop, nil
}

func run(rows, txns, clients, latRate, seconds, runs int) error {
	ctx := context.Background()
	srv, err := startServer()
	if err != nil {
		return err
	}
	defer srv.stop()
	db, err := sql.Open("mysql", srv.dsn("bench"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxIdleConns(clients + 2)

	// The snapshot table, loaded without binlogging it.
	load, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	for _, q := range []string{
		"SET SESSION sql_log_bin = 0",
		"CREATE TABLE snap (id bigint PRIMARY KEY, payload varchar(255))",
		fmt.Sprintf("INSERT INTO snap SELECT seq, REPEAT(MD5(seq), 6) FROM seq_1_to_%d", rows),
		"ANALYZE TABLE snap",
		"SET SESSION sql_log_bin = 1",
		"CREATE TABLE stream (id bigint AUTO_INCREMENT PRIMARY KEY, payload varchar(255))",
	} {
		if _, err := load.ExecContext(ctx, q); err != nil {
			load.Close()
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	load.Close()

	// Snapshot: the mariadb client, then the source.
	start := time.Now()
	cmd := exec.Command(bin("mariadb"), "--no-defaults", "-h127.0.0.1", "-P"+strconv.Itoa(srv.port), "-uroot",
		"--quick", "--batch", "--skip-column-names", "-e", "SELECT * FROM bench.snap ORDER BY id")
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stdout, cmd.Stderr = devnull, &stderr
	err = cmd.Run()
	devnull.Close()
	if err != nil {
		return fmt.Errorf("mariadb client: %v\n%s", err, stderr.String())
	}
	clientTook := time.Since(start)
	stopProfile, err := startProfile("snapshot")
	if err != nil {
		return err
	}
	cpu0 := cpuSeconds()
	start = time.Now()
	n, _, err := readSource(ctx, map[string]string{"dsn": srv.dsn(""), "tables": "bench.snap", "snapshot.mode": "initial_only", "heartbeat.interval": "0"},
		nil, rows, coordsOf{})
	if err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	snapTook := time.Since(start)
	snapCPU := cpuSeconds() - cpu0
	stopProfile()

	// Streaming: the workload in a binlog file of its own, then four
	// readers of it.
	if _, err := db.ExecContext(ctx, "FLUSH BINARY LOGS"); err != nil {
		return err
	}
	from, err := masterStatus(ctx, db)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := writeWorkload(ctx, db, txns, clients); err != nil {
		return err
	}
	writeTook := time.Since(start)
	end, err := masterStatus(ctx, db)
	if err != nil {
		return err
	}
	if end.file != from.file {
		return fmt.Errorf("the workload spans binlog files %s to %s: raise max_binlog_size", from.file, end.file)
	}
	rawDir, err := os.MkdirTemp("", "tributary-mysqlbench-raw-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(rawDir)
	// Before the first round: one raw read that is not counted (the
	// binlog file into the page cache, the server's dump path warm), then
	// a wait until the server has finished the workload's background work
	// (purge, page flushing), which otherwise competes with the first
	// reader only: every reader then finds the server in the same state.
	if _, err := syncerRead(srv, coordsOf{from.file, 4}, end, readRaw); err != nil {
		return fmt.Errorf("warm-up binlog read: %w", err)
	}
	quiet := srv.waitQuiet(30 * time.Second)
	fmt.Fprintf(os.Stderr, "stream: server quiet after %s\n", quiet.Round(time.Millisecond))
	// Rounds of the four readers of the same binlog, interleaved so that
	// the machine's load touches them alike, in the opposite order every
	// other round (so that neither the raw read nor the source always
	// follows the same reader); the medians are reported. Each Go reader
	// starts after a GC, so that none pays for the garbage of the one
	// before it. The server's CPU during each read is measured too.
	var rawT, syncT, parsedT, binlogT, streamT, rawC, syncC, parsedC, binlogC, streamC, rawS, streamS, rawA, streamA, rawG, streamG []float64
	var rawBytes int64
	streamed := 0
	var reads readStats
	for round := range runs {
		readers := []func() error{
			func() error {
				runtime.GC()
				cpu0, srv0, alloc0, gc0 := cpuSeconds(), srv.cpuSeconds(), allocated(), gcCycles()
				start := time.Now()
				var err error
				if rawBytes, err = syncerRead(srv, coordsOf{from.file, 4}, end, readRaw); err != nil {
					return fmt.Errorf("raw binlog read: %w", err)
				}
				rawT, rawC = append(rawT, time.Since(start).Seconds()), append(rawC, cpuSeconds()-cpu0)
				rawA, rawG = append(rawA, allocated()-alloc0), append(rawG, gcCycles()-gc0)
				rawS = append(rawS, srv.cpuSeconds()-srv0)
				return nil
			},
			func() error {
				runtime.GC()
				cpu0 := cpuSeconds()
				start := time.Now()
				if _, err := syncerRead(srv, coordsOf{from.file, 4}, end, readRawSync); err != nil {
					return fmt.Errorf("raw binlog read (synchronous handler): %w", err)
				}
				syncT, syncC = append(syncT, time.Since(start).Seconds()), append(syncC, cpuSeconds()-cpu0)
				return nil
			},
			func() error {
				runtime.GC()
				cpu0 := cpuSeconds()
				start := time.Now()
				if _, err := syncerRead(srv, coordsOf{from.file, 4}, end, readParsed); err != nil {
					return fmt.Errorf("parsed binlog read: %w", err)
				}
				parsedT, parsedC = append(parsedT, time.Since(start).Seconds()), append(parsedC, cpuSeconds()-cpu0)
				return nil
			},
			func() error {
				cpu0 := childCPUSeconds()
				start := time.Now()
				if out, err := exec.Command(bin("mariadb-binlog"), "--no-defaults", "--read-from-remote-server", "--raw",
					"-h127.0.0.1", "-P"+strconv.Itoa(srv.port), "-uroot", "--result-file="+rawDir+"/", from.file).CombinedOutput(); err != nil {
					return fmt.Errorf("mariadb-binlog: %v\n%s", err, out)
				}
				binlogT, binlogC = append(binlogT, time.Since(start).Seconds()), append(binlogC, childCPUSeconds()-cpu0)
				return os.Remove(filepath.Join(rawDir, from.file))
			},
			func() error {
				runtime.GC()
				stopProfile, err := startProfile(fmt.Sprintf("stream%d", round))
				if err != nil {
					return err
				}
				cpu0, srv0, alloc0, gc0 := cpuSeconds(), srv.cpuSeconds(), allocated(), gcCycles()
				start := time.Now()
				pos := fmt.Sprintf(`{"file":%q,"pos":4,"server_id":1}`, from.file)
				streamed, reads, err = readSource(ctx, map[string]string{"dsn": srv.dsn(""), "tables": "bench.stream", "heartbeat.interval": "0"},
					connect.Position(pos), txns, end)
				if err != nil {
					return fmt.Errorf("stream: %w", err)
				}
				streamT, streamC = append(streamT, time.Since(start).Seconds()), append(streamC, cpuSeconds()-cpu0)
				streamA, streamG = append(streamA, allocated()-alloc0), append(streamG, gcCycles()-gc0)
				streamS = append(streamS, srv.cpuSeconds()-srv0)
				stopProfile()
				return nil
			},
		}
		if round%2 == 1 {
			slices.Reverse(readers)
		}
		for _, r := range readers {
			if err := r(); err != nil {
				return err
			}
		}
		perM := func(c []float64) float64 { return c[len(c)-1] / float64(txns) * 1e6 }
		fmt.Fprintf(os.Stderr, "stream round %d (load %s): source %.0f/s  raw %.0f/s  ratio %.2f  raw synchronous %.0f/s  mariadb-binlog %.0f/s  parsing %.0f/s;  CPU µs per change: source %.2f raw %.2f raw synchronous %.2f mariadb-binlog %.2f parsing %.2f; server %.2f while the source read, %.2f while the raw;  bytes allocated per change: source %.0f, raw %.0f;  GC cycles per 100k changes: source %.0f, raw %.0f;  source: Open %s, %d Reads of %.0f records\n",
			round+1, loadAvg(), float64(txns)/streamT[round], float64(txns)/rawT[round], rawT[round]/streamT[round], float64(txns)/syncT[round],
			float64(txns)/binlogT[round], float64(txns)/parsedT[round], perM(streamC), perM(rawC), perM(syncC), perM(binlogC), perM(parsedC),
			perM(streamS), perM(rawS), streamA[round]/float64(txns), rawA[round]/float64(txns), streamG[round]/float64(txns)*1e5, rawG[round]/float64(txns)*1e5, reads.open.Round(time.Millisecond), reads.reads, float64(reads.records)/float64(max(reads.reads, 1)))
	}
	rate := func(n int, d time.Duration) float64 { return float64(n) / d.Seconds() }
	fmt.Printf("snapshot  rows=%d  source %.0f rows/s  mariadb client %.0f rows/s  ratio %.2f (target 0.30)  cpu %.2fs  peak RSS %d MB\n",
		n, rate(n, snapTook), rate(rows, clientTook), clientTook.Seconds()/snapTook.Seconds(), snapCPU, peakRSSMB())
	ratios := make([]float64, len(rawT))
	cpuRatios := make([]float64, len(rawT))
	syncRatios := make([]float64, len(rawT))
	syncCPURatios := make([]float64, len(rawT))
	for i := range rawT {
		ratios[i] = rawT[i] / streamT[i]
		cpuRatios[i] = rawC[i] / streamC[i]
		syncRatios[i] = syncT[i] / streamT[i]
		syncCPURatios[i] = syncC[i] / streamC[i]
	}
	perM := func(c []float64) float64 { return median(c) / float64(txns) * 1e6 }
	fmt.Printf("stream    changes=%d (written at %.0f txn/s, %.1f MB of binlog), medians of %d rounds:  source %.0f changes/s  raw BinlogSyncer %.0f changes/s  ratio %.2f (target 0.80; rounds %s)  mariadb-binlog --raw %.0f changes/s (ratio %.2f)  parsing BinlogSyncer %.0f changes/s;  CPU-seconds per million changes: source %.1f, raw %.1f, mariadb-binlog %.1f, parsing %.1f (CPU ratio raw/source %.2f);  raw BinlogSyncer with the source's synchronous hand-over %.0f changes/s, ratio %.2f (rounds %s), %.1f CPU-seconds per million changes (CPU ratio %.2f)\n",
		streamed, rate(txns, writeTook), float64(rawBytes)/1e6, len(rawT), float64(txns)/median(streamT), float64(txns)/median(rawT), median(ratios), fmtList(ratios),
		float64(txns)/median(binlogT), median(binlogT)/median(streamT), float64(txns)/median(parsedT),
		perM(streamC), perM(rawC), perM(binlogC), perM(parsedC), median(cpuRatios),
		float64(txns)/median(syncT), median(syncRatios), fmtList(syncRatios), perM(syncC), median(syncCPURatios))
	if latRate > 0 && seconds > 0 {
		lr, err := measureLatency(ctx, srv, db, latRate, seconds, clients)
		if err != nil {
			return fmt.Errorf("latency: %w", err)
		}
		r := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
		fmt.Printf("latency   changes=%d at %.0f changes/s (asked %d) through the worker and the embedded log (fsync on): commit-to-log p50 %s  p99 %s  max %s  (commit to source p50 %s p99 %s; source to log p50 %s p99 %s)  cpu %.1f s per million changes (worker, log, reader)\n",
			lr.changes, lr.rate, latRate, r(lr.p50), r(lr.p99), lr.pmax.Round(time.Millisecond), r(lr.src50), r(lr.src99), r(lr.log50), r(lr.log99), lr.cpuPerMillion)
	}
	return nil
}

// coordsOf are binlog coordinates.
type coordsOf struct {
	file string
	pos  uint32
}

// readStats describes how a source was read: how long Open took, and how
// many Reads returned records, how many in all.
type readStats struct {
	open           time.Duration
	reads, records int
}

// readSource opens a source and reads (acking as a worker would) until it
// has want change records and, when end is set, a position at or after it.
func readSource(ctx context.Context, values map[string]string, pos connect.Position, want int, end coordsOf) (int, readStats, error) {
	var rs readStats
	c := mysql.Connector()
	s := c.NewSource()
	cfg := connect.Config{Pipeline: "bench", Connector: "bench", Values: values, Spec: c.Spec, Position: pos}
	start := time.Now()
	if err := s.Open(ctx, cfg); err != nil {
		return 0, rs, err
	}
	rs.open = time.Since(start)
	defer s.Close(context.Background())
	n := 0
	for {
		recs, err := s.Read(ctx)
		if err != nil {
			return n, rs, err
		}
		if len(recs) > 0 {
			rs.reads++
			rs.records += len(recs)
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
		if last == nil {
			continue
		}
		if err := s.Ack(ctx, last); err != nil {
			return n, rs, err
		}
		var p struct {
			File     string          `json:"file"`
			Pos      uint32          `json:"pos"`
			Snapshot json.RawMessage `json:"snapshot"`
		}
		if err := json.Unmarshal(last, &p); err != nil {
			return n, rs, err
		}
		if n >= want && p.Snapshot == nil && (end.file == "" || (p.File == end.file && p.Pos >= end.pos)) {
			return n, rs, nil
		}
	}
}

// writeWorkload commits txns single-row inserts of ~200 bytes over clients
// connections.
func writeWorkload(ctx context.Context, db *sql.DB, txns, clients int) error {
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < txns; i += clients {
				if _, err := db.ExecContext(ctx, "INSERT INTO stream (payload) VALUES (REPEAT(MD5(?), 6))", i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// masterStatus returns the server's current binlog coordinates.
func masterStatus(ctx context.Context, db *sql.DB) (coordsOf, error) {
	var c coordsOf
	var pos uint64
	var doDB, ignoreDB sql.NullString
	if err := db.QueryRowContext(ctx, "SHOW MASTER STATUS").Scan(&c.file, &pos, &doDB, &ignoreDB); err != nil {
		return c, fmt.Errorf("SHOW MASTER STATUS: %w", err)
	}
	c.pos = uint32(pos)
	return c, nil
}

// server is the throwaway MariaDB server.
type server struct {
	root string
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func (s *server) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, db)
}

// startServer installs a data directory and starts mariadbd with the
// binary log (ROW, FULL row image, FULL row metadata) on a free port.
func startServer() (*server, error) {
	root, err := os.MkdirTemp("", "tributary-mysqlbench-")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "data")
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(bin("mariadb-install-db"), args...).CombinedOutput(); err != nil {
		os.RemoveAll(root)
		return nil, fmt.Errorf("mariadb-install-db: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	base := filepath.Join(root, "mariadb")
	args = []string{"--no-defaults", "--datadir=" + dir, "--socket=" + base + ".sock", "--port=" + strconv.Itoa(port),
		"--bind-address=127.0.0.1", "--pid-file=" + base + ".pid", "--log-error=" + base + ".err", "--skip-name-resolve",
		"--server-id=1", "--innodb-buffer-pool-size=512M", "--innodb-log-file-size=256M",
		"--innodb-flush-log-at-trx-commit=2", "--sync-binlog=0", "--performance-schema=OFF", "--max-connections=200",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci", "--max-binlog-size=1G",
		"--log-bin=" + base + "-binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(bin("mariadbd"), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(root)
		return nil, err
	}
	s := &server{root: root, port: port, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		db, err := sql.Open("mysql", s.dsn(""))
		if err == nil {
			_, err = db.Exec("CREATE DATABASE IF NOT EXISTS bench")
			db.Close()
		}
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(base + ".err")
			os.RemoveAll(root)
			return nil, fmt.Errorf("mariadbd exited: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("mariadbd did not accept connections within 60s: %w", err)
		}
	}
}

// cpuSeconds is the server's CPU time (user and system) so far.
func (s *server) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name in parentheses, which may
	// hold spaces: state is field 3, utime and stime fields 14 and 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (u + st) / clockTicks
}

// clockTicks is the unit of /proc's CPU times (USER_HZ), 100 on Linux.
const clockTicks = 100

// waitQuiet waits until the server uses less than a twentieth of a core
// over a quarter of a second, or for at most limit, and returns how long
// it waited.
func (s *server) waitQuiet(limit time.Duration) time.Duration {
	start := time.Now()
	for time.Since(start) < limit {
		c0 := s.cpuSeconds()
		time.Sleep(250 * time.Millisecond)
		if s.cpuSeconds()-c0 < 0.25/20 {
			break
		}
	}
	return time.Since(start)
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	os.RemoveAll(s.root)
}

func bin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	return name
}

// childCPUSeconds is the CPU time of the waited-for child processes.
func childCPUSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtList(v []float64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatFloat(x, 'f', 2, 64)
	}
	return strings.Join(parts, ", ")
}

// allocated is the bytes this process has allocated so far.
func allocated() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.TotalAlloc)
}

// gcCycles is the number of GC cycles this process has completed so far.
func gcCycles() float64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.NumGC)
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

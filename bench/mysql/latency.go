package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// latencyResult is what the latency phase measured.
type latencyResult struct {
	changes        int
	rate           float64 // changes/s the writer achieved
	p50, p99, pmax time.Duration
	cpuPerMillion  float64 // CPU-seconds of this process (worker, log, reader) per million changes
	// The two halves: commit → the source handles the row event (the
	// event's ts_us), and from there → visible in the log.
	src50, src99, log50, log99 time.Duration
}

// measureLatency runs the source in the worker with the embedded log
// (fsync on, as by default) while a writer process commits single-row
// inserts of ~200 bytes at rate transactions/s for seconds; a reader
// long-polls the topic. Latency is the time from the moment COMMIT
// returned in the writer until the reader sees the row in the log, which
// shows only durable records. (The binlog's own timestamps have whole
// seconds only.)
func measureLatency(ctx context.Context, srv *server, db *sql.DB, rate, seconds, clients int) (latencyResult, error) {
	var res latencyResult
	if _, err := db.ExecContext(ctx, "CREATE TABLE lat (id bigint PRIMARY KEY, payload varchar(255))"); err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "tributary-mysqlbench-log-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := tlog.Open(tlog.Options{Dir: filepath.Join(dir, "data"), Logger: logger})
	if err != nil {
		return res, err
	}
	defer l.Close()
	w, err := engine.NewWorker(ctx, engine.Options{Backend: engine.NewEmbedded(l, logger), Connectors: connect.Default(), Logger: logger})
	if err != nil {
		return res, err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.Shutdown(sctx)
	}()
	err = w.Start(ctx, engine.ConnectorSpec{Pipeline: "bench", Name: "lat", Kind: connect.KindSource, Connector: "mysql",
		Topic: "lat.{database}.{table}", Config: map[string]string{"dsn": srv.dsn(""), "tables": "bench.lat", "snapshot.mode": "never"}}, "")
	if err != nil {
		return res, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var n int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%'").Scan(&n)
		if err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("the source did not start streaming within a minute")
		}
	}

	// The reader: when each row became visible in the log.
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var mu sync.Mutex
	seenAt := map[int64]time.Time{}
	handledAt := map[int64]time.Time{}
	readErr := make(chan error, 1)
	go func() {
		const topic = "lat.bench.lat"
		var off int64
		for rctx.Err() == nil {
			r, err := l.Read(rctx, topic, 0, off, tlog.ReadOptions{MaxWait: 100 * time.Millisecond})
			if errors.Is(err, tlog.ErrUnknownTopic) {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			if err != nil {
				if rctx.Err() == nil {
					readErr <- err
				}
				return
			}
			now := time.Now()
			mu.Lock()
			for _, rec := range r.Records {
				var v struct {
					After struct {
						ID int64 `json:"id"`
					} `json:"after"`
					TsUs int64 `json:"ts_us"`
				}
				if rec.Value == nil || json.Unmarshal(rec.Value, &v) != nil {
					continue
				}
				if _, ok := seenAt[v.After.ID]; !ok {
					seenAt[v.After.ID] = now
					handledAt[v.After.ID] = time.UnixMicro(v.TsUs)
				}
			}
			mu.Unlock()
			off = r.NextOffset
		}
	}()

	// The writer, in a process of its own so that its CPU is not counted.
	self, err := os.Executable()
	if err != nil {
		return res, err
	}
	outFile := filepath.Join(dir, "commits.txt")
	cpu0 := cpuSeconds()
	start := time.Now()
	cmd := exec.CommandContext(ctx, self, "-writer", srv.dsn("bench"), "-out", outFile,
		"-rate", strconv.Itoa(rate), "-seconds", strconv.Itoa(seconds), "-clients", strconv.Itoa(clients))
	if out, err := cmd.CombinedOutput(); err != nil {
		return res, fmt.Errorf("writer: %v\n%s", err, out)
	}
	took := time.Since(start)
	committed, err := readCommits(outFile)
	if err != nil {
		return res, err
	}
	n := len(committed)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := len(seenAt) >= n
		seen := len(seenAt)
		mu.Unlock()
		if done {
			break
		}
		select {
		case err := <-readErr:
			return res, err
		default:
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("the log holds %d of %d rows a minute after the workload", seen, n)
		}
	}
	cpu := cpuSeconds() - cpu0
	stopReading()
	mu.Lock()
	defer mu.Unlock()
	lat := make([]time.Duration, 0, n)
	src := make([]time.Duration, 0, n)
	toLog := make([]time.Duration, 0, n)
	for id, at := range committed {
		lat = append(lat, max(0, seenAt[id].Sub(at)))
		src = append(src, max(0, handledAt[id].Sub(at)))
		toLog = append(toLog, max(0, seenAt[id].Sub(handledAt[id])))
	}
	slices.Sort(lat)
	slices.Sort(src)
	slices.Sort(toLog)
	pct := func(d []time.Duration, p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	res = latencyResult{changes: n, rate: float64(n) / took.Seconds(), cpuPerMillion: cpu / float64(n) * 1e6,
		p50: pct(lat, 0.50), p99: pct(lat, 0.99), pmax: lat[len(lat)-1],
		src50: pct(src, 0.5), src99: pct(src, 0.99), log50: pct(toLog, 0.5), log99: pct(toLog, 0.99)}
	return res, nil
}

// readCommits reads the writer's output: "id unix-nanoseconds" per line.
func readCommits(path string) (map[int64]time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[int64]time.Time{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		a, b, _ := strings.Cut(sc.Text(), " ")
		id, err1 := strconv.ParseInt(a, 10, 64)
		ns, err2 := strconv.ParseInt(b, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("writer output line %q", sc.Text())
		}
		out[id] = time.Unix(0, ns)
	}
	return out, sc.Err()
}

// runWriter is the writer process: clients connections commit single-row
// inserts (autocommit) on a fixed schedule of rate per second for
// seconds, and it writes each row's id and the time its COMMIT returned.
func runWriter(dsn, out string, rate, seconds, clients int) error {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxIdleConns(clients)
	total := rate * seconds
	type commit struct {
		id int64
		at time.Time
	}
	results := make([][]commit, clients)
	errs := make(chan error, clients)
	start := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < total; i += clients {
				if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
					time.Sleep(d)
				}
				if _, err := db.Exec("INSERT INTO lat VALUES (?, REPEAT(MD5(?), 6))", i, i); err != nil {
					errs <- err
					return
				}
				results[c] = append(results[c], commit{int64(i), time.Now()})
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for _, rs := range results {
		for _, r := range rs {
			fmt.Fprintf(bw, "%d %d\n", r.id, r.at.UnixNano())
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	tlog "github.com/tributary-io/tributary/log"
)

// latencyResult is what the latency phase measured.
type latencyResult struct {
	changes        int
	rate           float64 // changes/s pgbench achieved
	p50, p99, pmax time.Duration
	cpuPerMillion  float64 // CPU-seconds of this process (worker, log, reader) per million changes
}

// measureLatency runs the source in the worker with the embedded log
// (fsync on, as by default) while pgbench commits single-row inserts of
// ~200 bytes at rate transactions/s for seconds, with
// synchronous_commit=on; a reader long-polls the topic. Latency is the
// time from a row's commit in PostgreSQL (source.ts_us) until the reader
// sees it in the log, which shows only durable records.
func measureLatency(ctx context.Context, dsn string, rate, seconds, clients int) (latencyResult, error) {
	var res latencyResult
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return res, err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE TABLE lat (id bigserial PRIMARY KEY, payload text)"); err != nil {
		return res, err
	}
	dir, err := os.MkdirTemp("", "tributary-pgbench-log-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
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
	err = w.Start(ctx, engine.ConnectorSpec{Pipeline: "bench", Name: "lat", Kind: connect.KindSource, Connector: "postgres",
		Topic: "lat.{schema}.{table}", Config: map[string]string{"dsn": dsn, "tables": "public.lat", "snapshot.mode": "never"}}, "")
	if err != nil {
		return res, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		var active bool
		err := conn.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = 'tributary_lat'").Scan(&active)
		if err == nil && active {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("the source did not start streaming within a minute")
		}
	}

	// The reader: every record's latency, until it has seen want rows.
	rctx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	var mu sync.Mutex
	var lat []time.Duration
	seen := 0
	readErr := make(chan error, 1)
	go func() {
		const topic = "lat.public.lat"
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
					Source struct {
						TsUs int64 `json:"ts_us"`
					} `json:"source"`
				}
				if rec.Value == nil || json.Unmarshal(rec.Value, &v) != nil || v.Source.TsUs == 0 {
					continue
				}
				lat = append(lat, now.Sub(time.UnixMicro(v.Source.TsUs)))
				seen++
			}
			mu.Unlock()
			off = r.NextOffset
		}
	}()

	script := filepath.Join(dir, "insert.sql")
	if err := os.WriteFile(script, []byte("INSERT INTO lat (payload) VALUES (repeat(md5(random()::text), 6));\n"), 0o644); err != nil {
		return res, err
	}
	cmd := exec.CommandContext(ctx, pgBin("pgbench"), "-n", "-f", script, "-R", strconv.Itoa(rate), "-T", strconv.Itoa(seconds),
		"-c", strconv.Itoa(clients), "-j", strconv.Itoa(min(clients, 2)), dsn)
	cmd.Env = append(os.Environ(), "PGOPTIONS=-c synchronous_commit=on")
	cpu0 := cpuSeconds()
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		return res, fmt.Errorf("pgbench: %v\n%s", err, out)
	}
	took := time.Since(start)
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM lat").Scan(&n); err != nil {
		return res, err
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		done := seen >= n
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
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	res = latencyResult{changes: n, rate: float64(n) / took.Seconds(), p50: pct(0.50), p99: pct(0.99), pmax: lat[len(lat)-1],
		cpuPerMillion: cpu / float64(n) * 1e6}
	return res, nil
}

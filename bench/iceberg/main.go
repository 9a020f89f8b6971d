// Command icebergbench measures the Iceberg sink (issue 7, "Benchmark") in
// one run, on one disk:
//
//   - limit: a plain program's speed: decode the same JSON change events
//     (connect.DebeziumJSON) and write their rows straight to one Parquet
//     file with arrow-go's pqarrow writer (zstd), no catalog, no Iceberg.
//   - append: the sink in append mode (rows + metadata columns), batches of
//     -batch records through Write, a Flush (one Iceberg commit) every
//     -commit records, until every record is committed.
//   - upsert: the same events in upsert mode over -keys keys (updates and
//     deletes by key: equality deletes plus the last rows).
//
// Records are made in memory before timing; the log's cost is measured by
// bench/engine. For each phase it prints rows/s, its ratio to the limit
// (targets: append >= 60%, upsert >= 35%) and CPU-seconds per million rows.
// With -runs N the three phases run N times interleaved (limit, append,
// upsert, limit, …), each ratio is taken against the limit of its own
// round, and the medians are printed: on a shared machine, load that comes
// and goes then hits every phase alike.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/internal/procs"
)

func main() {
	procs.Tune() // as the tributary binary does (see internal/procs)
	dir := flag.String("dir", "", "work directory (required)")
	n := flag.Int("records", 200000, "change events per phase")
	batch := flag.Int("batch", 1000, "records per Write")
	commit := flag.Int("commit", 100000, "records per Flush (Iceberg commit)")
	keys := flag.Int("keys", 50000, "distinct keys of the events")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the sink phases to this file")
	runs := flag.Int("runs", 1, "rounds of the three phases, interleaved; medians are printed")
	flag.Parse()
	profile = *cpuprofile
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "icebergbench: -dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *n, *batch, *commit, *keys, max(*runs, 1)); err != nil {
		fmt.Fprintln(os.Stderr, "icebergbench:", err)
		os.Exit(1)
	}
}

// events makes n Debezium change events (no embedded schema) of about 200
// bytes: creates, then updates and a few deletes of keys in [0, keys).
func events(n, keys int) []connect.Record {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]connect.Record, n)
	live := make([]bool, keys)
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range out {
		id := int64(rng.IntN(keys))
		op := connect.OpCreate
		after := connect.Row{{Name: "id", Value: id}, {Name: "customer", Value: fmt.Sprintf("c%06d", rng.IntN(1e6))},
			{Name: "status", Value: []string{"new", "paid", "shipped"}[rng.IntN(3)]}, {Name: "amount", Value: float64(rng.IntN(1e6)) / 100},
			{Name: "qty", Value: int64(rng.IntN(100))}}
		var before connect.Row
		switch {
		case live[id] && rng.IntN(10) == 0:
			op, before, after = connect.OpDelete, connect.Row{{Name: "id", Value: id}}, nil
			live[id] = false
		case live[id]:
			op = connect.OpUpdate
		default:
			live[id] = true
		}
		ev := &connect.ChangeEvent{Op: op, Before: before, After: after, Key: connect.Row{{Name: "id", Value: id}},
			Source: connect.SourceInfo{Version: "1", Connector: connect.ConnectorPostgres, Name: "pg", DB: "shop", TsMs: ts.UnixMilli(),
				Extra: connect.Row{{Name: "schema", Value: "public"}, {Name: "table", Value: "orders"}}}}
		ev.SetTime(ts)
		r, err := connect.DebeziumJSON{}.Record("pg.public.orders", ev)
		if err != nil {
			panic(err)
		}
		r.Partition, r.Offset, r.Timestamp = 0, int64(i), ts.Add(time.Duration(i)*time.Millisecond)
		out[i] = r
	}
	return out
}

type result struct {
	name string
	rows int
	wall time.Duration
	cpu  time.Duration
}

func (r result) rate() float64 { return float64(r.rows) / r.wall.Seconds() }

func measure(name string, rows int, f func() error) (result, error) {
	runtime.GC()
	c0, t0 := cpuTime(), time.Now()
	err := f()
	return result{name: name, rows: rows, wall: time.Since(t0), cpu: cpuTime() - c0}, err
}

// profile is where the sink phases' CPU profile goes ("" for none).
var profile string

func run(dir string, n, batch, commit, keys, runs int) error {
	recs := events(n, keys)
	size := 0
	for _, r := range recs {
		size += len(r.Value) + len(r.Key)
	}
	fmt.Printf("%d change events, %.0f bytes each on average (key + value); %d round(s)\n", n, float64(size)/float64(n), runs)

	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	names := []string{"limit (decode + pqarrow)", "sink append", "sink upsert"}
	rounds := make([][]result, runs)
	fmt.Printf("%-6s %-26s %12s %10s %14s %10s\n", "round", "phase", "rows/s", "of limit", "CPU s/M rows", "wall s")
	for i := range runs {
		round := filepath.Join(dir, fmt.Sprint(i))
		for _, name := range names {
			var f func() error
			switch name {
			case names[0]:
				if err := os.MkdirAll(round, 0o755); err != nil {
					return err
				}
				f = func() error { return plainParquet(filepath.Join(round, "plain.parquet"), recs) }
			case names[1]:
				f = func() error { return sink(filepath.Join(round, "append"), "append", recs, batch, commit) }
			default:
				f = func() error { return sink(filepath.Join(round, "upsert"), "upsert", recs, batch, commit) }
			}
			r, err := measure(name, n, f)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			rounds[i] = append(rounds[i], r)
			fmt.Printf("%-6d %-26s %12.0f %9.0f%% %14.2f %10.2f\n", i+1, r.name, r.rate(), 100*r.rate()/rounds[i][0].rate(),
				r.cpu.Seconds()/(float64(r.rows)/1e6), r.wall.Seconds())
		}
		// Free the round's files before the next one: the disk under test
		// is shared.
		if err := os.RemoveAll(round); err != nil {
			return err
		}
	}
	if runs > 1 {
		fmt.Printf("\nmedians of %d rounds (ratios per round, against that round's limit):\n", runs)
		fmt.Printf("%-26s %12s %10s %14s %16s\n", "phase", "rows/s", "of limit", "CPU s/M rows", "of limit by CPU")
		for p, name := range names {
			var rate, ratio, cpu, cpuRatio []float64
			for _, rs := range rounds {
				r, lim := rs[p], rs[0]
				rate = append(rate, r.rate())
				ratio = append(ratio, r.rate()/lim.rate())
				cpu = append(cpu, r.cpu.Seconds()/(float64(r.rows)/1e6))
				cpuRatio = append(cpuRatio, lim.cpu.Seconds()/r.cpu.Seconds())
			}
			fmt.Printf("%-26s %12.0f %9.0f%% %14.2f %15.0f%%\n", name, median(rate), 100*median(ratio), median(cpu), 100*median(cpuRatio))
		}
	}
	fmt.Println("targets: append >= 60% of the limit, upsert >= 35%")
	return nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// sink runs the Iceberg sink over the records.
func sink(dir, mode string, recs []connect.Record, batch, commit int) error {
	ctx := context.Background()
	s := iceberg.Connector().NewSink()
	cfg := connect.Config{Pipeline: "bench", Connector: mode, Spec: iceberg.Connector().Spec, Values: map[string]string{
		"catalog.uri": "sqlite://" + filepath.Join(dir, "catalog.db"), "warehouse": filepath.Join(dir, "warehouse"),
		"mode": mode, "commit.records": "100000000",
	}}
	if err := s.Open(ctx, cfg); err != nil {
		return err
	}
	defer s.Close(ctx)
	f := s.(connect.Flusher)
	since := 0
	for i := 0; i < len(recs); i += batch {
		end := min(i+batch, len(recs))
		if err := s.Write(ctx, recs[i:end]); err != nil {
			return err
		}
		if since += end - i; since >= commit {
			if err := f.Flush(ctx); err != nil {
				return err
			}
			since = 0
		}
	}
	return f.Flush(ctx)
}

// plainParquet decodes the events and writes the rows to one Parquet file.
func plainParquet(path string, recs []connect.Record) error {
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
		{Name: "customer", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "qty", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	}, nil)
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w, err := pqarrow.NewFileWriter(sc, f, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	flushRows := func() error {
		rec := b.NewRecordBatch()
		defer rec.Release()
		return w.WriteBuffered(rec)
	}
	for i, r := range recs {
		ev, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
		if err != nil {
			return err
		}
		row := ev.After
		if row == nil {
			row = ev.Before
		}
		for c, name := range []string{"id", "customer", "status", "amount", "qty"} {
			v, _ := row.Get(name)
			switch x := v.(type) {
			case nil:
				b.Field(c).AppendNull()
			case int64:
				b.Field(c).(*array.Int64Builder).Append(x)
			case float64:
				b.Field(c).(*array.Float64Builder).Append(x)
			case string:
				b.Field(c).(*array.StringBuilder).Append(x)
			}
		}
		if (i+1)%16384 == 0 {
			if err := flushRows(); err != nil {
				return err
			}
		}
	}
	if err := flushRows(); err != nil {
		return err
	}
	if err := w.Close(); err != nil { // closes f too
		return err
	}
	g, err := os.Open(path)
	if err != nil {
		return err
	}
	defer g.Close()
	return g.Sync()
}

//go:build unix

package iceberg_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
	_ "github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/crashtest"
	tlog "github.com/tributary-io/tributary/log"
)

// The SIGKILL test re-executes its own test binary as a worker process.
// The child sees e2eChildEnv set to the test directory; e2eSeedEnv replays
// the delays of an earlier run.
const (
	e2eChildEnv = "TRIBUTARY_ICEBERG_E2E_CHILD"
	e2eSeedEnv  = "TRIBUTARY_ICEBERG_E2E_SEED"
)

// Two pipelines run in one worker and write one catalog:
//
//	generator → web.tracking (3 partitions) → iceberg append → web.tracking
//	changes   → pg.shop.items (3 partitions) → iceberg upsert → shop.items
//
// changes is a source defined below: Debezium change events (with
// embedded schemas) of a table whose rows are set and deleted at random,
// each delete followed by a tombstone, and a column added mid-stream.
const (
	e2ePartitions  = 3
	e2eEventsTopic = "web.tracking"
	e2eEventsTable = "web.tracking"
	e2eEventsSrc   = "web-events"
	e2eEventsSink  = "events-lake"
	e2eItemsTopic  = "pg.shop.items"
	e2eItemsTable  = "shop.items"
	e2eItemsSrc    = "items-cdc"
	e2eItemsSink   = "items-lake"
	e2ePipeline    = "lake"
	e2eKeys        = 60  // distinct item ids
	e2eNoteFrom    = 700 // events from this seq on carry the added column "note"
)

func e2eDataDir(dir string) string { return filepath.Join(dir, "data") }
func e2eCatalog(dir string) string { return filepath.Join(dir, "iceberg", "catalog.db") }
func e2eDiscard() *slog.Logger     { return slog.New(slog.DiscardHandler) }

func e2eLogOptions(dataDir string, logger *slog.Logger) tlog.Options {
	return tlog.Options{Dir: dataDir, NumPartitions: e2ePartitions, Logger: logger}
}

// e2eRegistry is the built-in connectors plus the changes source.
func e2eRegistry() *connect.Registry {
	r := connect.Default().Clone()
	r.MustRegister(changesConnector())
	return r
}

// e2eSpecs returns the two pipelines' connectors; maxEvents 0 generates
// without end.
func e2eSpecs(dir string, maxEvents, maxChanges uint64) []engine.ConnectorSpec {
	// About 2,500 events and 2,500 change events (plus tombstones) a
	// second; a fifth of that under the race detector, so that the sinks
	// keep up there too.
	rate, interval := "2500", "16ms"
	if raceEnabled {
		rate, interval = "500", "80ms"
	}
	// The worker flushes (and then commits group offsets) every 5 s; the
	// sinks commit to Iceberg far more often from Write, so that kills land
	// between data files and commits, and between Iceberg commits and group
	// commits (where the offsets in the snapshot summaries must dedupe).
	lake := func(mode string) map[string]string {
		return map[string]string{
			"mode":            mode,
			"catalog.uri":     "sqlite://" + e2eCatalog(dir),
			"warehouse":       filepath.Join(dir, "iceberg", "warehouse"),
			"commit.records":  "500",
			"commit.interval": "200ms",
		}
	}
	return []engine.ConnectorSpec{
		{
			Pipeline: e2ePipeline, Name: e2eEventsSrc, Kind: connect.KindSource, Connector: "generator",
			Topic: e2eEventsTopic,
			Config: map[string]string{
				"rate": rate, "seed": "7", "batch.size": "200",
				"max.events": strconv.FormatUint(maxEvents, 10),
			},
		},
		{
			Pipeline: e2ePipeline, Name: e2eEventsSink, Kind: connect.KindSink, Connector: iceberg.Name,
			Topics: []string{e2eEventsTopic}, Config: lake("append"),
		},
		{
			Pipeline: e2ePipeline, Name: e2eItemsSrc, Kind: connect.KindSource, Connector: changesName,
			Topic: e2eItemsTopic,
			Config: map[string]string{
				"seed": "11", "keys": strconv.Itoa(e2eKeys), "interval": interval,
				"max.events": strconv.FormatUint(maxChanges, 10),
			},
		},
		{
			Pipeline: e2ePipeline, Name: e2eItemsSink, Kind: connect.KindSink, Connector: iceberg.Name,
			Topics: []string{e2eItemsTopic}, Config: lake("upsert"),
		},
	}
}

// TestWorker_SIGKILL_ExactlyOnce kills a worker process running both
// pipelines with SIGKILL at random moments (between, during and after
// Parquet writes, Iceberg commits and group-offset commits), restarts it on
// the same directories each time, and checks after every kill that each
// table holds exactly what the offsets in its snapshot summary say: the
// append table every topic record up to them once, the upsert table the
// state the topic's change events up to them produce; and that the sink
// groups never committed past them. A last, clean run in process lets both
// sinks catch up; then the append table holds every record of the topic
// exactly once (and every generated seq), and the upsert table equals the
// state of the generated changes.
func TestWorker_SIGKILL_ExactlyOnce(t *testing.T) {
	crashtest.Child(e2eChildEnv, e2eChild) // in the child: runs until killed
	leaks := goleak.IgnoreCurrent()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(e2eSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", e2eSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay the delays with %s=%d)", seed, e2eSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	kills := 5
	switch {
	case testing.Short():
		kills = 2
	case raceEnabled:
		kills = 3 // a child takes seconds to get going under the race detector
	}

	dir := t.TempDir()
	var last e2eState
	for run := 1; run <= kills; run++ {
		delay := time.Duration(rng.IntN(1000)) * time.Millisecond
		if run == 2 {
			// Past the worker's 5 s flush, so that the group offsets move
			// too and the next kill lands with them behind the tables.
			delay += 5500 * time.Millisecond
		}
		killE2EChild(t, dir, run, delay)
		st := checkE2EState(t, dir, run)
		if st.eventsStored < last.eventsStored || st.itemsStored < last.itemsStored {
			t.Fatalf("run %d: the tables went back: append table %d → %d records, upsert table covers %d → %d records",
				run, last.eventsStored, st.eventsStored, last.itemsStored, st.itemsStored)
		}
		t.Logf("run %d: SIGKILL %v after the child's first data file: web.tracking %d records, %d in the append table (%d below the group offsets); pg.shop.items %d records, %d covered by the upsert table (%d below the group offsets), %d live rows",
			run, delay, st.events, st.eventsStored, st.eventsGroup, st.items, st.itemsStored, st.itemsGroup, st.itemRows)
		last = st
	}

	// The last run, in process and clean: generate past everything the
	// children did, then let both sinks catch up.
	wantEvents := uint64(last.events) + 300
	wantChanges := uint64(last.items) + 300
	runE2EFinal(t, dir, wantEvents, wantChanges)
	goleak.VerifyNone(t, leaks)
}

// e2eChild starts the pipelines of the child process on dir.
func e2eChild(dir string) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := tlog.Open(e2eLogOptions(e2eDataDir(dir), logger))
	if err != nil {
		return err
	}
	b := engine.NewEmbedded(l, logger)
	for _, topic := range []string{e2eEventsTopic, e2eItemsTopic} {
		if err := b.EnsureTopic(ctx, topic, e2ePartitions, nil); err != nil {
			return err
		}
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: e2eRegistry(), Logger: logger,
		RestartBackoffInitial: 50 * time.Millisecond, RestartBackoffMax: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	for _, spec := range e2eSpecs(dir, 0, 0) {
		if err := w.Start(ctx, spec, ""); err != nil {
			return err
		}
	}
	return nil
}

// killE2EChild starts a child on dir, kills it with SIGKILL delay after it
// has written its first Parquet file (so that, however slow the machine,
// the kill lands while the sinks are at work), and reaps it.
func killE2EChild(t *testing.T, dir string, run int, delay time.Duration) {
	t.Helper()
	p := crashtest.Start(t, fmt.Sprintf("run %d", run), "TestWorker_SIGKILL_ExactlyOnce", e2eChildEnv+"="+dir)
	files := parquetFiles(t, dir)
	p.WaitFor(func() bool { return parquetFiles(t, dir) != files }, time.Minute, "the child writes a data file")
	p.Sleep(delay)
	p.Kill()
}

// parquetFiles counts the Parquet files in the warehouse.
func parquetFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	filepath.WalkDir(filepath.Join(dir, "iceberg", "warehouse"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			n++
		}
		return nil
	})
	return n
}

// e2eState is what the directories hold after a kill.
type e2eState struct {
	events, eventsStored, eventsGroup int // records: in the topic, in the table, below the group offsets
	items, itemsStored, itemsGroup    int // records: in the topic, covered by the table, below the group offsets
	itemRows                          int // live rows of the upsert table
}

// checkE2EState opens a copy of the log (so that the next child recovers
// the crash itself) and the catalog, and checks both tables against the
// topics.
func checkE2EState(t *testing.T, dir string, run int) e2eState {
	t.Helper()
	snapshot := filepath.Join(dir, "snapshot")
	if err := os.RemoveAll(snapshot); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(snapshot, os.DirFS(e2eDataDir(dir))); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run %d: copy the log: %v", run, err)
	}
	l, err := tlog.Open(e2eLogOptions(snapshot, e2eDiscard()))
	if err != nil {
		t.Fatalf("run %d: reopen the log: %v", run, err)
	}
	defer l.Close()
	b := engine.NewEmbedded(l, e2eDiscard())
	group := func(sink string) map[int32]int64 {
		m := map[int32]int64{}
		for p := range int32(e2ePartitions) {
			if off, ok := l.Groups().CommittedOffset(sink, sinkTopic(sink), p); ok {
				m[p] = off
			}
		}
		return m
	}
	lake, db := openLake(t, dir)
	defer db.Close()
	what := fmt.Sprintf("run %d", run)
	var st e2eState
	st.events, st.eventsStored, st.eventsGroup = checkAppend(t, what, b, lake, group(e2eEventsSink), false)
	st.items, st.itemsStored, st.itemsGroup, st.itemRows = checkUpsert(t, what, b, lake, group(e2eItemsSink), false)
	return st
}

func sinkTopic(sink string) string {
	if sink == e2eEventsSink {
		return e2eEventsTopic
	}
	return e2eItemsTopic
}

// runE2EFinal runs the pipelines in process until the sources have
// acknowledged the wanted seqs, stops them, waits until the sinks' lag is
// 0, shuts down, and checks that the tables hold everything exactly once.
func runE2EFinal(t *testing.T, dir string, wantEvents, wantChanges uint64) {
	t.Helper()
	ctx := t.Context()
	l, err := tlog.Open(e2eLogOptions(e2eDataDir(dir), e2eDiscard()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := engine.NewEmbedded(l, e2eDiscard())
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: e2eRegistry(), Logger: e2eDiscard()})
	if err != nil {
		t.Fatal(err)
	}
	shutdown := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	defer func() {
		if w != nil {
			shutdown()
		}
	}()
	for _, spec := range e2eSpecs(dir, wantEvents, wantChanges) {
		if err := w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
	}
	for src, want := range map[string]uint64{e2eEventsSrc: wantEvents, e2eItemsSrc: wantChanges} {
		waitE2E(t, fmt.Sprintf("%s position %d", src, want), func() bool {
			offs, err := w.Offsets(ctx, src)
			if err != nil || len(offs) != 1 {
				return false
			}
			m, _ := offs[0].Offset.(map[string]any)
			seq, _ := m["seq"].(float64)
			return uint64(seq) == want
		})
		if err := w.Stop(ctx, src); err != nil {
			t.Fatal(err)
		}
	}
	for _, sink := range []string{e2eEventsSink, e2eItemsSink} {
		waitE2E(t, sink+" lag 0", func() bool {
			lags, err := l.Groups().Describe(sink)
			if err != nil || len(lags) != e2ePartitions {
				return false
			}
			for _, lag := range lags {
				if lag.Lag != 0 {
					return false
				}
			}
			return true
		})
	}
	shutdown()
	w = nil

	lake, db := openLake(t, dir)
	defer db.Close()
	events, stored, _ := checkAppend(t, "final", b, lake, nil, true)
	if stored != events {
		t.Fatalf("final: the append table holds %d records, the topic %d", stored, events)
	}
	// Every generated seq is in the table as often as in the topic: the
	// generator is at least once, the sink adds no duplicate of its own.
	rows := scanTable(t, lake, e2eEventsTable)
	count := map[int64]int{}
	for _, r := range rows {
		count[r["seq"].(int64)]++
	}
	for seq := int64(1); seq <= int64(wantEvents); seq++ {
		if count[seq] == 0 {
			t.Fatalf("final: seq %d is not in the append table", seq)
		}
	}
	items, covered, _, live := checkUpsert(t, "final", b, lake, nil, true)
	if covered != items {
		t.Fatalf("final: the upsert table covers %d records, the topic holds %d", covered, items)
	}
	// The table equals the state of the generated changes 1..want, whatever
	// the log repeated after the kills.
	want := map[int64]int64{} // id → seq of its last set
	for seq := uint64(1); seq <= wantChanges; seq++ {
		c := changeAt(11, seq, e2eKeys)
		if c.op == connect.OpDelete {
			delete(want, c.id)
		} else {
			want[c.id] = int64(seq)
		}
	}
	got := map[int64]int64{}
	for _, r := range scanTable(t, lake, e2eItemsTable) {
		got[r["id"].(int64)] = r["seq"].(int64)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("final: upsert table (id → seq)\n got %v\nwant %v", got, want)
	}
	t.Logf("final: web.tracking %d records (seqs 1..%d), all once in the append table; pg.shop.items %d records (changes 1..%d), upsert table %d live rows equal to the changes' final state",
		events, wantEvents, items, wantChanges, live)
	for _, name := range []string{e2eEventsTable, e2eItemsTable} {
		referenced, onDisk := tableFiles(t, lake, name)
		t.Logf("final: table %s references %d Parquet files; %d more in its data directory are unreferenced, left by kills between file writes and commits",
			name, referenced, onDisk-referenced)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}

func waitE2E(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// topicRecord is a record of a topic, as read back from the log.
type topicRecord struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
}

func readTopic(t *testing.T, b *engine.Embedded, topic string) []topicRecord {
	t.Helper()
	var out []topicRecord
	err := b.ReadAll(t.Context(), topic, func(r connect.Record) error {
		out = append(out, topicRecord{r.Partition, r.Offset, slices.Clone(r.Key), slices.Clone(r.Value)})
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", topic, err)
	}
	return out
}

type partOff struct {
	p int32
	o int64
}

// checkAppend checks the append table: it holds, exactly once, every
// record of the topic at or below the offsets stored in its current
// snapshot, with the record's seq; and the sink group committed no offset
// past them. With final, the stored offsets must cover the whole topic.
func checkAppend(t *testing.T, what string, b *engine.Embedded, lake *sqlcat.Catalog, group map[int32]int64, final bool) (records, stored, belowGroup int) {
	t.Helper()
	recs := readTopic(t, b, e2eEventsTopic)
	tbl, ok := loadLakeTable(t, lake, e2eEventsTable)
	if !ok {
		if len(group) > 0 || final {
			t.Fatalf("%s: the sink group committed %v, but table %s does not exist", what, group, e2eEventsTable)
		}
		return len(recs), 0, 0
	}
	offs := storedOffsets(t, tbl, e2eEventsSink, e2eEventsTopic)
	checkGroup(t, what, e2eEventsSink, group, offs)
	rows := scanTable(t, lake, e2eEventsTable)
	seen := map[partOff]int64{} // → seq
	for _, r := range rows {
		k := partOff{r["_partition"].(int32), r["_offset"].(int64)}
		if _, dup := seen[k]; dup {
			t.Fatalf("%s: record %s/%d@%d is twice in the append table", what, e2eEventsTopic, k.p, k.o)
		}
		seen[k] = r["seq"].(int64)
	}
	for _, r := range recs {
		k := partOff{r.partition, r.offset}
		seq, in := seen[k]
		if r.offset > offs[r.partition] {
			if in {
				t.Fatalf("%s: record %s/%d@%d is in the table, above the stored offset %d", what, e2eEventsTopic, k.p, k.o, offs[r.partition])
			}
			if final {
				t.Fatalf("%s: record %s/%d@%d never reached the table (stored offset %d)", what, e2eEventsTopic, k.p, k.o, offs[r.partition])
			}
			continue
		}
		if !in {
			t.Fatalf("%s: record %s/%d@%d is at or below the stored offset %d, but not in the table: a gap", what, e2eEventsTopic, k.p, k.o, offs[r.partition])
		}
		if want := generatorSeq(t, r.value); seq != want {
			t.Fatalf("%s: record %s/%d@%d has seq %d in the table, %d in the topic", what, e2eEventsTopic, k.p, k.o, seq, want)
		}
		delete(seen, k)
		stored++
		if r.offset < group[r.partition] {
			belowGroup++
		}
	}
	for k := range seen {
		t.Fatalf("%s: the table holds %s/%d@%d, which the topic does not", what, e2eEventsTopic, k.p, k.o)
	}
	return len(recs), stored, belowGroup
}

// checkUpsert checks the upsert table: it equals the state that the
// topic's change events at or below the offsets stored in its current
// snapshot produce, applied in order per partition (every column, and the
// metadata columns of the last event of each key); and the sink group
// committed no offset past them.
func checkUpsert(t *testing.T, what string, b *engine.Embedded, lake *sqlcat.Catalog, group map[int32]int64, final bool) (records, covered, belowGroup, live int) {
	t.Helper()
	recs := readTopic(t, b, e2eItemsTopic)
	tbl, ok := loadLakeTable(t, lake, e2eItemsTable)
	if !ok {
		if len(group) > 0 || final {
			t.Fatalf("%s: the sink group committed %v, but table %s does not exist", what, group, e2eItemsTable)
		}
		return len(recs), 0, 0, 0
	}
	offs := storedOffsets(t, tbl, e2eItemsSink, e2eItemsTopic)
	checkGroup(t, what, e2eItemsSink, group, offs)

	want := map[int64]map[string]any{}
	for _, r := range recs {
		if r.offset > offs[r.partition] {
			if final {
				t.Fatalf("%s: record %s/%d@%d is above the stored offset %d", what, e2eItemsTopic, r.partition, r.offset, offs[r.partition])
			}
			continue
		}
		covered++
		if r.offset < group[r.partition] {
			belowGroup++
		}
		var key struct{ Payload struct{ ID int64 } }
		if err := json.Unmarshal(r.key, &key); err != nil {
			t.Fatalf("%s: key of %s/%d@%d: %v", what, e2eItemsTopic, r.partition, r.offset, err)
		}
		if r.value == nil {
			delete(want, key.Payload.ID)
			continue
		}
		ce, err := connect.DebeziumJSON{}.Decode(r.key, r.value)
		if err != nil {
			t.Fatalf("%s: %s/%d@%d: %v", what, e2eItemsTopic, r.partition, r.offset, err)
		}
		if ce.Op == connect.OpDelete {
			delete(want, key.Payload.ID)
			continue
		}
		row := map[string]any{"_partition": r.partition, "_offset": r.offset, "_op": string(ce.Op), "note": nil}
		for _, f := range ce.After {
			row[f.Name] = f.Value
		}
		want[key.Payload.ID] = row
	}
	rows := scanTable(t, lake, e2eItemsTable)
	got := map[int64]map[string]any{}
	for _, r := range rows {
		id := r["id"].(int64)
		if _, dup := got[id]; dup {
			t.Fatalf("%s: id %d is twice in the upsert table", what, id)
		}
		got[id] = r
	}
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			t.Fatalf("%s: id %d is missing from the upsert table; want %v", what, id, w)
		}
		for _, col := range []string{"id", "seq", "name", "qty", "note", "_partition", "_offset", "_op"} {
			if fmt.Sprint(g[col]) != fmt.Sprint(w[col]) {
				t.Fatalf("%s: id %d: column %s = %v, want %v (row %v, want %v)", what, id, col, g[col], w[col], g, w)
			}
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			t.Fatalf("%s: the upsert table holds id %d (%v), which the change events delete or never set", what, id, g)
		}
	}
	return len(recs), covered, belowGroup, len(got)
}

// checkGroup checks that the sink group committed no offset past those the
// table holds: the worker commits group offsets only after a flush
// committed the records to Iceberg.
func checkGroup(t *testing.T, what, sink string, group map[int32]int64, stored map[int32]int64) {
	t.Helper()
	for p, next := range group {
		if s := stored[p]; next-1 > s {
			t.Fatalf("%s: sink %s committed group offset %d on partition %d, but the table holds offsets up to %d only", what, sink, next, p, s)
		}
	}
}

// storedOffsets reads the offsets the sink stored in the summary of the
// table's current snapshot: per partition the highest offset the table
// holds, -1 for none.
func storedOffsets(t *testing.T, tbl *table.Table, sink, topic string) map[int32]int64 {
	t.Helper()
	out := map[int32]int64{}
	for p := range int32(e2ePartitions) {
		out[p] = -1 // nothing stored
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return out // created, killed before its first commit
	}
	key := "tributary.offsets." + e2ePipeline + "." + sink
	v, ok := snap.Summary.Properties[key]
	if !ok {
		t.Fatalf("table %s: the current snapshot's summary has no %s: %v", tbl.Identifier(), key, snap.Summary.Properties)
	}
	var m map[string]map[string]int64
	if err := json.Unmarshal([]byte(v), &m); err != nil {
		t.Fatalf("table %s: %s = %q: %v", tbl.Identifier(), key, v, err)
	}
	for p, off := range m[topic] {
		n, err := strconv.Atoi(p)
		if err != nil {
			t.Fatalf("table %s: %s = %q: partition %q", tbl.Identifier(), key, v, p)
		}
		out[int32(n)] = off
	}
	return out
}

// openLake opens the pipelines' SQL catalog, independently of any sink;
// the caller closes the database.
func openLake(t *testing.T, dir string) (*sqlcat.Catalog, *sql.DB) {
	t.Helper()
	db, err := sql.Open("sqlite", e2eCatalog(dir))
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sqlcat.NewCatalog("tributary", db, sqlcat.SQLite, ib.Properties{})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return cat, db
}

func loadLakeTable(t *testing.T, cat *sqlcat.Catalog, name string) (*table.Table, bool) {
	t.Helper()
	tbl, err := cat.LoadTable(t.Context(), catalog.ToIdentifier(strings.Split(name, ".")...))
	if errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) {
		return nil, false
	}
	if err != nil {
		t.Fatalf("load table %s: %v", name, err)
	}
	return tbl, true
}

// scanTable reads a table with iceberg-go's scan (which applies equality
// deletes): each row a map from column name to its Go value (int32, int64,
// string, nil).
func scanTable(t *testing.T, cat *sqlcat.Catalog, name string) []map[string]any {
	t.Helper()
	tbl, ok := loadLakeTable(t, cat, name)
	if !ok {
		t.Fatalf("table %s does not exist", name)
	}
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %s: %v", name, err)
	}
	defer at.Release()
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	var out []map[string]any
	for tr.Next() {
		rb := tr.RecordBatch()
		for i := range int(rb.NumRows()) {
			m := make(map[string]any, rb.NumCols())
			for c := range int(rb.NumCols()) {
				col := rb.Column(c)
				var v any
				if !col.IsNull(i) {
					switch a := col.(type) {
					case *array.Int32:
						v = a.Value(i)
					case *array.Int64:
						v = a.Value(i)
					case *array.String:
						v = a.Value(i)
					case *array.LargeString:
						v = a.Value(i)
					default:
						v = col.GetOneForMarshal(i)
					}
				}
				m[rb.ColumnName(c)] = v
			}
			out = append(out, m)
		}
	}
	return out
}

// tableFiles counts the data and delete files the table's current
// snapshot references, and the Parquet files in its data directory.
func tableFiles(t *testing.T, cat *sqlcat.Catalog, name string) (referenced, onDisk int) {
	t.Helper()
	tbl, _ := loadLakeTable(t, cat, name)
	fs, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatalf("table %s: manifests: %v", name, err)
	}
	for _, m := range manifests {
		for _, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatalf("table %s: manifest %s: %v", name, m.FilePath(), err)
			}
			referenced++
		}
	}
	loc := strings.TrimPrefix(tbl.Location(), "file://")
	err = filepath.WalkDir(filepath.Join(loc, "data"), func(path string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			onDisk++
		}
		return err
	})
	if err != nil {
		t.Fatalf("table %s: %v", name, err)
	}
	return referenced, onDisk
}

// generatorSeq returns the seq of a generator event: {"seq":N,…}.
func generatorSeq(t *testing.T, v []byte) int64 {
	t.Helper()
	var e struct{ Seq int64 }
	if err := json.Unmarshal(v, &e); err != nil || e.Seq == 0 {
		t.Fatalf("not a generator event: %.60q", v)
	}
	return e.Seq
}

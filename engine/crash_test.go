//go:build unix

package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
	_ "github.com/tributary-io/tributary/connectors/file"
	_ "github.com/tributary-io/tributary/connectors/generator"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/crashtest"
	tlog "github.com/tributary-io/tributary/log"
)

// The crash test re-executes its own test binary as a worker process. The
// child sees crashChildEnv set to the test directory; crashSeedEnv replays
// the delays of an earlier run.
const (
	crashChildEnv = "TRIBUTARY_ENGINE_CRASH_CHILD"
	crashSeedEnv  = "TRIBUTARY_ENGINE_CRASH_SEED"
)

// The pipeline under test: generator → web.tracking (3 partitions) → file.
const (
	crashTopic      = "web.tracking"
	crashPartitions = 3
	crashSource     = "web-events"
	crashSink       = "events-file"
)

func crashDataDir(dir string) string { return filepath.Join(dir, "data") }
func crashOutFile(dir string) string { return filepath.Join(dir, "out", "events.jsonl") }
func crashDiscard() *slog.Logger     { return slog.New(slog.DiscardHandler) }
func crashLogOptions(dataDir string, logger *slog.Logger) tlog.Options {
	return tlog.Options{Dir: dataDir, NumPartitions: crashPartitions, Logger: logger}
}

// crashSpecs returns the pipeline's connectors; maxEvents 0 generates
// without end.
func crashSpecs(dir string, maxEvents uint64) []engine.ConnectorSpec {
	return []engine.ConnectorSpec{
		{
			Pipeline: "crash", Name: crashSource, Kind: connect.KindSource, Connector: "generator",
			Topic: crashTopic,
			Config: map[string]string{
				"rate": "20000", "seed": "42", "batch.size": "200",
				"max.events": strconv.FormatUint(maxEvents, 10),
			},
		},
		{
			Pipeline: "crash", Name: crashSink, Kind: connect.KindSink, Connector: "file",
			Topics: []string{crashTopic},
			Config: map[string]string{"path": crashOutFile(dir)},
		},
	}
}

// TestWorker_SIGKILL_DeliversEverySeqAtLeastOnce kills a worker process
// running generator → log → file sink with SIGKILL at random moments,
// restarts it on the same directory each time, and checks after every kill
// that nothing acknowledged was lost: every seq up to the stored source
// position is in the topic, and every record below the sink group's
// committed offsets is in the file. A last run in process lets the sink
// catch up; then the file must hold every seq from 1 to the last one at
// least once, each line valid JSON.
func TestWorker_SIGKILL_DeliversEverySeqAtLeastOnce(t *testing.T) {
	crashtest.Child(crashChildEnv, crashChild) // in the child: runs until killed
	leaks := goleak.IgnoreCurrent()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", crashSeedEnv, s, err)
		}
	}
	t.Logf("seed %d (replay the delays with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	kills := 8
	if testing.Short() {
		kills = 3
	}

	dir := t.TempDir()
	var last crashState
	var tornTails, unackedBatches, sinkBehind int
	for run := 1; run <= kills; run++ {
		delay := 100*time.Millisecond + time.Duration(rng.IntN(500))*time.Millisecond
		killCrashChild(t, dir, run, delay)
		st := checkCrashState(t, dir, run)
		if st.maxSeq < last.maxSeq || st.position < last.position {
			t.Fatalf("run %d: went back: topic max seq %d → %d, source position %d → %d", run, last.maxSeq, st.maxSeq, last.position, st.position)
		}
		if st.tornTail {
			tornTails++
		}
		if st.maxSeq > st.position {
			unackedBatches++
		}
		if st.uncommitted > 0 {
			sinkBehind++
		}
		t.Logf("run %d: SIGKILL %v after start: position %d, topic %d records (max seq %d), %d not yet committed by the sink, file %d lines, torn tail %v",
			run, delay, st.position, st.records, st.maxSeq, st.uncommitted, st.lines, st.tornTail)
		last = st
	}
	if last.maxSeq == 0 {
		t.Fatalf("after %d runs the topic holds no events: the workers never got going", kills)
	}

	// The last run, in process and clean: generate a few events past
	// everything the children did, then let the sink catch up.
	want := max(last.maxSeq, last.position) + 500
	final := runCrashFinal(t, dir, want)
	goleak.VerifyNone(t, leaks)

	t.Logf("%d kills: %d left a torn line in the file, %d left appended but unacknowledged events, %d left the sink behind the topic",
		kills, tornTails, unackedBatches, sinkBehind)
	t.Logf("topic: %d records, seqs 1..%d, %d duplicates; file: %d lines, %d duplicates",
		final.records, final.maxSeq, final.records-int(final.maxSeq), final.lines, final.lines-int(final.maxSeq))
}

// crashChild starts the pipeline of the child process on dir.
func crashChild(dir string) error {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	l, err := tlog.Open(crashLogOptions(crashDataDir(dir), logger))
	if err != nil {
		return err
	}
	b := engine.NewEmbedded(l, logger)
	if err := b.EnsureTopic(ctx, crashTopic, crashPartitions, nil); err != nil {
		return err
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		return err
	}
	for _, spec := range crashSpecs(dir, 0) {
		if err := w.Start(ctx, spec, ""); err != nil {
			return err
		}
	}
	return nil
}

// killCrashChild starts a child on dir, kills it with SIGKILL delay after
// it has started its connectors, and reaps it.
func killCrashChild(t *testing.T, dir string, run int, delay time.Duration) {
	t.Helper()
	p := crashtest.Start(t, fmt.Sprintf("run %d", run), "TestWorker_SIGKILL_DeliversEverySeqAtLeastOnce", crashChildEnv+"="+dir)
	p.Sleep(delay)
	p.Kill()
}

// crashState is what the data directory holds after a kill.
type crashState struct {
	position    uint64 // the source's stored position (last acknowledged seq)
	records     int    // records in the topic
	maxSeq      uint64 // the highest seq in the topic
	uncommitted int    // topic records at or above the sink's committed offsets
	lines       int    // whole lines in the file
	tornTail    bool   // the file ends in a partial line
}

// checkCrashState opens a copy of the log as the next worker would (so
// that the next child recovers the crash itself) and checks that nothing
// acknowledged was lost: every seq up to the stored source position is in
// the topic, and every record below the sink group's committed offsets has
// its seq in the file.
func checkCrashState(t *testing.T, dir string, run int) crashState {
	t.Helper()
	ctx := t.Context()
	snapshot := filepath.Join(dir, "snapshot")
	if err := os.RemoveAll(snapshot); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(snapshot, os.DirFS(crashDataDir(dir))); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("run %d: copy the log: %v", run, err)
	}
	l, err := tlog.Open(crashLogOptions(snapshot, crashDiscard()))
	if err != nil {
		t.Fatalf("run %d: reopen the log: %v", run, err)
	}
	defer l.Close()
	b := engine.NewEmbedded(l, crashDiscard())
	store, err := engine.OpenOffsetStore(ctx, b)
	if err != nil {
		t.Fatalf("run %d: %v", run, err)
	}
	var st crashState
	if pos := store.Get("crash", crashSource); pos != nil {
		var p struct{ Seq uint64 }
		if err := json.Unmarshal(pos, &p); err != nil {
			t.Fatalf("run %d: stored position %s: %v", run, pos, err)
		}
		st.position = p.Seq
	}
	topic := readCrashTopic(t, b)
	file := readCrashFile(t, crashOutFile(dir), false)
	st.records, st.maxSeq, st.lines, st.tornTail = len(topic.recs), topic.maxSeq, file.lines, file.tornTail

	if missing := firstMissing(topic.count, st.position); missing != 0 {
		t.Fatalf("run %d: seq %d was acknowledged (source position %d) but is not in the topic", run, missing, st.position)
	}
	committed := map[int32]int64{}
	for p := range int32(crashPartitions) {
		if off, ok := l.Groups().CommittedOffset(crashSink, crashTopic, p); ok {
			committed[p] = off
		}
	}
	for _, r := range topic.recs {
		if r.offset >= committed[r.partition] {
			st.uncommitted++
			continue
		}
		if file.count[r.seq] == 0 {
			t.Fatalf("run %d: seq %d (%s/%d@%d) is below the sink's committed offset %d but not in the file",
				run, r.seq, crashTopic, r.partition, r.offset, committed[r.partition])
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("run %d: close the log: %v", run, err)
	}
	return st
}

// crashFinal is what the last, clean run leaves.
type crashFinal struct {
	records int
	maxSeq  uint64
	lines   int
}

// runCrashFinal runs the pipeline in process until the source has
// acknowledged seq want, stops the source, waits until the sink group's lag
// is 0, shuts down, and checks the topic and the file.
func runCrashFinal(t *testing.T, dir string, want uint64) crashFinal {
	t.Helper()
	ctx := t.Context()
	l, err := tlog.Open(crashLogOptions(crashDataDir(dir), crashDiscard()))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := engine.NewEmbedded(l, crashDiscard())
	if err := b.EnsureTopic(ctx, crashTopic, crashPartitions, nil); err != nil {
		t.Fatal(err)
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: connect.Default(), Logger: crashDiscard()})
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
	for _, spec := range crashSpecs(dir, want) {
		if err := w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
	}
	waitCrash(t, fmt.Sprintf("source position %d", want), func() bool {
		offs, err := w.Offsets(ctx, crashSource)
		if err != nil || len(offs) != 1 {
			return false
		}
		m, _ := offs[0].Offset.(map[string]any)
		seq, _ := m["seq"].(float64)
		return uint64(seq) == want
	})
	if err := w.Stop(ctx, crashSource); err != nil {
		t.Fatal(err)
	}
	waitCrash(t, "sink lag 0", func() bool {
		lags, err := l.Groups().Describe(crashSink)
		if err != nil || len(lags) != crashPartitions {
			return false
		}
		for _, lag := range lags {
			if lag.Lag != 0 {
				return false
			}
		}
		return true
	})
	shutdown()
	w = nil

	topic := readCrashTopic(t, b)
	if topic.maxSeq != want {
		t.Fatalf("topic max seq = %d, want %d", topic.maxSeq, want)
	}
	if missing := firstMissing(topic.count, want); missing != 0 {
		t.Fatalf("seq %d is not in the topic (seqs 1..%d generated)", missing, want)
	}
	file := readCrashFile(t, crashOutFile(dir), true)
	if missing := firstMissing(file.count, want); missing != 0 {
		t.Fatalf("seq %d never reached the file (seqs 1..%d in the topic)", missing, want)
	}
	for seq := range file.count {
		if seq > want {
			t.Fatalf("the file holds seq %d, which the topic does not (max %d)", seq, want)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return crashFinal{records: len(topic.recs), maxSeq: topic.maxSeq, lines: file.lines}
}

func waitCrash(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type crashRecord struct {
	partition int32
	offset    int64
	seq       uint64
}

type crashTopicContents struct {
	recs   []crashRecord
	count  map[uint64]int
	maxSeq uint64
}

// readCrashTopic reads every record of the topic.
func readCrashTopic(t *testing.T, b *engine.Embedded) crashTopicContents {
	t.Helper()
	c := crashTopicContents{count: map[uint64]int{}}
	err := b.ReadAll(t.Context(), crashTopic, func(r connect.Record) error {
		seq, err := eventSeq(r.Value)
		if err != nil {
			return fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
		}
		c.recs = append(c.recs, crashRecord{partition: r.Partition, offset: r.Offset, seq: seq})
		c.count[seq]++
		c.maxSeq = max(c.maxSeq, seq)
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", crashTopic, err)
	}
	return c
}

type crashFileContents struct {
	count    map[uint64]int
	lines    int
	tornTail bool
}

// readCrashFile reads the sink's file. A partial last line is what a kill
// in the middle of a write leaves; the sink cuts it off when it opens the
// file. With strict, there must be none, and every line must be valid JSON.
func readCrashFile(t *testing.T, path string, strict bool) crashFileContents {
	t.Helper()
	c := crashFileContents{count: map[uint64]int{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !strict {
		return c
	}
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		if strict {
			t.Fatalf("%s ends in a partial line: %q", path, data[i+1:])
		}
		c.tornTail = true
		data = data[:i+1]
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexByte(data, '\n')
		line := data[:i]
		data = data[i+1:]
		if strict && !json.Valid(line) {
			t.Fatalf("%s:%d is not valid JSON: %q", path, n, line)
		}
		seq, err := eventSeq(line)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		c.count[seq]++
		c.lines++
	}
	return c
}

// eventSeq returns the seq of a generator event, which its JSON starts
// with: {"seq":N,…}.
func eventSeq(v []byte) (uint64, error) {
	const prefix = `{"seq":`
	rest, ok := bytes.CutPrefix(v, []byte(prefix))
	end := bytes.IndexAny(rest, ",}")
	if !ok || end <= 0 {
		return 0, fmt.Errorf("not a generator event: %.60q", v)
	}
	seq, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("not a generator event (seq %q): %.60q", rest[:end], v)
	}
	return seq, nil
}

// firstMissing returns the first seq from 1 to upTo that count lacks, or 0.
func firstMissing(count map[uint64]int, upTo uint64) uint64 {
	for seq := uint64(1); seq <= upTo; seq++ {
		if count[seq] == 0 {
			return seq
		}
	}
	return 0
}

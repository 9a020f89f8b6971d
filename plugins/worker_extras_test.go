package plugins_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/plugins"
)

// recorderRun is what one process of the recorder plugin (one run of its
// task) saw, from its events file.
type recorderRun struct {
	stored  int64 // the position it was opened with; 0 for none
	lines   []string
	tail    []tailLine
	acks    []int64
	crashed int64 // the position of the Durable it crashed in; 0 for none
}

type tailLine struct {
	topic             string
	partition         int32
	offset, value     int64
	beforeFirstNotice bool // before the run's first Durable or Ack
}

// recorderRuns splits the recorder's events into runs and checks, within
// each, the DurableNotifier and TailRecoverer contracts: TailTopics right
// after Open; RecoverTail only when resumed and before any Durable or Ack;
// Durable and Ack positions each increasing, and never a Durable(pos) after
// an Ack that covers pos.
func recorderRuns(t *testing.T, path string) []*recorderRun {
	t.Helper()
	var runs []*recorderRun
	var run *recorderRun
	var lastDurable, lastAck int64
	num := func(s string) int64 {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("%s: not a number: %q", path, s)
		}
		return n
	}
	for _, e := range plugins.RecorderEvents(t, path) {
		if e[0] == "open" {
			run = &recorderRun{}
			if e[1] != "-" {
				run.stored = num(e[1])
			}
			runs = append(runs, run)
			lastDurable, lastAck = run.stored, run.stored
		} else if run == nil {
			t.Fatalf("%s: %q before the first open", path, e)
		}
		line := strings.Join(e, " ")
		run.lines = append(run.lines, line)
		switch e[0] {
		case "topics":
			if len(run.lines) != 2 {
				t.Errorf("run %d: TailTopics is not the first call after Open: %q", len(runs), run.lines)
			}
		case "tail":
			if run.stored == 0 {
				t.Errorf("run %d: RecoverTail on a first start: %s", len(runs), line)
			}
			p, _ := strconv.Atoi(e[2])
			run.tail = append(run.tail, tailLine{topic: e[1], partition: int32(p), offset: num(e[3]), value: num(e[4]),
				beforeFirstNotice: lastDurable == run.stored && len(run.acks) == 0})
		case "durable":
			n := num(e[1])
			if n <= lastDurable || n <= lastAck {
				t.Errorf("run %d: Durable(%d) after Durable(%d) and Ack(%d)", len(runs), n, lastDurable, lastAck)
			}
			lastDurable = n
		case "ack":
			n := num(e[1])
			if n <= lastAck {
				t.Errorf("run %d: Ack(%d) after Ack(%d)", len(runs), n, lastAck)
			}
			lastAck = n
			run.acks = append(run.acks, n)
		case "crash":
			run.crashed = num(e[1])
		}
	}
	return runs
}

// announced reports whether the run called Durable(pos) before Ack(pos),
// for each Ack from the first-th on.
func (r *recorderRun) announced(t *testing.T, run, first int) {
	t.Helper()
	durable := map[string]bool{}
	acks := 0
	for _, l := range r.lines {
		pos, ok := strings.CutPrefix(l, "durable ")
		if ok {
			durable[pos] = true
			continue
		}
		if pos, ok := strings.CutPrefix(l, "ack "); ok {
			if acks >= first && !durable[pos] {
				t.Errorf("run %d: Ack(%s) was not announced by Durable(%s) before it:\n\t%s", run, pos, pos, strings.Join(r.lines, "\n\t"))
				return
			}
			acks++
		}
	}
}

// TestWorker_SourcePluginDurableAndTail runs the recorder plugin, a source
// that implements connect.DurableNotifier and connect.TailRecoverer, under
// the real worker on the embedded log. The worker calls Durable(pos)
// before Ack(pos), in order, once a position with the log offsets is
// stored. Then the plugin SIGKILLs itself inside a Durable: its records
// are durable in the log, their position never stored. The task restarts
// in a new process from the older stored position, and RecoverTail hands
// it exactly the records after it, with their topic, partition and offset.
// A second source's Durable returns a Retryable error once: the task goes
// on, and Ack still covers that position.
func TestWorker_SourcePluginDurableAndTail(t *testing.T) {
	w, srv, l := newWorker(t, 50*time.Millisecond, plugins.BuiltPlugin("recorder"))
	for _, topic := range []string{"tracked", "retried"} {
		if err := l.CreateTopic(topic, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	events, retryEvents := filepath.Join(dir, "tracked"), filepath.Join(dir, "retried")
	const crashAt, errAt = 90, 30
	ctx := t.Context()
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "tracked", Kind: connect.KindSource, Connector: "recorder",
		Topic: "tracked", Config: map[string]string{"events": events, "crash_at": strconv.Itoa(crashAt)}}, ""); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx, engine.ConnectorSpec{Name: "retried", Kind: connect.KindSource, Connector: "recorder",
		Topic: "retried", Config: map[string]string{"events": retryEvents, "durable_error": "retryable", "durable_error_at": strconv.Itoa(errAt)}}, ""); err != nil {
		t.Fatal(err)
	}
	lastAck := func(r *recorderRun) int64 {
		if len(r.acks) == 0 {
			return 0
		}
		return r.acks[len(r.acks)-1]
	}
	waitUntil(t, "the restarted source to store positions past the crash", func() bool {
		runs := recorderRuns(t, events)
		return len(runs) >= 2 && lastAck(runs[1]) >= crashAt+60
	})
	waitUntil(t, "the other source to ack past its Retryable Durable error", func() bool {
		runs := recorderRuns(t, retryEvents)
		return len(runs) >= 1 && lastAck(runs[0]) >= errAt+60
	})
	if t.Failed() {
		return
	}
	if _, err := os.Stat(events + ".crashed"); err != nil {
		t.Fatalf("the plugin did not crash: %v", err)
	}

	runs := recorderRuns(t, events)
	first, second := runs[0], runs[1]
	if len(runs) != 2 {
		t.Errorf("%d runs, want 2 (one crash)", len(runs))
	}
	if first.stored != 0 || len(first.tail) != 0 || len(first.lines) < 2 || first.lines[1] != "topics" {
		t.Errorf("the first run began %q", first.lines[:min(3, len(first.lines))])
	}
	// The first run hears of durable records once a position with its
	// log offsets is stored (its first Ack): every later Ack was announced.
	first.announced(t, 1, 1)
	if len(first.acks) < 3 {
		t.Errorf("the first run acked %v only", first.acks)
	}
	if first.crashed < crashAt || first.lines[len(first.lines)-2] != "durable "+strconv.FormatInt(first.crashed, 10) {
		t.Fatalf("the first run did not end by crashing in Durable at or past %d:\n\t%s", crashAt, strings.Join(first.lines, "\n\t"))
	}
	// The crash came between append and store: the stored position is the
	// last one acked, older than the one announced.
	if second.stored != lastAck(first) || second.stored >= first.crashed {
		t.Fatalf("the second run opened at %d; the first acked up to %d and crashed announcing %d", second.stored, lastAck(first), first.crashed)
	}
	// Its tail: every record after the stored position up to at least the
	// announced one, in log order, each where the log has it (the topic
	// holds this source's numbers 1, 2, ... at offsets 0, 1, ...).
	if len(second.tail) == 0 {
		t.Fatalf("the second run recovered no tail:\n\t%s", strings.Join(second.lines, "\n\t"))
	}
	for i, tl := range second.tail {
		want := second.stored + 1 + int64(i)
		if tl.value != want || tl.offset != want-1 || tl.topic != "tracked" || tl.partition != 0 || !tl.beforeFirstNotice {
			t.Fatalf("tail record %d: %+v, want number %d at tracked/0@%d, before any Durable or Ack", i, tl, want, want-1)
		}
	}
	if end := second.tail[len(second.tail)-1].value; end < first.crashed {
		t.Errorf("the recovered tail ends at %d, before the announced durable position %d", end, first.crashed)
	}
	// Resumed with a stored tail, the second run is told from the start.
	second.announced(t, 2, 0)
	t.Logf("crashed announcing %d, stored %d; recovered %d..%d; the second run acked up to %d",
		first.crashed, second.stored, second.tail[0].value, second.tail[len(second.tail)-1].value, lastAck(second))

	retried := recorderRuns(t, retryEvents)
	if len(retried) != 1 {
		t.Errorf("the source whose Durable failed Retryable ran %d times, want once", len(retried))
	}
	retried[0].announced(t, 1, 1)
	for _, name := range []string{"tracked", "retried"} {
		if rs := getStatus(t, srv, name); rs.Tasks[0].State != "RUNNING" {
			t.Errorf("the %s task is %s: %s", name, rs.Tasks[0].State, rs.Tasks[0].Trace)
		}
	}
}

// TestWorker_OldProtocolPlugin: a source plugin of protocol version 1,
// which has neither DurableNotifier nor TailRecoverer calls, runs under the
// worker as before: its positions are stored and acked.
func TestWorker_OldProtocolPlugin(t *testing.T) {
	w, srv, _ := newWorker(t, 50*time.Millisecond, plugins.BuiltPlugin("oldproto"))
	acks := filepath.Join(t.TempDir(), "acks")
	if err := w.Start(t.Context(), engine.ConnectorSpec{Name: "old", Kind: connect.KindSource, Connector: "oldcounter",
		Topic: "old", Config: map[string]string{"acks": acks}}, ""); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the old plugin to be acked past 100", func() bool {
		data, _ := os.ReadFile(acks)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		n, err := strconv.Atoi(strings.TrimPrefix(lines[len(lines)-1], "ack "))
		return err == nil && n > 100
	})
	if rs := getStatus(t, srv, "old"); rs.Tasks[0].State != "RUNNING" {
		t.Errorf("the task of the old plugin is %s: %s", rs.Tasks[0].State, rs.Tasks[0].Trace)
	}
}

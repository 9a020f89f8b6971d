package engine

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// A source created anew under a name is keyed by the pipeline of the
// newest record of that name in the offsets topic (ResumedPipeline), also
// after the worker restarts and loads the topic again: the newest
// position, or a reset (then the source starts over under it), wins over
// older positions of that name under other pipelines; a name without
// records gets RESTPipeline.
func TestWorker_ResumedPipeline_NewestRecordOfTheName(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	open := func(t *testing.T) (*Worker, func()) { return openWorkerOn(t, dir) }
	check := func(t *testing.T, w *Worker, step int, name, want string) {
		t.Helper()
		got, err := w.ResumedPipeline(ctx, name)
		if err != nil || got != want {
			t.Errorf("step %d: ResumedPipeline(%q) = %q, %v; want %q", step, name, got, err, want)
		}
	}
	steps := []struct {
		pipeline, connector string
		pos                 connect.Position
		wantGen             string // ResumedPipeline("gen") after the step
	}{
		{"rest", "gen", connect.Position(`{"seq":10}`), "rest"},
		{"shop", "gen", connect.Position(`{"seq":50}`), "shop"}, // the file's source ran later
		{"crm", "other", connect.Position(`{"seq":7}`), "shop"}, // another name changes nothing
		{"shop", "gen", nil, "shop"},                            // reset: the next one starts over under shop
		{"a", "gen", connect.Position(`{"seq":3}`), "a"},
	}
	for i, s := range steps {
		w, done := open(t)
		if err := w.offsets.Put(ctx, s.pipeline, s.connector, s.pos); err != nil {
			done()
			t.Fatal(err)
		}
		check(t, w, i, "gen", s.wantGen)
		check(t, w, i, "never-stored", RESTPipeline)
		done()
		// Loaded from the topic again, as by a worker that restarts.
		w, done = open(t)
		check(t, w, i, "gen", s.wantGen)
		done()
	}
}

// A reset outlives its tombstone: once compaction has removed the
// tombstone (delete.retention.ms after the cleaner first saw it), a source
// created anew under the name still starts over under the pipeline whose
// source was reset, not resume an older position of that name under
// another pipeline; that position, and the reset source's later ones, stay.
func TestWorker_ResumedPipeline_ResetOutlivesItsTombstone(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	// Every batch its own segment, so that all but the newest can be
	// cleaned, and any dirty byte makes the cleaner run.
	createOffsetsTopic(t, dir, map[string]string{"cleanup.policy": "compact", "segment.bytes": "14", "min.cleanable.dirty.ratio": "0"})
	putAll := func(puts ...func(w *Worker) error) {
		t.Helper()
		w, done := openWorkerOn(t, dir)
		defer done()
		for _, put := range puts {
			if err := put(w); err != nil {
				t.Fatal(err)
			}
		}
	}
	put := func(pipeline, connector, pos string) func(w *Worker) error {
		return func(w *Worker) error {
			var p connect.Position
			if pos != "" {
				p = connect.Position(pos)
			}
			return w.offsets.Put(ctx, pipeline, connector, p)
		}
	}
	putAll(put("rest", "gen", `{"seq":10}`), put("shop", "gen", `{"seq":50}`), put("shop", "gen", ""),
		put("crm", "other", `{"seq":1}`))
	now := time.Now()
	compactOffsetsAt(t, dir, now) // first sees the tombstone
	putAll(put("crm", "other", `{"seq":2}`), put("crm", "other", `{"seq":3}`))
	compactOffsetsAt(t, dir, now.Add(25*time.Hour)) // past delete.retention.ms (1 day)
	if n := offsetsTombstones(t, dir, "gen"); n != 0 {
		t.Fatalf("%d tombstones of gen left after compaction; the test needs it gone", n)
	}

	w, done := openWorkerOn(t, dir)
	if got, err := w.ResumedPipeline(ctx, "gen"); err != nil || got != "shop" {
		t.Errorf("ResumedPipeline(gen) after the reset's tombstone was compacted = %q, %v; want shop (its source was reset last: start over)", got, err)
	}
	if pos := w.offsets.Get("rest", "gen"); string(pos) != `{"seq":10}` {
		t.Errorf("position of source gen of rest = %s; want {\"seq\":10}", pos)
	}
	if pos := w.offsets.Get("shop", "gen"); pos != nil {
		t.Errorf("position of source gen of shop = %s; want none (reset)", pos)
	}
	if err := w.offsets.Put(ctx, "rest", "gen", connect.Position(`{"seq":11}`)); err != nil {
		done()
		t.Fatal(err)
	}
	done()
	// A position stored since the reset is newer than it.
	w, done = openWorkerOn(t, dir)
	defer done()
	if got, err := w.ResumedPipeline(ctx, "gen"); err != nil || got != "rest" {
		t.Errorf("ResumedPipeline(gen) after rest's gen stored a position = %q, %v; want rest", got, err)
	}
}

// A reset record is neither a source's position nor a sink record to any
// worker, this one or an older one (which knows decodeOffsetKey, and
// decodeSinkRunKey or not).
func TestOffsetKeys_ResetRecordIsNoPositionNorSinkRun(t *testing.T) {
	k := resetKey("shop", "gen")
	if string(k) != `["gen",{"pipeline":"shop"},"reset"]` {
		t.Errorf("resetKey = %s", k)
	}
	if id, ok := decodeOffsetKey(k); ok {
		t.Errorf("decodeOffsetKey(%s) = %v, true; want not a position", k, id)
	}
	if id, ok := decodeSinkRunKey(k); ok {
		t.Errorf("decodeSinkRunKey(%s) = %v, true; want not a sink record", k, id)
	}
	if id, ok := decodeResetKey(k); !ok || id != (targetID{"shop", "gen"}) {
		t.Errorf("decodeResetKey(%s) = %v, %v; want shop/gen", k, id, ok)
	}
	if _, ok := decodeResetKey(sinkRunKey("shop", "gen")); ok {
		t.Errorf("decodeResetKey of a sink record's key: ok")
	}
}

// createOffsetsTopic creates OffsetsTopic in the embedded log in dir with
// config, before a worker does with the defaults.
func createOffsetsTopic(t *testing.T, dir string, config map[string]string) {
	t.Helper()
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.CreateTopic(OffsetsTopic, 1, config); err != nil {
		t.Fatal(err)
	}
}

// compactOffsetsAt runs the cleaner of the embedded log in dir once, with
// its clock at now (tombstones are aged by it).
func compactOffsetsAt(t *testing.T, dir string, now time.Time) {
	t.Helper()
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.Compact(t.Context())
}

// offsetsTombstones counts the tombstones of a source connector's
// positions in OffsetsTopic of the embedded log in dir.
func offsetsTombstones(t *testing.T, dir, connector string) int {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	n := 0
	err = NewEmbedded(l, logger).ReadAll(t.Context(), OffsetsTopic, func(r connect.Record) error {
		if id, ok := decodeOffsetKey(r.Key); ok && id.connector == connector && r.Value == nil {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A sink created anew under a name is keyed by the pipeline of the sink of
// that name that ran last consuming as the same group
// (ResumedSinkPipeline), also after the worker restarts and loads the
// offsets topic again; a sink of that pipeline and name that ran with
// another group since no longer counts for the first; a name or group
// without a run gets RESTPipeline. The sink records leave the sources'
// positions alone.
func TestWorker_ResumedSinkPipeline_NewestRunOfTheNameAndGroup(t *testing.T) {
	dir := t.TempDir()
	ctx := t.Context()
	open := func(t *testing.T) (*Worker, func()) { return openWorkerOn(t, dir) }
	check := func(t *testing.T, w *Worker, step int, name, group, want string) {
		t.Helper()
		got, err := w.ResumedSinkPipeline(ctx, name, group)
		if err != nil || got != want {
			t.Errorf("step %d: ResumedSinkPipeline(%q, %q) = %q, %v; want %q", step, name, group, got, err, want)
		}
	}
	w, done := open(t)
	if err := w.offsets.Put(ctx, "shop", "lake", connect.Position(`{"seq":1}`)); err != nil { // a source's position, same name
		t.Fatal(err)
	}
	done()
	steps := []struct {
		pipeline, sink, group string
		wantLake, wantOther   string // ResumedSinkPipeline("lake", "lake" / "other") after the step
	}{
		{"rest", "lake", "lake", "rest", RESTPipeline},
		{"shop", "lake", "lake", "shop", RESTPipeline}, // the file's sink ran later
		{"crm", "wh", "lake", "shop", RESTPipeline},    // another name changes nothing
		{"shop", "lake", "other", "rest", "shop"},      // shop's lake now consumes as other
		{"a", "lake", "lake", "a", "shop"},
	}
	for i, s := range steps {
		w, done := open(t)
		if err := w.offsets.PutSinkRun(ctx, s.pipeline, s.sink, s.group); err != nil {
			done()
			t.Fatal(err)
		}
		check(t, w, i, "lake", "lake", s.wantLake)
		check(t, w, i, "lake", "other", s.wantOther)
		check(t, w, i, "never-ran", "never-ran", RESTPipeline)
		done()
		w, done = open(t)
		check(t, w, i, "lake", "lake", s.wantLake)
		check(t, w, i, "lake", "other", s.wantOther)
		if got, err := w.ResumedPipeline(ctx, "lake"); err != nil || got != "shop" {
			t.Errorf("step %d: ResumedPipeline(lake) = %q, %v; want shop: a sink's record is no source position", i, got, err)
		}
		if pos := w.offsets.Get("shop", "lake"); string(pos) != `{"seq":1}` {
			t.Errorf("step %d: the position of source lake of shop is %s; want {\"seq\":1}", i, pos)
		}
		done()
	}
}

// openWorkerOn starts a worker without connectors on the embedded log in
// dir; done shuts both down, so that the next one loads what they stored.
func openWorkerOn(t *testing.T, dir string) (w *Worker, done func()) {
	t.Helper()
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	w, err = NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Connectors: connect.NewRegistry(), Logger: logger})
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	return w, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(sctx)
		l.Close()
	}
}

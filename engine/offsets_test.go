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

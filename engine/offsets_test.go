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
	logger := slog.New(slog.DiscardHandler)
	ctx := t.Context()
	// open starts a worker on the log in dir; done shuts both down.
	open := func(t *testing.T) (w *Worker, done func()) {
		t.Helper()
		l, err := tlog.Open(tlog.Options{Dir: dir, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		w, err = NewWorker(ctx, Options{Backend: NewEmbedded(l, logger), Connectors: connect.NewRegistry(), Logger: logger})
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

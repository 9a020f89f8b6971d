package engine

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	tlog "github.com/tributary-io/tributary/log"
)

// quietSnapshotter is a source that takes snapshot signals but has no
// report (connect.Reporter is optional).
type quietSnapshotter struct {
	mu     *sync.Mutex
	tables *[]string
}

func (quietSnapshotter) Open(ctx context.Context, cfg connect.Config) error { return nil }
func (quietSnapshotter) Read(ctx context.Context) ([]connect.Record, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(10 * time.Millisecond):
		return nil, nil
	}
}
func (quietSnapshotter) Ack(ctx context.Context, pos connect.Position) error { return nil }
func (quietSnapshotter) Close(ctx context.Context) error                     { return nil }
func (s quietSnapshotter) ExecuteSnapshot(ctx context.Context, tables []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	*s.tables = append(*s.tables, tables...)
	return nil
}
func (quietSnapshotter) StopSnapshot(ctx context.Context, tables []string) error { return nil }

// TestWorker_SignalReachesASnapshotterWithoutReport: a running source
// that takes snapshot signals gets them whether or not it reports its
// progress.
func TestWorker_SignalReachesASnapshotterWithoutReport(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	reg := connect.NewRegistry()
	reg.MustRegister(connect.Connector{Name: "snap", Kind: connect.KindSource, Version: "test",
		NewSource: func() connect.Source { return quietSnapshotter{mu: &mu, tables: &got} }})
	w, err := NewWorker(t.Context(), Options{Backend: NewEmbedded(l, logger), Connectors: reg, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		w.Shutdown(ctx)
		l.Close()
	})
	if err := w.Start(t.Context(), ConnectorSpec{Name: "src", Kind: connect.KindSource, Connector: "snap", Topic: "t"}, ""); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the signal to reach the running source", func() bool {
		if err := w.Signal(t.Context(), "src", SignalExecuteSnapshot, []string{"public.orders"}); err != nil {
			return false // not running yet
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Equal(got, []string{"public.orders"})
	})
}

package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/connect"
)

// Signal kinds, as Debezium names them.
const (
	SignalExecuteSnapshot = "execute-snapshot"
	SignalStopSnapshot    = "stop-snapshot"
	SignalPauseSnapshot   = "pause-snapshot"
	SignalResumeSnapshot  = "resume-snapshot"
)

// Signal sends a Debezium-style signal to a running source: an incremental
// snapshot of tables, its end, or a pause and resume of it. The source must
// implement connect.Snapshotter, and connect.SnapshotPauser for the pause
// and resume signals.
func (w *Worker) Signal(ctx context.Context, name, kind string, tables []string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	r.mu.Lock()
	inst := r.instance // the running instance, if any
	r.mu.Unlock()
	snap, ok := inst.(connect.Snapshotter)
	if !ok {
		// Tell "cannot" from "not now" by the connector's type.
		if r.spec.Kind == connect.KindSource && r.conn.NewSource != nil {
			if _, can := r.conn.NewSource().(connect.Snapshotter); can {
				return fmt.Errorf("%w: connector %s is not running; resume it first", ErrBadRequest, name)
			}
		}
		return fmt.Errorf("%w: connector %s (%s) does not take snapshot signals", ErrBadRequest, name, r.spec.Connector)
	}
	switch kind {
	case SignalExecuteSnapshot:
		if len(tables) == 0 {
			return fmt.Errorf("%w: execute-snapshot needs data-collections, e.g. [\"public.orders\"]", ErrBadRequest)
		}
		return badSignal(snap.ExecuteSnapshot(ctx, tables))
	case SignalStopSnapshot:
		return badSignal(snap.StopSnapshot(ctx, tables))
	case SignalPauseSnapshot, SignalResumeSnapshot:
		p, ok := snap.(connect.SnapshotPauser)
		if !ok {
			return fmt.Errorf("%w: connector %s (%s) cannot pause incremental snapshots; use %s to end one", ErrBadRequest, name, r.spec.Connector, SignalStopSnapshot)
		}
		if kind == SignalPauseSnapshot {
			return p.PauseSnapshot(ctx)
		}
		return p.ResumeSnapshot(ctx)
	}
	return fmt.Errorf("%w: signal type %q: use %s, %s, %s or %s", ErrBadRequest, kind,
		SignalExecuteSnapshot, SignalStopSnapshot, SignalPauseSnapshot, SignalResumeSnapshot)
}

// badSignal marks a source's connect.ErrBadSignal as the client's mistake.
func badSignal(err error) error {
	if errors.Is(err, connect.ErrBadSignal) && !errors.Is(err, ErrBadRequest) {
		return fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	return err
}

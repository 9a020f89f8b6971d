package connect

import (
	"context"
	"errors"
)

// ErrBadSignal is wrapped by a Snapshotter's error when a signal cannot be
// taken as sent: it names no table the source captures, or a name is not
// valid. The worker answers it as the client's mistake (HTTP 400), not as
// a failure of the source.
var ErrBadSignal = errors.New("bad signal")

// Snapshotter is implemented by a CDC source that can re-read tables on
// demand while it keeps streaming (Debezium's incremental snapshots). The
// worker calls it from its REST API and CLI, concurrently with Read and
// Ack. Tables are named as the source names them, e.g. "public.orders".
type Snapshotter interface {
	// ExecuteSnapshot starts an incremental snapshot of the tables.
	ExecuteSnapshot(ctx context.Context, tables []string) error
	// StopSnapshot stops the incremental snapshot of the tables, or of
	// every table when tables is empty.
	StopSnapshot(ctx context.Context, tables []string) error
}

// SnapshotPauser is implemented by a Snapshotter whose incremental
// snapshots can be paused and resumed (Debezium's pause-snapshot and
// resume-snapshot signals). Streaming goes on while a snapshot is paused;
// a paused snapshot keeps its place (table and chunk) across restarts.
type SnapshotPauser interface {
	// PauseSnapshot stops reading chunks after the one in progress.
	PauseSnapshot(ctx context.Context) error
	// ResumeSnapshot continues a paused snapshot where it stopped.
	ResumeSnapshot(ctx context.Context) error
}

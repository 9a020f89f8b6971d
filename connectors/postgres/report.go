package postgres

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
)

var (
	_ connect.Reporter       = (*Source)(nil)
	_ connect.Snapshotter    = (*Source)(nil) // incremental snapshots on demand (REST signals, CLI)
	_ connect.SnapshotPauser = (*Source)(nil) // pause-snapshot and resume-snapshot
)

// defaultReportInterval is how often the runner reads the WAL the slot
// retains.
const defaultReportInterval = 10 * time.Second

// Phases the source reports.
const (
	phaseStarting    = "starting"
	phaseSnapshot    = "snapshot"
	phaseStreaming   = "streaming"
	phaseDone        = "done"                 // initial_only: the snapshot is complete
	phaseIncremental = "incremental-snapshot" // streaming, and an incremental snapshot in progress
	// streaming, and an incremental snapshot paused (pause-snapshot)
	phaseIncrementalPaused = "incremental-snapshot-paused"
)

// Report implements connect.Reporter: the phase, the snapshot's progress
// per table (rows read of the estimate), and the gauges
// slot_retained_wal_bytes, milliseconds_behind_source,
// total_number_of_events_seen, number_of_committed_transactions and
// snapshot_rows_scanned, with a warning when the slot retains more WAL
// than slot.retained.warn. Safe for concurrent use, before Open and after
// Close too.
func (s *Source) Report() connect.Report { return s.rep.report() }

// reporter is what Report shows. The runner and the snapshot write it;
// Report reads it from the worker's goroutines.
type reporter struct {
	mu        sync.Mutex
	slot      string
	warnAbove int64 // slot.retained.warn; 0 = never
	phase     string
	tables    []*connect.Progress // snapshot progress, in the order tables started
	byName    map[string]*connect.Progress
	retained  int64 // bytes of WAL the slot holds back; -1 unknown
	walStatus string
	behindMs  int64 // now - commit time of the last transaction; -1 unknown
	events    int64 // streamed change events
	txns      int64 // streamed transactions
	scanned   int64 // snapshot rows read by this instance
}

func (r *reporter) init(slot string, warnAbove int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.slot, r.warnAbove, r.phase = slot, warnAbove, phaseStarting
	r.byName = map[string]*connect.Progress{}
	r.retained, r.behindMs = -1, -1
}

func (r *reporter) setPhase(p string) {
	r.mu.Lock()
	r.phase = p
	r.mu.Unlock()
}

// table returns the progress entry of a table, creating it; r.mu is held.
func (r *reporter) table(name string) *connect.Progress {
	p := r.byName[name]
	if p == nil {
		if r.byName == nil {
			r.byName = map[string]*connect.Progress{}
		}
		p = &connect.Progress{Name: name, Unit: "rows"}
		r.byName[name] = p
		r.tables = append(r.tables, p)
	}
	return p
}

// snapshotStarted sets a table's rows already read (by an earlier,
// interrupted run) and its estimated size.
func (r *reporter) snapshotTable(name string, done, estimate int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.table(name)
	p.Done = max(p.Done, done)
	p.Total = max(estimate, p.Done)
}

// snapshotRows adds rows read of a table; done marks the table complete,
// which makes the estimate exact.
func (r *reporter) snapshotRows(name string, n int64, done bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.table(name)
	p.Done += n
	r.scanned += n
	if done || p.Done > p.Total {
		p.Total = p.Done
	}
}

func (r *reporter) slotReading(retained int64, walStatus string) {
	r.mu.Lock()
	r.retained, r.walStatus = retained, walStatus
	r.mu.Unlock()
}

// committed counts a streamed transaction of n change events committed at
// commit.
func (r *reporter) committed(n int64, commit time.Time) {
	r.mu.Lock()
	r.txns++
	r.events += n
	if !commit.IsZero() {
		r.behindMs = max(time.Since(commit).Milliseconds(), 0)
	}
	r.mu.Unlock()
}

func (r *reporter) report() connect.Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := connect.Report{Phase: r.phase, Gauges: map[string]float64{
		"total_number_of_events_seen":      float64(r.events),
		"number_of_committed_transactions": float64(r.txns),
		"snapshot_rows_scanned":            float64(r.scanned),
	}}
	if r.phase == phaseSnapshot || r.phase == phaseIncremental || r.phase == phaseIncrementalPaused {
		for _, p := range r.tables {
			rep.Progress = append(rep.Progress, *p)
		}
	}
	if r.retained >= 0 {
		rep.Gauges["slot_retained_wal_bytes"] = float64(r.retained)
		if r.warnAbove > 0 && r.retained > r.warnAbove {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("replication slot %s retains %s of WAL, more than slot.retained.warn (%s): the server keeps WAL until the connector confirms it, so disk fills while the connector is behind or stuck; check that this task keeps up and that its records become durable", r.slot, bytesText(r.retained), bytesText(r.warnAbove)))
		}
	}
	switch r.walStatus {
	case "unreserved":
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("replication slot %s is about to lose WAL it needs (wal_status unreserved, past max_slot_wal_keep_size): unless the connector catches up now, it will have to start over with a snapshot", r.slot))
	case "lost":
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("replication slot %s has lost WAL it needed (wal_status lost): changes are missing; drop the slot and start over with a snapshot", r.slot))
	}
	if r.behindMs >= 0 {
		rep.Gauges["milliseconds_behind_source"] = float64(r.behindMs)
	}
	return rep
}

// bytesText renders a byte count for people: 1.5 GiB.
func bytesText(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// readRetained reads how much WAL the slot holds back (from its
// restart_lsn to the server's current WAL position) into the report.
// Errors only make the reading unknown: it is not worth stopping capture.
func (s *Source) readRetained(ctx context.Context, conn *pgx.Conn) {
	var retained *int64
	var status *string
	err := conn.QueryRow(ctx, `
SELECT (pg_current_wal_lsn() - restart_lsn)::bigint, wal_status
FROM pg_replication_slots WHERE slot_name = $1`, s.set.slot).Scan(&retained, &status)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("postgres: read the WAL the slot retains", "err", err)
		}
		return
	}
	r, st := int64(-1), ""
	if retained != nil {
		r = *retained
	}
	if status != nil {
		st = *status
	}
	s.rep.slotReading(r, st)
	above := s.set.retainedWarn > 0 && r > s.set.retainedWarn
	if above && !s.retainedWarned {
		s.log.Warn("postgres: the replication slot retains much WAL", "slot", s.set.slot, "retained_bytes", r, "slot.retained.warn", s.set.retainedWarn)
	}
	s.retainedWarned = above
}

// warnUnpublished logs a warning, once per table, for each table that
// matches tables but is missing from the publication: one created while
// the source runs, whose changes are not captured until a restart adds it
// (publication.autocreate.mode=filtered, on a publication the connector's
// user owns). Errors only skip the check.
func (s *Source) warnUnpublished(ctx context.Context, conn *pgx.Conn) {
	tables, err := unpublished(ctx, conn, s.set.publication, s.set.tables)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Debug("postgres: look for tables missing from the publication", "err", err)
		}
		return
	}
	for _, t := range tables {
		if s.unpublishedWarned[t.String()] {
			continue
		}
		if s.unpublishedWarned == nil {
			s.unpublishedWarned = map[string]bool{}
		}
		s.unpublishedWarned[t.String()] = true
		s.log.Warn(fmt.Sprintf("postgres: table %s matches tables but is not in publication %s (created after the start?): its changes are not captured. "+
			"Restart the connector to add it (publication.autocreate.mode=filtered does so on a publication the connector's user owns; else run ALTER PUBLICATION %s ADD TABLE %s;), "+
			"then take an incremental snapshot of it (execute-snapshot) for the rows written before", t, s.set.publication, pgx.Identifier{s.set.publication}.Sanitize(), t.quoted()),
			"table", t.String(), "publication", s.set.publication)
	}
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary-io/tributary/connect"
)

var _ connect.Source = (*Source)(nil)

// defaultIdle is how long Read waits for records before it returns an
// empty batch, so that the worker can heartbeat and react to pause or stop.
const defaultIdle = time.Second

// slotInUseWait is how long Open waits for an active slot to be released
// before it reports the slot in use.
const slotInUseWait = 2 * time.Second

// Source captures a Postgres database. Make one with Connector().NewSource.
//
// Open checks the setup, creates the publication and the slot when
// missing, and starts one goroutine, the runner, which owns both database
// connections: it takes the snapshot (with its own worker connections),
// then streams from the slot, and hands batches of records to Read through
// a channel. Ack only records the acknowledged LSN; the runner confirms it
// to the server. Close stops the runner and closes the connections.
type Source struct {
	set    settings
	logger *slog.Logger  // where to log; nil is slog.Default(); tests set it
	log    *slog.Logger  // logger with the source's attributes, from Open
	idle   time.Duration // Read's idle timeout; tests shorten it
	// waitEvery is how often push, waiting for Read, lets the runner
	// confirm to the server (the streamer shortens it for a short
	// wal_sender_timeout).
	waitEvery time.Duration

	meta *pgx.Conn      // catalogue, heartbeats; the runner's after Open
	repl *pgconn.PgConn // the replication connection; the runner's after Open

	plan plan

	out    chan []connect.Record // batches from the runner to Read; closed when the runner ends
	err    error                 // why the runner ended; read after out is closed
	cancel context.CancelFunc
	done   chan struct{} // closed when the runner has returned

	// acked is the highest LSN acknowledged by the worker (Ack); the runner
	// confirms it to the server.
	acked atomic.Uint64

	signals        chan signalReq // ExecuteSnapshot and StopSnapshot to the runner
	streamMemory   int            // bytes of streamed transactions held in memory before spilling; tests shorten it
	rep            reporter       // what Report shows
	reportEvery    time.Duration  // how often the runner reads the slot's retained WAL; tests shorten it
	retainedWarned bool           // the runner logged the retained-WAL warning (until it clears)
	// unpublishedWarned holds the tables the runner warned are missing
	// from the publication (each is warned about once).
	unpublishedWarned map[string]bool
}

// plan is what Open decided the runner does.
type plan struct {
	db           string
	tables       []tableRef
	snapshot     bool      // take a snapshot first
	snapshotName string    // the snapshot exported at slot creation, "" for a fresh one
	resume       *progress // the unfinished snapshot to resume, nil for none
	stream       bool      // stream from the slot (after the snapshot)
	startLSN     pglogrepl.LSN
	incremental  *incState // the incremental snapshot to resume, nil for none
}

// Open checks the database, prepares publication and slot, and starts
// capturing.
func (s *Source) Open(ctx context.Context, cfg connect.Config) (err error) {
	if s.set, err = parseSettings(cfg); err != nil {
		return fmt.Errorf("postgres source %s: %w", cfg.Connector, err)
	}
	if s.idle == 0 {
		s.idle = defaultIdle
	}
	s.waitEvery = 5 * time.Second
	if s.reportEvery == 0 {
		s.reportEvery = defaultReportInterval
	}
	if s.streamMemory == 0 {
		s.streamMemory = defaultStreamMemory
	}
	s.rep.init(s.set.slot, s.set.retainedWarn)
	base := s.logger
	if base == nil {
		base = slog.Default()
	}
	s.log = base.With("connector", Name, "pipeline", cfg.Pipeline, "source", cfg.Connector)
	var pos *position
	if cfg.Position != nil {
		p, err := decodePosition(cfg.Position)
		if err != nil {
			return err
		}
		pos = &p
	}
	defer func() {
		if err != nil {
			s.closeConns(errors.Is(err, errDeadConn))
		}
	}()
	if s.meta, err = connectSQL(ctx, s.set.dsn, s.set.deadAfter, s.log); err != nil {
		return err
	}
	if err := checkServer(ctx, s.meta); err != nil {
		return err
	}
	if err := s.meta.QueryRow(ctx, "SELECT current_database()").Scan(&s.plan.db); err != nil {
		return fmt.Errorf("read the database name: %w", err)
	}
	if s.plan.tables, err = resolveTables(ctx, s.meta, s.set.tables); err != nil {
		return err
	}
	if s.set.signalTable != "" {
		s.plan.tables = slices.DeleteFunc(s.plan.tables, func(t tableRef) bool { return t.String() == s.set.signalTable })
		if len(s.plan.tables) == 0 {
			return fmt.Errorf("tables: only the signal table %s matches; name the tables to capture", s.set.signalTable)
		}
	}
	if err := s.decide(ctx, pos); err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.out = make(chan []connect.Record, 4)
	s.signals = make(chan signalReq, 16)
	s.done = make(chan struct{})
	go s.run(rctx)
	return nil
}

// decide works out the plan from the snapshot mode, the stored position
// and the slot, creating publication and slot when needed.
func (s *Source) decide(ctx context.Context, pos *position) error {
	p := &s.plan
	switch s.set.snapshotMode {
	case snapshotNever:
	case snapshotInitial, snapshotInitialOnly:
		p.snapshot = pos == nil || pos.Snapshot != nil
	case snapshotAlways:
		p.snapshot = true
	}
	if p.snapshot && pos != nil && pos.Snapshot != nil {
		p.resume = pos.Snapshot
	}
	if err := newCatalog(s.meta, &s.set, nil, s.log).checkColumnLists(ctx, p.tables); err != nil {
		return err
	}
	if s.set.snapshotMode == snapshotInitialOnly {
		// No slot: a plain snapshot, then nothing more.
		return nil
	}
	p.stream = true
	if pos != nil && pos.Snapshot == nil {
		p.incremental = pos.Incremental
	}
	published := p.tables
	if s.set.signalTable != "" {
		schema, table, _ := strings.Cut(s.set.signalTable, ".")
		published = append(slices.Clone(p.tables), tableRef{schema, table})
	}
	if err := ensurePublication(ctx, s.meta, s.log, s.set.publication, s.set.pubMode, published); err != nil {
		return err
	}
	slot, err := readSlot(ctx, s.meta, s.set.slot)
	// A previous instance may still be letting go of the slot: wait a
	// little before calling it in use.
	for wait := time.Now().Add(slotInUseWait); err == nil && slot != nil && slot.active && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		slot, err = readSlot(ctx, s.meta, s.set.slot)
	}
	if err != nil {
		return err
	}
	if slot != nil {
		if err := checkSlot(slot, s.set.slot, p.db); err != nil {
			return err
		}
		p.startLSN = slot.confirmed
		if pos == nil && !createdHere(s.set.dsn, s.set.slot) {
			// A first start on a slot this process did not create: most
			// likely another pipeline's source of the same name (the
			// default slot name does not hold the pipeline's), whose
			// changes this source would now take from it.
			s.log.Warn(fmt.Sprintf("postgres: replication slot %s already exists and this source has no stored position: it continues from the slot's confirmed LSN %s. "+
				"If another pipeline owns this slot (the default slot name, tributary_<source name>, does not hold the pipeline's name), both now take changes from it and each misses what the other consumed: "+
				"stop this source and give it a slot of its own (slot: in its config)", s.set.slot, slot.confirmed),
				"slot", s.set.slot, "confirmed_lsn", slot.confirmed.String())
		}
		if pos != nil {
			if pglogrepl.LSN(pos.LSN) < slot.confirmed {
				return connect.Permanent(fmt.Errorf("replication slot %s has confirmed up to %s, beyond the stored position %s: the changes in between were consumed by someone else, or the slot was dropped and created again, and are missing here. Start over with a snapshot: delete the source's stored offsets (or set snapshot.mode=always)", s.set.slot, slot.confirmed, pglogrepl.LSN(pos.LSN)))
			}
			p.startLSN = pglogrepl.LSN(pos.LSN)
		}
	} else {
		if pos != nil && pos.Snapshot == nil && s.set.snapshotMode != snapshotAlways {
			return connect.Permanent(fmt.Errorf("replication slot %s does not exist, but a position is stored (lsn %s): the slot was dropped and the changes since are lost. Start over with a snapshot: delete the source's stored offsets (or set snapshot.mode=always)", s.set.slot, pglogrepl.LSN(pos.LSN)))
		}
		if pos != nil && pos.Snapshot != nil {
			// The slot of an unfinished snapshot is gone: the chunks read
			// so far may miss changes, so start the snapshot over.
			p.snapshot, p.resume = true, nil
		}
		if s.repl, err = connectReplication(ctx, s.set.dsn, s.set.deadAfter, s.log); err != nil {
			return err
		}
		action := "NOEXPORT_SNAPSHOT"
		if p.snapshot {
			action = "EXPORT_SNAPSHOT"
		}
		res, err := pglogrepl.CreateReplicationSlot(ctx, s.repl, s.set.slot, "pgoutput",
			pglogrepl.CreateReplicationSlotOptions{Mode: pglogrepl.LogicalReplication, SnapshotAction: action})
		if err = deadErr(s.repl.Conn(), err); errors.Is(err, errDeadConn) {
			return fmt.Errorf("create replication slot %s: %w", s.set.slot, err)
		}
		if err != nil {
			return fmt.Errorf("create replication slot %s: %w (is max_replication_slots reached? see SELECT * FROM pg_replication_slots;)", s.set.slot, err)
		}
		if p.startLSN, err = pglogrepl.ParseLSN(res.ConsistentPoint); err != nil {
			return fmt.Errorf("create replication slot %s: %w", s.set.slot, err)
		}
		p.snapshotName = res.SnapshotName
		markCreated(s.set.dsn, s.set.slot)
		s.log.Info("postgres: created replication slot", "slot", s.set.slot, "consistent_point", res.ConsistentPoint)
	}
	if s.repl == nil {
		if s.repl, err = connectReplication(ctx, s.set.dsn, s.set.deadAfter, s.log); err != nil {
			return err
		}
	}
	return nil
}

// createdSlots are the slots this process created, by DSN and name: a
// source that restarts before it stored a position finds its own slot, and
// that is no reason to warn.
var createdSlots struct {
	sync.Mutex
	m map[[2]string]bool
}

func markCreated(dsn, slot string) {
	createdSlots.Lock()
	defer createdSlots.Unlock()
	if createdSlots.m == nil {
		createdSlots.m = map[[2]string]bool{}
	}
	createdSlots.m[[2]string{dsn, slot}] = true
}

func createdHere(dsn, slot string) bool {
	createdSlots.Lock()
	defer createdSlots.Unlock()
	return createdSlots.m[[2]string{dsn, slot}]
}

// run is the runner: snapshot, then stream, until ctx is done or an error.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	err := s.runErr(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Error("postgres: capture stopped", "err", err)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	s.err = err
	close(s.out)
}

func (s *Source) runErr(ctx context.Context) error {
	m := &mapper{decimals: s.set.decimals, placeholder: s.set.placeholder}
	cat := newCatalog(s.meta, &s.set, m, s.log)
	enc := &encoder{set: &s.set, db: s.plan.db, codec: connect.DebeziumJSON{Schemas: s.set.schemas}, mapper: m}
	if s.plan.snapshot {
		if err := s.snapshot(ctx, cat, enc); err != nil {
			return err
		}
	}
	if !s.plan.stream {
		s.rep.setPhase(phaseDone)
		<-ctx.Done()
		return ctx.Err()
	}
	st := &streamer{src: s, cat: cat, enc: enc, rels: map[uint32]*relation{}}
	return st.run(ctx)
}

// push hands a batch to Read, waiting while Read is behind; wait is
// called every waitEvery while it waits (to keep the replication
// connection alive).
func (s *Source) push(ctx context.Context, batch []connect.Record, wait func() error) error {
	if len(batch) == 0 {
		return nil
	}
	t := time.NewTicker(s.waitEvery)
	defer t.Stop()
	for {
		select {
		case s.out <- batch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
			if wait != nil {
				if err := wait(); err != nil {
					return err
				}
			}
		}
	}
}

// Read returns the next batch of records, or an empty batch after a
// second without any.
func (s *Source) Read(ctx context.Context) ([]connect.Record, error) {
	t := time.NewTimer(s.idle)
	defer t.Stop()
	select {
	case b, ok := <-s.out:
		if !ok {
			if errors.Is(s.err, context.Canceled) {
				return nil, errors.New("postgres source is closed")
			}
			return nil, s.err
		}
		return b, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-t.C:
		return nil, nil
	}
}

// Ack records that every record up to the one with pos is durable; the
// runner confirms its LSN to the server (write = flush = apply).
func (s *Source) Ack(_ context.Context, pos connect.Position) error {
	lsn, ok := streamLSN(pos)
	if !ok {
		p, err := decodePosition(pos)
		if err != nil {
			return err
		}
		if p.Snapshot != nil {
			return nil // the snapshot's progress is only stored, not confirmed upstream
		}
		lsn = p.LSN
	}
	for {
		cur := s.acked.Load()
		if lsn <= cur || s.acked.CompareAndSwap(cur, lsn) {
			return nil
		}
	}
}

// Close stops the runner and closes the connections.
func (s *Source) Close(context.Context) error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	s.closeConns(errors.Is(s.err, errDeadConn))
	return nil
}

// closeConns closes the connections; dead says a connection was taken for
// dead (errDeadConn), when the server cannot hear of the close either.
func (s *Source) closeConns(dead bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.repl != nil {
		s.repl.Close(ctx)
		s.repl = nil
		// After a dead connection the server cannot hear of the close
		// either: its walsender holds the slot until wal_sender_timeout.
		if s.meta != nil && !dead {
			s.awaitSlotReleased(ctx)
		}
	}
	if s.meta != nil {
		s.meta.Close(ctx)
		s.meta = nil
	}
}

// awaitSlotReleased waits (within ctx) until the server has let go of the
// slot after the replication connection closed, so that a restart right
// after Close does not find the slot still in use.
func (s *Source) awaitSlotReleased(ctx context.Context) {
	for ctx.Err() == nil {
		var active bool
		err := s.meta.QueryRow(ctx, "SELECT active FROM pg_replication_slots WHERE slot_name = $1", s.set.slot).Scan(&active)
		if err != nil || !active {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

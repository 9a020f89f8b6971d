package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

var (
	_ connect.Source   = (*Source)(nil)
	_ connect.Reporter = (*Source)(nil)
)

// defaultIdle is how long Read waits for records before it returns an
// empty batch, so that the worker can heartbeat and react to pause or stop.
const defaultIdle = time.Second

// defaultReconnectFor is how long a dropped binlog connection is retried
// without progress before the task fails (and the worker restarts it).
const defaultReconnectFor = 2 * time.Minute

// Source captures a MySQL or MariaDB server. Make one with
// Connector().NewSource.
//
// Open checks the server and the user, decides where to start, and starts
// one goroutine, the runner, which owns the database connections and the
// binlog client: it takes the snapshot (with its own worker connections),
// then streams the binlog, and hands batches of records to Read through a
// channel. Ack trims the schema history. Close stops the runner and
// releases everything.
type Source struct {
	set  settings
	log  *slog.Logger
	idle time.Duration // Read's idle timeout; tests shorten it

	// reconnectFor is how long the stream keeps reconnecting after its
	// binlog connection dropped before it fails the task; tests shorten it.
	reconnectFor time.Duration
	// deadAfter is how long a silent binlog connection is taken for alive;
	// 0: three heartbeat periods, at least connection.dead.timeout. Tests
	// shorten it.
	deadAfter time.Duration
	// goMySQLRows has go-mysql's parser decode every rows event, as it
	// does those of MySQL's binary JSON columns; tests set it to run that
	// path on MariaDB.
	goMySQLRows bool
	// fileOnly (tests) positions by binlog file and pos even when the
	// server has GTIDs, as with a MySQL server without gtid_mode.
	fileOnly bool

	db   *sql.DB   // the runner's after Open
	dog  *watchdog // watches db's connections for a dead network
	srv  *server
	hist *history // nil without state.dir

	plan plan

	out    chan []connect.Record // batches from the runner to Read; closed when the runner ends
	err    error                 // why the runner ended; read after out is closed
	cancel context.CancelFunc
	done   chan struct{} // closed when the runner has returned

	// mu guards report.
	mu     sync.Mutex
	report connect.Report

	acked atomic.Pointer[position] // the last acknowledged streaming position
	// Rows events decoded by the connector, and by go-mysql's parser
	// (rawevents.go); reported as gauges.
	rowsDecoded, rowsParsed atomic.Int64
	// Prepared XA transactions held until their outcome (xa.go).
	xaHeld atomic.Int64
	// Prepared XA transactions a start waits for (xastart.go).
	xaStartWaiting atomic.Int64
	// Debezium's streaming and snapshot metrics, reported as gauges:
	// change events and transactions streamed (counted at their commit),
	// rows read by snapshots, and how far behind the source the last
	// commit was handled (now minus its binlog timestamp, set once one
	// was).
	events, txns, scanned atomic.Int64
	behindMs              atomic.Int64
	behindKnown           atomic.Bool
	// xaPoll is how often a waiting start reads XA RECOVER again; 0:
	// defaultXAPoll. Tests shorten it.
	xaPoll time.Duration

	signals chan signalReq // ExecuteSnapshot and the like to the streamer
}

// plan is what Open decided the runner does.
type plan struct {
	tables   []tableRef
	snapshot bool      // take a snapshot first
	resume   *progress // the unfinished snapshot to resume, nil for none
	stream   bool      // stream after the snapshot
	fresh    bool      // no stored position: streaming starts from the server's current position
	start    coords    // where streaming starts (file/pos)
	gtids    *gtidSet  // where streaming starts (GTIDs); nil without GTIDs
	inc      *incState // the incremental snapshot in progress, nil for none
	// emitted is the stored position's emitted mark (xa.go), nil for none.
	emitted *replayMark
}

// tableRef is a captured table.
type tableRef struct{ db, name string }

func (t tableRef) String() string { return t.db + "." + t.name }

// Open checks the server, decides where to start and starts capturing.
func (s *Source) Open(ctx context.Context, cfg connect.Config) (err error) {
	if s.set, err = parseSettings(cfg); err != nil {
		return fmt.Errorf("mysql source %s: %w", cfg.Connector, err)
	}
	if s.idle == 0 {
		s.idle = defaultIdle
	}
	if s.reconnectFor == 0 {
		s.reconnectFor = defaultReconnectFor
	}
	s.log = slog.Default().With("connector", Name, "pipeline", cfg.Pipeline, "source", cfg.Connector)
	var pos *position
	if cfg.Position != nil {
		p, err := decodePosition(cfg.Position)
		if err != nil {
			return err
		}
		pos = &p
	}
	defer func() {
		if err != nil && s.db != nil {
			err = s.dog.explain(err)
			s.db.Close()
			s.db = nil
		}
	}()
	if s.db, s.dog, err = openDB(ctx, s.set.dsn, s.set.deadTimeout, s.log); err != nil {
		return err
	}
	s.db.SetMaxIdleConns(2)
	if s.srv, err = checkServer(ctx, s.db); err != nil {
		return err
	}
	if s.fileOnly {
		s.srv.gtidMode = false
	}
	if s.plan.tables, err = resolveTables(ctx, s.db, s.set.tables); err != nil {
		return err
	}
	if s.set.stateDir != "" {
		if s.hist, err = openHistory(s.set.stateDir, cfg.Pipeline, cfg.Connector); err != nil {
			return err
		}
	} else if !s.srv.fullMeta && s.set.snapshotMode != snapshotInitialOnly {
		return connect.Permanent(errors.New("the server does not log column metadata (binlog_row_metadata is not FULL), so the connector needs a schema history to decode rows: set binlog_row_metadata=FULL (SET GLOBAL binlog_row_metadata = 'FULL'; and in the configuration file; MySQL 8.0.1+, MariaDB 10.5+), or give state.dir"))
	}
	if err := s.checkSignalTable(ctx); err != nil {
		return err
	}
	if err := s.decide(ctx, pos); err != nil {
		return err
	}
	rctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.out = make(chan []connect.Record, 4)
	s.done = make(chan struct{})
	s.signals = make(chan signalReq, 16)
	go s.run(rctx)
	return nil
}

// checkSignalTable checks that the signal table exists with the columns
// incremental snapshots write.
func (s *Source) checkSignalTable(ctx context.Context) error {
	if s.set.signalTable == "" {
		return nil
	}
	db, name, _ := strings.Cut(s.set.signalTable, ".")
	def, err := readTableDef(ctx, s.db, db, name)
	if err != nil {
		return err
	}
	create := "CREATE TABLE " + quoteIdent(db) + "." + quoteIdent(name) + " (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)"
	if def == nil {
		return fmt.Errorf("signal.data.collection: table %s does not exist: create it (%s)", s.set.signalTable, create)
	}
	for _, c := range []string{"id", "type", "data"} {
		if !slices.ContainsFunc(def.Columns, func(col column) bool { return strings.EqualFold(col.Name, c) }) {
			return fmt.Errorf("signal.data.collection: table %s has no column %s: it needs id, type and data, as in %s", s.set.signalTable, c, create)
		}
	}
	return nil
}

// decide works out the plan from the snapshot mode, the stored position
// and the binlog the server still has.
func (s *Source) decide(ctx context.Context, pos *position) error {
	p := &s.plan
	mode := s.set.snapshotMode
	switch mode {
	case snapshotNever:
	case snapshotInitial, snapshotInitialOnly, snapshotWhenNeeded:
		p.snapshot = pos == nil || pos.Snapshot != nil
	}
	if p.snapshot && pos != nil && pos.Snapshot != nil {
		p.resume = pos.Snapshot
	}
	p.stream = mode != snapshotInitialOnly
	if pos != nil {
		p.inc = pos.Incremental
		p.start = coords{pos.File, pos.Pos}
		if pos.Emitted != nil && pos.Snapshot == nil {
			m, err := newReplayMark(s.srv.flavor, pos.Emitted)
			if err != nil {
				return err
			}
			if !s.srv.gtidMode {
				m.gtids = nil
			}
			p.emitted = m
		}
		if pos.GTIDs != "" {
			g, err := parseGTIDSet(s.srv.flavor, pos.GTIDs)
			if err != nil {
				return fmt.Errorf("stored position: %w", err)
			}
			p.gtids = g
		}
		if err := s.checkAvailable(ctx, pos); err != nil {
			if mode != snapshotWhenNeeded {
				return err
			}
			s.log.Warn("mysql: the binlog of the stored position is gone; taking a new snapshot (snapshot.mode=when_needed)", "err", err)
			p.snapshot, p.resume, p.gtids, p.inc, p.emitted = true, nil, nil, nil, nil
		}
	}
	if p.emitted != nil {
		if err := s.checkMark(ctx, p.emitted); err != nil {
			return err
		}
	}
	if pos == nil && !p.snapshot {
		// Stream from now, once no XA transaction prepared before now is
		// undecided (xastart.go).
		take := func(ctx context.Context) (coords, *gtidSet, error) { return s.currentPosition(ctx, s.db) }
		c, gtids, err := s.startClear(ctx, take, func() {})
		if err != nil {
			return err
		}
		p.start, p.gtids = c, gtids
		p.fresh = true
	}
	return nil
}

// checkMark checks that the emitted mark of the stored position is not
// beyond the end of the server's binlog. It is when the binlog lost
// transactions the source read (a crash with sync_binlog other than 1,
// RESET MASTER, a restored backup, a failover to a server behind): the
// transactions written since would be taken for ones emitted before the
// restart and skipped. A position beyond the binlog is refused by the
// server; a position resuming before its mark has to be refused here.
func (s *Source) checkMark(ctx context.Context, m *replayMark) error {
	cur, gtids, err := s.currentPosition(ctx, s.db)
	if err != nil {
		return err
	}
	ahead, at, mark := false, cur.String(), m.at.String()
	switch {
	case m.gtids != nil && gtids != nil:
		at, mark = gtids.String(), m.gtids.String()
		if m.gtids.flavor == flavorMariaDB {
			for d, id := range m.gtids.maria {
				if have, ok := gtids.maria[d]; !ok || have.SequenceNumber < id.SequenceNumber {
					ahead = true
				}
			}
		} else {
			ahead = !gtids.my.Contain(m.gtids.my)
		}
	case m.gtids == nil:
		ahead = cur.less(m.at)
	}
	if ahead {
		return connect.Permanent(fmt.Errorf("the stored position's emitted mark (%s) is beyond the end of the server's binlog (%s): the binlog lost transactions this source read (a crash with sync_binlog other than 1, RESET MASTER, a restored backup, a failover to a server behind), and the ones written since would be taken for ones emitted before. Start over with a snapshot: delete the source's stored offsets", mark, at))
	}
	return nil
}

// warnPreparedXA warns about XA transactions prepared on the server when
// the source starts without a stored position and xa.start.wait=0: their
// prepare may be before where streaming starts, so if they commit their
// changes are not captured (xa.go). Without the privilege XA RECOVER
// needs, it says nothing.
func (s *Source) warnPreparedXA(ctx context.Context) {
	rows, err := s.db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		s.log.Debug("mysql: XA RECOVER", "err", err)
		return
	}
	defer rows.Close()
	var xids []string
	for rows.Next() {
		var format, gl, bl int64
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			s.log.Debug("mysql: XA RECOVER", "err", err)
			return
		}
		if gl >= 0 && bl >= 0 && gl <= int64(len(data)) && bl <= int64(len(data))-gl { // no overflow
			xids = append(xids, xidString(data[:gl], data[gl:gl+bl], uint32(format)))
		}
	}
	if len(xids) > 0 {
		s.log.Warn("mysql: XA transactions are prepared on the server; this source starts after their prepare, so if they commit their changes are not captured", "xids", strings.Join(xids, " "))
	}
}

// currentPosition returns the server's current binlog coordinates and the
// matching GTID set (nil without GTIDs).
func (s *Source) currentPosition(ctx context.Context, q querier) (coords, *gtidSet, error) {
	c, executed, err := masterStatus(ctx, q)
	if err != nil {
		return c, nil, err
	}
	if !s.srv.gtidMode {
		return c, nil, nil
	}
	text := executed
	if s.srv.flavor == flavorMariaDB {
		if text, err = mariaGTIDAt(ctx, q, c); err != nil {
			return c, nil, err
		}
	}
	g, err := parseGTIDSet(s.srv.flavor, text)
	if err != nil {
		return c, nil, fmt.Errorf("read the server's GTID position: %w", err)
	}
	return c, g, nil
}

// checkAvailable checks that the server still has the binlog a stored
// position needs, and says what to do when it has not.
func (s *Source) checkAvailable(ctx context.Context, pos *position) error {
	hint := "the changes in between are lost to this source. Start over with a snapshot: delete the source's stored offsets, or set snapshot.mode=when_needed; and keep binlogs longer (binlog_expire_logs_seconds, expire_logs_days)"
	if pos.File != "" && (pos.GTIDs == "" || !s.srv.gtidMode) {
		if !slices.Contains(s.srv.binlogFiles, pos.File) {
			oldest := "none"
			if len(s.srv.binlogFiles) > 0 {
				oldest = s.srv.binlogFiles[0]
			}
			return connect.Permanent(fmt.Errorf("the stored position is in binlog file %s, which the server no longer has (purged; the oldest is %s): %s", pos.File, oldest, hint))
		}
		return nil
	}
	if pos.GTIDs == "" || !s.srv.gtidMode {
		return nil
	}
	have, err := parseGTIDSet(s.srv.flavor, pos.GTIDs)
	if err != nil {
		return fmt.Errorf("stored position: %w", err)
	}
	if s.srv.flavor == flavorMySQL {
		purgedText, err := globalVar(ctx, s.db, "gtid_purged")
		if err != nil {
			return err
		}
		purged, err := parseGTIDSet(flavorMySQL, purgedText)
		if err != nil {
			return fmt.Errorf("read gtid_purged: %w", err)
		}
		if miss := have.missing(purged); miss != "" {
			return connect.Permanent(fmt.Errorf("the server purged binlog with transactions the stored position has not seen (%s): %s", miss, hint))
		}
		return nil
	}
	if len(s.srv.binlogFiles) == 0 {
		return nil
	}
	oldestText, err := mariaGTIDAt(ctx, s.db, coords{s.srv.binlogFiles[0], 4})
	if err != nil {
		return err
	}
	oldest, err := parseGTIDSet(flavorMariaDB, oldestText)
	if err != nil {
		return fmt.Errorf("read the GTID state of the oldest binlog: %w", err)
	}
	if behind := have.behind(oldest); len(behind) > 0 {
		return connect.Permanent(fmt.Errorf("the stored GTID position %s needs binlog the server purged (%s): %s", pos.GTIDs, strings.Join(behind, "; "), hint))
	}
	return nil
}

// resolveTables lists the base tables matching the patterns (every table
// outside the system databases when there are none).
func resolveTables(ctx context.Context, db *sql.DB, patterns []string) ([]tableRef, error) {
	rows, err := db.QueryContext(ctx, `
SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES
WHERE TABLE_TYPE = 'BASE TABLE' AND TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
ORDER BY 1, 2`)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	defer rows.Close()
	var all []tableRef
	for rows.Next() {
		var t tableRef
		if err := rows.Scan(&t.db, &t.name); err != nil {
			return nil, fmt.Errorf("list tables: %w", err)
		}
		all = append(all, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	var errs []error
	for _, p := range patterns {
		if strings.ContainsAny(p, "*?[") {
			continue
		}
		if !slices.ContainsFunc(all, func(t tableRef) bool { return t.String() == p }) {
			errs = append(errs, fmt.Errorf("table %s (in tables) does not exist, or is not a base table", p))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var out []tableRef
	for _, t := range all {
		if matchAny(patterns, t.db, t.name) {
			out = append(out, t)
		}
	}
	return out, nil
}

// run is the runner: snapshot, then stream, until ctx is done or an error.
func (s *Source) run(ctx context.Context) {
	defer close(s.done)
	err := s.dog.explain(s.runErr(ctx))
	if err != nil && ctx.Err() == nil {
		s.log.Error("mysql: capture stopped", "err", err)
	}
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	s.err = err
	close(s.out)
}

func (s *Source) runErr(ctx context.Context) error {
	m := &mapper{decimals: s.set.decimals, placeholder: s.set.placeholder}
	enc := &encoder{set: &s.set, codec: connect.DebeziumJSON{Schemas: s.set.schemas}, mapper: m}
	if s.plan.snapshot {
		if err := s.snapshot(ctx, enc); err != nil {
			return err
		}
	}
	if !s.plan.stream {
		s.setPhase("done")
		<-ctx.Done()
		return ctx.Err()
	}
	if s.plan.fresh && s.hist != nil {
		if err := s.recordStart(ctx); err != nil {
			return err
		}
	}
	s.setPhase("streaming")
	st := newStreamer(s, enc)
	return st.run(ctx)
}

// recordStart records the captured tables' definitions at the position a
// fresh stream starts from, read right after that position was: the
// definitions its first events need.
func (s *Source) recordStart(ctx context.Context) error {
	var defs []*tableDef
	for _, ref := range s.plan.tables {
		if s.hist.lookup(ref.db, ref.name, s.plan.start) != nil {
			continue
		}
		def, err := readTableDef(ctx, s.db, ref.db, ref.name)
		if err != nil {
			return err
		}
		if def != nil {
			defs = append(defs, def)
		}
	}
	if len(defs) == 0 {
		return nil
	}
	return s.hist.record(s.plan.start, defs, nil)
}

// push hands a batch to Read, waiting while Read is behind.
func (s *Source) push(ctx context.Context, batch []connect.Record) error {
	if len(batch) == 0 {
		return nil
	}
	select {
	case s.out <- batch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
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
				return nil, errors.New("mysql source is closed")
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

// Ack records that every record up to the one with pos is durable. The
// binlog needs no acknowledgement upstream (the server keeps it by time,
// not by replica); the schema history drops what no stored position can
// need any more.
func (s *Source) Ack(_ context.Context, pos connect.Position) error {
	p, err := decodePosition(pos)
	if err != nil {
		return err
	}
	if p.Snapshot != nil {
		return nil
	}
	s.acked.Store(&p)
	if s.hist != nil {
		if err := s.hist.trim(coords{p.File, p.Pos}); err != nil {
			s.log.Warn("mysql: trim the schema history", "err", err)
		}
	}
	return nil
}

// Report returns the phase, the snapshot's progress and the gauges:
// Debezium's metrics total_number_of_events_seen,
// number_of_committed_transactions, snapshot_rows_scanned and (once a
// transaction was streamed) milliseconds_behind_source, under the
// postgres source's names, and the binlog_rows_events_* and xa_* of this
// source. Safe for concurrent use, before Open and after Close too.
func (s *Source) Report() connect.Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.report
	r.Progress = slices.Clone(r.Progress)
	r.Gauges = maps.Clone(r.Gauges)
	if r.Gauges == nil {
		r.Gauges = map[string]float64{}
	}
	r.Gauges["binlog_rows_events_decoded"] = float64(s.rowsDecoded.Load())
	r.Gauges["binlog_rows_events_parsed_by_go_mysql"] = float64(s.rowsParsed.Load())
	r.Gauges["xa_prepared_held"] = float64(s.xaHeld.Load())
	r.Gauges["xa_start_waiting"] = float64(s.xaStartWaiting.Load())
	r.Gauges["total_number_of_events_seen"] = float64(s.events.Load())
	r.Gauges["number_of_committed_transactions"] = float64(s.txns.Load())
	r.Gauges["snapshot_rows_scanned"] = float64(s.scanned.Load())
	if s.behindKnown.Load() {
		r.Gauges["milliseconds_behind_source"] = float64(s.behindMs.Load())
	}
	return r
}

// committed counts a streamed transaction of n change events (none: a
// transaction of tables not captured, which counts only for the lag)
// whose commit the binlog timestamps at.
func (s *Source) committed(n int64, at time.Time) {
	if n > 0 {
		s.txns.Add(1)
		s.events.Add(n)
	}
	s.behindMs.Store(max(time.Since(at).Milliseconds(), 0))
	s.behindKnown.Store(true)
}

func (s *Source) setPhase(phase string) {
	s.mu.Lock()
	s.report.Phase = phase
	s.mu.Unlock()
}

// Close stops the runner and closes the connections.
func (s *Source) Close(context.Context) error {
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.db != nil {
		s.db.Close()
		s.db = nil
	}
	return nil
}

package mysql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
)

// idleWait is the longest the stream loop waits for an event before it
// looks at heartbeats and pending records.
const idleWait = 200 * time.Millisecond

// streamer reads the binlog and turns row events into records. It runs on
// the runner goroutine.
type streamer struct {
	src *Source
	enc *encoder

	tables map[uint64]*table // by table id, from the table map events; nil: not captured

	file  string   // the current binlog file
	gtids *gtidSet // executed up to the last commit; nil without GTIDs

	pending []connect.Record // records not yet handed to Read

	// The transaction being received.
	inTx       bool
	txGTID     string // "0-1-42" or "uuid:42"; "" without GTIDs
	txMaria    *mysql.MariadbGTID
	txSID      []byte
	txGNO      int64
	txStart    uint32 // where the transaction starts in file
	txServerID uint32
	txTime     time.Time
	txThread   int64
	txBegun    bool // the transaction's BEGIN record was emitted
	txMark     int  // where the transaction's records start in pending
	total      int64
	counts     []txCount

	// The end of the last transaction.
	last     position
	nextBeat time.Time
	warned   map[string]bool
	events   int64     // events received, to tell a working connection
	now      time.Time // when the rows event being handled was received
}

func newStreamer(s *Source, enc *encoder) *streamer {
	st := &streamer{src: s, enc: enc, tables: map[uint64]*table{}, warned: map[string]bool{}}
	st.file = s.plan.start.File
	if s.plan.gtids != nil {
		st.gtids = s.plan.gtids.clone()
	} else if s.srv.gtidMode {
		st.gtids = newGTIDSet(s.srv.flavor)
	}
	st.last = position{File: s.plan.start.File, Pos: s.plan.start.Pos, ServerID: s.srv.serverID}
	if st.gtids != nil {
		st.last.GTIDs = st.gtids.String()
	}
	return st
}

// demoted passes go-mysql's log records on at debug level: the connector
// reports what matters (a lost connection, an error) itself, while
// go-mysql logs every dropped connection, and the failed KILL of an
// already dead one when closing, as errors of its own.
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(attrs []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(attrs)} }
func (d demoted) WithGroup(name string) slog.Handler       { return demoted{d.h.WithGroup(name)} }

// syncerConfig is the binlog client's configuration.
func (s *Source) syncerConfig() (replication.BinlogSyncerConfig, error) {
	host, port, err := hostPort(s.set.dsn)
	if err != nil {
		return replication.BinlogSyncerConfig{}, err
	}
	cfg := replication.BinlogSyncerConfig{
		ServerID:                s.set.serverID,
		Flavor:                  s.srv.flavor,
		Host:                    host,
		Port:                    port,
		User:                    s.set.dsn.User,
		Password:                s.set.dsn.Passwd,
		TimestampStringLocation: time.UTC,
		DisableRetrySync:        true,
		Logger:                  slog.New(demoted{s.log.Handler()}),
		EventCacheCount:         4096,
	}
	if s.set.heartbeat > 0 {
		cfg.HeartbeatPeriod = s.set.heartbeat
	} else {
		cfg.HeartbeatPeriod = 30 * time.Second
	}
	// The server sends a heartbeat when it has nothing else to send, so a
	// connection silent for several periods is dead (a network partition
	// sends no reset): drop it and reconnect. go-mysql's ReadTimeout would
	// do it by moving the read deadline before every packet, which costs a
	// tenth of the streaming CPU; deadlineConn moves it at most twice per
	// timeout.
	dead := s.deadAfter
	if dead == 0 {
		dead = max(3*cfg.HeartbeatPeriod, 30*time.Second)
	}
	network := "tcp"
	if s.set.dsn.Net == "unix" {
		network = "unix"
	}
	d := &net.Dialer{Timeout: 10 * time.Second}
	cfg.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: dead}, nil
	}
	return cfg, nil
}

// deadlineConn fails a read that waits longer than timeout: every read
// starts with at least timeout/2 before the deadline, and the deadline is
// moved only when less than that is left. Once its user sets a read
// deadline itself (go-mysql does when closing), it stops moving it.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	moved   time.Time // when the deadline was last moved; reads are serial
	pinned  atomic.Bool
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if !c.pinned.Load() {
		if now := time.Now(); now.Sub(c.moved) > c.timeout/2 {
			c.moved = now
			if err := c.Conn.SetReadDeadline(now.Add(c.timeout)); err != nil {
				return 0, err
			}
		}
	}
	return c.Conn.Read(b)
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetDeadline(t)
}

// run streams until ctx is done or an error that reconnecting cannot
// cure. When the binlog connection drops (a network error, the server
// restarting, the dump thread killed), it drops the records of the
// transaction it was receiving and reconnects with backoff from the end of
// the last whole transaction; it gives up when it has not been able to
// connect (and receive an event) for reconnectFor.
func (st *streamer) run(ctx context.Context) error {
	s := st.src
	cfg, err := s.syncerConfig()
	if err != nil {
		return err
	}
	if s.set.heartbeat > 0 {
		st.nextBeat = time.Now().Add(s.set.heartbeat)
	}
	bo := backoff{initial: 100 * time.Millisecond, max: 10 * time.Second}
	var failing time.Time // since when no connection has worked
	for attempt := 0; ; attempt++ {
		before := st.events
		err := st.session(ctx, cfg, attempt > 0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !connect.IsRetryable(err) {
			return err
		}
		if st.events != before {
			failing = time.Time{}
			bo.reset()
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		if time.Since(failing) > s.reconnectFor {
			return fmt.Errorf("%v (reconnecting failed for %s; the task restarts from the stored position)", err, s.reconnectFor)
		}
		st.abandonTx()
		wait := bo.next()
		s.log.Warn("mysql: binlog connection lost; reconnecting", "err", err, "from", st.from(), "in", wait.Round(time.Millisecond))
		s.setPhase("reconnecting")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// from describes where the next binlog connection starts.
func (st *streamer) from() string {
	if st.gtids != nil && !st.gtids.isEmpty() {
		return "gtid " + st.gtids.String()
	}
	return coords{st.last.File, st.last.Pos}.String()
}

// session connects to the binlog at the end of the last whole transaction
// and handles events until an error. Errors of the connection that a new
// one may cure are marked connect.Retryable.
func (st *streamer) session(ctx context.Context, cfg replication.BinlogSyncerConfig, again bool) error {
	s := st.src
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	var bs *replication.BinlogStreamer
	var err error
	from := st.from()
	if st.gtids != nil && !st.gtids.isEmpty() {
		set, err := st.gtids.forSync()
		if err != nil {
			return err
		}
		bs, err = syncer.StartSyncGTID(set)
		if err != nil {
			return st.streamErr(err, from)
		}
	} else {
		bs, err = syncer.StartSync(mysql.Position{Name: st.last.File, Pos: st.last.Pos})
		if err != nil {
			return st.streamErr(err, from)
		}
	}
	if again {
		s.log.Info("mysql: streaming again", "from", from, "server_id", s.set.serverID)
	} else {
		s.log.Info("mysql: streaming", "from", from, "server_id", s.set.serverID)
	}
	s.setPhase("streaming")
	// One wait context per idle period, not per event: events come
	// thousands a second.
	w := &waiter{}
	defer w.stop()
	wctx := w.next(ctx)
	for {
		ev, err := bs.GetEvent(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				wctx = w.next(ctx)
				if err := st.idle(ctx); err != nil {
					return err
				}
				continue
			}
			return st.streamErr(err, from)
		}
		st.events++
		if err := st.handle(ctx, ev); err != nil {
			return err
		}
	}
}

// abandonTx forgets the transaction being received when the connection
// dropped: the records not yet handed to Read are dropped (those already
// handed over come again, at least once), and the next connection starts
// from the end of the last whole transaction.
func (st *streamer) abandonTx() {
	if st.inTx {
		st.pending = st.pending[:st.txMark]
		st.inTx = false
	}
	st.file = st.last.File
	clear(st.tables)
}

// backoff is exponential backoff with jitter: waits in [d/2, d], d
// doubling from initial up to max.
type backoff struct {
	initial, max time.Duration
	attempt      int
}

func (b *backoff) next() time.Duration {
	d := b.initial << min(b.attempt, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (b *backoff) reset() { b.attempt = 0 }

// waiter hands out contexts that end idleWait after they are made.
type waiter struct{ cancel context.CancelFunc }

func (w *waiter) next(ctx context.Context) context.Context {
	w.stop()
	wctx, cancel := context.WithTimeout(ctx, idleWait)
	w.cancel = cancel
	return wctx
}

func (w *waiter) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// streamErr explains an error of the binlog connection, and marks it
// connect.Retryable when a new connection may cure it (transient).
func (st *streamer) streamErr(err error, from string) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && strings.Contains(me.Message, "server_id") {
		return fmt.Errorf("read the binlog from %s: %w; another replica uses server.id %d: give this source a unique server.id", from, err, st.src.set.serverID)
	}
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return fmt.Errorf("read the binlog from %s: %w; the binlog this position needs was probably purged: start over with a snapshot (delete the source's stored offsets, or set snapshot.mode=when_needed) and keep binlogs longer (binlog_expire_logs_seconds)", from, err)
	}
	if errors.As(err, &me) && (me.Code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_DBACCESS_DENIED_ERROR) {
		return fmt.Errorf("read the binlog from %s: %w; the user needs REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO …;", from, err)
	}
	err = fmt.Errorf("read the binlog from %s: %w", from, err)
	if transient(err) {
		return connect.Retryable(err)
	}
	return err
}

// transient reports whether a binlog connection error may go away with a
// new connection: the connection broke (network errors, EOF, a killed or
// timed-out connection) or the server is restarting or busy. Errors the
// server reports about the request itself (a purged binlog, a duplicate
// server id, missing privileges) and corrupt events are not.
func transient(err error) bool {
	var me *mysql.MyError
	if errors.As(err, &me) {
		switch me.Code {
		case mysql.ER_SERVER_SHUTDOWN, mysql.ER_NET_READ_INTERRUPTED, mysql.ER_NET_READ_ERROR,
			mysql.ER_NET_WRITE_INTERRUPTED, mysql.ER_NET_ERROR_ON_WRITE, mysql.ER_QUERY_INTERRUPTED,
			mysql.ER_CON_COUNT_ERROR, mysql.ER_TOO_MANY_USER_CONNECTIONS, mysql.ER_ABORTING_CONNECTION,
			mysql.ER_NEW_ABORTING_CONNECTION,
			erConnectionKilled, erServerGone, erServerLost:
			return true
		}
		return false
	}
	if errors.Is(err, replication.ErrChecksumMismatch) {
		return false
	}
	var ne net.Error
	return errors.Is(err, mysql.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) ||
		strings.Contains(err.Error(), "connection was bad") || strings.Contains(err.Error(), "sync is been closing")
}

// MySQL and MariaDB error codes go-mysql has no names for.
const (
	erConnectionKilled = 1927 // MariaDB: the connection was killed
	erServerGone       = 2006 // client: the server has gone away
	erServerLost       = 2013 // client: lost connection during a query
)

// idle runs when no event came for a while: hand over what is pending and
// emit a heartbeat when one is due.
func (st *streamer) idle(ctx context.Context) error {
	if err := st.maybeHeartbeat(ctx); err != nil {
		return err
	}
	return st.flush(ctx, false)
}

func (st *streamer) maybeHeartbeat(ctx context.Context) error {
	if st.nextBeat.IsZero() || st.inTx || time.Now().Before(st.nextBeat) {
		return nil
	}
	st.nextBeat = time.Now().Add(st.src.set.heartbeat)
	st.pending = append(st.pending, st.enc.heartbeat(time.Now(), st.last.encode()))
	return st.flush(ctx, false)
}

// flush hands the pending records to Read. Unless forced, at a commit it
// waits while Read still has a batch to take, so that the records of small
// transactions travel together under load. Inside a transaction it hands
// over only whole batches, keeping the last record back: the commit gives
// it the transaction's position.
func (st *streamer) flush(ctx context.Context, atCommit bool) error {
	n := len(st.pending)
	if st.inTx {
		n--
	}
	if n <= 0 {
		return nil
	}
	full := n >= st.src.set.batchSize
	if atCommit && !full && len(st.src.out) > 0 {
		return nil
	}
	batch := st.pending[:n:n]
	rest := st.pending[n:]
	st.pending = append(make([]connect.Record, 0, max(len(rest), 64)), rest...)
	st.txMark = max(0, st.txMark-n)
	return st.src.push(ctx, batch)
}

func (st *streamer) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		st.file = string(e.NextLogName)
		if !st.inTx {
			st.last.File, st.last.Pos = st.file, uint32(e.Position)
		}
	case *replication.MariadbGTIDEvent:
		id := e.GTID
		st.begin(h)
		st.txMaria = &id
		st.txGTID = mariaGTIDString(id)
	case *replication.GTIDEvent:
		st.begin(h)
		if !bytes.Equal(e.SID, make([]byte, len(e.SID))) && e.GNO > 0 {
			st.txSID, st.txGNO = e.SID, e.GNO
			st.txGTID = fmt.Sprintf("%s:%d", uuidString(e.SID), e.GNO)
		}
		if t := e.ImmediateCommitTime(); !t.IsZero() {
			st.txTime = t
		}
	case *replication.QueryEvent:
		q := strings.TrimSpace(string(e.Query))
		switch {
		case strings.EqualFold(q, "BEGIN"):
			if !st.inTx {
				st.begin(h)
			}
			st.txThread = int64(e.SlaveProxyID)
		case strings.EqualFold(q, "COMMIT"):
			return st.commit(ctx, h)
		default:
			if err := st.ddl(ctx, h, string(e.Schema), q); err != nil {
				return err
			}
			return st.commit(ctx, h)
		}
	case *replication.TableMapEvent:
		t, err := st.resolve(ctx, e, h)
		if err != nil {
			return err
		}
		st.tables[e.TableID] = t
	case *replication.RowsEvent:
		return st.rows(ctx, e, h)
	case *replication.XIDEvent:
		return st.commit(ctx, h)
	case *replication.TransactionPayloadEvent:
		// MySQL's binlog transaction compression: the transaction's events
		// travel inside one payload.
		for _, inner := range e.Events {
			if inner.Header != nil && inner.Header.LogPos == 0 {
				inner.Header.LogPos = h.LogPos
			}
			if err := st.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.GenericEvent:
		if h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			return st.idle(ctx)
		}
	}
	return nil
}

// begin starts a transaction at the event with header h.
func (st *streamer) begin(h *replication.EventHeader) {
	st.inTx = true
	st.txGTID, st.txMaria, st.txSID, st.txGNO, st.txThread = "", nil, nil, 0, 0
	st.txStart = h.LogPos - h.EventSize
	st.txServerID = h.ServerID
	st.txTime = time.Unix(int64(h.Timestamp), 0)
	st.txBegun = false
	st.txMark = len(st.pending)
	st.total, st.counts = 0, st.counts[:0]
}

// commit ends the transaction at the event with header h: its GTID joins
// the executed set, and its last record (if any) carries the position.
func (st *streamer) commit(ctx context.Context, h *replication.EventHeader) error {
	if st.gtids != nil {
		switch {
		case st.txMaria != nil:
			st.gtids.addMaria(*st.txMaria)
		case st.txSID != nil:
			if err := st.gtids.addMySQL(st.txSID, st.txGNO); err != nil {
				return err
			}
		}
	}
	emitted := st.txBegun || st.total > 0
	if st.src.set.txMetadata && st.txBegun {
		st.pending = append(st.pending, st.enc.txRecord(st.txID(), st.txTime, true, st.total, st.counts))
	}
	st.inTx = false
	st.last = position{File: st.file, Pos: h.LogPos, ServerID: h.ServerID, TsSec: int64(h.Timestamp)}
	if st.gtids != nil {
		st.last.GTIDs = st.gtids.String()
	}
	if !emitted {
		return st.flush(ctx, true)
	}
	pos := st.last.encode()
	st.pending[len(st.pending)-1].Position = pos
	if err := st.maybeHeartbeat(ctx); err != nil {
		return err
	}
	return st.flush(ctx, true)
}

// txID is the transaction block's id: the GTID, or file:pos without one.
func (st *streamer) txID() string {
	if st.txGTID != "" {
		return st.txGTID
	}
	return fmt.Sprintf("%s:%d", st.file, st.txStart)
}

// resolve finds the definition of the table of a table map event: from the
// event itself when it carries full metadata, else from the schema
// history at this point of the binlog. It returns nil for tables that are
// not captured.
func (st *streamer) resolve(ctx context.Context, tm *replication.TableMapEvent, h *replication.EventHeader) (*table, error) {
	if t, ok := st.tables[tm.TableID]; ok && (t == nil || (t.def.DB == string(tm.Schema) && t.def.Name == string(tm.Table) && t.def.sameShape(tm))) {
		return t, nil
	}
	db, name := string(tm.Schema), string(tm.Table)
	s := st.src
	if systemDB(db) || !matchAny(s.set.tables, db, name) {
		return nil, nil
	}
	at := coords{st.file, st.txStart}
	var def *tableDef
	var err error
	if hasFullMetadata(tm) {
		if def, err = defFromTableMap(tm, s.srv.collations); err != nil {
			return nil, err
		}
		if s.hist != nil {
			if hd := s.hist.lookup(db, name, at); hd != nil && !hd.sameShape(tm) && !st.warned[db+"."+name] {
				st.warned[db+"."+name] = true
				s.log.Warn("mysql: the schema history disagrees with the binlog's column metadata; using the binlog's", "table", db+"."+name, "at", at.String())
			}
		}
	} else {
		if s.hist == nil {
			return nil, fmt.Errorf("table %s.%s at %s: the binlog has no column metadata (set binlog_row_metadata=FULL) and there is no schema history (set state.dir)", db, name, at)
		}
		def = s.hist.lookup(db, name, at)
		if def == nil {
			if def, err = readTableDef(ctx, s.db, db, name); err != nil {
				return nil, err
			}
			if def == nil {
				return nil, fmt.Errorf("table %s.%s at %s: not in the schema history and gone from the server; its rows cannot be decoded without binlog_row_metadata=FULL", db, name, at)
			}
			if err := s.hist.record(at, []*tableDef{def}, nil); err != nil {
				return nil, err
			}
		}
		if !def.sameShape(tm) {
			return nil, fmt.Errorf("table %s.%s at %s: the schema history's definition (%d columns) does not match the binlog's row format (%d columns): it was changed outside the binlog the connector read. Set binlog_row_metadata=FULL, or start over with a snapshot (delete the stored offsets and %s)", db, name, at, len(def.Columns), tm.ColumnCount, s.hist.path)
		}
	}
	return st.enc.mapper.newTable(&s.set, def)
}

// rows turns a rows event into change events.
func (st *streamer) rows(ctx context.Context, e *replication.RowsEvent, h *replication.EventHeader) error {
	t := st.tables[e.TableID]
	if t == nil {
		return nil
	}
	if !st.inTx {
		st.begin(h)
	}
	st.now = time.Now()
	si := &srcInfo{snapshot: connect.SnapshotFalse, ts: st.txTime, serverID: h.ServerID, gtid: st.txGTID,
		file: st.file, pos: st.txStart, thread: st.txThread}
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		for i, r := range e.Rows {
			after, err := st.row(t, r)
			if err != nil {
				return err
			}
			si.row = i
			if err := st.change(t, connect.OpCreate, nil, after, si); err != nil {
				return err
			}
		}
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(e.Rows); i += 2 {
			before, err := st.row(t, e.Rows[i])
			if err != nil {
				return err
			}
			after, err := st.row(t, e.Rows[i+1])
			if err != nil {
				return err
			}
			si.row = i / 2
			if !keyEqual(t, before, after) {
				if err := st.keyChange(t, before, after, si); err != nil {
					return err
				}
				continue
			}
			if err := st.change(t, connect.OpUpdate, before, after, si); err != nil {
				return err
			}
		}
	case replication.EnumRowsEventTypeDelete:
		for i, r := range e.Rows {
			before, err := st.row(t, r)
			if err != nil {
				return err
			}
			si.row = i
			if err := st.change(t, connect.OpDelete, before, nil, si); err != nil {
				return err
			}
		}
	}
	if len(st.pending) > st.src.set.batchSize {
		return st.flush(ctx, false)
	}
	return nil
}

// row maps one row image of t.
func (st *streamer) row(t *table, vals []any) (connect.Row, error) {
	if len(vals) != len(t.def.Columns) {
		return nil, fmt.Errorf("table %s: a row has %d values, the table %d columns", t.def.ref(), len(vals), len(t.def.Columns))
	}
	row := make(connect.Row, len(vals))
	m := st.enc.mapper
	for i := range vals {
		c := &t.def.Columns[i]
		row[i].Name = c.Name
		v, err := m.fromBinlog(c, vals[i])
		if err != nil {
			st.src.log.Warn("mysql: value not understood, written as null", "table", t.def.ref(), "column", c.Name, "err", err)
			v = nil
		}
		row[i].Value = v
	}
	return row, nil
}

// keyEqual reports whether two rows of t have the same key.
func keyEqual(t *table, a, b connect.Row) bool {
	if len(t.def.Key) == 0 {
		return true
	}
	ka, err1 := t.key(a).MarshalJSON()
	kb, err2 := t.key(b).MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(ka, kb)
}

// event builds one change event of the current transaction.
func (st *streamer) event(t *table, op connect.Op, before, after connect.Row, si *srcInfo) *connect.ChangeEvent {
	ev := &connect.ChangeEvent{Op: op, Before: before, After: after, Source: st.enc.source(t, si)}
	if after != nil {
		ev.Key = t.key(after)
	} else {
		ev.Key = t.key(before)
	}
	ev.SetTime(st.now)
	if st.src.set.txMetadata {
		if !st.txBegun {
			st.txBegun = true
			st.pending = append(st.pending, st.enc.txRecord(st.txID(), st.txTime, false, 0, nil))
		}
		st.total++
		name := t.def.ref()
		var n int64
		for i := range st.counts {
			if st.counts[i].table == name {
				st.counts[i].n++
				n = st.counts[i].n
			}
		}
		if n == 0 {
			st.counts = append(st.counts, txCount{table: name, n: 1})
			n = 1
		}
		ev.Transaction = &connect.Transaction{ID: st.txID(), TotalOrder: st.total, DataCollectionOrder: n}
	} else {
		st.total++
	}
	return ev
}

// change emits one change event (and the tombstone after a delete).
func (st *streamer) change(t *table, op connect.Op, before, after connect.Row, si *srcInfo) error {
	rec, err := st.enc.record(t, st.event(t, op, before, after, si))
	if err != nil {
		return err
	}
	st.pending = append(st.pending, rec)
	if op == connect.OpDelete && st.src.set.tombstones && rec.Key != nil {
		st.pending = append(st.pending, connect.Tombstone(rec))
	}
	return nil
}

// keyChange emits an update that changed the key as Debezium does: a
// delete of the old key (header __debezium.newkey), its tombstone, and a
// create of the new key (header __debezium.oldkey).
func (st *streamer) keyChange(t *table, before, after connect.Row, si *srcInfo) error {
	del, err := st.enc.record(t, st.event(t, connect.OpDelete, before, nil, si))
	if err != nil {
		return err
	}
	cre, err := st.enc.record(t, st.event(t, connect.OpCreate, nil, after, si))
	if err != nil {
		return err
	}
	del.Headers = append(del.Headers, connect.Header{Key: "__debezium.newkey", Value: cre.Key})
	cre.Headers = append(cre.Headers, connect.Header{Key: "__debezium.oldkey", Value: del.Key})
	st.pending = append(st.pending, del)
	if st.src.set.tombstones {
		st.pending = append(st.pending, connect.Tombstone(del))
	}
	st.pending = append(st.pending, cre)
	return nil
}

// ddl handles a statement other than BEGIN and COMMIT: a schema change.
// Table ids are reassigned after DDL, so the table cache is dropped; with
// a schema history, the new definitions of the captured tables it names
// are recorded at this point of the binlog.
func (st *streamer) ddl(ctx context.Context, h *replication.EventHeader, schema, query string) error {
	clear(st.tables)
	s := st.src
	if s.hist == nil {
		return nil
	}
	refs := ddlTables(query, schema)
	var defs []*tableDef
	var dropped []tableRef
	for _, r := range refs {
		if systemDB(r.db) || !matchAny(s.set.tables, r.db, r.name) {
			continue
		}
		def, err := readTableDef(ctx, s.db, r.db, r.name)
		if err != nil {
			return err
		}
		if def == nil {
			dropped = append(dropped, r)
			continue
		}
		defs = append(defs, def)
	}
	if len(defs) == 0 && len(dropped) == 0 {
		return nil
	}
	// The definitions apply from the next event on.
	return s.hist.record(coords{st.file, h.LogPos}, defs, dropped)
}

func uuidString(b []byte) string {
	if len(b) != 16 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

package mysql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
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
	total      int64
	counts     []txCount

	// The end of the last transaction.
	last     position
	nextBeat time.Time
	warned   map[string]bool
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

// quietLogger passes only warnings and errors of go-mysql's logging on.
type quietLogger struct{ slog.Handler }

func (q quietLogger) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && q.Handler.Enabled(ctx, l)
}

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
		Logger:                  slog.New(quietLogger{s.log.Handler()}),
		EventCacheCount:         4096,
	}
	if s.set.heartbeat > 0 {
		cfg.HeartbeatPeriod = s.set.heartbeat
	} else {
		cfg.HeartbeatPeriod = 30 * time.Second
	}
	if s.set.dsn.Net == "unix" {
		d := &net.Dialer{}
		cfg.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", addr)
		}
	}
	return cfg, nil
}

func (st *streamer) run(ctx context.Context) error {
	s := st.src
	cfg, err := s.syncerConfig()
	if err != nil {
		return err
	}
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	var bs *replication.BinlogStreamer
	from := s.plan.start.String()
	if st.gtids != nil && !st.gtids.isEmpty() {
		from = "gtid " + st.gtids.String()
		set, err := st.gtids.forSync()
		if err != nil {
			return err
		}
		bs, err = syncer.StartSyncGTID(set)
		if err != nil {
			return st.streamErr(err, from)
		}
	} else {
		bs, err = syncer.StartSync(mysql.Position{Name: s.plan.start.File, Pos: s.plan.start.Pos})
		if err != nil {
			return st.streamErr(err, from)
		}
	}
	s.log.Info("mysql: streaming", "from", from, "server_id", s.set.serverID)
	if s.set.heartbeat > 0 {
		st.nextBeat = time.Now().Add(s.set.heartbeat)
	}
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
		if err := st.handle(ctx, ev); err != nil {
			return err
		}
	}
}

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

// streamErr explains an error of the binlog stream.
func (st *streamer) streamErr(err error, from string) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return fmt.Errorf("read the binlog from %s: %w; the binlog this position needs was probably purged: start over with a snapshot (delete the source's stored offsets, or set snapshot.mode=when_needed) and keep binlogs longer (binlog_expire_logs_seconds)", from, err)
	}
	if errors.As(err, &me) && (me.Code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_ERROR) {
		return fmt.Errorf("read the binlog from %s: %w; the user needs REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO …;", from, err)
	}
	if strings.Contains(err.Error(), "server_id") || (errors.As(err, &me) && me.Code == 1236 && strings.Contains(me.Message, "same server")) {
		return fmt.Errorf("read the binlog from %s: %w; another replica uses server.id %d: give this source a unique server.id", from, err, st.src.set.serverID)
	}
	return fmt.Errorf("read the binlog from %s: %w", from, err)
}

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
		st.txGTID = id.String()
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
	ev.SetTime(time.Now())
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

package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

var (
	_ connect.Snapshotter    = (*Source)(nil)
	_ connect.SnapshotPauser = (*Source)(nil)
)

// Incremental snapshots re-read chosen tables while streaming goes on, in
// chunks by primary key, with the watermark method of DBLog as Debezium's
// MySQL connector does it, so that a chunk never overwrites a newer
// streamed change:
//
//  1. the streamer, between transactions, inserts a low watermark row
//     (type snapshot-window-open) into the signal table, in a transaction
//     of its own;
//  2. it reads the next chunk (rows after the last key, in key order);
//  3. it inserts the high watermark row (snapshot-window-close);
//  4. streaming goes on; every change between the two watermarks to a key
//     of the chunk drops that row from the chunk, since the streamed event
//     is as new or newer; at the commit of the high watermark the rest of
//     the chunk is emitted as op r events with source.snapshot
//     "incremental".
//
// Why the low watermark is a committed row and not a binlog position read
// with SHOW MASTER STATUS: a transaction is written to the binlog before
// it commits in InnoDB, so a position may already include a transaction
// that the chunk's read does not see yet. Commits happen in binlog order,
// so once the watermark's INSERT has committed, every transaction before
// it in the binlog is visible to the read that follows.
//
// A snapshot is asked for with a row in the signal table
// (signal.data.collection, Debezium's columns id, type, data):
// execute-snapshot with data {"data-collections":["shop.orders"],
// "type":"incremental"}, stop-snapshot, pause-snapshot, resume-snapshot;
// or with the Source's ExecuteSnapshot, StopSnapshot, PauseSnapshot and
// ResumeSnapshot. The tables left, the current table's last key and
// whether the snapshot is paused travel in the position, so a restart
// resumes after the last emitted chunk. A change of that state that no
// record carries is written as a heartbeat record with the position.

// Watermark row types, as Debezium's.
const (
	windowOpen  = "snapshot-window-open"
	windowClose = "snapshot-window-close"
)

// incState is the part of the position that says how far an incremental
// snapshot got: the tables still to read (the first is being read) and
// the key of the last row emitted of the first.
type incState struct {
	Tables []string  `json:"tables"`
	Last   keyValues `json:"last,omitempty"`
	Paused bool      `json:"paused,omitempty"`
}

func (s *incState) clone() *incState {
	if s == nil {
		return nil
	}
	c := *s
	c.Tables, c.Last = slices.Clone(s.Tables), slices.Clone(s.Last)
	return &c
}

// incChunk is a chunk read between its watermarks.
type incChunk struct {
	id      string
	table   string // database.table
	open    bool   // the low watermark has streamed by
	closing bool   // the high watermark is in the transaction being received
	keys    []string
	recs    map[string]connect.Record // by key JSON
	lastKey keyValues                 // the last row's key; nil when the chunk is empty
	full    bool                      // as many rows as snapshot.chunk.size: the table may have more
}

// signalKind is what a signal asks for.
type signalKind int

const (
	signalExecute signalKind = iota
	signalStop
	signalPause
	signalResume
)

// signalReq is a request of ExecuteSnapshot and the like.
type signalReq struct {
	kind   signalKind
	tables []string // patterns; stop with none stops everything
}

// ExecuteSnapshot asks for an incremental snapshot of the tables (each a
// captured database.table, or a regular expression matching whole names,
// as Debezium's data-collections), while streaming goes on. It returns
// once the request is queued.
func (s *Source) ExecuteSnapshot(ctx context.Context, tables []string) error {
	if len(tables) == 0 {
		return fmt.Errorf("execute snapshot: name at least one table: %w", connect.ErrBadSignal)
	}
	if err := cdc.CheckCollections(tables, s.plan.names()); err != nil {
		return err
	}
	if s.set.signalTable == "" {
		return fmt.Errorf("execute snapshot: incremental snapshots write their watermarks into the signal table: create one (CREATE TABLE db.debezium_signal (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data text)) and set signal.data.collection to it")
	}
	return s.signal(ctx, signalReq{tables: tables})
}

// StopSnapshot stops the incremental snapshot of the tables, of every
// table when none are given.
func (s *Source) StopSnapshot(ctx context.Context, tables []string) error {
	return s.signal(ctx, signalReq{kind: signalStop, tables: tables})
}

// PauseSnapshot holds the incremental snapshot in progress after the chunk
// being read; streaming goes on. The pause is kept in the position.
func (s *Source) PauseSnapshot(ctx context.Context) error {
	return s.signal(ctx, signalReq{kind: signalPause})
}

// ResumeSnapshot lets a paused incremental snapshot go on.
func (s *Source) ResumeSnapshot(ctx context.Context) error {
	return s.signal(ctx, signalReq{kind: signalResume})
}

func (s *Source) signal(ctx context.Context, r signalReq) error {
	return cdc.Send(ctx, s.signals, s.done, s.plan.stream, "mysql", r)
}

// incremental runs between transactions: it applies queued requests,
// persists a state change no record carries, and starts the next chunk.
func (st *streamer) incremental(ctx context.Context) error {
	if st.inTx {
		return nil
	}
	for {
		select {
		case r := <-st.src.signals:
			st.applySignal(r)
			continue
		default:
		}
		break
	}
	if st.incChanged {
		st.incChanged = false
		st.pending = append(st.pending, recordItem(st.enc.heartbeat(time.Now(), st.lastPosition())))
		if err := st.flush(ctx, false); err != nil {
			return err
		}
	}
	return st.nextChunk(ctx)
}

func (st *streamer) applySignal(r signalReq) {
	log := st.src.log
	switch r.kind {
	case signalStop:
		st.stopSnapshot(r.tables)
		return
	case signalPause, signalResume:
		pause := r.kind == signalPause
		if st.inc == nil {
			log.Info("mysql: no incremental snapshot in progress, nothing to pause or resume", "pause", pause)
			return
		}
		if st.inc.Paused != pause {
			st.inc.Paused = pause
			st.incChanged = true
			log.Info("mysql: incremental snapshot paused or resumed", "paused", pause, "tables", st.inc.Tables)
			st.setIncPhase()
		}
		return
	}
	if st.src.set.signalTable == "" {
		log.Warn("mysql: execute-snapshot needs signal.data.collection (the watermarks go into the signal table), ignored")
		return
	}
	var have []string
	if st.inc != nil {
		have = st.inc.Tables
	}
	add := cdc.NewTables(r.tables, st.src.plan.names(), have, func(p, why string) {
		log.Warn("mysql: execute-snapshot: "+why+", ignored", "data-collection", p)
	})
	if len(add) == 0 {
		return
	}
	log.Info("mysql: incremental snapshot requested", "tables", add)
	if st.inc == nil {
		st.inc = &incState{}
	}
	st.inc.Tables = append(st.inc.Tables, add...)
	st.incChanged = true
	st.setIncPhase()
}

func (st *streamer) stopSnapshot(patterns []string) {
	if st.inc == nil {
		return
	}
	keep := st.inc.Tables[:0]
	for i, t := range st.inc.Tables {
		stop := len(patterns) == 0
		for _, p := range patterns {
			if re, err := regexp.Compile("^(?:" + p + ")$"); err == nil && re.MatchString(t) {
				stop = true
			}
		}
		if !stop {
			keep = append(keep, t)
			continue
		}
		if i == 0 {
			st.chunk, st.inc.Last = nil, nil
		}
	}
	st.inc.Tables = keep
	st.src.log.Info("mysql: incremental snapshot stopped", "left", keep)
	if len(keep) == 0 {
		st.inc = nil
	}
	st.incChanged = true
	st.setIncPhase()
}

func (st *streamer) setIncPhase() {
	switch {
	case st.inc == nil:
		st.src.setPhase("streaming")
	case st.inc.Paused:
		st.src.setPhase("incremental snapshot paused")
	default:
		st.src.setPhase("incremental snapshot")
	}
}

// signalRow handles a row inserted into the signal table: a watermark of
// this source's chunk, or a request.
func (st *streamer) signalRow(t *table, vals []any) {
	get := func(name string) string {
		for i := range t.def.Columns {
			if strings.EqualFold(t.def.Columns[i].Name, name) && i < len(vals) {
				switch v := vals[i].(type) {
				case string:
					return v
				case []byte:
					return string(v)
				case nil:
					return ""
				default:
					return fmt.Sprint(v)
				}
			}
		}
		return ""
	}
	id, typ, data := get("id"), get("type"), get("data")
	switch typ {
	case windowOpen, windowClose:
		if c := st.chunk; c != nil {
			if typ == windowOpen && id == c.id+"-open" {
				c.open = true
			} else if typ == windowClose && id == c.id+"-close" {
				c.closing = true
			}
		}
		return // another source's, a stopped chunk's, or one of before a restart
	}
	var d struct {
		Collections []string `json:"data-collections"`
		Type        string   `json:"type"`
		Message     string   `json:"message"`
	}
	if data != "" {
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			st.src.log.Warn("mysql: signal with data that is not JSON, ignored", "id", id, "type", typ, "err", err)
			return
		}
	}
	switch typ {
	case "execute-snapshot":
		if d.Type != "" && !strings.EqualFold(d.Type, "incremental") {
			st.src.log.Warn("mysql: execute-snapshot of a type other than incremental, ignored", "id", id, "type", d.Type)
			return
		}
		if len(d.Collections) == 0 {
			st.src.log.Warn("mysql: execute-snapshot without data-collections, ignored", "id", id)
			return
		}
		st.applySignal(signalReq{tables: d.Collections})
	case "stop-snapshot":
		st.applySignal(signalReq{kind: signalStop, tables: d.Collections})
	case "pause-snapshot":
		st.applySignal(signalReq{kind: signalPause})
	case "resume-snapshot":
		st.applySignal(signalReq{kind: signalResume})
	case "log":
		st.src.log.Info("mysql: signal", "message", d.Message)
	default:
		st.src.log.Warn("mysql: signal not supported, ignored", "id", id, "type", typ)
	}
}

// nextChunk starts the next chunk of the incremental snapshot, unless one
// is open or the snapshot is paused: low watermark, read, high watermark.
func (st *streamer) nextChunk(ctx context.Context) error {
	for st.inc != nil && st.chunk == nil && !st.inc.Paused {
		if len(st.inc.Tables) == 0 {
			st.inc = nil
			st.incChanged = true
			st.setIncPhase()
			return nil
		}
		name := st.inc.Tables[0]
		db, tname, _ := strings.Cut(name, ".")
		def, err := readTableDef(ctx, st.src.db, db, tname)
		if err != nil {
			return err
		}
		if def == nil || len(def.Key) == 0 {
			st.src.log.Warn("mysql: incremental snapshot of a table that is gone or has no primary key is not possible, skipped", "table", name)
			st.inc.Tables, st.inc.Last = st.inc.Tables[1:], nil
			st.incChanged = true
			continue
		}
		t, err := st.enc.mapper.newTable(&st.src.set, def)
		if err != nil {
			return err
		}
		st.chunkSeq++
		id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(st.chunkSeq)
		if err := st.watermark(ctx, id+"-open", windowOpen); err != nil {
			return err
		}
		c, err := st.readIncChunk(ctx, t, id)
		if err != nil {
			return err
		}
		if err := st.watermark(ctx, id+"-close", windowClose); err != nil {
			return err
		}
		st.chunk = c
	}
	return nil
}

// watermark inserts a watermark row into the signal table, in a
// transaction of its own.
func (st *streamer) watermark(ctx context.Context, id, typ string) error {
	db, table, _ := strings.Cut(st.src.set.signalTable, ".")
	q := "INSERT INTO " + quoteIdent(db) + "." + quoteIdent(table) + " (id, type, data) VALUES (?, ?, ?)"
	data := fmt.Sprintf(`{"source":%q,"server_id":%d}`, st.src.set.prefix, st.src.set.serverID)
	if _, err := st.src.db.ExecContext(ctx, q, id, typ, data); err != nil {
		return fmt.Errorf("write an incremental snapshot watermark into %s: %w; the signal table needs the columns id, type, data and the user INSERT on it", st.src.set.signalTable, err)
	}
	return nil
}

// readIncChunk reads the rows of t after the last key, in key order.
func (st *streamer) readIncChunk(ctx context.Context, t *table, id string) (*incChunk, error) {
	def := t.def
	q, args, err := chunkQuery(def, st.inc.Last, st.src.set.chunkSize)
	if err != nil {
		return nil, fmt.Errorf("incremental snapshot of %s: %w", def.ref(), err)
	}
	conn, err := st.src.db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("incremental snapshot of %s: %w", def.ref(), err)
	}
	defer conn.Close()
	si := &srcInfo{snapshot: connect.SnapshotIncremental, ts: time.Now(), serverID: st.src.srv.serverID, file: st.last.File, pos: st.last.Pos}
	read, n, err := st.src.readChunk(ctx, conn, st.enc, si, t, q, args, nil)
	if err != nil {
		return nil, fmt.Errorf("incremental snapshot of %s: %w", def.ref(), err)
	}
	c := &incChunk{id: id, table: def.ref(), recs: make(map[string]connect.Record, len(read.recs)), lastKey: read.lastKey, full: n >= st.src.set.chunkSize}
	for _, r := range read.recs {
		k := string(r.Key)
		if st.src.set.schemas {
			// The key without its schema, as streamedChange writes it.
			var env struct {
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(r.Key, &env); err != nil {
				return nil, fmt.Errorf("incremental snapshot of %s: %w", def.ref(), err)
			}
			k = string(env.Payload)
		}
		c.keys = append(c.keys, k)
		c.recs[k] = r
	}
	return c, nil
}

// streamedChange drops the rows of the open chunk that a streamed change
// to t touched (vals is one row image as go-mysql decodes it).
func (st *streamer) streamedChange(t *table, vals []any) {
	c := st.chunk
	if c == nil || !c.open || c.closing || t.def.ref() != c.table || len(t.def.Key) == 0 || len(vals) != len(t.def.Columns) {
		return
	}
	key := make(connect.Row, len(t.def.Key))
	for i, idx := range t.def.Key {
		col := &t.def.Columns[idx]
		v, err := st.enc.mapper.fromBinlog(col, vals[idx])
		if err != nil {
			return
		}
		key[i] = connect.Field{Name: col.Name, Value: v}
	}
	if b, err := key.MarshalJSON(); err == nil {
		delete(c.recs, string(b))
	}
}

// emitChunk appends what is left of a closed chunk to the pending records
// and moves the snapshot on; the commit that follows carries the new
// state in its position. It returns the number of records appended.
func (st *streamer) emitChunk() int {
	c := st.chunk
	if c == nil || !c.closing {
		return 0
	}
	st.chunk = nil
	n := 0
	for _, k := range c.keys {
		if rec, ok := c.recs[k]; ok {
			st.pending = append(st.pending, recordItem(rec))
			n++
		}
	}
	st.src.scanned.Add(int64(n))
	if !c.full {
		st.inc.Tables, st.inc.Last = st.inc.Tables[1:], nil
		st.src.log.Info("mysql: incremental snapshot of a table done", "table", c.table)
		if len(st.inc.Tables) == 0 {
			st.inc = nil
			st.setIncPhase()
		}
	} else {
		st.inc.Last = c.lastKey
	}
	if n == 0 {
		st.incChanged = true // no record carries the new state
	}
	return n
}

// names returns the captured tables' names, as signals name them.
func (p *plan) names() []string {
	out := make([]string, len(p.tables))
	for i, t := range p.tables {
		out[i] = t.String()
	}
	return out
}

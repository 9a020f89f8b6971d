package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// Incremental snapshots re-read chosen tables while streaming goes on, in
// chunks by primary key, with the watermark method of DBLog (as Debezium
// does), so that a chunk never overwrites a newer streamed change:
//
//  1. the runner writes a low watermark into the WAL, a transactional
//     logical decoding message (pg_logical_emit_message(true, …)), and
//     commits it;
//  2. it reads the next chunk (rows after the last key, in key order);
//  3. it writes the high watermark;
//  4. streaming goes on; every change between the two watermarks to a key
//     of the chunk drops that row from the chunk, since the streamed event
//     is as new or newer; at the commit of the high watermark the rest of
//     the chunk is emitted as op r events with source.snapshot
//     "incremental".
//
// A snapshot is asked for with a row in the signal table
// (signal.data.collection, Debezium's columns id, type, data):
// execute-snapshot with data {"data-collections":["public.orders"],
// "type":"incremental"}, stop-snapshot to cancel, pause-snapshot and
// resume-snapshot to hold it and let it go on; or with the Source's
// ExecuteSnapshot, StopSnapshot, PauseSnapshot and ResumeSnapshot. The
// tables left, the current table's last key and whether the snapshot is
// paused travel in the position, so a restart resumes after the last
// emitted chunk, still paused if it was. A change of that state that no
// record carries (a pause while the tables are idle) is written as a
// heartbeat record with the position, once no transaction is open.

// watermarkPrefix is the prefix of the watermark messages; the slot name
// follows it.
const watermarkPrefix = "__tributary_watermark:"

// incState is the part of the position that says how far an incremental
// snapshot got: the tables still to read (the first is being read) and
// the key (as text) of the last row emitted of the first.
type incState struct {
	Tables []string  `json:"tables"`
	Last   keyValues `json:"last,omitempty"`
	// Paused holds the snapshot after the chunk in progress
	// (pause-snapshot) until resume-snapshot.
	Paused bool `json:"paused,omitempty"`
}

// incChunk is a chunk read between its watermarks.
type incChunk struct {
	id      string
	table   string
	open    bool // the low watermark has streamed by
	closing bool // the high watermark is in the transaction being received
	rel     *relation
	keys    []string // key JSON of each row, in key order
	recs    map[string]connect.Record
	lastKey keyValues // text of the last row's key; nil when the chunk is empty
}

// signalKind is what a signal asks for.
type signalKind int

const (
	signalExecute signalKind = iota
	signalStop
	signalPause
	signalResume
)

// signalReq is a request of ExecuteSnapshot, StopSnapshot, PauseSnapshot
// or ResumeSnapshot (or of the same row in the signal table).
type signalReq struct {
	kind   signalKind
	tables []string // patterns; stop with none stops everything
}

// ExecuteSnapshot asks for an incremental snapshot of the tables (each a
// captured schema.table, or a regular expression matching whole names, as
// Debezium's data-collections), while streaming goes on. It returns once
// the request is queued; the snapshot starts with the next message or
// within a fraction of a second. The worker (REST, CLI) calls it;
// an execute-snapshot row in the signal table does the same.
func (s *Source) ExecuteSnapshot(ctx context.Context, tables []string) error {
	if len(tables) == 0 {
		return fmt.Errorf("execute snapshot: name at least one table: %w", connect.ErrBadSignal)
	}
	if err := cdc.CheckCollections(tables, s.plan.names()); err != nil {
		return err
	}
	return s.signal(ctx, signalReq{tables: tables})
}

// StopSnapshot stops the incremental snapshot of the tables, of every
// table when none are given.
func (s *Source) StopSnapshot(ctx context.Context, tables []string) error {
	return s.signal(ctx, signalReq{kind: signalStop, tables: tables})
}

// PauseSnapshot holds the incremental snapshot in progress after the chunk
// being read; streaming goes on. The pause is kept in the position, so it
// outlasts a restart. Without an incremental snapshot in progress it does
// nothing (logged), as Debezium's pause-snapshot signal.
func (s *Source) PauseSnapshot(ctx context.Context) error {
	return s.signal(ctx, signalReq{kind: signalPause})
}

// ResumeSnapshot lets a paused incremental snapshot go on from its next
// chunk.
func (s *Source) ResumeSnapshot(ctx context.Context) error {
	return s.signal(ctx, signalReq{kind: signalResume})
}

func (s *Source) signal(ctx context.Context, r signalReq) error {
	return cdc.Send(ctx, s.signals, s.done, s.plan.stream, "postgres", r)
}

// takeSignals applies the requests of ExecuteSnapshot and StopSnapshot.
func (st *streamer) takeSignals() {
	for {
		select {
		case r := <-st.src.signals:
			st.applySignal(r)
		default:
			return
		}
	}
}

func (st *streamer) applySignal(r signalReq) {
	switch r.kind {
	case signalStop:
		st.stopSnapshot(r.tables)
		st.incChanged = true
		return
	case signalPause, signalResume:
		st.pauseSnapshot(r.kind == signalPause)
		return
	}
	var have []string
	if st.inc != nil {
		have = st.inc.Tables
	}
	add := cdc.NewTables(r.tables, st.src.plan.names(), have, func(p, why string) {
		st.src.log.Warn("postgres: execute-snapshot: "+why+", ignored", "data-collection", p)
	})
	if len(add) == 0 {
		return
	}
	st.src.log.Info("postgres: incremental snapshot requested", "tables", add)
	if st.inc == nil {
		st.inc = &incState{}
	}
	st.inc.Tables = append(st.inc.Tables, add...)
	st.incChanged = true
	for _, t := range add {
		st.src.rep.snapshotTable(t, 0, 0)
	}
	st.setIncPhase()
}

// pauseSnapshot pauses (or resumes) the incremental snapshot in progress.
func (st *streamer) pauseSnapshot(pause bool) {
	if st.inc == nil {
		st.src.log.Info("postgres: no incremental snapshot in progress, nothing to pause or resume", "pause", pause)
		return
	}
	if st.inc.Paused == pause {
		return
	}
	st.inc.Paused = pause
	st.incChanged = true
	if pause {
		st.src.log.Info("postgres: incremental snapshot paused", "tables", st.inc.Tables)
	} else {
		st.src.log.Info("postgres: incremental snapshot resumed", "tables", st.inc.Tables)
	}
	st.setIncPhase()
}

// setIncPhase reports the phase of the incremental snapshot state.
func (st *streamer) setIncPhase() {
	switch {
	case st.inc == nil:
		st.src.rep.setPhase(phaseStreaming)
	case st.inc.Paused:
		st.src.rep.setPhase(phaseIncrementalPaused)
	default:
		st.src.rep.setPhase(phaseIncremental)
	}
}

// persistIncremental makes a change of the incremental snapshot's state
// that no record carries durable: outside a transaction, a heartbeat
// record with the position after the last transaction, holding the state.
func (st *streamer) persistIncremental(ctx context.Context) error {
	if !st.incChanged || st.inTx {
		return nil
	}
	st.incChanged = false
	st.pending = append(st.pending, st.enc.heartbeat(time.Now(), st.position(st.lastCommit, 0, time.Time{})))
	return st.flush(ctx, true)
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
	st.src.log.Info("postgres: incremental snapshot stopped", "left", keep)
	if len(keep) == 0 {
		st.inc = nil
	}
	st.setIncPhase()
}

// signalRow handles a row inserted into the signal table.
func (st *streamer) signalRow(row connect.Row) {
	get := func(name string) string {
		v, _ := row.Get(name)
		s, _ := v.(string)
		return s
	}
	typ, data := get("type"), get("data")
	var d struct {
		Collections []string `json:"data-collections"`
		Type        string   `json:"type"`
		Message     string   `json:"message"`
	}
	if data != "" {
		if err := json.Unmarshal([]byte(data), &d); err != nil {
			st.src.log.Warn("postgres: signal with data that is not JSON, ignored", "id", get("id"), "type", typ, "err", err)
			return
		}
	}
	switch typ {
	case "execute-snapshot":
		if d.Type != "" && !strings.EqualFold(d.Type, "incremental") {
			st.src.log.Warn("postgres: execute-snapshot of a type other than incremental, ignored", "id", get("id"), "type", d.Type)
			return
		}
		if len(d.Collections) == 0 {
			st.src.log.Warn("postgres: execute-snapshot without data-collections, ignored", "id", get("id"))
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
		st.src.log.Info("postgres: signal", "message", d.Message)
	default:
		st.src.log.Warn("postgres: signal not supported, ignored", "id", get("id"), "type", typ)
	}
}

// nextChunk starts the next chunk of the incremental snapshot, unless it
// is paused: low watermark, read, high watermark. A table whose chunk
// comes back empty is done, and the next one starts.
func (st *streamer) nextChunk(ctx context.Context) error {
	for st.inc != nil && st.chunk == nil && !st.inc.Paused {
		if len(st.inc.Tables) == 0 {
			st.inc = nil
			st.src.rep.setPhase(phaseStreaming)
			return nil
		}
		name := st.inc.Tables[0]
		schema, table, _ := strings.Cut(name, ".")
		ref := tableRef{schema, table}
		rel, err := st.cat.snapshotRelation(ctx, ref)
		if err != nil {
			return err
		}
		if len(rel.keyIdx) == 0 {
			st.src.log.Warn("postgres: incremental snapshot of a table without a key is not possible, skipped", "table", name)
			st.inc.Tables, st.inc.Last = st.inc.Tables[1:], nil
			continue
		}
		st.chunkSeq++
		id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(st.chunkSeq)
		if err := st.watermark(ctx, "open:"+id); err != nil {
			return err
		}
		c, err := st.readChunk(ctx, rel, id)
		if err != nil {
			return err
		}
		if err := st.watermark(ctx, "close:"+id); err != nil {
			return err
		}
		st.chunk = c
	}
	return nil
}

// watermark writes a watermark message into the WAL, in a transaction of
// its own.
func (st *streamer) watermark(ctx context.Context, content string) error {
	_, err := st.cat.conn.Exec(ctx, "SELECT pg_logical_emit_message(true, $1, $2)", watermarkPrefix+st.src.set.slot, content)
	if err != nil {
		return fmt.Errorf("write an incremental snapshot watermark: %w", err)
	}
	return nil
}

// readChunk reads the rows of rel after the last key, in key order.
func (st *streamer) readChunk(ctx context.Context, rel *relation, id string) (*incChunk, error) {
	cols := make([]string, len(rel.columns))
	for i, c := range rel.columns {
		cols[i] = pgx.Identifier{c.name}.Sanitize()
	}
	var keys []string
	for _, k := range rel.keyIdx {
		keys = append(keys, cols[k])
	}
	sql := "SELECT " + strings.Join(cols, ", ") + " FROM " + rel.ref.quoted()
	var params [][]byte
	var where []string
	if rel.filter != "" {
		where = append(where, "("+rel.filter+")") // the publication's row filter
	}
	if last := st.inc.Last; len(last) == len(keys) {
		ph := make([]string, len(keys))
		for i := range keys {
			params = append(params, []byte(last[i]))
			ph[i] = fmt.Sprintf("$%d", i+1)
		}
		where = append(where, "("+strings.Join(keys, ", ")+") > ("+strings.Join(ph, ", ")+")")
	}
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	sql += " ORDER BY " + strings.Join(keys, ", ") + " LIMIT " + strconv.Itoa(st.src.set.chunkSize)
	c := &incChunk{id: id, table: rel.ref.String(), rel: rel, recs: map[string]connect.Record{}}
	rr := st.cat.conn.PgConn().ExecParams(ctx, sql, params, nil, nil, nil)
	rows := st.enc.newRowReader(rel, connect.SnapshotIncremental, time.Now(), st.lastCommit, st.src.log)
	for rr.NextRow() {
		vals := rr.Values()
		rec, k, err := rows.read(vals, true)
		if err != nil {
			rr.Close()
			return nil, err
		}
		c.keys = append(c.keys, string(k))
		c.recs[string(k)] = rec
		c.lastKey = c.lastKey[:0]
		for _, i := range rel.keyIdx {
			c.lastKey = append(c.lastKey, string(vals[i]))
		}
	}
	if _, err := rr.Close(); err != nil {
		return nil, fmt.Errorf("incremental snapshot of %s: %w", c.table, err)
	}
	return c, nil
}

// watermarkMessage handles a watermark of this slot's chunk.
func (st *streamer) watermarkMessage(content string) {
	c := st.chunk
	if c == nil {
		return // a stopped chunk's, or one of before a restart
	}
	switch content {
	case "open:" + c.id:
		c.open = true
	case "close:" + c.id:
		c.closing = true
	}
}

// streamed drops the rows of the open chunk that a streamed change of rel
// touched (keys are the change's keys, old and new).
func (st *streamer) streamed(rel *relation, op connect.Op, keys ...connect.Row) {
	c := st.chunk
	if c == nil || !c.open || c.closing || rel.ref.String() != c.table {
		return
	}
	if op == connect.OpTruncate {
		clear(c.recs)
		return
	}
	for _, k := range keys {
		if k == nil {
			continue
		}
		if b, err := k.MarshalJSON(); err == nil {
			delete(c.recs, string(b))
		}
	}
}

// emitChunk appends what is left of a closed chunk to the pending records
// and moves the snapshot on; the caller then ends the transaction, whose
// position carries the new state. It reports whether a chunk closed.
func (st *streamer) emitChunk() bool {
	c := st.chunk
	if c == nil || !c.closing {
		return false
	}
	st.chunk = nil
	n := 0
	for _, k := range c.keys {
		if rec, ok := c.recs[k]; ok {
			st.pending = append(st.pending, rec)
			n++
		}
	}
	done := len(c.keys) < st.src.set.chunkSize
	st.src.rep.snapshotRows(c.table, int64(n), done)
	if done {
		st.inc.Tables, st.inc.Last = st.inc.Tables[1:], nil
		st.src.log.Info("postgres: incremental snapshot of a table done", "table", c.table)
		if len(st.inc.Tables) == 0 {
			st.inc = nil
			st.src.rep.setPhase(phaseStreaming)
		}
		return true
	}
	st.inc.Last = c.lastKey
	return true
}

// position returns the position after lsn, with the incremental snapshot's
// state.
func (st *streamer) position(lsn uint64, xid uint32, commit time.Time) connect.Position {
	p := position{LSN: lsn, TxID: xid, TsUsec: usec(commit)}
	if st.inc != nil {
		cp := *st.inc
		cp.Tables = slices.Clone(cp.Tables)
		p.Incremental = &cp
	}
	return p.encode()
}

// names returns the captured tables' names, as signals name them.
func (p *plan) names() []string {
	out := make([]string, len(p.tables))
	for i, t := range p.tables {
		out[i] = t.String()
	}
	return out
}

package mysql

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
)

// The binlog client runs in raw mode: it parses only the rotate and
// format description events, and the connector decodes the events of the
// common path itself — MariaDB's GTID, BEGIN/COMMIT and DDL queries, XID,
// table maps (one comparison of bytes when a table map repeats that of
// the last transaction) and rows events (rowsdec.go). Event kinds it does
// not decode itself and acts on (MySQL's GTID events, its transaction
// payloads, MariaDB's compressed queries, rows events of a table with a
// column the connector does not decode, rows events v0 and MySQL's
// partial JSON updates) go through go-mysql's parser (streamer.meta), and
// the rows events among them are counted (Report's gauge
// binlog_rows_events_parsed_by_go_mysql). Events it does not act on are
// not parsed at all.

// tableMapEntry is the last table map of a table id.
type tableMapEntry struct {
	body []byte // the event's body, to tell a repeat
	t    *table // nil: not captured
	spec *rowSpec
}

// body returns an event's body: after the common header, without the
// checksum.
func (st *streamer) body(raw []byte) ([]byte, error) {
	end := len(raw)
	if st.checksum {
		end -= replication.BinlogChecksumLength
	}
	if end < replication.EventHeaderSize {
		return nil, fmt.Errorf("binlog event of %d bytes at %s", len(raw), st.file)
	}
	return raw[replication.EventHeaderSize:end:end], nil
}

// tableIDSize is the size of the table id in the post-header of events of
// type tp, as the format description gives it.
func (st *streamer) tableIDSize(tp replication.EventType) int {
	if st.fde != nil && int(tp)-1 < len(st.fde.EventTypeHeaderLengths) && st.fde.EventTypeHeaderLengths[tp-1] == 6 {
		return 4
	}
	return 6
}

// handleRaw handles one event as the binlog client passes it in raw mode.
func (st *streamer) handleRaw(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch h.EventType {
	case replication.ROTATE_EVENT, replication.FORMAT_DESCRIPTION_EVENT:
		return st.handle(ctx, ev) // parsed by the client in raw mode too
	case replication.XID_EVENT:
		return st.commit(ctx, h)
	case replication.MARIADB_GTID_EVENT:
		body, err := st.body(ev.RawData)
		if err != nil {
			return err
		}
		var e replication.MariadbGTIDEvent
		if err := e.Decode(body); err != nil {
			return fmt.Errorf("GTID event at %s:%d: %w", st.file, h.LogPos, err)
		}
		e.GTID.ServerID = h.ServerID
		st.mariaGTID(h, e.GTID, e.Flags)
		return nil
	case replication.XA_PREPARE_LOG_EVENT:
		body, err := st.body(ev.RawData)
		if err != nil {
			return err
		}
		return st.xaPrepareEvent(ctx, h, body)
	case replication.QUERY_EVENT:
		body, err := st.body(ev.RawData)
		if err != nil {
			return err
		}
		var e replication.QueryEvent
		if err := e.Decode(body); err != nil {
			return fmt.Errorf("query event at %s:%d: %w", st.file, h.LogPos, err)
		}
		return st.query(ctx, h, &e)
	case replication.TABLE_MAP_EVENT:
		return st.tableMap(ctx, ev)
	case replication.HEARTBEAT_EVENT, replication.HEARTBEAT_LOG_EVENT_V2:
		return st.idle(ctx)
	case replication.MARIADB_ANNOTATE_ROWS_EVENT, replication.ROWS_QUERY_EVENT:
		if !st.src.set.includeQuery {
			return nil
		}
		body, err := st.body(ev.RawData)
		if err != nil {
			return err
		}
		if h.EventType == replication.ROWS_QUERY_EVENT && len(body) > 0 {
			body = body[1:] // a length byte, which overflows for long statements
		}
		if !st.inTx {
			st.begin(h)
		}
		st.txQuery = string(body)
		return nil
	case replication.GTID_EVENT, replication.ANONYMOUS_GTID_EVENT, replication.TRANSACTION_PAYLOAD_EVENT,
		replication.MARIADB_QUERY_COMPRESSED_EVENT:
		return st.parsed(ctx, ev)
	}
	if _, _, _, ok := rowsEventKind(h.EventType); ok {
		return st.rawRows(ctx, ev)
	}
	if isRowsEvent(h.EventType) {
		return st.parsed(ctx, ev)
	}
	return nil // not acted on
}

// parsed handles an event through go-mysql's parser.
func (st *streamer) parsed(ctx context.Context, ev *replication.BinlogEvent) error {
	pe, err := st.meta.Parse(ev.RawData)
	if err != nil {
		return fmt.Errorf("binlog event %s at %s:%d: %w", ev.Header.EventType, st.file, ev.Header.LogPos, err)
	}
	return st.handle(ctx, pe)
}

// tableMap handles a table map event. A table map that repeats the last
// one of its table id (every transaction repeats its table maps) costs a
// comparison; a new one is parsed by go-mysql's parser with its optional
// metadata and resolved.
func (st *streamer) tableMap(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	body, err := st.body(ev.RawData)
	if err != nil {
		return err
	}
	size := st.tableIDSize(replication.TABLE_MAP_EVENT)
	if len(body) < size {
		return fmt.Errorf("table map at %s:%d: %d bytes", st.file, h.LogPos, len(body))
	}
	id := leUint(body[:size])
	if m := st.maps[id]; m != nil && bytes.Equal(m.body, body) {
		if t, ok := st.tables[id]; !ok || t != m.t {
			st.tables[id] = m.t // a read costs less than a write: most are repeats
		}
		return nil
	}
	pe, err := st.meta.Parse(ev.RawData)
	if err != nil {
		return fmt.Errorf("table map at %s:%d: %w", st.file, h.LogPos, err)
	}
	tm, ok := pe.Event.(*replication.TableMapEvent)
	if !ok {
		return fmt.Errorf("table map at %s:%d: parsed as %T", st.file, h.LogPos, pe.Event)
	}
	t, err := st.resolve(ctx, tm, nil, h)
	if err != nil {
		return err
	}
	st.tables[tm.TableID] = t
	spec := newRowSpec(tm.ColumnType, tm.ColumnMeta)
	if spec.fallback || st.src.goMySQLRows {
		// go-mysql's parser decodes the rows events, and needs every
		// table map before them.
		delete(st.maps, tm.TableID)
		return nil
	}
	st.maps[tm.TableID] = &tableMapEntry{body: slices.Clone(body), t: t, spec: spec}
	return nil
}

// rawRows turns a rows event into changes for the encoders, decoding it
// from its bytes.
func (st *streamer) rawRows(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	body, err := st.body(ev.RawData)
	if err != nil {
		return err
	}
	e, err := parseRowsEvent(h.EventType, body, st.tableIDSize(h.EventType))
	if err != nil {
		return fmt.Errorf("rows event at %s:%d: %w", st.file, h.LogPos, err)
	}
	m := st.maps[e.tableID]
	if m == nil {
		// A table whose rows go-mysql's parser decodes (or no table map
		// seen: it reports that).
		return st.parsed(ctx, ev)
	}
	t := m.t
	if t == nil {
		return nil
	}
	if len(m.spec.cols) != len(t.def.Columns) {
		return fmt.Errorf("table %s: rows of %d columns, the table has %d", t.def.ref(), len(m.spec.cols), len(t.def.Columns))
	}
	if !allColumns(e.present, e.cols) || (e.kind == rowsUpdate && !allColumns(e.present2, e.cols)) {
		if i := st.enc.mapper.leftOutColumn(t, m.spec.types, e.present, e.present2); i >= 0 {
			return partialImageError(t, i, coords{st.file, h.LogPos}, st.txGTID)
		}
	}
	imgs, err := m.spec.images(st.imgs[:0], &e)
	st.imgs = imgs[:0]
	if err != nil {
		return fmt.Errorf("rows event of %s at %s:%d: %w", t.def.ref(), st.file, h.LogPos, err)
	}
	st.src.rowsDecoded.Add(1)
	if !st.inTx {
		st.begin(h)
	}
	// Emitted before the restart (xa.go); a prepare group is held again,
	// but its signals acted before.
	replay := st.replayed()
	if st.xaOpen != nil {
		if err := st.xaGrow(int64(len(e.rows))+int64(len(imgs))*heldChangeSize, h); err != nil {
			return err
		}
	} else if replay {
		return nil
	}
	if t.signal && !replay && e.kind == rowsInsert {
		for _, img := range imgs {
			vals, err := m.spec.values(nil, img)
			if err != nil {
				return fmt.Errorf("signal row at %s:%d: %w", st.file, h.LogPos, err)
			}
			st.signalRow(t, vals)
		}
	}
	if t.signalOnly || st.src.set.skipped.Skips(e.kind.op()) {
		return nil
	}
	skipDel, skipCre := st.src.set.skipped.Skips(connect.OpDelete), st.src.set.skipped.Skips(connect.OpCreate)
	now := time.Now().UnixNano()
	si := srcInfo{snapshot: connect.SnapshotFalse, ts: st.txTime, serverID: h.ServerID, gtid: st.txGTID,
		file: st.file, pos: st.txStart, thread: st.txThread, query: st.txQuery}
	step := 1
	if e.kind == rowsUpdate {
		step = 2
	}
	for i := range len(imgs) / step {
		var before, after rowImage
		keyChange := false
		switch e.kind {
		case rowsInsert:
			after = imgs[i]
		case rowsDelete:
			before = imgs[i]
		case rowsUpdate:
			before, after = imgs[2*i], imgs[2*i+1]
			if len(t.def.Key) > 0 {
				same, err := m.spec.sameKey(t.def.Key, before, after)
				if err != nil {
					return fmt.Errorf("rows event of %s at %s:%d: %w", t.def.ref(), st.file, h.LogPos, err)
				}
				keyChange = !same
			}
		}
		if keyChange && skipDel && skipCre {
			continue // both events of the key change are skipped
		}
		if st.chunk != nil && st.xaOpen == nil {
			// The keys of the events emitted leave the open chunk (held
			// XA changes when committed: leaveChunk).
			if e.kind != rowsInsert && !(keyChange && skipDel) {
				if err := st.streamedImage(t, m.spec, before, h); err != nil {
					return err
				}
			}
			if e.kind != rowsDelete && !(keyChange && skipCre) {
				if err := st.streamedImage(t, m.spec, after, h); err != nil {
					return err
				}
			}
		}
		// Fields set one by one into the slab's zeroed memory: a whole
		// change assigned is a copy with a write barrier on each of its
		// pointer words while the GC runs, which is often.
		c := st.newChange()
		si.row = i
		c.t, c.kind, c.spec, c.si, c.now = t, e.kind, m.spec, si, now
		c.rawBefore, c.rawAfter, c.keyChange = before, after, keyChange
		st.queue(c)
	}
	if len(st.pending) > st.src.set.batchSize {
		return st.flush(ctx, false)
	}
	return nil
}

// streamedImage drops the row of the open incremental-snapshot chunk
// whose key a streamed change's row image holds.
func (st *streamer) streamedImage(t *table, spec *rowSpec, img rowImage, h *replication.EventHeader) error {
	vals, err := spec.values(nil, img)
	if err != nil {
		return fmt.Errorf("rows event of %s at %s:%d: %w", t.def.ref(), st.file, h.LogPos, err)
	}
	st.streamedChange(t, vals)
	return nil
}

// rawRow maps one row image of t into dst's memory. It runs on the
// encoder goroutines; the image was checked when it was split off.
func (st *streamer) rawRow(dst connect.Row, t *table, spec *rowSpec, img rowImage) connect.Row {
	n := len(t.def.Columns)
	row := slices.Grow(dst[:0], n)[:n]
	m := st.enc.mapper
	pos := (countBits(img.present, len(spec.cols)) + 7) / 8
	k := 0
	bad := false // a value did not fit: the rest cannot be found
	for i := range row {
		c := &t.def.Columns[i]
		row[i].Name = c.Name
		row[i].Value = nil
		if bad || i >= len(spec.cols) || !bitSet(img.present, i) {
			continue
		}
		null := bitSet(img.data, k)
		k++
		if null {
			continue
		}
		cs := &spec.cols[i]
		l, err := cs.valueLen(img.data[pos:])
		if err != nil {
			st.src.log.Warn("mysql: value not understood, written as null", "table", t.def.ref(), "column", c.Name, "err", err)
			bad = true
			continue
		}
		v, err := m.fromRaw(c, cs, img.data[pos:pos+l])
		pos += l
		if err != nil {
			st.src.log.Warn("mysql: value not understood, written as null", "table", t.def.ref(), "column", c.Name, "err", err)
			continue
		}
		row[i].Value = v
	}
	return row
}

// changeSlab is how many changes newChange allocates at once.
const changeSlab = 64 // 64 changes stay below the 32 KiB of a small allocation

// freeSlabs is how many encoded slabs the streamer keeps for reuse.
const freeSlabs = 64

// slab is changes allocated together. Once every one of them is encoded
// (left reaches 0) nothing refers to them any more: the encoder that
// encoded the last one clears the slab and hands it back to the streamer
// (streamer.free), so that a steady stream allocates no changes at all —
// they were a fifth of the bytes the stream allocated, all of it memory
// the GC scans. A slab with changes that are never encoded (a transaction
// dropped with its connection) is left to the GC.
type slab struct {
	changes [changeSlab]change
	left    atomic.Int32 // changes not yet encoded
}

// newChange returns a zero change from a slab shared with the next ones:
// one allocation (or none, when an encoded slab is back) for many small
// transactions' changes.
func (st *streamer) newChange() *change {
	if st.slab == nil || st.slabUsed == changeSlab {
		select {
		case st.slab = <-st.free:
		default:
			st.slab = new(slab)
		}
		st.slab.left.Store(changeSlab)
		st.slabUsed = 0
	}
	c := &st.slab.changes[st.slabUsed]
	st.slabUsed++
	c.slab = st.slab
	return c
}

// encoded tells c's slab that c was encoded: nothing reads c afterwards.
// It runs on the encoder goroutines.
func (st *streamer) encoded(c *change) {
	s := c.slab
	if s == nil || s.left.Add(-1) != 0 {
		return
	}
	clear(s.changes[:]) // drops what the changes pointed to
	select {
	case st.free <- s:
	default:
	}
}

package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/connect"
)

// The snapshot reads every captured table inside transactions started with
// START TRANSACTION WITH CONSISTENT SNAPSHOT, and streaming then starts
// from the binlog position that matches them:
//
//   - MariaDB reports the binlog position of each consistent snapshot
//     (binlog_snapshot_file, binlog_snapshot_position) without any lock.
//     Every worker connection opens its own snapshot; streaming starts from
//     the earliest of their positions. With one worker that is exact; with
//     several, changes between the earliest and a later worker's position
//     are read twice (once in that worker's snapshot, once streamed), and
//     every row still ends in its latest state.
//   - MySQL has no such status, so the connector holds FLUSH TABLES WITH
//     READ LOCK only while the workers open their snapshots and it reads
//     SHOW MASTER STATUS (a few milliseconds; it needs RELOAD), which makes
//     every snapshot and the position exact.
//
// Each table is read in primary-key order in chunks of snapshot.chunk.size
// rows (keyset pagination: the rows after the last key, ORDER BY key LIMIT
// n, with a predicate the server reads as a range of the key: chunkQuery),
// tables in parallel on snapshot.workers connections. The last record of
// each chunk carries the snapshot's progress in the position (tables done,
// each started table's last key), so a restart resumes every table after
// its last emitted chunk (in a new snapshot, streaming from the first
// snapshot's position: changes in between are read again). The very last
// record carries the position where streaming starts.

// chunk is a run of rows of one table, in key order.
type chunk struct {
	table   string
	recs    []connect.Record
	evs     []*connect.ChangeEvent // the events of recs[0] and recs[len-1]
	t       *table
	lastKey keyValues // the key of the last row, as the server sends it in text; nil without a key
	done    bool      // the table's last chunk
}

// snapTable is a table to snapshot.
type snapTable struct {
	t     *table
	after keyValues // resume after this key, nil from the start
	est   int64
}

func (s *Source) snapshot(ctx context.Context, enc *encoder) error {
	s.setPhase("snapshot")
	prog := &progress{Last: map[string]keyValues{}}
	if s.plan.resume != nil {
		prog = s.plan.resume.clone()
		if prog.Last == nil {
			prog.Last = map[string]keyValues{}
		}
	}
	var todo []*snapTable
	var defs []*tableDef
	for _, ref := range s.plan.tables {
		def, err := readTableDef(ctx, s.db, ref.db, ref.name)
		if err != nil {
			return err
		}
		if def == nil {
			continue // dropped since Open
		}
		defs = append(defs, def)
		if prog.isDone(ref.String()) {
			continue
		}
		t, err := enc.mapper.newTable(&s.set, def)
		if err != nil {
			return err
		}
		st := &snapTable{t: t}
		if len(def.Key) > 0 {
			st.after = prog.Last[ref.String()]
		}
		var est sql.NullInt64
		s.db.QueryRowContext(ctx, "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", ref.db, ref.name).Scan(&est)
		st.est = est.Int64
		todo = append(todo, st)
	}
	s.log.Info("mysql: snapshot", "tables", len(todo), "resumed", s.plan.resume != nil, "workers", s.set.workers)

	nw := max(1, min(s.set.workers, len(todo)))
	conns := make([]*sql.Conn, 0, nw)
	defer func() {
		for _, c := range conns {
			c.ExecContext(context.Background(), "ROLLBACK")
			c.Close()
		}
	}()
	for range nw {
		c, err := s.db.Conn(ctx)
		if err != nil {
			return fmt.Errorf("open a snapshot connection: %w", err)
		}
		conns = append(conns, c)
	}
	var start coords
	var gtids *gtidSet
	var err error
	if s.plan.resume == nil {
		// A new start position: once no XA transaction prepared before it
		// is undecided (xastart.go).
		start, gtids, err = s.startClear(ctx, func(ctx context.Context) (coords, *gtidSet, error) { return s.openSnapshots(ctx, conns) }, func() {
			for _, c := range conns {
				c.ExecContext(ctx, "ROLLBACK")
			}
		})
	} else {
		start, gtids, err = s.openSnapshots(ctx, conns)
	}
	if err != nil {
		return err
	}
	if s.plan.resume == nil {
		s.plan.start, s.plan.gtids = start, gtids
	}
	if s.hist != nil {
		if err := s.hist.record(s.plan.start, defs, nil); err != nil {
			return err
		}
	}
	started := time.Now()
	base := position{File: s.plan.start.File, Pos: s.plan.start.Pos, ServerID: s.srv.serverID}
	if s.plan.gtids != nil {
		base.GTIDs = s.plan.gtids.String()
	}
	si := &srcInfo{snapshot: connect.SnapshotTrue, ts: started, serverID: s.srv.serverID, file: base.File, pos: base.Pos}

	s.mu.Lock()
	s.report.Progress = make([]connect.Progress, len(todo))
	for i, t := range todo {
		s.report.Progress[i] = connect.Progress{Name: t.t.def.ref(), Total: t.est, Unit: "rows"}
	}
	s.mu.Unlock()

	if len(todo) > 0 {
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		g, gctx := errgroup.WithContext(wctx)
		work := make(chan *snapTable, len(todo))
		for _, t := range todo {
			work <- t
		}
		close(work)
		chunks := make(chan *chunk, nw)
		for _, c := range conns {
			g.Go(func() error { return s.snapshotWorker(gctx, c, enc, si, work, chunks) })
		}
		var werr error
		waited := make(chan struct{})
		go func() {
			werr = g.Wait()
			close(chunks)
			close(waited)
		}()
		held, err := s.emitChunks(ctx, chunks, prog, enc, base)
		if err != nil {
			stop()
			<-waited
			if werr != nil {
				return werr
			}
			return err
		}
		<-waited
		if werr != nil {
			return werr
		}
		if held != nil {
			return s.finishSnapshot(ctx, held, enc, base)
		}
	}
	s.log.Info("mysql: snapshot done", "tables", len(todo), "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// openSnapshots starts a consistent-snapshot transaction on every
// connection and returns the binlog position (and GTID set) streaming
// starts from.
func (s *Source) openSnapshots(ctx context.Context, conns []*sql.Conn) (coords, *gtidSet, error) {
	begin := func(c *sql.Conn) error {
		if _, err := c.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ"); err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		if _, err := c.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT"); err != nil {
			return fmt.Errorf("snapshot: START TRANSACTION WITH CONSISTENT SNAPSHOT: %w", err)
		}
		return nil
	}
	if s.srv.flavor == flavorMariaDB {
		var earliest coords
		for i, c := range conns {
			if err := begin(c); err != nil {
				return coords{}, nil, err
			}
			at, err := snapshotCoords(ctx, c)
			if err != nil {
				return coords{}, nil, err
			}
			if i == 0 || at.less(earliest) {
				earliest = at
			}
		}
		text, err := mariaGTIDAt(ctx, conns[0], earliest)
		if err != nil {
			return coords{}, nil, err
		}
		g, err := parseGTIDSet(flavorMariaDB, text)
		if err != nil {
			return coords{}, nil, err
		}
		return earliest, g, nil
	}
	lock, err := s.db.Conn(ctx)
	if err != nil {
		return coords{}, nil, fmt.Errorf("snapshot: %w", err)
	}
	defer lock.Close()
	if _, err := lock.ExecContext(ctx, "FLUSH TABLES WITH READ LOCK"); err != nil {
		return coords{}, nil, fmt.Errorf("snapshot: FLUSH TABLES WITH READ LOCK (held while the snapshot transactions start): %w; grant RELOAD: GRANT RELOAD ON *.* TO …;", err)
	}
	defer lock.ExecContext(context.Background(), "UNLOCK TABLES")
	for _, c := range conns {
		if err := begin(c); err != nil {
			return coords{}, nil, err
		}
	}
	at, gtids, err := s.currentPosition(ctx, lock)
	if err != nil {
		return coords{}, nil, err
	}
	if _, err := lock.ExecContext(ctx, "UNLOCK TABLES"); err != nil {
		return coords{}, nil, fmt.Errorf("snapshot: UNLOCK TABLES: %w", err)
	}
	return at, gtids, nil
}

// snapshotCoords reads MariaDB's binlog position of the connection's
// consistent snapshot.
func snapshotCoords(ctx context.Context, c *sql.Conn) (coords, error) {
	rows, err := c.QueryContext(ctx, "SHOW STATUS LIKE 'binlog_snapshot_%'")
	if err != nil {
		return coords{}, fmt.Errorf("snapshot: read binlog_snapshot_file/position: %w", err)
	}
	defer rows.Close()
	var at coords
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return coords{}, err
		}
		switch strings.ToLower(k) {
		case "binlog_snapshot_file":
			at.File = v
		case "binlog_snapshot_position":
			var p uint64
			fmt.Sscan(v, &p)
			at.Pos = uint32(p)
		}
	}
	if at.File == "" {
		return coords{}, fmt.Errorf("snapshot: the server reports no binlog_snapshot_file; is the binary log on?")
	}
	return at, rows.Err()
}

// emitChunks hands the chunks to Read in arrival order, giving each
// chunk's last record the progress so far. It holds one chunk back, so
// that the snapshot's last record can be marked "last" and carry the
// position where streaming starts.
func (s *Source) emitChunks(ctx context.Context, chunks <-chan *chunk, prog *progress, enc *encoder, base position) (*chunk, error) {
	var held *chunk
	first := true
	for {
		var c *chunk
		var ok bool
		select {
		case c, ok = <-chunks:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			return held, nil
		}
		if c.done {
			delete(prog.Last, c.table)
			prog.Done = append(prog.Done, c.table)
		} else if c.lastKey != nil {
			prog.Last[c.table] = c.lastKey
		}
		s.scanned.Add(int64(len(c.recs)))
		s.mu.Lock()
		for i := range s.report.Progress {
			if s.report.Progress[i].Name == c.table {
				s.report.Progress[i].Done += int64(len(c.recs))
			}
		}
		s.mu.Unlock()
		if len(c.recs) == 0 {
			continue
		}
		if first {
			first = false
			c.evs[0].Source.Snapshot = connect.SnapshotFirst
			r, err := enc.record(c.t, c.evs[0])
			if err != nil {
				return nil, err
			}
			c.recs[0].Key, c.recs[0].Value = r.Key, r.Value
		}
		p := base
		p.Snapshot = prog.clone()
		c.recs[len(c.recs)-1].Position = p.encode()
		if held != nil {
			if err := s.push(ctx, held.recs); err != nil {
				return nil, err
			}
		}
		held = c
	}
}

// finishSnapshot hands over the snapshot's last chunk, its last record
// marked "last" and carrying the position where streaming starts.
func (s *Source) finishSnapshot(ctx context.Context, held *chunk, enc *encoder, base position) error {
	last := len(held.recs) - 1
	ev := held.evs[len(held.evs)-1]
	if ev.Source.Snapshot != connect.SnapshotFirst {
		ev.Source.Snapshot = connect.SnapshotLast
		r, err := enc.record(held.t, ev)
		if err != nil {
			return err
		}
		held.recs[last].Key, held.recs[last].Value = r.Key, r.Value
	}
	held.recs[last].Position = base.encode()
	return s.push(ctx, held.recs)
}

// snapshotWorker reads tables from work on its snapshot connection.
func (s *Source) snapshotWorker(ctx context.Context, conn *sql.Conn, enc *encoder, si *srcInfo, work <-chan *snapTable, chunks chan<- *chunk) error {
	for t := range work {
		if err := s.readTable(ctx, conn, enc, si, t, chunks); err != nil {
			return err
		}
	}
	return nil
}

// readTable reads one table in key order (after t.after when resuming),
// in chunks of snapshot.chunk.size rows.
func (s *Source) readTable(ctx context.Context, conn *sql.Conn, enc *encoder, si *srcInfo, st *snapTable, chunks chan<- *chunk) error {
	t := st.t
	def := t.def
	name := def.ref()
	send := func(c *chunk) error {
		select {
		case chunks <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	after := st.after
	for {
		q, args, err := chunkQuery(def, after, s.set.chunkSize)
		if err != nil {
			return fmt.Errorf("snapshot of %s: %w", name, err)
		}
		c, n, err := s.readChunk(ctx, conn, enc, si, t, q, args, send)
		if err != nil {
			return fmt.Errorf("snapshot of %s: %w", name, err)
		}
		if len(def.Key) == 0 || n < s.set.chunkSize {
			c.done = true
			return send(c)
		}
		after = c.lastKey
		if err := send(c); err != nil {
			return err
		}
	}
}

// chunkQuery returns the query that reads the chunk of size rows of a
// table that follows the key after (from the start when after is nil), in
// key order, and its arguments. A table without a key is read whole, in
// one query.
//
// "After the key" is spelled out column by column, one term for each
// column that differs first:
//
//	k1 > ? OR (k1 = ? AND k2 > ?) OR (k1 = ? AND k2 = ? AND k3 > ?)
//
// with the same rows as the row comparison (k1, k2, k3) > (?, ?, ?) (key
// columns are NOT NULL, and compare in their own collation either way),
// but each term is a range of the primary key, so the server starts the
// chunk where the last one ended (MySQL's range optimizer reads the form
// as MariaDB's does). MariaDB 10.11 makes no range of a row comparison,
// nor of more than the first column of the nested form
// k1 >= ? AND (k1 > ? OR (k2 > ? …)): each chunk read the index from the
// start of the table, or of the first column's value.
func chunkQuery(def *tableDef, after keyValues, size int) (string, []any, error) {
	cols := make([]string, len(def.Columns))
	for i, c := range def.Columns {
		cols[i] = quoteIdent(c.Name)
	}
	q := "SELECT " + strings.Join(cols, ", ") + " FROM " + quoteIdent(def.DB) + "." + quoteIdent(def.Name)
	if len(def.Key) == 0 {
		return q, nil, nil
	}
	keys := make([]string, len(def.Key))
	for i, k := range def.Key {
		keys[i] = cols[k]
	}
	order := keys
	var args []any
	if len(after) == len(keys) {
		vals, err := keyArgs(def, after)
		if err != nil {
			return "", nil, err
		}
		var terms []string
		for i := range keys {
			gt, gtArgs, ok := sortsAfter(&def.Columns[def.Key[i]], keys[i], vals[i])
			if !ok {
				if len(terms) == 0 {
					// Every row after the key has the key's value in
					// this column (an ENUM or SET, the only kinds with a
					// last value), and sorting by it changes nothing;
					// left in ORDER BY, it makes MariaDB 10.11 read the
					// whole range and sort it (filesort).
					order = keys[i+1:]
				}
				continue
			}
			var term []string
			for j := range i {
				term = append(term, keys[j]+" = ?")
				args = append(args, vals[j])
			}
			term = append(term, gt)
			args = append(args, gtArgs...)
			terms = append(terms, "("+strings.Join(term, " AND ")+")")
		}
		if len(terms) == 0 {
			return q + " WHERE FALSE", nil, nil // the key is the last one there can be
		}
		q += " WHERE " + strings.Join(terms, " OR ")
	}
	q += " ORDER BY " + strings.Join(order, ", ") + " LIMIT " + itoa(size)
	return q, args, nil
}

// maxAfterList is the most numbers sortsAfter lists for an ENUM or SET
// column.
const maxAfterList = 256

// sortsAfter returns the condition that key column c, quoted as name,
// sorts after v (its argument as keyArgs makes it), and the condition's
// arguments; false when no value sorts after v. That is name > ?, but
// MariaDB makes no range of an inequality on an ENUM or a SET column, so
// those list the numbers after v (an ENUM's label indexes, a SET's bit
// sets) when there are at most maxAfterList of them.
func sortsAfter(c *column, name string, v any) (string, []any, bool) {
	var last uint64 // the largest number the column holds
	switch c.Type {
	case mysql.MYSQL_TYPE_ENUM:
		last = uint64(len(c.Labels))
	case mysql.MYSQL_TYPE_SET:
		last = ^uint64(0) >> (64 - min(64, len(c.Labels))) // every bit set; 0 without labels
	default:
		return name + " > ?", []any{v}, true
	}
	n := v.(uint64)
	if n >= last {
		return "", nil, false
	}
	if last-n > maxAfterList {
		return name + " > ?", []any{v}, true
	}
	nums := make([]string, last-n)
	for i := range nums {
		nums[i] = strconv.FormatUint(n+1+uint64(i), 10)
	}
	return name + " IN (" + strings.Join(nums, ", ") + ")", nil, true
}

// keyArgs returns the arguments that compare a table's key columns with
// the key of a row (as the server sends it in text, lastKey) in the order
// ORDER BY sorts them.
// A string compares with most columns in their order, but ENUM and SET
// columns sort by their number (an ENUM's label index, a SET's bits) and
// compare with a string by label, and a BIT column compares with a string
// as a number the string does not hold: those take their number.
func keyArgs(def *tableDef, key keyValues) ([]any, error) {
	args := make([]any, len(key))
	for i, k := range def.Key {
		c := &def.Columns[k]
		v := key[i]
		switch c.Type {
		case mysql.MYSQL_TYPE_ENUM:
			n := 0 // '', the value of an invalid label, sorts first
			if j := slices.Index(c.Labels, v); j >= 0 {
				n = j + 1
			} else if v != "" {
				return nil, fmt.Errorf("key column %s: %q is not one of the labels of its ENUM %q; the table changed during the snapshot: snapshot it again", c.Name, v, c.Labels)
			}
			args[i] = uint64(n)
		case mysql.MYSQL_TYPE_SET:
			var n uint64
			if v != "" {
				for l := range strings.SplitSeq(v, ",") {
					j := slices.Index(c.Labels, l)
					if j < 0 || j >= 64 {
						return nil, fmt.Errorf("key column %s: %q is not one of the labels of its SET %q; the table changed during the snapshot: snapshot it again", c.Name, l, c.Labels)
					}
					n |= 1 << j
				}
			}
			args[i] = n
		case mysql.MYSQL_TYPE_BIT:
			if len(v) > 8 {
				return nil, fmt.Errorf("key column %s: BIT value of %d bytes, at most 8", c.Name, len(v))
			}
			var n uint64
			for j := 0; j < len(v); j++ {
				n = n<<8 | uint64(v[j])
			}
			args[i] = n
		default:
			args[i] = v
		}
	}
	return args, nil
}

// readChunk runs one chunk query. Without a key the whole table is one
// query, sent in chunks as it is read (and not resumable). Rows are mapped
// as they are scanned; the chunk's events are encoded at its end, on
// several goroutines for large chunks (encoding is most of a snapshot's
// CPU, and one connection reads a table).
func (s *Source) readChunk(ctx context.Context, conn *sql.Conn, enc *encoder, si *srcInfo, t *table, q string, args []any, send func(*chunk) error) (*chunk, int, error) {
	def := t.def
	rows, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	vals := make([]sql.RawBytes, len(def.Columns))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	src := enc.source(t, si) // the same for every row; events copy it
	c := &chunk{table: def.ref(), t: t}
	var evs []*connect.ChangeEvent
	n := 0
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, 0, err
		}
		n++
		row := make(connect.Row, len(def.Columns))
		for i := range def.Columns {
			col := &def.Columns[i]
			row[i].Name = col.Name
			v, err := enc.mapper.fromText(col, vals[i])
			if err != nil {
				s.log.Warn("mysql: value not understood, written as null", "table", def.ref(), "column", col.Name, "err", err)
				v = nil
			}
			row[i].Value = v
		}
		ev := &connect.ChangeEvent{Op: connect.OpRead, Key: t.key(row), After: row, Source: src}
		ev.SetTime(time.Now())
		evs = append(evs, ev)
		if len(def.Key) > 0 {
			c.lastKey = c.lastKey[:0]
			for _, k := range def.Key {
				c.lastKey = append(c.lastKey, string(vals[k]))
			}
		} else if len(evs) >= s.set.chunkSize {
			if err := encodeChunk(enc, c, evs); err != nil {
				return nil, 0, err
			}
			if err := send(c); err != nil {
				return nil, 0, err
			}
			c, evs = &chunk{table: def.ref(), t: t}, nil
		}
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	if err := encodeChunk(enc, c, evs); err != nil {
		return nil, 0, err
	}
	return c, n, nil
}

// parallelFrom is the chunk size from which encodeChunk uses several
// goroutines.
const parallelFrom = 256

// encodeChunk encodes a chunk's events into its records, keeping the
// first and the last event (the snapshot's first and last records are
// encoded again with their marks).
func encodeChunk(enc *encoder, c *chunk, evs []*connect.ChangeEvent) error {
	if len(evs) == 0 {
		return nil
	}
	c.evs = []*connect.ChangeEvent{evs[0], evs[len(evs)-1]}
	c.recs = make([]connect.Record, len(evs))
	parts := 1
	if len(evs) >= parallelFrom {
		parts = min(runtime.GOMAXPROCS(0), 4, len(evs)/(parallelFrom/2))
	}
	encode := func(lo, hi int) error {
		var blk connect.Blocks // the records of a part share blocks
		for i := lo; i < hi; i++ {
			r, err := enc.recordIn(&blk, c.t, evs[i])
			if err != nil {
				return err
			}
			c.recs[i] = r
		}
		return nil
	}
	if parts <= 1 {
		return encode(0, len(evs))
	}
	var wg sync.WaitGroup
	errs := make([]error, parts)
	per := (len(evs) + parts - 1) / parts
	for p := range parts {
		lo, hi := p*per, min(len(evs), (p+1)*per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = encode(lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

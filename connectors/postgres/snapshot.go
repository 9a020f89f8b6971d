package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/connect"
)

// The snapshot reads every captured table as of one moment: the snapshot
// the slot exported when it was created (so that streaming from the slot's
// consistent point continues exactly where the snapshot ends: nothing lost,
// nothing doubled), or, when the slot already existed, a snapshot exported
// from a fresh REPEATABLE READ transaction; streaming then starts from the
// slot's (earlier) confirmed position and replays the changes made since,
// at least once, which the rebuilt state converges on.
//
// snapshot.workers connections import that snapshot (SET TRANSACTION
// SNAPSHOT) and read whole tables in parallel, each in primary-key order,
// cut into chunks of snapshot.chunk.size rows. The runner emits chunks one
// at a time; the last record of each carries the snapshot's progress (the
// tables done, and each started table's last key), so that a restart
// resumes every table after its last emitted chunk. The snapshot's very
// last record carries the position where streaming starts.

// chunk is a run of rows of one unit of work, in key order.
type chunk struct {
	table   string // schema.table
	unit    string // the unit's progress key: the table, or table#i for a part
	recs    []connect.Record
	rel     *relation
	lastKey keyValues // the key of the last row, as text; nil for tables without a key
	done    bool      // the unit's last chunk
	// firstOfAll is set on the chunk whose first record is the
	// snapshot's first (source.snapshot "first").
	firstOfAll bool
}

// snapUnit is a unit of snapshot work: a whole table, or one part of a
// table whose first key column is an integer, cut by value so that
// several workers read one large table at once.
type snapUnit struct {
	rel    *relation
	name   string    // progress key: "schema.table", or "schema.table#i" for part i
	lo, hi *string   // bounds of the part on the first key column, lo <= k < hi; nil is open
	after  keyValues // resume after this key (text), nil from the start
}

func (s *Source) snapshot(ctx context.Context, cat *catalog, enc *encoder) error {
	prog := &progress{}
	if s.plan.resume != nil {
		prog = s.plan.resume.clone()
	}
	if prog.Last == nil {
		prog.Last = map[string]keyValues{}
	}
	if prog.Rows == nil {
		prog.Rows = map[string]int64{}
	}
	if prog.Split == nil {
		prog.Split = map[string]keyValues{}
	}
	s.rep.setPhase(phaseSnapshot)
	var todo []*snapUnit
	left := map[string]int{} // units of each table not done yet
	for _, t := range s.plan.tables {
		name := t.String()
		if prog.isDone(name) {
			n := prog.Rows[name]
			s.rep.snapshotTable(name, n, n)
			continue
		}
		rel, err := cat.snapshotRelation(ctx, t)
		if err != nil {
			return err
		}
		estimate, err := s.tableRows(ctx, cat.conn, t)
		if err != nil {
			return err
		}
		if rel.filter != "" {
			// reltuples counts every row of the table, but the snapshot
			// reads only those the publication's row filter lets through:
			// the progress would stay far below 100% until the table ends,
			// and the split would cut a selective filter's few rows into
			// parts as if they were the whole table. An estimate that
			// fails fails no snapshot: the table's stays.
			if n, err := filteredRows(ctx, cat.conn, rel); err != nil {
				s.log.Warn("postgres: cannot estimate the rows the publication's row filter lets through; the snapshot's progress and its split into parts count every row of the table", "table", name, "filter", rel.filter, "err", err)
			} else {
				estimate = n
			}
		}
		resumed := len(rel.keyIdx) > 0 && (prog.Last[name] != nil || prog.Split[name] != nil)
		if !resumed {
			delete(prog.Rows, name) // read from the start again
			delete(prog.Last, name)
			delete(prog.Split, name)
			if bounds, err := s.splitBounds(ctx, cat.conn, rel, estimate); err != nil {
				return err
			} else if bounds != nil {
				prog.Split[name] = bounds
			}
		}
		s.rep.snapshotTable(name, prog.Rows[name], estimate)
		bounds, split := prog.Split[name]
		if !split {
			u := &snapUnit{rel: rel, name: name}
			if len(rel.keyIdx) > 0 {
				u.after = prog.Last[name]
			}
			todo = append(todo, u)
			left[name] = 1
			continue
		}
		for i := 0; i <= len(bounds); i++ {
			u := &snapUnit{rel: rel, name: fmt.Sprintf("%s#%d", name, i)}
			if prog.isDone(u.name) {
				continue
			}
			if i > 0 {
				u.lo = &bounds[i-1]
			}
			if i < len(bounds) {
				u.hi = &bounds[i]
			}
			u.after = prog.Last[u.name]
			todo = append(todo, u)
			left[name]++
		}
	}
	s.log.Info("postgres: snapshot", "units", len(todo), "resumed", s.plan.resume != nil, "workers", s.set.workers)
	if len(todo) == 0 {
		return s.finishSnapshot(ctx, nil, enc)
	}

	// The snapshot every worker imports.
	name := s.plan.snapshotName
	if name == "" {
		exp, err := connectSQL(ctx, s.set.dsn, s.set.deadAfter, s.log)
		if err != nil {
			return err
		}
		defer exp.Close(context.Background())
		if _, err := exp.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return fmt.Errorf("begin the snapshot transaction: %w", deadErr(exp.PgConn().Conn(), err))
		}
		if err := exp.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&name); err != nil {
			return fmt.Errorf("export a snapshot: %w", err)
		}
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	g, gctx := errgroup.WithContext(wctx)
	work := make(chan *snapUnit, len(todo))
	for _, t := range todo {
		work <- t
	}
	close(work)
	chunks := make(chan *chunk, s.set.workers)
	started := time.Now()
	for i := 0; i < min(s.set.workers, len(todo)); i++ {
		g.Go(func() error {
			return s.snapshotWorker(gctx, enc, name, started, work, chunks)
		})
	}
	var werr error
	waited := make(chan struct{})
	go func() {
		werr = g.Wait()
		close(chunks)
		close(waited)
	}()
	held, err := s.emitChunks(ctx, chunks, prog, left)
	if err != nil {
		stopWorkers()
		<-waited
		if werr != nil {
			return werr
		}
		return err
	}
	<-waited
	if werr != nil {
		return werr // the chunks ended early: a worker failed
	}
	if err := s.finishSnapshot(ctx, held, enc); err != nil {
		return err
	}
	s.log.Info("postgres: snapshot done", "units", len(todo), "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// emitChunks hands the chunks to Read in arrival order, giving each
// chunk's last record the progress so far. It holds one chunk back, so
// that the snapshot's last record can be marked "last" and carry the
// position where streaming starts.
func (s *Source) emitChunks(ctx context.Context, chunks <-chan *chunk, prog *progress, left map[string]int) (*chunk, error) {
	var held *chunk
	first := true
	nextLog := time.Now().Add(10 * time.Second)
	nextReport := time.Now().Add(s.reportEvery)
	if s.plan.stream {
		s.readRetained(ctx, s.meta)
	}
	for {
		var c *chunk
		var ok bool
		select {
		case c, ok = <-chunks:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			break
		}
		prog.Rows[c.table] += int64(len(c.recs))
		tableDone := false
		if c.done {
			delete(prog.Last, c.unit)
			left[c.table]--
			if tableDone = left[c.table] == 0; tableDone {
				prog.markDone(c.table)
			} else {
				prog.Done = append(prog.Done, c.unit)
			}
		} else if c.lastKey != nil {
			prog.Last[c.unit] = c.lastKey
		}
		s.rep.snapshotRows(c.table, int64(len(c.recs)), tableDone)
		if len(c.recs) == 0 {
			continue
		}
		if first {
			first = false
			c.recs[0].Value = markSnapshot(c.recs[0].Value, connect.SnapshotFirst)
			c.firstOfAll = true
		}
		c.recs[len(c.recs)-1].Position = position{LSN: uint64(s.plan.startLSN), Snapshot: prog.clone()}.encode()
		if held != nil {
			if err := s.push(ctx, held.recs, nil); err != nil {
				return nil, err
			}
		}
		held = c
		if s.plan.stream && time.Now().After(nextReport) {
			nextReport = time.Now().Add(s.reportEvery)
			s.readRetained(ctx, s.meta) // the slot holds WAL back for as long as the snapshot takes
		}
		if time.Now().After(nextLog) {
			nextLog = time.Now().Add(10 * time.Second)
			for _, p := range s.rep.report().Progress {
				s.log.Info("postgres: snapshot progress", "table", p.Name, "rows", p.Done, "estimate", p.Total)
			}
		}
	}
	return held, nil
}

// finishSnapshot hands over the snapshot's last chunk, its last record
// marked "last" and carrying the position where streaming starts. When
// the snapshot emitted no rows, a heartbeat record carries that position,
// so that once it is stored a restart does not snapshot again.
func (s *Source) finishSnapshot(ctx context.Context, held *chunk, enc *encoder) error {
	if held == nil {
		hb := enc.heartbeat(time.Now(), position{LSN: uint64(s.plan.startLSN)}.encode())
		return s.push(ctx, []connect.Record{hb}, nil)
	}
	last := len(held.recs) - 1
	if !held.firstOfAll || last > 0 {
		held.recs[last].Value = markSnapshot(held.recs[last].Value, connect.SnapshotLast)
	}
	held.recs[last].Position = position{LSN: uint64(s.plan.startLSN)}.encode()
	return s.push(ctx, held.recs, nil)
}

// snapshotWorker reads units from work on its own connection, inside a
// transaction on the shared snapshot.
func (s *Source) snapshotWorker(ctx context.Context, enc *encoder, snapshot string, started time.Time, work <-chan *snapUnit, chunks chan<- *chunk) error {
	conn, err := connectSQL(ctx, s.set.dsn, s.set.deadAfter, s.log)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	// Exec (the simple protocol) says only "conn closed" once the
	// connection's watch took it for dead and closed it: deadErr says why.
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("begin the snapshot transaction: %w", deadErr(conn.PgConn().Conn(), err))
	}
	if _, err := conn.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapshot, "'", "''")+"'"); err != nil {
		return fmt.Errorf("import snapshot %s: %w", snapshot, deadErr(conn.PgConn().Conn(), err))
	}
	for u := range work {
		if err := s.readUnit(ctx, conn, enc, u, started, chunks); err != nil {
			return err
		}
	}
	if _, err := conn.Exec(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("end the snapshot transaction: %w", deadErr(conn.PgConn().Conn(), err))
	}
	return nil
}

// readUnit reads one unit in key order (after u.after when resuming),
// sending chunks of snapshot.chunk.size rows.
func (s *Source) readUnit(ctx context.Context, conn *pgx.Conn, enc *encoder, u *snapUnit, started time.Time, chunks chan<- *chunk) error {
	rel := u.rel
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
	param := func(v string) string {
		params = append(params, []byte(v))
		return fmt.Sprintf("$%d", len(params))
	}
	if u.lo != nil {
		where = append(where, keys[0]+" >= "+param(*u.lo))
	}
	if u.hi != nil {
		where = append(where, keys[0]+" < "+param(*u.hi))
	}
	if len(u.after) > 0 && len(u.after) == len(keys) {
		ph := make([]string, len(keys))
		for i := range keys {
			ph[i] = param(u.after[i])
		}
		where = append(where, "("+strings.Join(keys, ", ")+") > ("+strings.Join(ph, ", ")+")")
	}
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if len(keys) > 0 {
		sql += " ORDER BY " + strings.Join(keys, ", ")
	}
	name := rel.ref.String()
	send := func(c *chunk) error {
		select {
		case chunks <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	rr := conn.PgConn().ExecParams(ctx, sql, params, nil, nil, nil)
	c := &chunk{table: name, unit: u.name, rel: rel}
	rows := enc.newRowReader(rel, connect.SnapshotTrue, started, uint64(s.plan.startLSN), s.log)
	for rr.NextRow() {
		vals := rr.Values()
		rec, _, err := rows.read(vals, false)
		if err != nil {
			rr.Close()
			return err
		}
		c.recs = append(c.recs, rec)
		if len(c.recs) >= s.set.chunkSize {
			if len(rel.keyIdx) > 0 {
				c.lastKey = make(keyValues, len(rel.keyIdx))
				for i, k := range rel.keyIdx {
					c.lastKey[i] = string(vals[k])
				}
			}
			if err := send(c); err != nil {
				rr.Close()
				return err
			}
			c = &chunk{table: name, unit: u.name, rel: rel}
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("snapshot of %s: %w", u.name, err)
	}
	c.done = true
	return send(c)
}

// tableRows estimates the rows of a table from the statistics
// (pg_class.reltuples, nothing read). A partitioned table holds no rows
// itself, and its reltuples is -1 until it is analyzed by name, which
// autovacuum never does: its estimate is the sum of its leaf partitions'.
// A table or partition never vacuumed nor analyzed (reltuples -1: say a
// table loaded just now, before autovacuum's first analyze, or one
// autovacuum skips) has no statistics; when one of them holds pages, the
// whole table is estimated from a sample of about samplePages of its pages
// instead (TABLESAMPLE SYSTEM, before the snapshot's reads). A
// sample that fails (a table the sampling method cannot read) fails no
// snapshot: the statistics' estimate stays, with a warning.
func (s *Source) tableRows(ctx context.Context, conn *pgx.Conn, t tableRef) (int64, error) {
	var stats float64
	var unknownPages, pages int64
	err := conn.QueryRow(ctx, `
WITH rels AS (
	SELECT l.reltuples, pg_relation_size(l.oid) / current_setting('block_size')::bigint AS pages
	FROM pg_class c JOIN pg_class l ON l.oid = ANY (CASE WHEN c.relkind = 'p'
		THEN ARRAY(SELECT relid FROM pg_partition_tree(c.oid) WHERE isleaf)
		ELSE ARRAY[c.oid] END)
	WHERE c.oid = $1::regclass)
SELECT coalesce(sum(greatest(reltuples, 0)), 0)::float8,
	coalesce(sum(pages) FILTER (WHERE reltuples < 0), 0)::bigint,
	coalesce(sum(pages), 0)::bigint
FROM rels`, t.quoted()).Scan(&stats, &unknownPages, &pages)
	if err != nil {
		return 0, fmt.Errorf("estimate the rows of %s: %w", t, err)
	}
	if unknownPages == 0 {
		return int64(stats), nil
	}
	pct := min(100, 100*float64(samplePages)/float64(pages))
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+t.quoted()+" TABLESAMPLE SYSTEM ($1)", pct).Scan(&n); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		s.log.Warn("postgres: a table without statistics (never analyzed) could not be sampled: the snapshot's progress and its split count only its analyzed partitions, if any; ANALYZE it for a better estimate",
			"table", t.String(), "err", err)
		return int64(stats), nil
	}
	return int64(float64(n) * 100 / pct), nil
}

// samplePages is about how many pages tableRows reads of a table without
// statistics: enough for an estimate within a few percent of a table whose
// rows are about alike, a few hundred kilobytes read.
const samplePages = 100

// splitBounds cuts a large table whose first key column is an integer
// into up to snapshot.workers parts of equal key width, so that several
// workers read it at once; it returns the boundaries between the parts,
// or nil to read the table as one. estimate is the rows the snapshot
// reads of the table: for a table the publication filters rows of, those
// the filter lets through, whose key range is the one cut (over the
// whole table's, a selective filter's rows would fall in one part). The
// first and the last part are open, so the bounds, read outside the
// snapshot, cover every row of it. A partitioned table is cut like an
// ordinary one: each part reads its key range across the partitions.
func (s *Source) splitBounds(ctx context.Context, conn *pgx.Conn, rel *relation, estimate int64) ([]string, error) {
	parts := min(int64(s.set.workers), estimate/int64(2*s.set.chunkSize))
	if parts < 2 || len(rel.keyIdx) == 0 {
		return nil, nil
	}
	switch rel.columns[rel.keyIdx[0]].typ.kind {
	case kindInt16, kindInt32, kindInt64:
	default:
		return nil, nil
	}
	col := pgx.Identifier{rel.columns[rel.keyIdx[0]].name}.Sanitize()
	var lo, hi *string
	sql := "SELECT min(" + col + ")::text, max(" + col + ")::text FROM " + rel.ref.quoted()
	if rel.filter != "" {
		sql += " WHERE (" + rel.filter + ")" // the publication's row filter, as readUnit reads
	}
	if err := conn.QueryRow(ctx, sql).Scan(&lo, &hi); err != nil {
		return nil, fmt.Errorf("read the key range of %s: %w", rel.ref, err)
	}
	if lo == nil || hi == nil {
		return nil, nil
	}
	return splitRange(*lo, *hi, int(parts)), nil
}

// splitRange returns the boundaries that cut the integers lo..hi into
// parts of equal width, without repeats; nil when there is nothing to cut.
func splitRange(lo, hi string, parts int) []string {
	l, ok1 := new(big.Int).SetString(lo, 10)
	h, ok2 := new(big.Int).SetString(hi, 10)
	if !ok1 || !ok2 || parts < 2 {
		return nil
	}
	width := new(big.Int).Sub(h, l)
	width.Add(width, big.NewInt(1))
	var out []string
	for i := 1; i < parts; i++ {
		b := new(big.Int).Mul(width, big.NewInt(int64(i)))
		b.Quo(b, big.NewInt(int64(parts)))
		b.Add(b, l)
		if b.Cmp(l) <= 0 || b.Cmp(h) > 0 {
			continue
		}
		if bs := b.String(); len(out) == 0 || out[len(out)-1] != bs {
			out = append(out, bs)
		}
	}
	return out
}

// filteredRows estimates the rows of rel its publication's row filter lets
// through, as the planner does (EXPLAIN, nothing read): from the table's
// statistics, so about as good as reltuples for a simple filter.
func filteredRows(ctx context.Context, conn *pgx.Conn, rel *relation) (int64, error) {
	var plan []byte
	if err := conn.QueryRow(ctx, "EXPLAIN (FORMAT JSON) SELECT FROM "+rel.ref.quoted()+" WHERE ("+rel.filter+")").Scan(&plan); err != nil {
		return 0, err
	}
	var out []struct {
		Plan struct {
			Rows float64 `json:"Plan Rows"`
		}
	}
	if err := json.Unmarshal(plan, &out); err != nil || len(out) != 1 {
		return 0, fmt.Errorf("unexpected plan %.200s: %v", plan, err)
	}
	return int64(max(out[0].Plan.Rows, 0)), nil
}

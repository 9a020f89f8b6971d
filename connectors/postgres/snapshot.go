package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
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

// chunk is a run of rows of one table, in key order.
type chunk struct {
	table   string
	recs    []connect.Record
	first   *connect.ChangeEvent // the event of recs[0]
	last    *connect.ChangeEvent // the event of recs[len-1]
	rel     *relation
	lastKey []string // the key of the last row, as text; nil for tables without a key
	done    bool     // the table's last chunk
}

// snapTable is a table to snapshot.
type snapTable struct {
	rel   *relation
	after []string // resume after this key (text), nil from the start
}

func (s *Source) snapshot(ctx context.Context, cat *catalog, enc *encoder) error {
	prog := &progress{Last: map[string][]string{}}
	if s.plan.resume != nil {
		prog = s.plan.resume.clone()
		if prog.Last == nil {
			prog.Last = map[string][]string{}
		}
	}
	var todo []*snapTable
	for _, t := range s.plan.tables {
		if prog.isDone(t.String()) {
			continue
		}
		cols, ident, err := cat.tableColumns(ctx, t)
		if err != nil {
			return err
		}
		rel, err := cat.relation(ctx, t, cols, ident)
		if err != nil {
			return err
		}
		st := &snapTable{rel: rel}
		if len(rel.keyIdx) > 0 {
			st.after = prog.Last[t.String()]
		}
		todo = append(todo, st)
	}
	s.log.Info("postgres: snapshot", "tables", len(todo), "resumed", s.plan.resume != nil, "workers", s.set.workers)
	if len(todo) == 0 {
		return nil
	}

	// The snapshot every worker imports.
	name := s.plan.snapshotName
	if name == "" {
		exp, err := connectSQL(ctx, s.set.dsn)
		if err != nil {
			return err
		}
		defer exp.Close(context.Background())
		if _, err := exp.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
			return fmt.Errorf("begin the snapshot transaction: %w", err)
		}
		if err := exp.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&name); err != nil {
			return fmt.Errorf("export a snapshot: %w", err)
		}
	}

	wctx, stopWorkers := context.WithCancel(ctx)
	defer stopWorkers()
	g, gctx := errgroup.WithContext(wctx)
	work := make(chan *snapTable, len(todo))
	for _, t := range todo {
		work <- t
	}
	close(work)
	chunks := make(chan *chunk, s.set.workers)
	started := time.Now()
	var estimates sync.Map
	for i := 0; i < min(s.set.workers, len(todo)); i++ {
		g.Go(func() error {
			return s.snapshotWorker(gctx, enc, name, started, work, chunks, &estimates)
		})
	}
	var werr error
	waited := make(chan struct{})
	go func() {
		werr = g.Wait()
		close(chunks)
		close(waited)
	}()
	held, err := s.emitChunks(ctx, chunks, prog, enc, &estimates)
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
	s.log.Info("postgres: snapshot done", "tables", len(todo), "took", time.Since(started).Round(time.Millisecond))
	return nil
}

// emitChunks hands the chunks to Read in arrival order, giving each
// chunk's last record the progress so far. It holds one chunk back, so
// that the snapshot's last record can be marked "last" and carry the
// position where streaming starts.
func (s *Source) emitChunks(ctx context.Context, chunks <-chan *chunk, prog *progress, enc *encoder, estimates *sync.Map) (*chunk, error) {
	var held *chunk
	first := true
	rows := map[string]int64{}
	nextLog := time.Now().Add(10 * time.Second)
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
		rows[c.table] += int64(len(c.recs))
		if c.done {
			delete(prog.Last, c.table)
			prog.Done = append(prog.Done, c.table)
		} else if c.lastKey != nil {
			prog.Last[c.table] = c.lastKey
		}
		if len(c.recs) == 0 {
			continue
		}
		if first {
			first = false
			c.first.Source.Snapshot = connect.SnapshotFirst
			r, err := enc.record(c.rel, c.first)
			if err != nil {
				return nil, err
			}
			c.recs[0].Key, c.recs[0].Value = r.Key, r.Value
		}
		c.recs[len(c.recs)-1].Position = position{LSN: uint64(s.plan.startLSN), Snapshot: prog.clone()}.encode()
		if held != nil {
			if err := s.push(ctx, held.recs, nil); err != nil {
				return nil, err
			}
		}
		held = c
		if time.Now().After(nextLog) {
			nextLog = time.Now().Add(10 * time.Second)
			for t, n := range rows {
				est, _ := estimates.Load(t)
				s.log.Info("postgres: snapshot progress", "table", t, "rows", n, "estimate", est)
			}
		}
	}
	return held, nil
}

// finishSnapshot hands over the snapshot's last chunk, its last record
// marked "last" and carrying the position where streaming starts.
func (s *Source) finishSnapshot(ctx context.Context, held *chunk, enc *encoder) error {
	if held == nil {
		return nil
	}
	last := len(held.recs) - 1
	if held.last.Source.Snapshot != connect.SnapshotFirst {
		held.last.Source.Snapshot = connect.SnapshotLast
		r, err := enc.record(held.rel, held.last)
		if err != nil {
			return err
		}
		held.recs[last].Key, held.recs[last].Value = r.Key, r.Value
	}
	held.recs[last].Position = position{LSN: uint64(s.plan.startLSN)}.encode()
	return s.push(ctx, held.recs, nil)
}

// snapshotWorker reads tables from work on its own connection, inside a
// transaction on the shared snapshot.
func (s *Source) snapshotWorker(ctx context.Context, enc *encoder, snapshot string, started time.Time, work <-chan *snapTable, chunks chan<- *chunk, estimates *sync.Map) error {
	conn, err := connectSQL(ctx, s.set.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"); err != nil {
		return fmt.Errorf("begin the snapshot transaction: %w", err)
	}
	if _, err := conn.Exec(ctx, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapshot, "'", "''")+"'"); err != nil {
		return fmt.Errorf("import snapshot %s: %w", snapshot, err)
	}
	for t := range work {
		var est float64
		if err := conn.QueryRow(ctx, "SELECT reltuples FROM pg_class WHERE oid = $1::regclass", t.rel.ref.quoted()).Scan(&est); err == nil {
			estimates.Store(t.rel.ref.String(), int64(max(est, 0)))
		}
		if err := s.readTable(ctx, conn, enc, t, started, chunks); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, "COMMIT")
	return err
}

// readTable reads one table in key order (after t.after when resuming),
// sending chunks of snapshot.chunk.size rows.
func (s *Source) readTable(ctx context.Context, conn *pgx.Conn, enc *encoder, t *snapTable, started time.Time, chunks chan<- *chunk) error {
	rel := t.rel
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
	if len(t.after) > 0 && len(t.after) == len(keys) {
		ph := make([]string, len(keys))
		for i := range keys {
			ph[i] = fmt.Sprintf("$%d", i+1)
			params = append(params, []byte(t.after[i]))
		}
		sql += " WHERE (" + strings.Join(keys, ", ") + ") > (" + strings.Join(ph, ", ") + ")"
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
	c := &chunk{table: name, rel: rel}
	for rr.NextRow() {
		vals := rr.Values()
		row := make(connect.Row, len(rel.columns))
		for i := range rel.columns {
			col := &rel.columns[i]
			row[i].Name = col.name
			if vals[i] == nil {
				continue
			}
			v, err := enc.mapper.decode(col.typ, col.effTypmod(), string(vals[i]))
			if err != nil {
				s.log.Warn("postgres: value not understood, written as null", "table", name, "column", col.name, "type", col.typ.name, "err", err)
			}
			row[i].Value = v
		}
		ev := &connect.ChangeEvent{Op: connect.OpRead, Key: rel.key(row), After: row,
			Source: enc.source(rel, connect.SnapshotTrue, started, 0, uint64(s.plan.startLSN), uint64(s.plan.startLSN))}
		ev.SetTime(time.Now())
		rec, err := enc.record(rel, ev)
		if err != nil {
			rr.Close()
			return err
		}
		if len(c.recs) == 0 {
			c.first = ev
		}
		c.last = ev
		c.recs = append(c.recs, rec)
		if len(c.recs) >= s.set.chunkSize {
			if len(rel.keyIdx) > 0 {
				c.lastKey = make([]string, len(rel.keyIdx))
				for i, k := range rel.keyIdx {
					c.lastKey[i] = string(vals[k])
				}
			}
			if err := send(c); err != nil {
				rr.Close()
				return err
			}
			c = &chunk{table: name, rel: rel}
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("snapshot of %s: %w", name, err)
	}
	c.done = true
	return send(c)
}

package mysql

import (
	"bytes"
	"context"
	"reflect"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// The streamer keeps the binlog in order on one goroutine and leaves the
// costly part of a change — mapping go-mysql's values, building the
// Debezium event, encoding it as JSON — to a few encoder goroutines:
//
//	streamer ──batch──▶ jobs ──▶ encoder goroutines (any order)
//	         └─────────▶ order ──▶ collector: waits for each batch in turn, hands it to Read
//
// A batch is a slice of items; each item is either a record encoded
// already (heartbeats, transaction records) or one change to encode. The
// order channel holds at most stageDepth batches, so a slow Read stops
// the streamer rather than letting records pile up.

// stageDepth is the most batches between the streamer and Read.
const stageDepth = 4

// smallBatch is the largest batch the streamer encodes itself when the
// stage is empty.
const smallBatch = 16

// item is one entry of a batch: a record, or a change to encode into one
// or more records (a delete and its tombstone; a key change's delete,
// tombstone and create). It holds pointers only: batches of items are
// appended to and copied for every change, and most items are changes.
type item struct {
	rec *connect.Record // used when ch is nil
	ch  *change
}

// recordItem is an item of a record encoded already.
func recordItem(rec connect.Record) item { return item{rec: &rec} }

// change is a row change as it left the binlog, with everything that
// depends on the stream's order already decided. One is allocated per
// change (from slabs, rawevents.go): it is kept small, and what is rare
// (go-mysql's values, the position) sits behind pointers.
type change struct {
	t         *table
	kind      rowsKind // rowsInsert, rowsUpdate, rowsDelete: the op
	keyChange bool     // an update that changed the key
	// The images as the binlog has them (rowsdec.go): before for updates
	// and deletes, after for inserts and updates.
	spec                *rowSpec
	rawBefore, rawAfter rowImage
	// Or, when spec is nil, go-mysql's values.
	parsed *parsedRow
	si     srcInfo
	now    int64 // when the streamer handled the row event, Unix ns
	tx     *connect.Transaction
	txNext *connect.Transaction // a key change's create
	pos    *connect.Position    // set on the change's last record; nil for none
	slab   *slab                // the slab c belongs to; nil for none
}

// parsedRow is a change's row images as go-mysql's parser decodes them,
// nil when absent, with the column bitmaps of their rows event (nil for
// all columns): a column an image leaves out is nil in it.
type parsedRow struct {
	before, after               []any
	presentBefore, presentAfter []byte
}

// op returns the Debezium op of a rows event's changes.
func (k rowsKind) op() connect.Op {
	switch k {
	case rowsInsert:
		return connect.OpCreate
	case rowsUpdate:
		return connect.OpUpdate
	}
	return connect.OpDelete
}

// position returns the position the change's last record carries, nil
// for none.
func (c *change) position() connect.Position {
	if c.pos == nil {
		return nil
	}
	return *c.pos
}

// encJob is one batch on its way through the stage.
type encJob struct {
	items []item
	recs  []connect.Record
	err   error
	done  chan struct{}
}

// encodeStage runs the encoder goroutines and the collector. The
// streamer is the only sender; run stops when its channels are closed
// (close) or ctx ends.
type encodeStage struct {
	st       *streamer
	jobs     chan *encJob
	order    chan *encJob
	inflight atomic.Int32 // batches sent and not yet handed to Read
	workers  int
}

func newEncodeStage(st *streamer) *encodeStage {
	w := min(max(runtime.GOMAXPROCS(0), 1), 4)
	return &encodeStage{st: st, jobs: make(chan *encJob, stageDepth+w), order: make(chan *encJob, stageDepth), workers: w}
}

// run starts the encoder goroutines and runs the collector until the
// order channel is closed and drained, or an error.
func (e *encodeStage) run(ctx context.Context) error {
	done := make(chan struct{})
	for range e.workers {
		go func() {
			defer func() { done <- struct{}{} }()
			var a scratch
			for j := range e.jobs {
				j.recs, j.err = e.st.encodeItems(&a, j.items)
				if j.err == nil {
					e.st.recycle(j.items)
				}
				j.items = nil
				close(j.done)
			}
		}()
	}
	err := e.collect(ctx)
	// The streamer closes jobs when it stops; wait for the encoders.
	for range e.workers {
		<-done
	}
	return err
}

func (e *encodeStage) collect(ctx context.Context) error {
	for j := range e.order {
		select {
		case <-j.done:
		case <-ctx.Done():
			e.drain()
			return ctx.Err()
		}
		if j.err != nil {
			e.drain()
			return j.err
		}
		if err := e.st.src.push(ctx, j.recs); err != nil {
			e.drain()
			return err
		}
		e.inflight.Add(-1)
	}
	return nil
}

// drain empties the order channel after an error, so that the streamer
// never waits on it.
func (e *encodeStage) drain() {
	for range e.order {
	}
}

// send queues a batch.
func (e *encodeStage) send(ctx context.Context, items []item) error {
	j := &encJob{items: items, done: make(chan struct{})}
	e.inflight.Add(1)
	select {
	case e.order <- j:
	case <-ctx.Done():
		return ctx.Err()
	}
	e.jobs <- j // never blocks: it holds what order holds plus one per encoder
	return nil
}

// busy reports whether batches are waiting to be encoded or read.
func (e *encodeStage) busy() bool {
	return e.inflight.Load() > 0 || len(e.st.src.out) > 0
}

// close tells the stage that no more batches come.
func (e *encodeStage) close() {
	close(e.order)
	close(e.jobs)
}

// scratch is an encoder goroutine's reusable memory: the rows, key and
// event a change maps to live only until its records are written; the
// records' bytes come from blocks shared by many records.
type scratch struct {
	blk           connect.Blocks
	before, after connect.Row
	key           connect.Row
	src           sourceBox
	ev            connect.ChangeEvent
}

// encodeItems turns a batch into records. It runs on encoder goroutines:
// it reads the streamer's settings and tables, never its state.
func (st *streamer) encodeItems(a *scratch, items []item) ([]connect.Record, error) {
	out := make([]connect.Record, 0, st.recordCount(items))
	for i := range items {
		it := &items[i]
		if it.ch == nil {
			out = append(out, *it.rec)
			continue
		}
		var err error
		if out, err = st.encodeChange(a, out, it.ch); err != nil {
			return nil, err
		}
		st.encoded(it.ch)
	}
	return out, nil
}

// recordCount returns the most records items encode to (a slice of
// records is 176 bytes a record: sized to fit, not grown or padded).
func (st *streamer) recordCount(items []item) int {
	n := len(items)
	tomb := 0
	if st.src.set.tombstones {
		tomb = 1
	}
	for i := range items {
		switch c := items[i].ch; {
		case c == nil:
		case c.keyChange:
			n += 1 + tomb
		case c.kind == rowsDelete:
			n += tomb
		}
	}
	return n
}

// encodeChange appends the records of one change.
func (st *streamer) encodeChange(a *scratch, out []connect.Record, c *change) ([]connect.Record, error) {
	var before, after connect.Row
	if c.spec != nil {
		if c.kind != rowsInsert {
			a.before = st.rawRow(a.before, c.t, c.spec, c.rawBefore)
			before = a.before
		}
		if c.kind != rowsDelete {
			a.after = st.rawRow(a.after, c.t, c.spec, c.rawAfter)
			after = a.after
		}
	} else {
		if c.parsed.before != nil {
			a.before = st.row(a.before, c.t, c.parsed.before)
			before = a.before
		}
		if c.parsed.after != nil {
			a.after = st.row(a.after, c.t, c.parsed.after)
			after = a.after
		}
	}
	// Columns a NOBLOB image left out (noblob.go; the streamer let no
	// other column be left out): the placeholder, and the header naming
	// those of the after image.
	presentBefore, presentAfter := c.rawBefore.present, c.rawAfter.present
	if c.spec == nil {
		presentBefore, presentAfter = c.parsed.presentBefore, c.parsed.presentAfter
	}
	m := st.enc.mapper
	if before != nil {
		m.fillLeftOut(c.t, before, presentBefore, nil)
	}
	var unavailable []string
	if after != nil {
		unavailable = m.fillLeftOut(c.t, after, presentAfter, nil)
	}
	tombstones := st.src.set.tombstones
	if c.keyChange {
		// A key change: a delete of the old key (header
		// __debezium.newkey), its tombstone, and a create of the new key
		// (header __debezium.oldkey), as Debezium writes them. As in
		// Debezium, skipped.operations sees the two events: d leaves out
		// the delete and its tombstone, c the create; the header of the
		// one emitted still names the other's key. (The streamer drops a
		// key change whose two events are both skipped.)
		skipDel, skipCre := st.src.set.skipped.Skips(connect.OpDelete), st.src.set.skipped.Skips(connect.OpCreate)
		del, err := st.encodeEvent(a, c, connect.OpDelete, before, nil, c.tx)
		if err != nil {
			return nil, err
		}
		cre, err := st.encodeEvent(a, c, connect.OpCreate, nil, after, c.txNext)
		if err != nil {
			return nil, err
		}
		del.Headers = append(del.Headers, connect.Header{Key: "__debezium.newkey", Value: cre.Key})
		cre.Headers = append(cre.Headers, connect.Header{Key: "__debezium.oldkey", Value: del.Key})
		if len(unavailable) > 0 {
			cre.Headers = append(cre.Headers, connect.UnavailableColumns(unavailable))
		}
		n := len(out)
		if !skipDel {
			out = append(out, del)
			if tombstones {
				out = append(out, connect.Tombstone(del))
			}
		}
		if !skipCre {
			out = append(out, cre)
		}
		if len(out) > n {
			out[len(out)-1].Position = c.position()
		}
		return out, nil
	}
	rec, err := st.encodeEvent(a, c, c.kind.op(), before, after, c.tx)
	if err != nil {
		return nil, err
	}
	if len(unavailable) > 0 {
		rec.Headers = append(rec.Headers, connect.UnavailableColumns(unavailable))
	}
	if c.kind == rowsDelete && tombstones && rec.Key != nil {
		out = append(out, rec)
		tomb := connect.Tombstone(rec)
		tomb.Position = c.position()
		return append(out, tomb), nil
	}
	rec.Position = c.position()
	return append(out, rec), nil
}

// encodeEvent encodes one change event, built in a's memory.
func (st *streamer) encodeEvent(a *scratch, c *change, op connect.Op, before, after connect.Row, tx *connect.Transaction) (connect.Record, error) {
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	a.key = c.t.keyInto(a.key[:0], keyRow)
	a.ev = connect.ChangeEvent{Op: op, Key: a.key, Before: before, After: after, Source: st.enc.sourceIn(&a.src, c.t, &c.si), Transaction: tx}
	a.ev.SetTime(time.Unix(0, c.now))
	return st.enc.recordIn(&a.blk, c.t, &a.ev)
}

// sameKey reports whether two row images of t, as go-mysql decodes them,
// have the same key: byte for byte, as the key's records would be.
func sameKey(t *table, a, b []any) bool {
	for _, i := range t.def.Key {
		if i >= len(a) || i >= len(b) || !sameValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameValue compares two values as go-mysql decodes them: numbers, strings
// and byte slices.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case nil, int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, float32, float64, string:
		if _, ok := b.([]byte); ok {
			return false
		}
		return a == b
	}
	return reflect.DeepEqual(a, b)
}

package iceberg

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/tributary-io/tributary/connect"
)

// tp is a topic-partition of the log.
type tp struct {
	topic     string
	partition int32
}

// origin returns where r was read from the log: its topic-partition and
// offset before the sink's transforms (connect.Record.Original). The
// sink's exactly-once bookkeeping (what it buffered, what a table's
// snapshots hold) is keyed on it, never on the record's Topic, Partition
// and Offset: a route that merges two topics into one gives records of
// both the same coordinates, and keyed on those the second topic's
// records were skipped as already written.
func origin(r *connect.Record) (tp, int64) {
	topic, partition, offset := r.Original()
	return tp{topic, partition}, offset
}

// column is one column of a table as the sink knows it: the table's
// columns plus those that buffered rows add.
type column struct {
	name     string
	typ      ib.Type
	required bool
	id       int  // the field ID in the table; 0 until the column is added
	widen    bool // typ is wider than the table's: a type update is pending
}

// tableWriter buffers the rows of one Iceberg table and commits them.
type tableWriter struct {
	o     *options
	cat   catalog.Catalog
	ident table.Identifier
	name  string
	tbl   *table.Table // nil until the table is created

	cols  []column
	index map[string]int // column name → position in cols
	key   []int          // positions of the key columns (upsert mode)

	// Buffered rows. Append mode: every row. Upsert mode: the last state of
	// each key (byKey) and whether it is live (deleted rows keep their key).
	rows  [][]any
	keys  [][]any
	live  []bool
	byKey map[string]int

	// The offsets below are those of the records as read from the log
	// (origin), not as the sink's transforms left them.
	committed map[tp]int64 // the highest offset per topic-partition in the table
	skipped   map[tp]bool  // partitions whose records the table held: warned of once
	nskipped  int64        // records skipped because the table held them
	pending   map[tp]int64 // the highest buffered offset
	first     map[tp]int64 // the lowest buffered offset
	count     int          // buffered records
	// truncated says that a truncate event is buffered (upsert mode): the
	// commit deletes every row of the table before it adds the rows
	// buffered after the event.
	truncated bool
	nulled    map[string]bool // columns warned of a value written as null

	lastExpiry  time.Time // when this task last expired the table's snapshots; zero before its first commit
	lastCompact time.Time // when this task last compacted the table; zero before its first commit
}

// loadTable loads the table, or prepares to create it on the first commit.
func loadTable(ctx context.Context, o *options, cat catalog.Catalog, name string) (*tableWriter, error) {
	ident := catalog.ToIdentifier(strings.Split(name, ".")...)
	if len(ident) < 2 || slices.Contains(ident, "") {
		return nil, connect.BadRecord(fmt.Errorf("table name %q (from the table template %q) needs a namespace and a table, e.g. db.events", name, o.template))
	}
	w := &tableWriter{o: o, cat: cat, ident: ident, name: name, index: map[string]int{},
		committed: map[tp]int64{}, skipped: map[tp]bool{}, pending: map[tp]int64{}, first: map[tp]int64{}, byKey: map[string]int{}}
	tbl, err := cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable), errors.Is(err, catalog.ErrNoSuchNamespace):
		return w, nil
	case err != nil:
		return nil, connect.Retryable(fmt.Errorf("load table %s: %w", name, err))
	}
	if err := w.adopt(tbl); err != nil {
		return nil, err
	}
	w.committed = committedOffsets(tbl.Metadata(), o.offsetsKey)
	if !o.offsetsFromTbl && len(w.committed) > 0 {
		o.log.Warn("iceberg sink: offsets.from.table is false: records the table already holds are written again (append mode adds their rows a second time); set it back to true once they are",
			"table", name, "table_offsets", encodeOffsets(w.committed))
	}
	return w, nil
}

// skip says whether the table already holds r (its offset is at or below
// the one the table's snapshots store for r's partition, and
// offsets.from.table is on); the first record skipped of each partition
// is logged as a warning.
func (w *tableWriter) skip(r *connect.Record) bool {
	if !w.o.offsetsFromTbl {
		return false
	}
	k, at := origin(r)
	off, ok := w.committed[k]
	if !ok || at > off {
		return false
	}
	w.nskipped++
	if !w.skipped[k] {
		w.skipped[k] = true
		w.o.log.Warn(fmt.Sprintf("iceberg sink: skipping offsets %d to %d of %s/%d: table %s already holds them (snapshot summary %s); "+
			"resetting the sink's offsets does not write them again: to reprocess them set offsets.from.table: false for that run, or write to another table",
			at, off, k.topic, k.partition, w.name, w.o.offsetsKey),
			"table", w.name, "topic", k.topic, "partition", k.partition, "from", at, "to", off)
	}
	return true
}

// adopt takes the columns of an existing table.
func (w *tableWriter) adopt(tbl *table.Table) error {
	w.tbl = tbl
	sc := tbl.Schema()
	for _, f := range sc.Fields() {
		if i, ok := w.index[f.Name]; ok {
			w.cols[i].id, w.cols[i].typ, w.cols[i].required, w.cols[i].widen = f.ID, f.Type, f.Required, false
			continue
		}
		w.index[f.Name] = len(w.cols)
		w.cols = append(w.cols, column{name: f.Name, typ: f.Type, required: f.Required, id: f.ID})
	}
	if w.o.mode != modeUpsert {
		return nil
	}
	var idNames []string
	for _, id := range sc.IdentifierFieldIDs {
		n, _ := sc.FindColumnName(id)
		idNames = append(idNames, n)
	}
	if len(w.o.keyColumns) > 0 && len(idNames) > 0 && !slices.Equal(sortedCopy(idNames), sortedCopy(w.o.keyColumns)) {
		return fmt.Errorf("table %s has identifier fields %v, but key.columns is %v: they must match for upsert", w.name, idNames, w.o.keyColumns)
	}
	if len(idNames) > 0 {
		w.setKey(idNames)
	}
	return nil
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func (w *tableWriter) setKey(names []string) {
	w.key = w.key[:0]
	for _, n := range names {
		w.key = append(w.key, w.index[n])
	}
}

// committedOffsets reads the offsets the sink stored in the summaries of
// the current snapshot and its ancestors: per topic-partition the highest.
// The topic-partitions are those the records were read from (origin).
// Summaries written before the sink keyed them so hold the topic a
// sink-side transform gave the records instead; that is the same topic
// unless a transform changed it, and otherwise an entry no record
// matches: its records are written again (at least once), never skipped
// for another topic's offset.
//
// A snapshot seen before ends the walk: metadata whose parents form a cycle
// (a broken or hand-edited table; iceberg-go accepts it) would otherwise
// loop forever.
func committedOffsets(meta table.Metadata, key string) map[tp]int64 {
	out := map[tp]int64{}
	seen := map[int64]bool{}
	for snap := meta.CurrentSnapshot(); snap != nil && !seen[snap.SnapshotID]; {
		seen[snap.SnapshotID] = true
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[key]; ok {
				var m map[string]map[string]int64
				if json.Unmarshal([]byte(v), &m) == nil {
					for topic, parts := range m {
						for p, off := range parts {
							n, err := strconv.ParseInt(p, 10, 32)
							if err != nil {
								continue
							}
							k := tp{topic, int32(n)}
							if cur, ok := out[k]; !ok || off > cur {
								out[k] = off
							}
						}
					}
				}
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return out
}

// encodeOffsets writes offsets as the summary property's JSON:
// {"topic":{"partition":offset}}.
func encodeOffsets(m map[tp]int64) string {
	out := map[string]map[string]int64{}
	for k, off := range m {
		if out[k.topic] == nil {
			out[k.topic] = map[string]int64{}
		}
		out[k.topic][strconv.Itoa(int(k.partition))] = off
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// fieldValue is a value of a record for one column.
type fieldValue struct {
	name   string
	value  any
	schema *connect.Schema // the value's Connect schema, when known
	typ    ib.Type         // the type the value asks for; nil for a null of unknown type
	strict bool            // typed by a schema: the column must have its type, or one it promotes to
}

// change is a schema change a record asks for.
type change struct {
	name string
	typ  ib.Type
	add  bool // a new column; else a widening
}

// add buffers one record. Errors that are the record's fault are BadRecord.
func (w *tableWriter) add(ctx context.Context, r *connect.Record, ev *event) error {
	if w.skip(r) {
		return nil // committed before a restart: exactly once
	}
	upsert := w.o.mode == modeUpsert
	if ev.tombstone {
		if !upsert || (w.tbl == nil && w.count == 0) || len(ev.key) == 0 {
			return nil
		}
	}
	if upsert && ev.op == connect.OpTruncate {
		// Every row goes: the buffered ones now, the table's in the
		// commit's snapshot, before the rows buffered after this event.
		if w.tbl == nil && w.count == 0 {
			return nil // no table, no rows: nothing to remove
		}
		w.rows, w.keys, w.live = nil, nil, nil
		clear(w.byKey)
		w.truncated = true
		w.buffered(r)
		w.count++
		return nil
	}
	if !upsert && ev.tombstone {
		return nil
	}

	values, err := w.recordValues(r, ev)
	if err != nil {
		return connect.BadRecord(err)
	}
	var changes []change
	row := make([]any, len(w.cols), len(w.cols)+4)
	staged := map[string]int{} // new columns of this record → position in row
	// Columns whose unchanged TOASTed value the update did not carry
	// (the placeholder, or named in the source's header): they keep the
	// key's previous value.
	var unchanged []int
	liveRow := !(ev.op == connect.OpDelete || ev.tombstone)
	var listed []string
	if h, ok := r.Header(connect.UnavailableColumnsHeader); ok && upsert && liveRow {
		if listed, err = connect.ParseUnavailableColumns(h); err != nil {
			return connect.BadRecord(err)
		}
	}
	for _, fv := range values {
		i, exists := w.index[fv.name]
		if upsert && liveRow {
			var t ib.Type
			if exists {
				t = w.cols[i].typ
			}
			if slices.Contains(listed, fv.name) || w.o.unavailable.is(fv.value, t) {
				if !exists {
					return w.unchangedError(fv.name, "the table has no such column yet")
				}
				unchanged = append(unchanged, i)
				continue
			}
		}
		if !exists {
			if _, ok := staged[fv.name]; ok {
				return connect.BadRecord(fmt.Errorf("field %q appears twice", fv.name))
			}
			if fv.typ == nil {
				continue // a null of unknown type adds nothing
			}
			v, err := convert(fv.value, fv.schema, fv.typ)
			if errors.Is(err, errNoIcebergValue) && !w.o.pinnedRequired(fv.name) {
				v, err = nil, nil
				w.warnNull(fv.name, fv.typ, fv.value)
			}
			if err != nil {
				return connect.BadRecord(fmt.Errorf("field %q, column %s.%s (%s): %w%s", fv.name, w.name, fv.name, fv.typ, err, noValueFix(err)))
			}
			staged[fv.name] = len(row)
			row = append(row, v)
			changes = append(changes, change{name: fv.name, typ: fv.typ, add: true})
			continue
		}
		col := w.cols[i]
		target := col.typ
		if isFloat(col.typ) && nonFiniteText(fv.value) {
			fv.typ = col.typ // Debezium writes a non-finite real or double as text
		}
		switch {
		case fv.typ == nil, canPromote(fv.typ, col.typ):
		case canPromote(col.typ, fv.typ) && fv.strict:
			target = fv.typ
			changes = append(changes, change{name: fv.name, typ: fv.typ})
		case fv.strict:
			return connect.BadRecord(fmt.Errorf("field %q is %s, but column %s.%s is %s: Iceberg can only widen int to long, float to double and a decimal's precision; change the table or route the record elsewhere", fv.name, fv.typ, w.name, fv.name, col.typ))
		}
		v, err := convert(fv.value, fv.schema, target)
		if errors.Is(err, errNoIcebergValue) && !col.required {
			v, err = nil, nil
			w.warnNull(fv.name, col.typ, fv.value)
		}
		if err != nil {
			return connect.BadRecord(fmt.Errorf("field %q, column %s.%s (%s): %w%s", fv.name, w.name, fv.name, col.typ, err, noValueFix(err)))
		}
		row[i] = v
	}

	// The key.
	var key []any
	var names []string
	if upsert {
		names = w.o.keyColumns
		if len(names) == 0 {
			if len(w.key) > 0 {
				for _, i := range w.key {
					names = append(names, w.cols[i].name)
				}
			} else {
				names = ev.key.Names()
			}
		}
		if len(names) == 0 {
			return connect.BadRecord(errors.New("upsert mode needs a key: the record has no key object, and key.columns is not set"))
		}
		if slices.Contains(names, "") {
			return connect.BadRecord(fmt.Errorf("the record key %v has a field with an empty name, and an Iceberg key column needs one; fix the producer, or set key.columns", names))
		}
		for _, n := range names {
			pos, ok := w.index[n]
			if !ok {
				pos, ok = staged[n]
			}
			var v any
			if ok && pos < len(row) {
				v = row[pos]
			}
			if v == nil {
				// A delete's before may be null: take the key's value.
				if kv, found := ev.key.Get(n); found && kv != nil {
					typ := typeOfValue(kv)
					if ok && pos < len(w.cols) {
						typ = w.cols[pos].typ
					} else if ok {
						typ = changeType(changes, n)
					} else if ev.keySchema != nil {
						if s, found := ev.keySchema.FieldSchema(n); found {
							typ = typeFromConnect(s)
						}
					}
					cv, err := convert(kv, keyFieldSchema(ev, n), typ)
					if err != nil {
						return connect.BadRecord(fmt.Errorf("key field %q: %w", n, err))
					}
					v = cv
					if !ok {
						staged[n] = len(row)
						row = append(row, v)
						changes = append(changes, change{name: n, typ: typ, add: true})
					} else {
						row[pos] = v
					}
				}
			}
			if v == nil {
				return connect.BadRecord(fmt.Errorf("key column %q is missing or null", n))
			}
			if kt := keyType(w, changes, n); kt != nil && isFloat(kt) {
				// Equality deletes cannot use it: every commit would fail.
				return connect.BadRecord(fmt.Errorf("key column %s.%s is %s: Iceberg identifier fields cannot be floating point; pin it with the schema setting (e.g. [%s long] or [%s decimal(18,6)]) or set key.columns", w.name, n, kt, n, n))
			}
			key = append(key, v)
		}
	}

	if upsert && w.tbl != nil {
		if err := w.checkUpsertSpec(names); err != nil {
			return err
		}
	}
	if len(unchanged) > 0 {
		if err := w.keepUnchanged(ctx, row, unchanged, names, key); err != nil {
			return err
		}
	}

	// Required (pinned not null, or key) columns must have a value.
	for i, c := range w.cols {
		if c.required && row[i] == nil && !(upsert && (ev.op == connect.OpDelete || ev.tombstone)) {
			return connect.BadRecord(fmt.Errorf("column %s.%s is required, and the record has no value for it", w.name, c.name))
		}
	}
	if w.tbl != nil && len(changes) > 0 {
		for _, pf := range w.o.partition {
			for _, c := range changes {
				if c.name == pf.source && !c.add {
					return connect.BadRecord(fmt.Errorf("column %s.%s is a partition source and cannot be widened", w.name, c.name))
				}
			}
		}
	}

	// The record is good: apply its schema changes and buffer it.
	for _, c := range changes {
		if c.add {
			w.index[c.name] = len(w.cols)
			w.cols = append(w.cols, column{name: c.name, typ: c.typ, required: w.o.pinnedRequired(c.name)})
		} else {
			i := w.index[c.name]
			w.cols[i].typ, w.cols[i].widen = c.typ, true
		}
	}
	// Staged columns were appended in the order of changes, so positions agree.
	if upsert {
		if len(w.key) == 0 {
			w.setKey(names)
			if w.tbl == nil {
				for _, i := range w.key {
					w.cols[i].required = true
				}
			}
		}
		ks := keyString(key)
		if j, ok := w.byKey[ks]; ok {
			w.rows[j], w.live[j] = row, liveRow
		} else {
			w.byKey[ks] = len(w.rows)
			w.rows = append(w.rows, row)
			w.keys = append(w.keys, key)
			w.live = append(w.live, liveRow)
		}
	} else {
		w.rows = append(w.rows, row)
	}
	w.buffered(r)
	w.count++
	return nil
}

// buffered notes the offset of a buffered record.
func (w *tableWriter) buffered(r *connect.Record) {
	k, off := origin(r)
	w.pending[k] = off
	if _, ok := w.first[k]; !ok {
		w.first[k] = off
	}
}

// warnNull logs, once per column, that a value Iceberg's type cannot
// hold (timestamp infinity, numeric NaN) is written as null.
func (w *tableWriter) warnNull(col string, t ib.Type, v any) {
	if w.nulled[col] {
		return
	}
	if w.nulled == nil {
		w.nulled = map[string]bool{}
	}
	w.nulled[col] = true
	w.o.log.Warn(fmt.Sprintf("iceberg sink: column %s.%s (%s): %q has no Iceberg %s value; written as null, as every such value of this column (logged once per column)", w.name, col, t, v, t),
		"table", w.name, "column", col, "value", v)
}

// noValueFix is what an error's message adds for a required column given a
// value Iceberg cannot hold.
func noValueFix(err error) string {
	if !errors.Is(err, errNoIcebergValue) {
		return ""
	}
	return "; the column is required (a key column, or not null in the schema setting), so null cannot stand in for it: " +
		"change the value at the source, or make the column optional"
}

func isFloat(t ib.Type) bool {
	switch t.(type) {
	case ib.Float32Type, ib.Float64Type:
		return true
	}
	return false
}

// keyType is the type of key column name: the table's (or the buffered
// rows') column, else the one the record adds.
func keyType(w *tableWriter, changes []change, name string) ib.Type {
	if t := changeType(changes, name); t != nil {
		return t
	}
	if i, ok := w.index[name]; ok {
		return w.cols[i].typ
	}
	return nil
}

func changeType(changes []change, name string) ib.Type {
	for _, c := range changes {
		if c.name == name {
			return c.typ
		}
	}
	return nil
}

func keyFieldSchema(ev *event, name string) *connect.Schema {
	if ev.keySchema == nil {
		return nil
	}
	s, _ := ev.keySchema.FieldSchema(name)
	return s
}

// recordValues lists the record's values for the table: its row's fields,
// then the metadata columns.
func (w *tableWriter) recordValues(r *connect.Record, ev *event) ([]fieldValue, error) {
	o := w.o
	out := make([]fieldValue, 0, len(ev.row)+5)
	for i, f := range ev.row {
		if f.Name == "" {
			// Iceberg refuses a column without a name: the table's
			// create or schema update would fail on every commit.
			return nil, fmt.Errorf("field %d of the row has an empty name, and an Iceberg column needs one; fix the producer, or drop such records with a filter transform", i+1)
		}
		fv := fieldValue{name: f.Name, value: f.Value}
		if ev.rowSchema != nil {
			if s, ok := ev.rowSchema.FieldSchema(f.Name); ok {
				fv.schema, fv.typ, fv.strict = s, typeFromConnect(s), true
			}
		}
		if p, ok := o.pinned[f.Name]; ok {
			fv.typ, fv.strict = p.typ, false
		} else if fv.typ == nil {
			fv.typ = typeOfValue(f.Value)
		}
		out = append(out, fv)
	}
	if !o.metadata {
		return out, nil
	}
	for _, n := range o.metaNames {
		if ev.row.Index(n) >= 0 {
			return nil, fmt.Errorf("field %q has the name of a metadata column; set metadata.prefix to another prefix", n)
		}
	}
	var ts any
	if !r.Timestamp.IsZero() {
		ts = r.Timestamp.UnixMicro()
	}
	meta := func(name string, v any, t ib.Type) {
		out = append(out, fieldValue{name: o.prefix + name, value: v, typ: t, strict: true, schema: microSchema})
	}
	meta("topic", r.Topic, ib.PrimitiveTypes.String)
	meta("partition", int64(r.Partition), ib.PrimitiveTypes.Int32)
	meta("offset", r.Offset, ib.PrimitiveTypes.Int64)
	meta("timestamp", ts, ib.PrimitiveTypes.TimestampTz)
	if ev.op != "" {
		meta("op", string(ev.op), ib.PrimitiveTypes.String)
	}
	return out, nil
}

// microSchema marks the metadata timestamp as microseconds.
var microSchema = &connect.Schema{Type: connect.SchemaInt64, Name: connect.LogicalMicroTimestamp}

// commit writes the buffered rows as Parquet data files (and, in upsert
// mode, equality delete files) and commits them with the offsets they
// cover in one snapshot. It creates the table, or evolves its schema,
// first.
func (w *tableWriter) commit(ctx context.Context) error {
	if w.count == 0 {
		return nil
	}
	if err := w.refresh(ctx); err != nil {
		return err
	}
	if err := w.ensureSchema(ctx); err != nil {
		return err
	}
	tbl := w.tbl
	names := make([]string, len(w.cols))
	for i, c := range w.cols {
		names[i] = c.name
	}
	sel, err := tbl.Schema().Select(true, names...)
	if err != nil {
		return fmt.Errorf("table %s: %w", w.name, err)
	}
	asc, err := table.SchemaToArrowSchema(sel, nil, true, false)
	if err != nil {
		return fmt.Errorf("table %s: arrow schema: %w", w.name, err)
	}
	// Select keeps the table's column order; map it to ours.
	order := make([]int, asc.NumFields())
	for i, f := range asc.Fields() {
		order[i] = w.index[f.Name]
	}

	var files []ib.DataFile
	nrows := 0
	for i := range w.rows {
		if w.live == nil || w.live[i] {
			nrows++
		}
	}
	if nrows > 0 {
		batches := w.batches(asc, order, func(i int) bool { return w.live == nil || w.live[i] }, w.rows)
		for df, err := range table.WriteRecords(ctx, tbl, asc, batches, table.WithTargetFileSize(w.o.targetFileSize)) {
			if err != nil {
				return fmt.Errorf("write data files of table %s: %w", w.name, err)
			}
			files = append(files, df)
		}
	}
	offsets := maps.Clone(w.committed)
	for k, off := range w.pending {
		if cur, ok := offsets[k]; !ok || off > cur {
			offsets[k] = off
		}
	}
	props := ib.Properties{w.o.offsetsKey: encodeOffsets(offsets)}
	tx := tbl.NewTransaction()
	truncate := w.truncated && tbl.CurrentSnapshot() != nil
	if truncate {
		// Drops every data file of the table (copy-on-write, the default
		// write.delete.mode) in a snapshot of its own, committed with the
		// one below in one catalog commit. Equality delete files stay:
		// they only apply to data files of earlier snapshots, and
		// compaction drops them.
		if err := tx.Delete(ctx, ib.AlwaysTrue{}, props); err != nil {
			return fmt.Errorf("truncate table %s: %w", w.name, err)
		}
	}
	var deletes []ib.DataFile
	if w.o.mode == modeUpsert && len(w.keys) > 0 {
		ids := make([]int, len(w.key))
		knames := make([]string, len(w.key))
		for i, p := range w.key {
			ids[i], knames[i] = w.cols[p].id, w.cols[p].name
		}
		ksel, err := tbl.Schema().Select(true, knames...)
		if err != nil {
			return fmt.Errorf("table %s: %w", w.name, err)
		}
		ksc, err := table.SchemaToArrowSchema(ksel, nil, true, false)
		if err != nil {
			return fmt.Errorf("table %s: arrow schema: %w", w.name, err)
		}
		korder := make([]int, ksc.NumFields())
		for i, f := range ksc.Fields() {
			korder[i] = slices.Index(knames, f.Name)
		}
		if deletes, err = tx.WriteEqualityDeletes(ctx, ids, w.batches(ksc, korder, nil, w.keys)); err != nil {
			return fmt.Errorf("write equality delete files of table %s: %w", w.name, err)
		}
	}
	if len(files) == 0 && len(deletes) == 0 && !truncate {
		w.reset()
		return nil
	}
	if len(files) > 0 || len(deletes) > 0 {
		rd := tx.NewRowDelta(props).AddRows(files...).AddDeletes(deletes...)
		if err := rd.Commit(ctx); err != nil {
			return fmt.Errorf("stage commit of table %s: %w", w.name, err)
		}
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit table %s (%d records): %w", w.name, w.count, err)
	}
	w.tbl = next
	w.committed = offsets
	w.reset()
	return nil
}

// refresh reloads the table before a commit, since another writer may
// have committed to it after this task loaded it: another task of this
// sink (a consumer-group rebalance moves partitions between running tasks
// without restarting them), or an engine's compaction. When the table now
// holds offsets of a partition this task buffered, at or above the first
// one buffered, another task committed those records (it died before the
// group's offset commit, or the partition was taken from this task while
// it buffered them): committing would write them twice, so the commit
// fails and the task restarts to skip them. Otherwise the commit is based
// on the fresh table, so that tasks writing other partitions of one table
// do not make each other's commits fail; a schema changed meanwhile
// still fails it (the buffered values are typed for the schema known).
func (w *tableWriter) refresh(ctx context.Context) error {
	if w.tbl == nil {
		return nil // created by this commit; a concurrent creation fails it
	}
	fresh, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		return fmt.Errorf("commit table %s: reload it first: %w", w.name, err)
	}
	if fresh.MetadataLocation() == w.tbl.MetadataLocation() {
		return nil
	}
	theirs := committedOffsets(fresh.Metadata(), w.o.offsetsKey)
	if w.o.offsetsFromTbl {
		var moved []string
		for k, first := range w.first {
			if off, ok := theirs[k]; ok && off >= first && off > w.committed[k] {
				moved = append(moved, fmt.Sprintf("%s/%d up to %d (buffered from %d)", k.topic, k.partition, off, first))
			}
		}
		if len(moved) > 0 {
			slices.Sort(moved)
			return fmt.Errorf("table %s: another task of this sink committed records this task buffered, of %s (the partition moved between tasks): not committed, so that they are not written twice",
				w.name, strings.Join(moved, ", "))
		}
	}
	if fresh.Schema().ID != w.tbl.Schema().ID {
		return fmt.Errorf("table %s: its schema was changed by another writer since this task loaded it", w.name)
	}
	for k, off := range theirs {
		if cur, ok := w.committed[k]; !ok || off > cur {
			w.committed[k] = off
		}
	}
	w.tbl = fresh
	return nil
}

// expire removes the table's snapshots older than expire.older.than,
// keeping the newest expire.retain.last (the newest always holds the
// offsets this sink resumes from), and the files only they reference. It
// returns how many snapshots it removed.
func (w *tableWriter) expire(ctx context.Context) (int, error) {
	before := len(w.tbl.Metadata().Snapshots())
	tx := w.tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithOlderThan(w.o.expireOlder), table.WithRetainLast(w.o.expireRetain)); err != nil {
		return 0, fmt.Errorf("expire snapshots of table %s: %w", w.name, err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return 0, fmt.Errorf("commit the snapshot expiry of table %s: %w", w.name, err)
	}
	w.tbl = next
	return before - len(next.Metadata().Snapshots()), nil
}

// compact rewrites the table's small data files (below 75% of
// target.file.size, at least compactMinFiles of them in a partition) into
// files of about target.file.size, applying the delete files that touch
// them, and drops the equality delete files that no remaining data file
// needs, in one snapshot that keeps the offsets this sink resumes from. It
// returns how many data files it replaced and wrote.
func (w *tableWriter) compact(ctx context.Context) (removed, added int, err error) {
	if w.tbl == nil || w.tbl.CurrentSnapshot() == nil {
		return 0, 0, nil
	}
	cfg := compaction.DefaultConfig()
	cfg.TargetFileSizeBytes = w.o.targetFileSize
	cfg.MinFileSizeBytes = w.o.targetFileSize * 3 / 4
	cfg.MaxFileSizeBytes = w.o.targetFileSize * 9 / 5
	cfg.MinInputFiles = uint(w.o.compactMinFiles)
	plan, err := compaction.Analyze(ctx, w.tbl, cfg)
	if err != nil {
		return 0, 0, fmt.Errorf("plan the compaction of table %s: %w", w.name, err)
	}
	if len(plan.Groups) == 0 {
		return 0, 0, nil
	}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	rewritten := map[string]struct{}{}
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		for _, t := range g.Tasks {
			rewritten[t.File.FilePath()] = struct{}{}
		}
	}
	fs, err := w.tbl.FS(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("compact table %s: %w", w.name, err)
	}
	dead, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, w.tbl.Metadata(), w.tbl.CurrentSnapshot(), rewritten)
	if err != nil {
		return 0, 0, fmt.Errorf("find the dead equality deletes of table %s: %w", w.name, err)
	}
	res, err := w.tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{
		SnapshotProps:            ib.Properties{w.o.offsetsKey: encodeOffsets(w.committed)},
		ExtraDeleteFilesToRemove: dead,
		GroupOptions:             []table.CompactionGroupOption{table.WithCompactionTargetFileSize(w.o.targetFileSize)},
	})
	if err != nil {
		return 0, 0, fmt.Errorf("compact table %s: %w", w.name, err)
	}
	if res.Table != nil {
		w.tbl = res.Table
	}
	return res.RemovedDataFiles, res.AddedDataFiles, nil
}

func (w *tableWriter) reset() {
	w.rows, w.keys, w.live = nil, nil, nil
	clear(w.byKey)
	clear(w.pending)
	clear(w.first)
	w.count = 0
	w.truncated = false
}

// batchRows is how many rows go into one Arrow record batch.
const batchRows = 1 << 14

// batches yields the rows (those keep accepts; all when keep is nil) as
// Arrow record batches of schema asc, whose field i is column order[i] of
// a row.
func (w *tableWriter) batches(asc *arrow.Schema, order []int, keep func(int) bool, rows [][]any) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
		defer b.Release()
		n := 0
		for i, row := range rows {
			if keep != nil && !keep(i) {
				continue
			}
			for f, c := range order {
				var v any
				if c < len(row) {
					v = row[c]
				}
				if err := appendValue(b.Field(f), v); err != nil {
					yield(nil, fmt.Errorf("table %s, column %s: %w", w.name, asc.Field(f).Name, err))
					return
				}
			}
			if n++; n == batchRows {
				if !yield(b.NewRecordBatch(), nil) {
					return
				}
				n = 0
			}
		}
		if n > 0 {
			yield(b.NewRecordBatch(), nil)
		}
	}
}

// appendValue appends a buffered value to an Arrow builder.
func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.Int32Builder:
		b.Append(int32(v.(int64)))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(float32(v.(float64)))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.LargeStringBuilder:
		b.Append(v.(string))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int64)))
	case *array.Time64Builder:
		b.Append(arrow.Time64(v.(int64)))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Decimal128Builder:
		b.Append(v.(decimal128.Num))
	default:
		return fmt.Errorf("unsupported arrow builder %T", b)
	}
	return nil
}

// ensureSchema creates the table, or adds and widens its columns, so that
// it has every column of the buffered rows.
func (w *tableWriter) ensureSchema(ctx context.Context) error {
	if w.tbl == nil {
		return w.create(ctx)
	}
	var adds, widens []column
	for _, c := range w.cols {
		switch {
		case c.id == 0:
			adds = append(adds, c)
		case c.widen:
			widens = append(widens, c)
		}
	}
	if len(adds) == 0 && len(widens) == 0 {
		return nil
	}
	tx := w.tbl.NewTransaction()
	us := tx.UpdateSchema(true, false)
	for _, c := range adds {
		us.AddColumn([]string{c.name}, c.typ, "", false, nil)
	}
	for _, c := range widens {
		us.UpdateColumn([]string{c.name}, table.ColumnUpdate{FieldType: ib.Optional[ib.Type]{Val: c.typ, Valid: true}})
	}
	if err := us.Commit(); err != nil {
		return fmt.Errorf("evolve the schema of table %s: %w", w.name, err)
	}
	tbl, err := tx.Commit(ctx)
	if err != nil {
		return fmt.Errorf("commit the schema of table %s: %w", w.name, err)
	}
	return w.adopt(tbl)
}

// create creates the table (and its namespace) with the buffered columns,
// the key as identifier fields and the configured partition spec.
func (w *tableWriter) create(ctx context.Context) error {
	ns := catalog.NamespaceFromIdent(w.ident)
	if err := w.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %s: %w", strings.Join(ns, "."), err)
	}
	fields := make([]ib.NestedField, len(w.cols))
	for i, c := range w.cols {
		fields[i] = ib.NestedField{ID: i + 1, Name: c.name, Type: c.typ, Required: c.required}
	}
	var ids []int
	for _, p := range w.key {
		ids = append(ids, p+1)
	}
	sc := ib.NewSchemaWithIdentifiers(0, ids, fields...)
	var popts []ib.PartitionOption
	for _, pf := range w.o.partition {
		if _, ok := w.index[pf.source]; !ok {
			return fmt.Errorf("create table %s: partition source column %q is not among its columns %v; pin it with the schema setting or fix the partition setting", w.name, pf.source, colNames(w.cols))
		}
		if w.o.mode == modeUpsert && !slices.Contains(w.keyNames(), pf.source) {
			return fmt.Errorf("create table %s: in upsert mode, partition by key columns only (%v), not %q: equality deletes must find the row's partition from its key", w.name, w.keyNames(), pf.source)
		}
		popts = append(popts, ib.AddPartitionFieldByName(pf.source, pf.name(), pf.transform, sc, nil))
	}
	spec, err := ib.NewPartitionSpecOpts(popts...)
	if err != nil {
		return fmt.Errorf("create table %s: partition spec: %w", w.name, err)
	}
	props := ib.Properties{
		"format-version":                  "2",
		table.WriteTargetFileSizeBytesKey: strconv.FormatInt(w.o.targetFileSize, 10),
		"write.delete.isolation-level":    "snapshot",
		// Another writer's commit in between (another task, compaction
		// by another engine) is a clean conflict: reload and replay.
		table.CommitNumRetriesKey:         "4",
		"write.parquet.compression-codec": "zstd",
		"tributary.created-by":            w.o.offsetsKey,
	}
	tbl, err := w.cat.CreateTable(ctx, w.ident, sc, catalog.WithPartitionSpec(&spec), catalog.WithProperties(props))
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		// Another writer created it since we looked: start over from it.
		return connect.Retryable(fmt.Errorf("create table %s: it was created by another writer meanwhile; the task restarts to read it", w.name))
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", w.name, err)
	}
	return w.adopt(tbl)
}

// checkUpsertSpec refuses upsert into an existing table partitioned by a
// column that is not a key column: an equality delete holds the key
// columns only, so it cannot find the partition of the row it removes
// (iceberg-go refuses to write it, and every commit would fail). A table
// the sink creates is checked in create.
func (w *tableWriter) checkUpsertSpec(keys []string) error {
	spec, sc := w.tbl.Spec(), w.tbl.Schema()
	for _, f := range spec.Fields() {
		for _, id := range f.SourceIDs {
			if n, _ := sc.FindColumnName(id); !slices.Contains(keys, n) {
				return connect.Permanent(fmt.Errorf("table %s is partitioned by %s(%s), and %s is not a key column %v: "+
					"upsert's equality deletes hold the key columns only and cannot find a row's partition; "+
					"write to a table partitioned by key columns only (or unpartitioned), or use mode: append", w.name, f.Transform, n, n, keys))
			}
		}
	}
	return nil
}

func (w *tableWriter) keyNames() []string {
	out := make([]string, len(w.key))
	for i, p := range w.key {
		out[i] = w.cols[p].name
	}
	return out
}

func colNames(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.name
	}
	return out
}

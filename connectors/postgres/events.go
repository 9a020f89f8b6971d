package postgres

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// encoder turns rows into Debezium change-event records.
type encoder struct {
	set    *settings
	db     string // database name, source.db
	codec  connect.DebeziumJSON
	mapper *mapper
}

// source returns the source block of an event of rel.
func (e *encoder) source(rel *relation, snapshot string, commit time.Time, txID uint32, lsn, lastCommit uint64) connect.SourceInfo {
	var tx, l any
	if txID != 0 {
		tx = int64(txID)
	}
	if lsn != 0 {
		l = int64(lsn)
	}
	si := connect.SourceInfo{
		Version:   version,
		Connector: connect.ConnectorPostgres,
		Name:      e.set.prefix,
		Snapshot:  snapshot,
		DB:        e.db,
		Extra: connect.Row{
			{Name: "schema", Value: rel.ref.schema},
			{Name: "table", Value: rel.ref.name},
			{Name: "txId", Value: tx},
			{Name: "lsn", Value: l},
			{Name: "xmin", Value: nil},
		},
	}
	if lsn != 0 {
		var b [48]byte
		seq := append(b[:0], `["`...)
		seq = strconv.AppendUint(seq, lastCommit, 10)
		seq = append(seq, `","`...)
		seq = strconv.AppendUint(seq, lsn, 10)
		si.Sequence = string(append(seq, `"]`...))
	}
	si.SetTime(commit)
	return si
}

// key returns the key columns of row, or nil for a table without a key.
func (rel *relation) key(row connect.Row) connect.Row {
	if len(rel.keyIdx) == 0 || row == nil {
		return nil
	}
	k := make(connect.Row, len(rel.keyIdx))
	for i, idx := range rel.keyIdx {
		k[i] = row[idx]
	}
	return k
}

// record encodes one event of rel.
func (e *encoder) record(rel *relation, ev *connect.ChangeEvent) (connect.Record, error) {
	return e.recordIn(nil, rel, ev)
}

// recordIn encodes one event of rel into blk's blocks (shared by the
// records of a batch), or into a buffer of its own when blk is nil.
func (e *encoder) recordIn(blk *connect.Blocks, rel *relation, ev *connect.ChangeEvent) (connect.Record, error) {
	if e.set.schemas {
		ev.Schema = schemaFor(rel, ev)
	}
	var r connect.Record
	var err error
	if blk != nil {
		r, err = e.codec.RecordIn(blk, rel.topic, ev)
	} else {
		r, err = e.codec.Record(rel.topic, ev)
	}
	if err != nil {
		return r, fmt.Errorf("encode the %s event of %s: %w", ev.Op, rel.ref, err)
	}
	return r, nil
}

// schemaFor returns rel's event schema, adjusted for an event that the
// table's schema cannot describe:
//   - a null in a NOT NULL column (cdc.NullsOptional): the old row of a
//     delete under REPLICA IDENTITY DEFAULT or USING INDEX holds only the
//     key, and a value written as null because it could not be parsed, or
//     a row older than a SET NOT NULL that the catalogue already shows, can
//     hold one too;
//   - a non-finite real or double precision ("NaN", "Infinity"): such a
//     column is an optional string in that event, so consumers see a
//     string where a string is written. The items of an array share one
//     schema and keep theirs: the codec writes the strings under
//     float/double as Jackson does (Debezium's output), and reads them
//     back as NaN and ±Inf. A numeric under decimal.handling.mode=double
//     keeps its double schema, as Debezium's events do through Kafka's
//     JsonConverter (see docs/connectors/postgres.md).
func schemaFor(rel *relation, ev *connect.ChangeEvent) *connect.EventSchema {
	es := nestArrays(cdc.NullsOptional(rel.schema, ev.Before, ev.After), ev.Before, ev.After)
	var fix []int // columns to describe as optional strings
	for i := range rel.columns {
		k := rel.columns[i].typ.kind
		if k != kindFloat32 && k != kindFloat64 || es.Row.Fields[i].Type == connect.SchemaString {
			continue
		}
		for _, row := range [2]connect.Row{ev.Before, ev.After} {
			if i < len(row) {
				if _, ok := row[i].Value.(string); ok {
					fix = append(fix, i)
					break
				}
			}
		}
	}
	if len(fix) == 0 {
		return es
	}
	cp := *es
	row := *es.Row
	row.Fields = append([]connect.Schema(nil), es.Row.Fields...)
	for _, i := range fix {
		row.Fields[i] = connect.Schema{Type: connect.SchemaString, Optional: true, Field: row.Fields[i].Field}
	}
	cp.Row = &row
	return &cp
}

// nestArrays gives an array column whose value in before or after has
// several dimensions as many levels of array in es: an array type does not
// say how many dimensions its values have (an int[] column holds
// '{{1,2},{3,4}}' too), so the relation's schema has one.
func nestArrays(es *connect.EventSchema, before, after connect.Row) *connect.EventSchema {
	if es == nil || es.Row == nil {
		return es
	}
	var fields []connect.Schema // the copy, once a column needs it
	for i := range es.Row.Fields {
		if es.Row.Fields[i].Type != connect.SchemaArray {
			continue
		}
		depth := 0
		for _, row := range [2]connect.Row{before, after} {
			if i < len(row) {
				depth = max(depth, arrayDepth(row[i].Value))
			}
		}
		if depth < 2 {
			continue
		}
		if fields == nil {
			fields = slices.Clone(es.Row.Fields)
		}
		items := fields[i].Items
		for range depth - 1 {
			items = &connect.Schema{Type: connect.SchemaArray, Items: items}
		}
		fields[i].Items = items
	}
	if fields == nil {
		return es
	}
	cp := *es
	row := *es.Row
	row.Fields = fields
	cp.Row = &row
	return &cp
}

// arrayDepth returns how many levels of array v, a column's value, has:
// PostgreSQL's arrays are rectangular, so the first element tells.
func arrayDepth(v any) int {
	depth := 0
	for {
		a, ok := v.([]any)
		if !ok {
			return depth
		}
		depth++
		if len(a) == 0 {
			return depth
		}
		v = a[0]
	}
}

// heartbeat returns a heartbeat record as Debezium writes them: topic
// __debezium-heartbeat.<prefix>, key {"serverName":prefix}, value
// {"ts_ms":now}.
func (e *encoder) heartbeat(now time.Time, pos connect.Position) connect.Record {
	var key, value []byte
	if e.set.schemas {
		key = fmt.Appendf(nil, `{"schema":{"type":"struct","fields":[{"type":"string","optional":false,"field":"serverName"}],"optional":false,"name":"io.debezium.connector.common.ServerNameKey"},"payload":{"serverName":%s}}`, jsonString(e.set.prefix))
		value = fmt.Appendf(nil, `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.Heartbeat"},"payload":{"ts_ms":%d}}`, now.UnixMilli())
	} else {
		key = fmt.Appendf(nil, `{"serverName":%s}`, jsonString(e.set.prefix))
		value = fmt.Appendf(nil, `{"ts_ms":%d}`, now.UnixMilli())
	}
	return connect.Record{Topic: "__debezium-heartbeat." + e.set.prefix, Key: key, Value: value, Position: pos}
}

// txCount is the number of events of one table in a transaction.
type txCount struct {
	table string
	n     int64
}

const txValueSchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"status"},{"type":"string","optional":false,"field":"id"},{"type":"int64","optional":true,"field":"event_count"},{"type":"array","items":{"type":"struct","fields":[{"type":"string","optional":false,"field":"data_collection"},{"type":"int64","optional":false,"field":"event_count"}],"optional":false},"optional":true,"field":"data_collections"},{"type":"int64","optional":false,"field":"ts_ms"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataValue","version":1}`
const txKeySchema = `{"type":"struct","fields":[{"type":"string","optional":false,"field":"id"}],"optional":false,"name":"io.debezium.connector.common.TransactionMetadataKey","version":1}`

// txRecord returns a BEGIN (counts nil) or END record for the transaction
// topic <prefix>.transaction, as Debezium writes them.
func (e *encoder) txRecord(id string, commit time.Time, end bool, total int64, counts []txCount) connect.Record {
	var v bytes.Buffer
	v.WriteString(`{"status":`)
	if end {
		v.WriteString(`"END"`)
	} else {
		v.WriteString(`"BEGIN"`)
	}
	v.WriteString(`,"id":` + jsonString(id))
	if end {
		fmt.Fprintf(&v, `,"event_count":%d,"data_collections":[`, total)
		for i, c := range counts {
			if i > 0 {
				v.WriteByte(',')
			}
			fmt.Fprintf(&v, `{"data_collection":%s,"event_count":%d}`, jsonString(c.table), c.n)
		}
		v.WriteByte(']')
	} else {
		v.WriteString(`,"event_count":null,"data_collections":null`)
	}
	fmt.Fprintf(&v, `,"ts_ms":%d}`, commit.UnixMilli())
	key := []byte(`{"id":` + jsonString(id) + `}`)
	value := v.Bytes()
	if e.set.schemas {
		key = []byte(`{"schema":` + txKeySchema + `,"payload":` + string(key) + `}`)
		value = []byte(`{"schema":` + txValueSchema + `,"payload":` + string(value) + `}`)
	}
	return connect.Record{Topic: e.set.prefix + ".transaction", Key: key, Value: value}
}

// jsonString quotes s as a JSON string.
func jsonString(s string) string {
	b, _ := connect.Row{{Name: "s", Value: s}}.MarshalJSON()
	return string(b[5 : len(b)-1])
}

// usec returns t in microseconds since the epoch, 0 for the zero time.
func usec(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

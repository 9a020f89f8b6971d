package mysql

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// encoder turns rows into Debezium change-event records.
type encoder struct {
	set    *settings
	codec  connect.DebeziumJSON
	mapper *mapper
}

// srcInfo is where an event comes from in the binlog.
type srcInfo struct {
	snapshot string
	ts       time.Time // commit time (binlog event time), or the snapshot's start
	serverID uint32
	gtid     string // the transaction's GTID, "" when none
	file     string
	pos      uint32 // where the transaction (or the snapshot) starts
	row      int    // the row's index in its rows event
	thread   int64  // the thread that made the change, 0 when unknown
	query    string // the statement (include.query), "" when none
}

// source returns the source block of an event of t.
func (e *encoder) source(t *table, si *srcInfo) connect.SourceInfo {
	var gtid, thread, query any
	if si.gtid != "" {
		gtid = si.gtid
	}
	if si.query != "" {
		query = si.query
	}
	if si.thread != 0 {
		thread = si.thread
	}
	s := connect.SourceInfo{
		Version:   version,
		Connector: connect.ConnectorMySQL,
		Name:      e.set.prefix,
		Snapshot:  si.snapshot,
		DB:        t.def.DB,
		Extra: connect.Row{
			{Name: "table", Value: t.def.Name},
			{Name: "server_id", Value: int64(si.serverID)},
			{Name: "gtid", Value: gtid},
			{Name: "file", Value: si.file},
			{Name: "pos", Value: int64(si.pos)},
			{Name: "row", Value: int64(si.row)},
			{Name: "thread", Value: thread},
			{Name: "query", Value: query},
		},
	}
	s.SetTime(si.ts)
	// The binlog keeps seconds: ts_us and ts_ns would claim a precision
	// that is not there (Debezium writes them as ts_ms * 1000).
	return s
}

// sourceBox is an encoder goroutine's source block, reused from change to
// change: its Extra row keeps the values boxed for the last change, so
// that a run of changes from one table and binlog file boxes only what
// differs.
type sourceBox struct {
	extra             connect.Row
	table, file, gtid string
	serverID, pos     uint32
	row               int
	thread            int64
	query             string
}

// sourceIn is source, building the block in sb. The block is valid until
// the next call with sb.
func (e *encoder) sourceIn(sb *sourceBox, t *table, si *srcInfo) connect.SourceInfo {
	if sb.extra == nil {
		s := e.source(t, si)
		*sb = sourceBox{extra: s.Extra, table: t.def.Name, file: si.file, gtid: si.gtid, serverID: si.serverID, pos: si.pos, row: si.row, thread: si.thread, query: si.query}
		return s
	}
	x := sb.extra // the field order of source
	if sb.table != t.def.Name {
		sb.table, x[0].Value = t.def.Name, t.def.Name
	}
	if sb.serverID != si.serverID {
		sb.serverID, x[1].Value = si.serverID, int64(si.serverID)
	}
	if sb.gtid != si.gtid {
		sb.gtid, x[2].Value = si.gtid, nil
		if si.gtid != "" {
			x[2].Value = si.gtid
		}
	}
	if sb.file != si.file {
		sb.file, x[3].Value = si.file, si.file
	}
	if sb.pos != si.pos {
		sb.pos, x[4].Value = si.pos, int64(si.pos)
	}
	if sb.row != si.row {
		sb.row, x[5].Value = si.row, int64(si.row)
	}
	if sb.thread != si.thread {
		sb.thread, x[6].Value = si.thread, nil
		if si.thread != 0 {
			x[6].Value = si.thread
		}
	}
	if sb.query != si.query {
		sb.query, x[7].Value = si.query, nil
		if si.query != "" {
			x[7].Value = si.query
		}
	}
	s := connect.SourceInfo{
		Version:   version,
		Connector: connect.ConnectorMySQL,
		Name:      e.set.prefix,
		Snapshot:  si.snapshot,
		DB:        t.def.DB,
		Extra:     x,
	}
	s.SetTime(si.ts)
	return s
}

// record encodes one event of t.
func (e *encoder) record(t *table, ev *connect.ChangeEvent) (connect.Record, error) {
	return e.recordIn(nil, t, ev)
}

// recordIn encodes one event of t into blk's blocks (shared by the records
// of a batch), or into a buffer of its own when blk is nil.
func (e *encoder) recordIn(blk *connect.Blocks, t *table, ev *connect.ChangeEvent) (connect.Record, error) {
	if e.set.schemas {
		// A null in a NOT NULL column (a zero date, a value that could not
		// be mapped, a partial row image) makes that column optional in
		// this event's schema: the codec refuses a null in a required field.
		ev.Schema = cdc.NullsOptional(t.schema, ev.Before, ev.After)
	}
	var r connect.Record
	var err error
	if blk != nil {
		r, err = e.codec.RecordIn(blk, t.topic, ev)
	} else {
		r, err = e.codec.Record(t.topic, ev)
	}
	if err != nil {
		return r, fmt.Errorf("encode the %s event of %s: %w", ev.Op, t.def.ref(), err)
	}
	return r, nil
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

package connect

import (
	"fmt"
	"time"
)

// Op is the operation of a change event, as Debezium's "op" field spells it.
type Op string

// The operations of Debezium change events.
const (
	OpCreate   Op = "c" // a row was inserted
	OpUpdate   Op = "u" // a row was updated
	OpDelete   Op = "d" // a row was deleted
	OpRead     Op = "r" // a row was read by a snapshot
	OpTruncate Op = "t" // a table was truncated: no key, no before/after
	OpMessage  Op = "m" // a Postgres logical decoding message (pg_logical_emit_message)
)

// Valid reports whether op is one of Debezium's operations.
func (op Op) Valid() bool {
	switch op {
	case OpCreate, OpUpdate, OpDelete, OpRead, OpTruncate, OpMessage:
		return true
	}
	return false
}

// Values of SourceInfo.Snapshot. Streaming events carry SnapshotFalse.
const (
	SnapshotTrue        = "true"  // a snapshot row, not the last
	SnapshotFirst       = "first" // the first row of the snapshot
	SnapshotFirstInColl = "first_in_data_collection"
	SnapshotLastInColl  = "last_in_data_collection"
	SnapshotLast        = "last"        // the last row of the snapshot
	SnapshotFalse       = "false"       // streamed, not from a snapshot
	SnapshotIncremental = "incremental" // a row of an incremental snapshot (op r)
)

// Connector names used in SourceInfo.Connector, as Debezium spells them.
const (
	ConnectorPostgres = "postgresql"
	ConnectorMySQL    = "mysql"
)

// ChangeEvent is one row-level change captured from a database: the single
// Go model of a Debezium change event. DebeziumJSON encodes and decodes it.
//
// The record key is Key (the primary-key or replica-identity columns as an
// object); the record value is the envelope: before, after, source, op,
// ts_ms, ts_us, ts_ns, transaction. A delete is followed by a tombstone: a
// record with the same key and a nil value (see Tombstone).
type ChangeEvent struct {
	// Op is the operation.
	Op Op
	// Key holds the primary-key columns; nil is a null key (a table
	// without key columns, a truncate).
	Key Row
	// Before is the row before the change (updates, deletes; how much of
	// it depends on the table's replica identity); nil is null.
	Before Row
	// After is the row after the change (creates, updates, reads); nil is null.
	After Row
	// Source says where the change comes from.
	Source SourceInfo
	// TsMs, TsUs and TsNs are when the connector processed the event, in
	// milliseconds, microseconds and nanoseconds since the epoch; 0 is
	// null. SetTime sets all three.
	TsMs, TsUs, TsNs int64
	// Transaction places the event in its transaction; nil is null.
	Transaction *Transaction
	// Message is the logical decoding message of an OpMessage event
	// (required there, ignored for other operations). Message events carry
	// no before, after, ts_us or ts_ns.
	Message *Message
	// Schema holds the Kafka Connect schemas of the key and value. It is
	// set by decoding an event with embedded schemas; a connector sets it
	// (see NewEventSchema) to control the embedded schema exactly. When it
	// is nil, or one of its parts is, encoding with schemas describes the
	// missing part from the values.
	Schema *EventSchema
}

// SetTime sets TsMs, TsUs and TsNs from t.
func (e *ChangeEvent) SetTime(t time.Time) { e.TsMs, e.TsUs, e.TsNs = stamps(t) }

// Time returns the processing time at the best precision present, or the
// zero time when none is set.
func (e *ChangeEvent) Time() time.Time { return fromStamps(e.TsMs, e.TsUs, e.TsNs) }

// SourceInfo is the source block of a change event: Debezium's common fields in
// Debezium's order, then the connector's own fields in Extra. Empty strings
// and zero timestamps of optional fields are written as null, except
// Snapshot, whose empty value is written as "false" (Debezium's default);
// decoding yields "false" when the snapshot field is null or missing.
type SourceInfo struct {
	Version   string // Debezium (or Tributary) version that produced the event
	Connector string // "postgresql", "mysql"
	Name      string // the topic prefix (Debezium's topic.prefix)
	TsMs      int64  // commit time in the database, ms since the epoch
	Snapshot  string // one of the Snapshot* constants; "" is "false"
	DB        string // database name
	Sequence  string // Postgres: `["<lastCommittedLsn>","<currentLsn>"]`; "" is null
	TsUs      int64  // commit time in µs; 0 is null
	TsNs      int64  // commit time in ns; 0 is null

	// Extra are the connector-specific fields in order; for postgresql:
	// schema, table, txId, lsn, xmin; for mysql: table, server_id, gtid,
	// file, pos, row, thread, query.
	Extra Row
}

// SetTime sets TsMs, TsUs and TsNs from the commit time t.
func (s *SourceInfo) SetTime(t time.Time) { s.TsMs, s.TsUs, s.TsNs = stamps(t) }

// Time returns the commit time at the best precision present, or the zero
// time when none is set.
func (s *SourceInfo) Time() time.Time { return fromStamps(s.TsMs, s.TsUs, s.TsNs) }

// sourceCommon are the common source fields, in Debezium's order.
var sourceCommon = [...]string{"version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns"}

// sourceCommonMask has the nameBit of every common source field.
var sourceCommonMask = func() (m uint64) {
	for _, name := range sourceCommon {
		m |= nameBit(name)
	}
	return m
}()

func isSourceCommon(name string) bool {
	switch name {
	case "version", "connector", "name", "ts_ms", "snapshot", "db", "sequence", "ts_us", "ts_ns":
		return true
	}
	return false
}

// Transaction is the transaction block of a change event.
type Transaction struct {
	// ID identifies the transaction: Postgres "txId:LSN", MySQL the GTID.
	ID string
	// TotalOrder is the event's position among all events of the transaction, from 1.
	TotalOrder int64
	// DataCollectionOrder is the event's position among the transaction's events for its table, from 1.
	DataCollectionOrder int64
}

// Message is the content of a Postgres logical decoding message (op m),
// emitted with pg_logical_emit_message(transactional, prefix, content).
type Message struct {
	Prefix  string // the prefix the message was emitted with
	Content []byte // the message content, written as base64
}

// EventSchema holds the Kafka Connect schemas of a table's change events.
type EventSchema struct {
	// Name is the envelope's name, "<topic>.Envelope".
	Name string
	// Version is the envelope's version; 0 means none.
	Version int
	// Key is the key struct, "<topic>.Key"; nil when the table has no key.
	Key *Schema
	// Row is the row struct used for both before and after, "<topic>.Value".
	Row *Schema
	// SourceInfo is the source block; nil means SourceSchema of the event's
	// source.
	Source *Schema
}

// EnvelopeVersion is the envelope schema version Debezium writes.
const EnvelopeVersion = 2

// NewEventSchema returns the schemas Debezium uses for the change events of
// one table written to topic (Postgres "<prefix>.<schema>.<table>", MySQL
// "<prefix>.<database>.<table>"): the optional row struct "<topic>.Value"
// of the columns, the key struct "<topic>.Key" of the key columns in the
// given order (nil without key columns), and the envelope
// "<topic>.Envelope". Each column's Field is its name.
func NewEventSchema(topic string, columns []Schema, keyColumns []string) (*EventSchema, error) {
	row := &Schema{Type: SchemaStruct, Fields: make([]Schema, len(columns)), Optional: true, Name: topic + ".Value"}
	copy(row.Fields, columns)
	for i, c := range columns {
		if c.Field == "" {
			return nil, fmt.Errorf("event schema for %s: column %d has no name (Field)", topic, i)
		}
		for _, prev := range columns[:i] {
			if prev.Field == c.Field {
				return nil, fmt.Errorf("event schema for %s: duplicate column %q", topic, c.Field)
			}
		}
	}
	es := &EventSchema{Name: topic + ".Envelope", Version: EnvelopeVersion, Row: row}
	if len(keyColumns) > 0 {
		key := &Schema{Type: SchemaStruct, Fields: make([]Schema, 0, len(keyColumns)), Name: topic + ".Key"}
		for _, k := range keyColumns {
			c, ok := row.FieldSchema(k)
			if !ok {
				return nil, fmt.Errorf("event schema for %s: key column %q is not a column", topic, k)
			}
			key.Fields = append(key.Fields, *c)
		}
		es.Key = key
	}
	return es, nil
}

// SourceSchema returns the schema Debezium gives the source block of s: the
// common fields, then s.Extra's fields, named
// "io.debezium.connector.<connector>.Source". The Extra fields of the
// postgresql and mysql connectors get Debezium's exact types; other fields
// are described from their values.
func SourceSchema(s SourceInfo) (Schema, error) {
	str := func(name string, optional bool) Schema {
		return Schema{Type: SchemaString, Optional: optional, Field: name}
	}
	i64 := func(name string, optional bool) Schema {
		return Schema{Type: SchemaInt64, Optional: optional, Field: name}
	}
	fields := []Schema{
		str("version", false),
		str("connector", false),
		str("name", false),
		i64("ts_ms", false),
		{
			Type: SchemaString, Optional: true, Name: LogicalEnum, Version: 1,
			Parameters: []SchemaParam{{Key: "allowed", Value: "true,first,first_in_data_collection,last_in_data_collection,last,false,incremental"}},
			Default:    SnapshotFalse, Field: "snapshot",
		},
		str("db", false),
		str("sequence", true),
		i64("ts_us", true),
		i64("ts_ns", true),
	}
	known := knownSourceFields[s.Connector]
	for _, f := range s.Extra {
		if isSourceCommon(f.Name) {
			return Schema{}, fmt.Errorf("source schema: extra field %q is a common field", f.Name)
		}
		fs, ok := known[f.Name]
		if !ok {
			var err error
			if fs, err = inferSchema(f.Value); err != nil {
				return Schema{}, fmt.Errorf("source schema: %w", inField(f.Name, err))
			}
		}
		fs.Field = f.Name
		fields = append(fields, fs)
	}
	return Schema{
		Type:    SchemaStruct,
		Fields:  fields,
		Name:    "io.debezium.connector." + s.Connector + ".Source",
		Version: 1,
	}, nil
}

// knownSourceFields are the types Debezium gives connector-specific source fields.
var knownSourceFields = map[string]map[string]Schema{
	ConnectorPostgres: {
		"schema": {Type: SchemaString},
		"table":  {Type: SchemaString},
		"txId":   {Type: SchemaInt64, Optional: true},
		"lsn":    {Type: SchemaInt64, Optional: true},
		"xmin":   {Type: SchemaInt64, Optional: true},
	},
	ConnectorMySQL: {
		"table":     {Type: SchemaString, Optional: true},
		"server_id": {Type: SchemaInt64},
		"gtid":      {Type: SchemaString, Optional: true},
		"file":      {Type: SchemaString},
		"pos":       {Type: SchemaInt64},
		"row":       {Type: SchemaInt32},
		"thread":    {Type: SchemaInt64, Optional: true},
		"query":     {Type: SchemaString, Optional: true},
	},
}

func stamps(t time.Time) (ms, us, ns int64) {
	if t.IsZero() {
		return 0, 0, 0
	}
	return t.UnixMilli(), t.UnixMicro(), t.UnixNano()
}

func fromStamps(ms, us, ns int64) time.Time {
	switch {
	case ns != 0:
		return time.Unix(0, ns)
	case us != 0:
		return time.UnixMicro(us)
	case ms != 0:
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

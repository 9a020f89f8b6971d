package connect

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"reflect"
	"strconv"
)

// ErrTombstone is returned by DebeziumJSON.Decode for a record without a
// value: the tombstone that follows a delete. It is not a failure; the key
// still names the deleted row.
var ErrTombstone = errors.New("tombstone: the record has no value")

// DebeziumJSON is the codec between ChangeEvent and Debezium's JSON, in the
// shape, field order and number format of Debezium with Kafka Connect's
// JsonConverter (testdata holds examples, matched byte for byte): the value
// envelope with fields before, after, source, op, ts_ms, ts_us, ts_ns,
// transaction in that order (a Postgres message event: op, ts_ms, source,
// transaction, message), the key as an object of the key columns, doubles
// as Java prints them (1.0, 1.0E10), bytes as base64.
//
// The zero value writes the bare envelope (schemas.enable=false). Decoding
// accepts both forms whatever Schemas says.
type DebeziumJSON struct {
	// Schemas embeds Kafka Connect schemas: each key and value is written
	// as {"schema":{...},"payload":{...}} (schemas.enable=true). An event
	// without a Schema gets one described from its values: optional
	// fields, int64, double, string, … by Go type; an integer beyond int64
	// becomes a Decimal of scale 0, written as unscaled bytes, so that no
	// consumer reads it rounded to a double.
	Schemas bool
}

// Record encodes e as a record for topic: key and value.
func (c DebeziumJSON) Record(topic string, e *ChangeEvent) (Record, error) {
	key, value, err := c.Encode(e)
	if err != nil {
		return Record{}, err
	}
	return Record{Topic: topic, Key: key, Value: value}, nil
}

// Encode encodes the key and the value of e. The key is nil when e.Key is.
// Both share one buffer sized for the event; each is capped at its
// length, so appending to one copies it.
func (c DebeziumJSON) Encode(e *ChangeEvent) (key, value []byte, err error) {
	key, value, _, err = c.AppendRecord(make([]byte, 0, encodedSize(e, c.Schemas)), e)
	if err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

// AppendRecord appends the key of e (nothing for a null key) and then its
// value to dst, and returns both, as the same bytes Encode returns, along
// with the extended buffer. key and value alias that buffer and are capped
// at their length, so appending to one copies it; the caller must not
// write over them while they are in use. It lets a batch of records share
// one large buffer (see Blocks) instead of two allocations each. On error
// dst comes back unchanged (at its original length).
func (c DebeziumJSON) AppendRecord(dst []byte, e *ChangeEvent) (key, value, out []byte, err error) {
	return c.appendRecord(dst, e, nil)
}

// appendRecord is AppendRecord, with the source block written through sc
// when sc is not nil (see sourceCache).
func (c DebeziumJSON) appendRecord(dst []byte, e *ChangeEvent, sc *sourceCache) (key, value, out []byte, err error) {
	start := len(dst)
	b := dst
	if e.Key != nil {
		if b, err = c.appendKey(b, e); err != nil {
			return nil, nil, dst[:start], err
		}
	}
	mid := len(b)
	if b, err = c.appendValue(b, e, sc); err != nil {
		return nil, nil, dst[:start], err
	}
	if e.Key != nil {
		key = b[start:mid:mid]
	}
	return key, b[mid:len(b):len(b)], b, nil
}

// EncodeKey encodes the key of e: the key columns as an object, or nil for
// a null key.
func (c DebeziumJSON) EncodeKey(e *ChangeEvent) ([]byte, error) {
	if e.Key == nil {
		return nil, nil
	}
	size := rowSize(e.Key) + 16
	if c.Schemas {
		size *= 4
	}
	return c.appendKey(make([]byte, 0, size), e)
}

// appendKey appends the key of e, which is not null.
func (c DebeziumJSON) appendKey(b []byte, e *ChangeEvent) ([]byte, error) {
	var s *Schema
	if e.Schema != nil && e.Schema.Key != nil {
		s = e.Schema.Key
	} else if c.Schemas {
		inferred, err := inferRowSchema(e.Key)
		if err != nil {
			return nil, fmt.Errorf("encode change event key: %w", err)
		}
		inferred.Optional = false
		s = &inferred
	}
	var err error
	if c.Schemas {
		b = append(b, `{"schema":`...)
		if b, err = appendSchema(b, s, false); err != nil {
			return nil, fmt.Errorf("encode change event key schema: %w", err)
		}
		b = append(b, `,"payload":`...)
	}
	if s == nil {
		b, err = appendPlainRow(b, e.Key)
	} else {
		b, err = appendValue(b, e.Key, s)
	}
	if err != nil {
		return nil, fmt.Errorf("encode change event key: %w", err)
	}
	if c.Schemas {
		b = append(b, '}')
	}
	return b, nil
}

// EncodeValue encodes the envelope of e.
func (c DebeziumJSON) EncodeValue(e *ChangeEvent) ([]byte, error) {
	return c.appendValue(make([]byte, 0, encodedSize(e, c.Schemas)-rowSize(e.Key)), e, nil)
}

// appendValue appends the envelope of e, its source block through sc when
// sc is not nil.
func (c DebeziumJSON) appendValue(b []byte, e *ChangeEvent, sc *sourceCache) ([]byte, error) {
	if !e.Op.Valid() {
		return nil, fmt.Errorf("encode change event value: unknown op %q", e.Op)
	}
	if e.Op == OpMessage && e.Message == nil {
		return nil, errors.New("encode change event value: an op m event needs a Message")
	}
	rowS, srcS, err := c.valueSchemas(e)
	if err != nil {
		return nil, fmt.Errorf("encode change event value: %w", err)
	}
	if c.Schemas {
		env := envelopeSchema(e, rowS, srcS)
		b = append(b, `{"schema":`...)
		if b, err = appendSchema(b, &env, false); err != nil {
			return nil, fmt.Errorf("encode change event value schema: %w", err)
		}
		b = append(b, `,"payload":`...)
	}
	if b, err = appendEnvelope(b, e, rowS, srcS, sc); err != nil {
		return nil, fmt.Errorf("encode change event value: %w", err)
	}
	if c.Schemas {
		b = append(b, '}')
	}
	return b, nil
}

// encodedSize estimates the size of e's key and value, so that encoding
// allocates once.
func encodedSize(e *ChangeEvent, schemas bool) int {
	const fixed = 320 // the envelope's and the source block's names and numbers
	n := fixed + rowSize(e.Key) + rowSize(e.Before) + rowSize(e.After) + rowSize(e.Source.Extra) +
		len(e.Source.Version) + len(e.Source.Connector) + len(e.Source.Name) + len(e.Source.DB) + len(e.Source.Sequence)
	if e.Transaction != nil {
		n += len(e.Transaction.ID)
	}
	if e.Message != nil {
		n += len(e.Message.Prefix) + len(e.Message.Content)*4/3
	}
	if schemas {
		n *= 4
	}
	return n
}

// rowSize estimates the JSON size of r.
func rowSize(r Row) int {
	n := 2
	for i := range r {
		n += len(r[i].Name) + 4
		switch v := r[i].Value.(type) {
		case string:
			n += len(v) + 2
		case []byte:
			n += (len(v)+2)/3*4 + 2
		case Row:
			n += rowSize(v)
		default:
			n += 20
		}
	}
	return n
}

// valueSchemas returns the row and source schemas to encode e with: the
// event's own, or, with Schemas on, ones described from the values; nil
// means "by Go type".
func (c DebeziumJSON) valueSchemas(e *ChangeEvent) (rowS, srcS *Schema, err error) {
	if e.Schema != nil {
		rowS, srcS = e.Schema.Row, e.Schema.Source
	}
	if rowS == nil && c.Schemas {
		inferred, err := inferRowSchema(e.After, e.Before)
		if err != nil {
			return nil, nil, err
		}
		rowS = &inferred
	}
	if srcS == nil && c.Schemas {
		s, err := SourceSchema(e.Source)
		if err != nil {
			return nil, nil, err
		}
		srcS = &s
	}
	return rowS, srcS, nil
}

// Schemas of the fixed parts of the envelope.
var (
	opSchema          = Schema{Type: SchemaString, Field: "op"}
	tsMsSchema        = Schema{Type: SchemaInt64, Optional: true, Field: "ts_ms"}
	tsUsSchema        = Schema{Type: SchemaInt64, Optional: true, Field: "ts_us"}
	tsNsSchema        = Schema{Type: SchemaInt64, Optional: true, Field: "ts_ns"}
	transactionSchema = Schema{
		Type: SchemaStruct,
		Fields: []Schema{
			{Type: SchemaString, Field: "id"},
			{Type: SchemaInt64, Field: "total_order"},
			{Type: SchemaInt64, Field: "data_collection_order"},
		},
		Optional: true, Name: "event.block", Version: 1, Field: "transaction",
	}
	messageSchema = Schema{
		Type: SchemaStruct,
		Fields: []Schema{
			{Type: SchemaString, Optional: true, Field: "prefix"},
			{Type: SchemaBytes, Optional: true, Field: "content"},
		},
		Name: "io.debezium.connector.postgresql.Message", Version: 1, Field: "message",
	}
)

// Name and version of the value schema of Postgres message events.
const (
	messageValueName    = "io.debezium.connector.postgresql.MessageValue"
	messageValueVersion = 1
)

// envelopeSchema builds the Kafka Connect schema of e's value.
func envelopeSchema(e *ChangeEvent, rowS, srcS *Schema) Schema {
	env := Schema{Type: SchemaStruct}
	if e.Schema != nil {
		env.Name, env.Version = e.Schema.Name, e.Schema.Version
	}
	src := *srcS
	src.Field = "source"
	if e.Op == OpMessage {
		if env.Name == "" {
			env.Name, env.Version = messageValueName, messageValueVersion
		}
		env.Fields = []Schema{opSchema, tsMsSchema, src, transactionSchema, messageSchema}
		return env
	}
	// before and after are always optional: creates have no before,
	// deletes no after.
	before, after := *rowS, *rowS
	before.Field, after.Field = "before", "after"
	before.Optional, after.Optional = true, true
	env.Fields = []Schema{before, after, src, opSchema, tsMsSchema, tsUsSchema, tsNsSchema, transactionSchema}
	return env
}

// appendEnvelope appends the payload of e's value.
func appendEnvelope(b []byte, e *ChangeEvent, rowS, srcS *Schema, sc *sourceCache) ([]byte, error) {
	var err error
	if e.Op == OpMessage {
		b = append(b, `{"op":`...)
		b = appendString(b, string(e.Op))
		b = appendOptInt(append(b, `,"ts_ms":`...), e.TsMs)
		b = append(b, `,"source":`...)
		if b, err = appendSource(b, &e.Source, srcS, sc); err != nil {
			return b, inField("source", err)
		}
		b = appendTransaction(append(b, `,"transaction":`...), e.Transaction)
		b = append(b, `,"message":`...)
		if e.Message == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, `{"prefix":`...)
			b = appendString(b, e.Message.Prefix)
			b = append(b, `,"content":`...)
			if e.Message.Content == nil {
				b = append(b, "null"...)
			} else {
				b = appendBytes(b, e.Message.Content)
			}
			b = append(b, '}')
		}
		return append(b, '}'), nil
	}
	b = append(b, `{"before":`...)
	if b, err = appendRow(b, e.Before, rowS); err != nil {
		return b, inField("before", err)
	}
	b = append(b, `,"after":`...)
	if b, err = appendRow(b, e.After, rowS); err != nil {
		return b, inField("after", err)
	}
	b = append(b, `,"source":`...)
	if b, err = appendSource(b, &e.Source, srcS, sc); err != nil {
		return b, inField("source", err)
	}
	b = append(b, `,"op":`...)
	b = appendString(b, string(e.Op))
	b = appendOptInt(append(b, `,"ts_ms":`...), e.TsMs)
	b = appendOptInt(append(b, `,"ts_us":`...), e.TsUs)
	b = appendOptInt(append(b, `,"ts_ns":`...), e.TsNs)
	b = appendTransaction(append(b, `,"transaction":`...), e.Transaction)
	return append(b, '}'), nil
}

// appendRow appends a before or after row; nil is null whatever the schema.
func appendRow(b []byte, r Row, s *Schema) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	if s == nil {
		return appendPlainRow(b, r)
	}
	return appendValue(b, r, s)
}

// appendSource appends the source block. With a schema it goes through
// the generic struct writer; without one (the common case) it is written
// straight from the struct, the same bytes as the row that row returns,
// its common members copied from sc when they are those sc holds.
func appendSource(b []byte, src *SourceInfo, s *Schema, sc *sourceCache) ([]byte, error) {
	if s != nil {
		return appendValue(b, src.row(s), s)
	}
	// The names must be unique, as in any object: the first Extra field
	// that repeats a common field or an earlier one is the error.
	var mask uint64 // see checkUniqueNames
	for i := range src.Extra {
		name := src.Extra[i].Name
		bit := nameBit(name)
		if (bit&sourceCommonMask != 0 && isSourceCommon(name)) || (mask&bit != 0 && src.Extra[:i].Index(name) >= 0) {
			return b, valueErrorf("duplicate field %q", name)
		}
		mask |= bit
	}
	switch {
	case sc == nil:
		b = appendSourceCommon(b, src)
	case sc.valid && sc.same(src):
		b = append(b, sc.enc...)
	default:
		start := len(b)
		b = appendSourceCommon(b, src)
		sc.keep(src, b[start:len(b):len(b)])
	}
	var err error
	for i := range src.Extra {
		f := &src.Extra[i]
		b = appendMember(b, ',', f.Name)
		switch v := f.Value.(type) {
		case nil:
			b = append(b, "null"...)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case string:
			b = appendString(b, v)
		default:
			if b, err = appendPlain(b, v); err != nil {
				return b, inField(f.Name, err)
			}
		}
	}
	return append(b, '}'), nil
}

// appendSourceCommon appends the opening of a source block: its common
// members, up to ts_ns.
func appendSourceCommon(b []byte, src *SourceInfo) []byte {
	b = append(b, `{"version":`...)
	b = appendString(b, src.Version)
	b = append(b, `,"connector":`...)
	b = appendString(b, src.Connector)
	b = append(b, `,"name":`...)
	b = appendString(b, src.Name)
	b = strconv.AppendInt(append(b, `,"ts_ms":`...), src.TsMs, 10)
	b = append(b, `,"snapshot":`...)
	if src.Snapshot == "" {
		b = append(b, `"`+SnapshotFalse+`"`...)
	} else {
		b = appendString(b, src.Snapshot)
	}
	b = append(b, `,"db":`...)
	b = appendString(b, src.DB)
	b = append(b, `,"sequence":`...)
	if src.Sequence == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, src.Sequence)
	}
	b = appendOptInt(append(b, `,"ts_us":`...), src.TsUs)
	b = appendOptInt(append(b, `,"ts_ns":`...), src.TsNs)
	return b
}

func appendOptInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, v, 10)
}

func appendTransaction(b []byte, t *Transaction) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"id":`...)
	b = appendString(b, t.ID)
	b = append(b, `,"total_order":`...)
	b = strconv.AppendInt(b, t.TotalOrder, 10)
	b = append(b, `,"data_collection_order":`...)
	b = strconv.AppendInt(b, t.DataCollectionOrder, 10)
	return append(b, '}')
}

// row returns the source block as a row: the common fields (those s has,
// when there is a schema), then Extra. Empty optional values become nil,
// unless the schema makes the field required.
func (src SourceInfo) row(s *Schema) Row {
	r := make(Row, 0, len(sourceCommon)+len(src.Extra))
	add := func(name string, v any, null bool) {
		var fs *Schema
		if s != nil {
			var ok bool
			if fs, ok = s.FieldSchema(name); !ok {
				return
			}
		}
		if null && (fs == nil || fs.Optional) {
			v = nil
		}
		r = append(r, Field{Name: name, Value: v})
	}
	snapshot := src.Snapshot
	if snapshot == "" {
		snapshot = SnapshotFalse
	}
	add("version", src.Version, false)
	add("connector", src.Connector, false)
	add("name", src.Name, false)
	add("ts_ms", src.TsMs, false)
	add("snapshot", snapshot, false)
	add("db", src.DB, false)
	add("sequence", src.Sequence, src.Sequence == "")
	add("ts_us", src.TsUs, src.TsUs == 0)
	add("ts_ns", src.TsNs, src.TsNs == 0)
	return append(r, src.Extra...)
}

// Decode decodes a Debezium change event from its record key and value, in
// either form (with embedded schemas or without). A nil key (or JSON null)
// is a null key. A nil or empty value, or JSON null, is a tombstone:
// Decode returns ErrTombstone. Payload fields the envelope does not define
// are ignored; with schemas, the embedded schemas end up in e.Schema.
func (c DebeziumJSON) Decode(key, value []byte) (*ChangeEvent, error) {
	e, err := decodeValueEnvelope(value)
	if err != nil {
		return nil, err
	}
	if err := decodeKey(e, key); err != nil {
		return nil, err
	}
	return e, nil
}

func isNullJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// unwrap splits {"schema":…,"payload":…} into schema and payload; anything
// else is a payload without schema.
func unwrap(v any) (payload any, schema *Schema, err error) {
	obj, ok := v.(Row)
	if !ok || len(obj) != 2 {
		return v, nil, nil
	}
	sv, hasSchema := obj.Get("schema")
	pv, hasPayload := obj.Get("payload")
	if !hasSchema || !hasPayload {
		return v, nil, nil
	}
	if sv == nil {
		return pv, nil, nil
	}
	if schema, err = schemaFromJSON(sv); err != nil {
		return nil, nil, inField("schema", err)
	}
	return pv, schema, nil
}

func decodeValueEnvelope(value []byte) (*ChangeEvent, error) {
	if isNullJSON(value) {
		return nil, ErrTombstone
	}
	tree, err := parseJSON(value)
	if err != nil {
		return nil, fmt.Errorf("decode change event value: %w", err)
	}
	payload, schema, err := unwrap(tree)
	if err != nil {
		return nil, fmt.Errorf("decode change event value: %w", err)
	}
	if payload == nil {
		return nil, ErrTombstone
	}
	e := &ChangeEvent{}
	if schema != nil {
		if schema.Type != SchemaStruct {
			return nil, fmt.Errorf("decode change event value: the envelope schema is a %s, want a struct", schema.Type)
		}
		if payload, err = decodeValue(payload, schema); err != nil {
			return nil, fmt.Errorf("decode change event value: %w", err)
		}
		es, err := eventSchemaOf(schema)
		if err != nil {
			return nil, fmt.Errorf("decode change event value: %w", err)
		}
		e.Schema = es
	}
	env, ok := payload.(Row)
	if !ok {
		return nil, fmt.Errorf("decode change event value: want an object, have %s", jsonKind(payload))
	}
	if err := e.fill(env); err != nil {
		return nil, fmt.Errorf("decode change event value: %w", err)
	}
	return e, nil
}

// eventSchemaOf extracts the parts of an envelope schema that the model keeps.
func eventSchemaOf(env *Schema) (*EventSchema, error) {
	es := &EventSchema{Name: env.Name, Version: env.Version}
	before, hasBefore := env.FieldSchema("before")
	after, hasAfter := env.FieldSchema("after")
	if hasBefore && hasAfter && !reflect.DeepEqual(withoutField(before), withoutField(after)) {
		return nil, errors.New("the schemas of before and after differ")
	}
	switch {
	case hasAfter:
		es.Row = withoutField(after)
	case hasBefore:
		es.Row = withoutField(before)
	}
	if es.Row != nil && es.Row.Type != SchemaStruct {
		return nil, fmt.Errorf("the row schema is a %s, want a struct", es.Row.Type)
	}
	if src, ok := env.FieldSchema("source"); ok {
		if src.Type != SchemaStruct {
			return nil, fmt.Errorf("the source schema is a %s, want a struct", src.Type)
		}
		es.Source = withoutField(src)
	}
	return es, nil
}

func withoutField(s *Schema) *Schema {
	c := *s
	c.Field = ""
	return &c
}

// fill sets e from a decoded envelope.
func (e *ChangeEvent) fill(env Row) error {
	var err error
	opv, _ := env.Get("op")
	op, ok := opv.(string)
	if !ok {
		if opv == nil {
			return errors.New("op is missing")
		}
		return fmt.Errorf("op: want a string, have %s", jsonKind(opv))
	}
	e.Op = Op(op)
	if !e.Op.Valid() {
		return fmt.Errorf("unknown op %q", op)
	}
	if e.Before, err = rowField(env, "before"); err != nil {
		return err
	}
	if e.After, err = rowField(env, "after"); err != nil {
		return err
	}
	srcRow, err := rowField(env, "source")
	if err != nil {
		return err
	}
	if e.Source, err = sourceFromRow(srcRow); err != nil {
		return inField("source", err)
	}
	if e.TsMs, err = intField(env, "ts_ms"); err != nil {
		return err
	}
	if e.TsUs, err = intField(env, "ts_us"); err != nil {
		return err
	}
	if e.TsNs, err = intField(env, "ts_ns"); err != nil {
		return err
	}
	tx, err := rowField(env, "transaction")
	if err != nil {
		return err
	}
	if tx != nil {
		t := &Transaction{}
		if t.ID, err = stringField(tx, "id"); err != nil {
			return inField("transaction", err)
		}
		if t.TotalOrder, err = intField(tx, "total_order"); err != nil {
			return inField("transaction", err)
		}
		if t.DataCollectionOrder, err = intField(tx, "data_collection_order"); err != nil {
			return inField("transaction", err)
		}
		e.Transaction = t
	}
	if e.Op != OpMessage {
		return nil
	}
	msg, err := rowField(env, "message")
	if err != nil {
		return err
	}
	if msg != nil {
		m := &Message{}
		if m.Prefix, err = stringField(msg, "prefix"); err != nil {
			return inField("message", err)
		}
		switch c, _ := msg.Get("content"); c := c.(type) {
		case nil:
		case []byte:
			m.Content = c
		case string:
			if m.Content, err = base64.StdEncoding.DecodeString(c); err != nil {
				return inField("message", inField("content", valueErrorf("%q is not base64", c)))
			}
		default:
			return inField("message", inField("content", valueErrorf("want base64 bytes, have %s", jsonKind(c))))
		}
		e.Message = m
	}
	if e.Op == OpMessage && e.Message == nil {
		return errors.New("message is missing from an op m event")
	}
	return nil
}

// sourceFromRow splits a source block into the common fields and Extra.
func sourceFromRow(r Row) (SourceInfo, error) {
	var s SourceInfo
	var err error
	for _, f := range r {
		switch f.Name {
		case "version":
			s.Version, err = asString(f)
		case "connector":
			s.Connector, err = asString(f)
		case "name":
			s.Name, err = asString(f)
		case "db":
			s.DB, err = asString(f)
		case "sequence":
			s.Sequence, err = asString(f)
		case "snapshot":
			// Debezium before 1.0 wrote a boolean.
			if bv, ok := f.Value.(bool); ok {
				s.Snapshot = strconv.FormatBool(bv)
			} else {
				s.Snapshot, err = asString(f)
			}
		case "ts_ms":
			s.TsMs, err = asInt(f)
		case "ts_us":
			s.TsUs, err = asInt(f)
		case "ts_ns":
			s.TsNs, err = asInt(f)
		default:
			s.Extra = append(s.Extra, f)
		}
		if err != nil {
			return SourceInfo{}, err
		}
	}
	if s.Snapshot == "" {
		s.Snapshot = SnapshotFalse
	}
	return s, nil
}

func rowField(r Row, name string) (Row, error) {
	v, _ := r.Get(name)
	switch v := v.(type) {
	case nil:
		return nil, nil
	case Row:
		return v, nil
	}
	return nil, inField(name, valueErrorf("want an object, have %s", jsonKind(v)))
}

func stringField(r Row, name string) (string, error) {
	v, _ := r.Get(name)
	return asString(Field{Name: name, Value: v})
}

func intField(r Row, name string) (int64, error) {
	v, _ := r.Get(name)
	return asInt(Field{Name: name, Value: v})
}

func asString(f Field) (string, error) {
	switch v := f.Value.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return "", inField(f.Name, valueErrorf("want a string, have %s", jsonKind(f.Value)))
}

func asInt(f Field) (int64, error) {
	switch v := f.Value.(type) {
	case nil:
		return 0, nil
	case int64:
		return v, nil
	}
	return 0, inField(f.Name, valueErrorf("want an integer, have %s", jsonKind(f.Value)))
}

// decodeKey sets e.Key (and e.Schema.Key) from a record key.
func decodeKey(e *ChangeEvent, key []byte) error {
	if isNullJSON(key) {
		return nil
	}
	tree, err := parseJSON(key)
	if err != nil {
		return fmt.Errorf("decode change event key: %w", err)
	}
	payload, schema, err := unwrap(tree)
	if err != nil {
		return fmt.Errorf("decode change event key: %w", err)
	}
	if schema != nil {
		if schema.Type != SchemaStruct {
			return fmt.Errorf("decode change event key: the key schema is a %s, want a struct", schema.Type)
		}
		if payload, err = decodeValue(payload, schema); err != nil {
			return fmt.Errorf("decode change event key: %w", err)
		}
		if e.Schema == nil {
			e.Schema = &EventSchema{}
		}
		e.Schema.Key = schema
	}
	switch p := payload.(type) {
	case nil:
	case Row:
		e.Key = p
	default:
		return fmt.Errorf("decode change event key: want an object, have %s", jsonKind(payload))
	}
	return nil
}

package iceberg

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// event is one record as the sink sees it: the row to write (or, for a
// delete, the row's key), where it goes and how.
type event struct {
	op        connect.Op      // the change event's operation; "" for a plain JSON value
	row       connect.Row     // after (before for a delete), or the JSON object
	rowSchema *connect.Schema // the row's Connect schema, when the record embeds one
	key       connect.Row     // the primary key: the change event's key or the record key's object
	keySchema *connect.Schema
	namespace string // from the source block (schema, else db); "" when unknown
	table     string // from the source block; "" when unknown
	tombstone bool   // a record without a value
}

var debezium connect.DebeziumJSON

// decodeRecord reads a record: a Debezium change event (with or without
// embedded schemas), a tombstone, or any JSON object.
func decodeRecord(r *connect.Record) (event, error) {
	if r.Value == nil {
		ev := event{tombstone: true}
		if r.Key != nil {
			ev.key, ev.keySchema, _ = decodeKey(r.Key)
		}
		return ev, nil
	}
	if looksLikeChangeEvent(r.Value) {
		ce, err := debezium.Decode(r.Key, r.Value)
		switch {
		case errors.Is(err, connect.ErrTombstone):
			return event{tombstone: true}, nil
		case err == nil && ce.Op != "":
			return fromChangeEvent(ce), nil
		}
		// Not a change event after all: read it as a JSON object.
	}
	var row connect.Row
	if err := row.UnmarshalJSON(r.Value); err != nil {
		return event{}, fmt.Errorf("record value is not JSON: %w", err)
	}
	if row == nil {
		return event{tombstone: true}, nil
	}
	ev := event{row: row}
	// Kafka Connect's JsonConverter with schemas: {"schema":…,"payload":…}.
	if len(row) == 2 && row[0].Name == "schema" && row[1].Name == "payload" {
		if p, ok := row[1].Value.(connect.Row); ok {
			ev.row = p
			if sr, ok := row[0].Value.(connect.Row); ok {
				var s connect.Schema
				if b, err := sr.MarshalJSON(); err == nil && s.UnmarshalJSON(b) == nil && s.Type == connect.SchemaStruct {
					ev.rowSchema = &s
				}
			}
		}
	}
	if r.Key != nil {
		ev.key, ev.keySchema, _ = decodeKey(r.Key)
	}
	return ev, nil
}

// looksLikeChangeEvent is a cheap test that spares plain JSON values a
// failed change-event decode.
func looksLikeChangeEvent(v []byte) bool {
	return bytes.Contains(v, []byte(`"op"`)) && (bytes.Contains(v, []byte(`"after"`)) || bytes.Contains(v, []byte(`"before"`)))
}

func fromChangeEvent(ce *connect.ChangeEvent) event {
	ev := event{op: ce.Op, key: ce.Key, row: ce.After}
	if ce.Op == connect.OpDelete || ev.row == nil {
		ev.row = ce.Before
	}
	if ce.Schema != nil {
		ev.rowSchema = ce.Schema.Row
		ev.keySchema = ce.Schema.Key
	}
	if v, ok := ce.Source.Extra.Get("schema"); ok {
		ev.namespace, _ = v.(string)
	}
	if ev.namespace == "" {
		ev.namespace = ce.Source.DB
	}
	if v, ok := ce.Source.Extra.Get("table"); ok {
		ev.table, _ = v.(string)
	}
	return ev
}

// decodeKey reads a record key that is a JSON object, with or without an
// embedded schema; other keys yield nil.
func decodeKey(key []byte) (connect.Row, *connect.Schema, error) {
	var row connect.Row
	if err := row.UnmarshalJSON(key); err != nil {
		return nil, nil, err
	}
	if len(row) == 2 && row[0].Name == "schema" && row[1].Name == "payload" {
		p, _ := row[1].Value.(connect.Row)
		return p, nil, nil
	}
	return row, nil, nil
}

// tableName fills the name template: {topic} (dots as underscores),
// {namespace} and {table} (from the change event's source block, else from
// the topic: its last part is the table, the part before it the namespace,
// "default" when there is none), {db}, {schema}.
func tableName(template, topic string, ev *event) string {
	ns, tbl := ev.namespace, ev.table
	if tbl == "" {
		parts := strings.Split(topic, ".")
		tbl = parts[len(parts)-1]
		ns = "default"
		if len(parts) > 1 {
			ns = parts[len(parts)-2]
		}
	} else if ns == "" {
		ns = "default"
	}
	return strings.NewReplacer(
		"{topic}", strings.ReplaceAll(topic, ".", "_"),
		"{namespace}", ns,
		"{table}", tbl,
		"{db}", ns,
		"{schema}", ns,
	).Replace(template)
}

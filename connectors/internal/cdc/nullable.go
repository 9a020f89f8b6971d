package cdc

import (
	"slices"

	"github.com/tributary-io/tributary/connect"
)

// NullsOptional returns es, the schema of a table's events, or, when
// before or after holds a null in a column that es describes as required
// (a NOT NULL column), a copy in which those columns are optional: the
// schema of that one event, so that the event is valid against the schema
// it carries. A NOT NULL column can hold a null in an event when its value
// could not be mapped, when the row image lacks it (a partial row image,
// the old row of a Postgres delete that logs only the key) or when the
// definition the connector knows is newer than the row. Debezium writes a
// fallback value (0, "") there instead; a null does not pretend to know
// the value. Row i of before and after is field i of es.Row.
func NullsOptional(es *connect.EventSchema, before, after connect.Row) *connect.EventSchema {
	if es == nil || es.Row == nil {
		return es
	}
	var fields []connect.Schema // the copy, once a column needs it
	for i := range es.Row.Fields {
		if es.Row.Fields[i].Optional {
			continue
		}
		if (i < len(before) && before[i].Value == nil) || (i < len(after) && after[i].Value == nil) {
			if fields == nil {
				fields = slices.Clone(es.Row.Fields)
			}
			fields[i].Optional = true
		}
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

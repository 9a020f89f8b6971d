package connect

import (
	"crypto/md5"
	"encoding/json"
	"fmt"
)

// Debezium writes UnavailableValue (or the connector's
// unavailable.value.placeholder) for an unchanged TOASTed Postgres value,
// which logical replication does not send, in a form that fits the
// column's type: the text for text-like types, its bytes for bytea, a
// one-element array of those for arrays of them, and the forms below for
// the types it treats on their own (UnchangedToastedPlaceholder). Sources
// write them and sinks recognise them with these functions.

// UnavailableColumnsHeader is the header a source adds to a change event
// whose after state lacks values that the database did not send (an
// unchanged TOASTed Postgres value; a BLOB or TEXT value a MySQL
// binlog_row_image=NOBLOB row image left out): a JSON array of the names
// of those columns, ["vec","amount"]. It lists every such column, those that carry the
// placeholder and those whose type cannot hold it and carry null, as
// Debezium writes them; the value itself stays Debezium's. A sink that
// keeps a previous state (an upsert) keeps those columns' previous values
// instead of writing null or the placeholder over them.
const UnavailableColumnsHeader = "__tributary.unavailable.columns"

// UnavailableColumns is the UnavailableColumnsHeader naming columns.
func UnavailableColumns(columns []string) Header {
	b, err := json.Marshal(columns)
	if err != nil { // strings always marshal
		panic(fmt.Sprintf("marshal the unavailable columns: %v", err))
	}
	return Header{Key: UnavailableColumnsHeader, Value: b}
}

// ParseUnavailableColumns reads the value of an UnavailableColumnsHeader.
func ParseUnavailableColumns(value []byte) ([]string, error) {
	var cols []string
	if err := json.Unmarshal(value, &cols); err != nil {
		return nil, fmt.Errorf("header %s: %q is not a JSON array of column names: %w", UnavailableColumnsHeader, value, err)
	}
	return cols, nil
}

// UnavailableNumbers is the placeholder of an int[], bigint[] or date[]
// column: the placeholder's bytes, one number each, signed as Java's bytes
// are.
func UnavailableNumbers(placeholder string) []int64 {
	out := make([]int64, len(placeholder))
	for i := range len(placeholder) {
		out[i] = int64(int8(placeholder[i]))
	}
	return out
}

// UnavailableUUID is the one element of the placeholder of a uuid[]
// column: the name-based (version 3, MD5) UUID of the placeholder's bytes,
// as Java's UUID.nameUUIDFromBytes makes it
// (b68a35a7-17ad-35b3-af2a-ae46edb4545a for the default).
func UnavailableUUID(placeholder string) string {
	h := md5.Sum([]byte(placeholder))
	h[6] = h[6]&0x0f | 0x30
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// UnavailableHstore is the placeholder of an hstore column written as JSON
// (hstore.handling.mode=json): an object of one pair whose key and value
// are the placeholder.
func UnavailableHstore(placeholder string) string {
	b, err := Row{{Name: placeholder, Value: placeholder}}.MarshalJSON()
	if err != nil { // a string pair always marshals
		panic(fmt.Sprintf("marshal the hstore placeholder: %v", err))
	}
	return string(b)
}

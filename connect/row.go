package connect

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Field is one named value of a Row.
//
// Values use a small, closed set of Go types, so that every value has one
// JSON form and survives a round trip:
//
//	nil          SQL NULL, JSON null
//	bool         boolean
//	int64        int8, int16, int32, int64 (any Go integer type is accepted
//	             when encoding; decoding always yields int64)
//	float64      float (float32), double (float32 is accepted when encoding)
//	string       string, and the many logical types Debezium writes as
//	             strings (decimal in string mode, ZonedTimestamp, Json, Uuid)
//	[]byte       bytes, written as standard base64 ("BNI=")
//	json.Number  a number whose exact text must be kept: an integer beyond
//	             int64 or a float beyond float64, when no schema says better
//	Row          struct (nested), and map with string keys
//	[]any        array; also a map with non-string keys, as [key, value] pairs
//
// Without a schema, JSON decoding cannot tell bytes from strings (both are
// JSON strings) and yields string; an integer literal yields int64, a number
// with a fraction or exponent float64.
type Field struct {
	Name  string // the field (column) name
	Value any    // the value, one of the types listed above
}

// Row is an ordered list of fields: a table row, a primary key, a source
// block, a nested struct. Order is kept because Debezium's JSON keeps the
// column order of the table. A nil Row is JSON null; an empty, non-nil Row
// is {}. Field names are unique within a row.
type Row []Field

// Index returns the position of the field called name, or -1.
func (r Row) Index(name string) int {
	for i := range r {
		if r[i].Name == name {
			return i
		}
	}
	return -1
}

// Get returns the value of the field called name and whether it exists.
func (r Row) Get(name string) (any, bool) {
	if i := r.Index(name); i >= 0 {
		return r[i].Value, true
	}
	return nil, false
}

// Set sets the field called name to v, replacing its value in place or
// appending it as the last field.
func (r *Row) Set(name string, v any) {
	if i := r.Index(name); i >= 0 {
		(*r)[i].Value = v
		return
	}
	*r = append(*r, Field{Name: name, Value: v})
}

// Delete removes the field called name, keeping the order of the others,
// and reports whether it existed.
func (r *Row) Delete(name string) bool {
	i := r.Index(name)
	if i < 0 {
		return false
	}
	*r = append((*r)[:i], (*r)[i+1:]...)
	return true
}

// Names returns the field names in order.
func (r Row) Names() []string {
	names := make([]string, len(r))
	for i, f := range r {
		names[i] = f.Name
	}
	return names
}

// Select returns a new row with the named fields in the given order,
// skipping names r does not have. It builds a change event's key from a row
// and the primary-key columns. Select with no names returns nil (a null key).
func (r Row) Select(names ...string) Row {
	if len(names) == 0 {
		return nil
	}
	out := make(Row, 0, len(names))
	for _, n := range names {
		if v, ok := r.Get(n); ok {
			out = append(out, Field{Name: n, Value: v})
		}
	}
	return out
}

// String renders the row as JSON for logs and test failures.
func (r Row) String() string {
	b, err := r.MarshalJSON()
	if err != nil {
		return fmt.Sprintf("%%!(row: %v)", err)
	}
	return string(b)
}

// MarshalJSON encodes the row as a JSON object with the fields in order.
func (r Row) MarshalJSON() ([]byte, error) {
	return appendValue(nil, r, nil)
}

// UnmarshalJSON decodes a JSON object (or null) into the row, keeping the
// field order; values follow the schemaless rules described at Field.
func (r *Row) UnmarshalJSON(data []byte) error {
	v, err := parseJSON(data)
	if err != nil {
		return fmt.Errorf("decode row: %w", err)
	}
	switch v := v.(type) {
	case nil:
		*r = nil
	case Row:
		*r = v
	default:
		return fmt.Errorf("decode row: want a JSON object, have %s", jsonKind(v))
	}
	return nil
}

// lookup finds fields of r by name, positionally first (rows usually
// follow their schema's order), then through an index built on first miss.
type lookup struct {
	r     Row
	index map[string]int
}

// find returns the position of the field called name, trying i first.
func (l *lookup) find(i int, name string) int {
	if i < len(l.r) && l.r[i].Name == name {
		return i
	}
	if len(l.r) <= 16 {
		return l.r.Index(name)
	}
	if l.index == nil {
		l.index = make(map[string]int, len(l.r))
		for j := len(l.r) - 1; j >= 0; j-- {
			l.index[l.r[j].Name] = j
		}
	}
	if j, ok := l.index[name]; ok {
		return j
	}
	return -1
}

// checkUniqueNames reports the first field name that appears twice.
func checkUniqueNames(r Row) error {
	// Most rows have no two names alike in length, first and last byte:
	// one pass over a 64-bit mask of those says so; the exact checks
	// below run only when two names collide in the mask.
	var mask uint64
	for i := range r {
		bit := nameBit(r[i].Name)
		if mask&bit != 0 {
			return checkUniqueNamesExact(r)
		}
		mask |= bit
	}
	return nil
}

// nameBit is a name's bit in the mask of checkUniqueNames: equal names
// have equal bits.
func nameBit(name string) uint64 {
	if name == "" {
		return 1
	}
	return 1 << ((uint(len(name))*7 + uint(name[0])*3 + uint(name[len(name)-1])) & 63)
}

// checkUniqueNamesExact is checkUniqueNames without the mask.
func checkUniqueNamesExact(r Row) error {
	// Pairwise comparison beats a map up to a few dozen fields (source
	// blocks have 10–20; rows of wide tables more).
	if len(r) <= 48 {
		for i := 1; i < len(r); i++ {
			for j := 0; j < i; j++ {
				if r[i].Name == r[j].Name {
					return fmt.Errorf("duplicate field %q", r[i].Name)
				}
			}
		}
		return nil
	}
	seen := make(map[string]struct{}, len(r))
	for _, f := range r {
		if _, dup := seen[f.Name]; dup {
			return fmt.Errorf("duplicate field %q", f.Name)
		}
		seen[f.Name] = struct{}{}
	}
	return nil
}

// valueError is a problem with one value, with the path of field names
// (after.address.zip, tags[2]) that leads to it.
type valueError struct {
	path string
	msg  string
}

func (e *valueError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

func valueErrorf(format string, args ...any) error {
	return &valueError{msg: fmt.Sprintf(format, args...)}
}

// inField prefixes the path of err with a field name.
func inField(name string, err error) error {
	ve, ok := err.(*valueError)
	if !ok {
		return fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case ve.path == "":
		ve.path = name
	case strings.HasPrefix(ve.path, "["):
		ve.path = name + ve.path
	default:
		ve.path = name + "." + ve.path
	}
	return ve
}

// inIndex prefixes the path of err with an array index.
func inIndex(i int, err error) error {
	ve, ok := err.(*valueError)
	if !ok {
		return fmt.Errorf("[%d]: %w", i, err)
	}
	idx := fmt.Sprintf("[%d]", i)
	switch {
	case ve.path == "":
		ve.path = idx
	case strings.HasPrefix(ve.path, "["):
		ve.path = idx + ve.path
	default:
		ve.path = idx + "." + ve.path
	}
	return ve
}

// jsonKind names the JSON kind of a decoded value, for error messages.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case int64, float64, json.Number:
		return "a number"
	case string:
		return "a string"
	case Row:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

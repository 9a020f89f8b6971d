package transform

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// Values are decoded into this model, so that a value re-encodes to the
// same JSON up to whitespace:
//
//	connect.Row   object, fields in order (duplicate names are rejected)
//	[]any         array
//	string        string
//	json.Number   number, its exact text
//	bool, nil     true, false, null
//
// Transforms may add int64 values; the encoder also takes float64 and
// []byte (as base64).

// parseJSON decodes one JSON value.
func parseJSON(data []byte) (any, error) {
	if !json.Valid(data) {
		var raw json.RawMessage
		err := json.Unmarshal(data, &raw)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	p := parser{data: data}
	return p.value()
}

// parser decodes JSON that json.Valid accepted: it need not check syntax,
// and the nesting depth is bounded by encoding/json's limit.
type parser struct {
	data []byte
	pos  int
}

func (p *parser) space() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	p.space()
	switch p.data[p.pos] {
	case '{':
		return p.object()
	case '[':
		p.pos++
		arr := []any{}
		p.space()
		if p.data[p.pos] == ']' {
			p.pos++
			return arr, nil
		}
		for {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
			p.space()
			c := p.data[p.pos]
			p.pos++
			if c == ']' {
				return arr, nil
			}
		}
	case '"':
		return p.str()
	case 't':
		p.pos += len("true")
		return true, nil
	case 'f':
		p.pos += len("false")
		return false, nil
	case 'n':
		p.pos += len("null")
		return nil, nil
	}
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
			break
		}
		p.pos++
	}
	return json.Number(p.data[start:p.pos]), nil
}

func (p *parser) object() (any, error) {
	p.pos++ // {
	row := connect.Row{}
	p.space()
	if p.data[p.pos] == '}' {
		p.pos++
		return row, nil
	}
	var seen map[string]struct{}
	for {
		p.space()
		name, err := p.str()
		if err != nil {
			return nil, err
		}
		if seen == nil && len(row) >= 16 {
			seen = make(map[string]struct{}, 2*len(row))
			for _, f := range row {
				seen[f.Name] = struct{}{}
			}
		}
		dup := false
		if seen != nil {
			_, dup = seen[name]
			seen[name] = struct{}{}
		} else {
			dup = row.Index(name) >= 0
		}
		if dup {
			return nil, fmt.Errorf("duplicate field %q in an object", name)
		}
		p.space()
		p.pos++ // :
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		row = append(row, connect.Field{Name: name, Value: v})
		p.space()
		c := p.data[p.pos]
		p.pos++
		if c == '}' {
			return row, nil
		}
	}
}

func (p *parser) str() (string, error) {
	start := p.pos
	p.pos++ // opening quote
	escaped := false
	for p.data[p.pos] != '"' {
		if p.data[p.pos] == '\\' {
			escaped = true
			p.pos++
		}
		p.pos++
	}
	p.pos++
	text := p.data[start+1 : p.pos-1]
	if !escaped && utf8.Valid(text) {
		return string(text), nil
	}
	var s string
	if err := json.Unmarshal(p.data[start:p.pos], &s); err != nil {
		return "", err
	}
	return s, nil
}

// encodeJSON encodes v compactly.
func encodeJSON(v any) ([]byte, error) {
	return appendJSON(nil, v)
}

func appendJSON(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendString(b, v), nil
	case json.Number:
		if v == "" {
			return b, errors.New("empty number")
		}
		return append(b, v...), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return b, fmt.Errorf("%v cannot be represented in JSON", v)
		}
		return strconv.AppendFloat(b, v, 'g', -1, 64), nil
	case []byte:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"'), nil
	case connect.Row:
		if v == nil {
			return append(b, "null"...), nil
		}
		b = append(b, '{')
		for i, f := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f.Name)
			b = append(b, ':')
			if b, err = appendJSON(b, f.Value); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendJSON(b, e); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	}
	return b, fmt.Errorf("unsupported value type %T", v)
}

// appendString appends s as a JSON string as Kafka Connect's JsonConverter
// writes it: quotes, backslashes and control characters escaped, the rest,
// non-ASCII included, as is; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, "\ufffd"...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// textOf renders a decoded value as text for comparisons, templates, keys
// and hashes: a string as itself, a number as its JSON text, true, false,
// null, and an object or array as compact JSON.
func textOf(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case json.Number:
		return string(v)
	case bool:
		return strconv.FormatBool(v)
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(v, 10)
	}
	b, err := encodeJSON(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// kindOf names the JSON kind of a decoded value, for error messages.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, int64, int, float64:
		return "a number"
	case string:
		return "a string"
	case connect.Row:
		return "an object"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// payloadOf returns the payload of a value with an embedded Kafka Connect
// schema, {"schema":…,"payload":…}, and v itself otherwise.
func payloadOf(v any) any {
	p, _ := splitSchema(v)
	return p
}

// splitSchema splits {"schema":…,"payload":…} into payload and schema (an
// object or nil); anything else is a payload without schema.
func splitSchema(v any) (payload any, schema connect.Row) {
	obj, ok := v.(connect.Row)
	if !ok || len(obj) != 2 {
		return v, nil
	}
	s, hasSchema := obj.Get("schema")
	p, hasPayload := obj.Get("payload")
	if !hasSchema || !hasPayload {
		return v, nil
	}
	switch s := s.(type) {
	case nil:
		return p, nil
	case connect.Row:
		return p, s
	}
	return v, nil
}

// readObject decodes a record value for a transform that reads or changes
// fields: the JSON object, or the payload of a value with an embedded
// schema. ok is false for a null value (a tombstone, or a null payload),
// which has no fields. The error, a bad record, names transform and field
// (the first field the transform works on).
func readObject(transform, field string, value []byte) (row connect.Row, ok bool, err error) {
	if value == nil {
		return nil, false, nil
	}
	v, err := parseJSON(value)
	if err != nil {
		return nil, false, badRecord(transform, field, "the record value is not JSON: %v", err)
	}
	switch v := payloadOf(v).(type) {
	case nil:
		return nil, false, nil
	case connect.Row:
		return v, true, nil
	default:
		return nil, false, badRecord(transform, field, "the record value is %s, want a JSON object", kindOf(v))
	}
}

// withValue returns r with its value replaced by row, encoded.
func withValue(transform string, r connect.Record, row connect.Row) ([]connect.Record, error) {
	b, err := encodeJSON(row)
	if err != nil {
		return nil, badRecord(transform, "", "encode the value: %v", err)
	}
	r.Value = b
	return []connect.Record{r}, nil
}

// Package jsonline writes records as lines of JSON, as the file and stdout
// sinks print them: the value alone, or an object with the record's topic,
// partition, offset, timestamp, key and value. A key or value that is JSON
// in UTF-8 is written as that JSON, compacted; anything else as a JSON
// string (invalid UTF-8 becomes U+FFFD).
package jsonline

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// compact appends data, a JSON value, with insignificant space removed, and
// reports whether data was valid JSON in UTF-8; when not, b is left as it
// was.
func compact(b *bytes.Buffer, data []byte) bool {
	valid, isCompact, ascii := scanJSON(data)
	switch {
	case !valid, !ascii && !utf8.Valid(data):
		return false
	case isCompact:
		// Most values are: then checking is enough, and much cheaper
		// than rewriting.
		b.Write(data)
		return true
	}
	return json.Compact(b, data) == nil
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD;
// HTML characters are not escaped.
func appendString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b.WriteString(s[start:i])
			switch c {
			case '"', '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString(s[start:i])
			b.WriteString(`\ufffd`)
			i++
			start = i
			continue
		}
		i += size
	}
	b.WriteString(s[start:])
	b.WriteByte('"')
}

// Append appends the line of one record, newline included: with metadata,
// {"topic":…,"partition":…,"offset":…,"timestamp":…,"key":…,"value":…};
// without, the value alone.
func Append(b *bytes.Buffer, r *connect.Record, metadata bool) {
	if !metadata {
		appendDecoded(b, r.Value)
		b.WriteByte('\n')
		return
	}
	b.WriteString(`{"topic":`)
	appendString(b, r.Topic)
	b.WriteString(`,"partition":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), int64(r.Partition), 10))
	b.WriteString(`,"offset":`)
	b.Write(strconv.AppendInt(b.AvailableBuffer(), r.Offset, 10))
	b.WriteString(`,"timestamp":`)
	if r.Timestamp.IsZero() {
		b.WriteString("null")
	} else {
		b.WriteByte('"')
		b.Write(r.Timestamp.UTC().AppendFormat(b.AvailableBuffer(), time.RFC3339Nano))
		b.WriteByte('"')
	}
	b.WriteString(`,"key":`)
	appendDecoded(b, r.Key)
	b.WriteString(`,"value":`)
	appendDecoded(b, r.Value)
	b.WriteString("}\n")
}

// appendDecoded appends data as JSON: null for nil, the data compacted when
// it is valid JSON in UTF-8, else a JSON string of it.
func appendDecoded(b *bytes.Buffer, data []byte) {
	if data == nil {
		b.WriteString("null")
		return
	}
	if compact(b, data) {
		return
	}
	appendString(b, string(data))
}

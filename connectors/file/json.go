package file

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
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

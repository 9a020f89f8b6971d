package connect

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of decoded JSON, as Jackson does (its
// default maximum nesting depth is 1000), so that hostile input cannot
// exhaust the stack.
const maxJSONDepth = 1000

// parseJSON parses one JSON value into the schemaless value model: objects
// become Row (field order kept, duplicate names rejected), arrays []any,
// strings string, booleans bool, null nil, and numbers int64, float64 or
// json.Number (see classifyNumber).
func parseJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("invalid JSON: data after the top-level value")
	}
	return v, nil
}

func parseJSONValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("invalid JSON: unexpected end of input")
		}
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	switch t := tok.(type) {
	case json.Delim:
		if depth >= maxJSONDepth {
			return nil, fmt.Errorf("invalid JSON: nested deeper than %d levels", maxJSONDepth)
		}
		switch t {
		case '{':
			row := Row{}
			var seen map[string]struct{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("invalid JSON: %w", err)
				}
				name, ok := kt.(string)
				if !ok {
					return nil, errors.New("invalid JSON: object key is not a string")
				}
				if seen == nil && len(row) >= 8 {
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
					return nil, fmt.Errorf("invalid JSON: duplicate field %q", name)
				}
				v, err := parseJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				row = append(row, Field{Name: name, Value: v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			return row, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := parseJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("invalid JSON: %w", err)
			}
			return arr, nil
		}
		return nil, fmt.Errorf("invalid JSON: unexpected %q", rune(t))
	case json.Number:
		return classifyNumber(t), nil
	case string, bool, nil:
		return t, nil
	}
	return nil, fmt.Errorf("invalid JSON: unexpected token %v", tok)
}

// classifyNumber turns a JSON number without a schema into a Go value: an
// integer literal that fits int64 becomes int64; a literal with a fraction or
// an exponent becomes float64 (Debezium writes every double with one, e.g.
// 1.0 or 1.0E10); anything that would lose its value (an integer beyond
// int64, a float beyond float64) stays a json.Number holding the exact text.
func classifyNumber(n json.Number) any {
	s := string(n)
	if isIntegerLiteral(s) {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i
		}
		return n
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return n
	}
	return f
}

func isIntegerLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '.' || c == 'e' || c == 'E' {
			return false
		}
	}
	return true
}

// validNumber reports whether s is a JSON number literal.
func validNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == start {
			return false
		}
	}
	return i == len(s)
}

// appendString appends s as a JSON string the way Jackson (and so Kafka
// Connect's JsonConverter) writes it: quotes, backslashes and control
// characters escaped, everything else, including non-ASCII, as is. Invalid
// UTF-8 becomes U+FFFD.
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
			case '"':
				b = append(b, '\\', '"')
			case '\\':
				b = append(b, '\\', '\\')
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
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJavaFloat appends f formatted as Java's Double.toString (bits 64)
// or Float.toString (bits 32) would, which is what Debezium's JSON holds:
// the shortest digits that identify the value, plain notation with at least
// one fractional digit for 1e-3 <= |f| < 1e7 ("12.5", "100.0", "0.001"),
// and computerized scientific notation otherwise ("1.0E7", "1.25E-5").
func appendJavaFloat(b []byte, f float64, bits int) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, fmt.Errorf("%v cannot be represented in JSON", f)
	}
	if math.Signbit(f) {
		b = append(b, '-')
		f = -f
	}
	if f == 0 {
		return append(b, "0.0"...), nil
	}
	// Shortest digits and exponent: "d.ddde±XX".
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', -1, bits)
	mant, expPart, _ := bytes.Cut(e, []byte{'e'})
	exp, _ := strconv.Atoi(string(expPart))
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	if exp >= -3 && exp < 7 {
		if exp < 0 {
			b = append(b, '0', '.')
			for i := 0; i < -exp-1; i++ {
				b = append(b, '0')
			}
			return append(b, digits...), nil
		}
		intLen := exp + 1
		if len(digits) <= intLen {
			b = append(b, digits...)
			for i := len(digits); i < intLen; i++ {
				b = append(b, '0')
			}
			return append(b, '.', '0'), nil
		}
		b = append(b, digits[:intLen]...)
		b = append(b, '.')
		return append(b, digits[intLen:]...), nil
	}
	b = append(b, digits[0], '.')
	if len(digits) > 1 {
		b = append(b, digits[1:]...)
	} else {
		b = append(b, '0')
	}
	b = append(b, 'E')
	return strconv.AppendInt(b, int64(exp), 10), nil
}

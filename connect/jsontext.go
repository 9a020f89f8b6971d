package connect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJSONDepth bounds the nesting of decoded JSON, as Jackson does (its
// default maximum nesting depth is 1000), so that hostile input cannot
// exhaust the stack.
const maxJSONDepth = 1000

// parseJSON parses one JSON value into the schemaless value model: objects
// become Row (field order kept, duplicate names rejected), arrays []any,
// strings string, booleans bool, null nil, and numbers int64, float64 or
// json.Number (see number). Invalid UTF-8 in strings and unpaired
// surrogates become U+FFFD, as with encoding/json.
func parseJSON(data []byte) (any, error) {
	p := jsonParser{data: data}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("data after the top-level value")
	}
	return v, nil
}

// jsonParser is a recursive-descent JSON parser over a byte slice; it is
// several times faster than json.Decoder's token API, which the hot path of
// decoding change events cannot afford.
type jsonParser struct {
	data []byte
	pos  int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("invalid JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		return p.string()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	default:
		return nil, p.errorf("unexpected character %q", c)
	}
}

func (p *jsonParser) literal(lit string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(lit)) {
		return p.errorf("invalid literal")
	}
	p.pos += len(lit)
	return nil
}

func (p *jsonParser) object(depth int) (any, error) {
	if depth >= maxJSONDepth {
		return nil, p.errorf("nested deeper than %d levels", maxJSONDepth)
	}
	p.pos++ // {
	row := Row{}
	var seen map[string]struct{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return row, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("want an object key")
		}
		name, err := p.string()
		if err != nil {
			return nil, err
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
			return nil, p.errorf("duplicate field %q", name)
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("want ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		row = append(row, Field{Name: name, Value: v})
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			return row, nil
		default:
			return nil, p.errorf("want ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth >= maxJSONDepth {
		return nil, p.errorf("nested deeper than %d levels", maxJSONDepth)
	}
	p.pos++ // [
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for {
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.errorf("want ',' or ']' in an array")
		}
	}
}

// string parses a JSON string starting at its opening quote.
func (p *jsonParser) string() (string, error) {
	p.pos++ // "
	start := p.pos
	// Fast path: plain ASCII without escapes.
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := string(p.data[start:p.pos])
			p.pos++
			return s, nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		p.pos++
	}
	buf := make([]byte, p.pos-start, p.pos-start+16)
	copy(buf, p.data[start:p.pos])
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return string(buf), nil
		case c < 0x20:
			return "", p.errorf("control character %q in a string", c)
		case c == '\\':
			if p.pos+1 >= len(p.data) {
				return "", p.errorf("unexpected end of input in a string")
			}
			esc := p.data[p.pos+1]
			p.pos += 2
			switch esc {
			case '"', '\\', '/':
				buf = append(buf, esc)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return "", p.errorf("invalid \\u escape")
				}
				if utf16.IsSurrogate(r) {
					r2 := unicode.ReplacementChar
					if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
						save := p.pos
						p.pos += 2
						if lo, ok := p.hex4(); ok {
							if d := utf16.DecodeRune(r, lo); d != unicode.ReplacementChar {
								r2 = d
							} else {
								p.pos = save
							}
						} else {
							return "", p.errorf("invalid \\u escape")
						}
					}
					r = r2
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", p.errorf("invalid escape %q", esc)
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			p.pos++
		default:
			r, size := utf8.DecodeRune(p.data[p.pos:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\ufffd"...)
			} else {
				buf = append(buf, p.data[p.pos:p.pos+size]...)
			}
			p.pos += size
		}
	}
	return "", p.errorf("unexpected end of input in a string")
}

// hex4 reads four hex digits.
func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.pos += 4
	return r, true
}

// number parses a JSON number without a schema into a Go value: an integer
// literal that fits int64 becomes int64; a literal with a fraction or an
// exponent becomes float64 (Debezium writes every double with one, 1.0 or
// 1.0E10); anything that would lose its value (an integer beyond int64, a
// float beyond float64, a nonzero float so small it would read as 0) stays
// a json.Number holding the exact text.
func (p *jsonParser) number() (any, error) {
	start := p.pos
	digits := func() int {
		n := 0
		for p.pos < len(p.data) && p.data[p.pos] >= '0' && p.data[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	if p.data[p.pos] == '-' {
		p.pos++
	}
	if p.pos < len(p.data) && p.data[p.pos] == '0' {
		p.pos++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	integer := true
	if p.pos < len(p.data) && p.data[p.pos] == '.' {
		integer = false
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.pos < len(p.data) && (p.data[p.pos] == 'e' || p.data[p.pos] == 'E') {
		integer = false
		p.pos++
		if p.pos < len(p.data) && (p.data[p.pos] == '+' || p.data[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	text := p.data[start:p.pos]
	if integer {
		if len(text) < 19 {
			var n int64
			neg := text[0] == '-'
			for _, c := range text[btoi(neg):] {
				n = n*10 + int64(c-'0')
			}
			if neg {
				n = -n
			}
			return n, nil
		}
		if i, err := strconv.ParseInt(string(text), 10, 64); err == nil {
			return i, nil
		}
		return json.Number(text), nil
	}
	f, err := strconv.ParseFloat(string(text), 64)
	if err != nil || math.IsInf(f, 0) || f == 0 && !zeroMantissa(text) {
		// Beyond float64, or so small it underflows to zero (1e-400):
		// keep the text rather than write back a different number.
		return json.Number(text), nil
	}
	return f, nil
}

// zeroMantissa reports whether the digits of the JSON number text before
// any exponent are all zero, so that parsing it as 0 loses nothing.
func zeroMantissa(text []byte) bool {
	for _, c := range text {
		switch {
		case c == 'e' || c == 'E':
			return true
		case c >= '1' && c <= '9':
			return false
		}
	}
	return true
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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
	// Fast path: nothing to escape, the string goes out as it is. Eight
	// bytes at a time, then byte by byte.
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if !plainWord(w) {
			break
		}
	}
	for ; i < len(s); i++ {
		if !plainASCII[s[i]] {
			return appendEscapedString(b, s, i)
		}
	}
	n := len(b)
	if cap(b)-n < len(s)+2 {
		b = append(b, make([]byte, len(s)+2)...)
	} else {
		b = b[:n+len(s)+2]
	}
	b[n] = '"'
	copy(b[n+1:], s)
	b[len(b)-1] = '"'
	return b
}

// appendMember appends sep (a comma or a brace) and name quoted as
// appendString does, then the colon: the start of an object member, in one
// copy when the name needs no escapes.
func appendMember(b []byte, sep byte, name string) []byte {
	for i := 0; i < len(name); i++ {
		if !plainASCII[name[i]] {
			b = append(b, sep)
			return append(appendEscapedString(b, name, i), ':')
		}
	}
	n := len(b)
	if cap(b)-n < len(name)+4 {
		b = append(b, make([]byte, len(name)+4)...)
	} else {
		b = b[:n+len(name)+4]
	}
	b[n], b[n+1] = sep, '"'
	copy(b[n+2:], name)
	b[len(b)-2], b[len(b)-1] = '"', ':'
	return b
}

// plainWord reports whether none of the eight bytes of w needs escaping
// (see plainASCII): no byte below 0x20, none 0x80 or above, no quote, no
// backslash. The tests for "some byte is below n" have false positives
// only beside a true one, so the answer is exact.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	below := (w - ones*0x20) &^ w
	quote := w ^ (ones * '"')
	quote = (quote - ones) &^ quote
	backslash := w ^ (ones * '\\')
	backslash = (backslash - ones) &^ backslash
	return (below|quote|backslash|w)&highs == 0
}

// plainASCII marks the bytes that appendString writes as they are without
// looking further: printable ASCII but the quote and the backslash.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendEscapedString is appendString for a string whose first i bytes
// are plain ASCII.
func appendEscapedString(b []byte, s string, i int) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i < len(s) {
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
	// JSON has no NaN or infinities: Jackson, and so Kafka Connect's
	// JsonConverter and Debezium, write them as these strings.
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...), nil
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...), nil
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...), nil
	case bits == 32 && float32Overflows(f):
		// Float.toString would write Infinity, a value the column never
		// held: refuse instead of writing a different number.
		return b, fmt.Errorf("%v is out of range for float (float32, max ±%v); declare the field double", f, float32(math.MaxFloat32))
	}
	if math.Signbit(f) {
		b = append(b, '-')
		f = -f
	}
	if f == 0 {
		return append(b, "0.0"...), nil
	}
	digits, exp := decimalDigits(f, -1, bits)
	if len(digits) == 1 {
		// Java (JDK 19 and later) picks, when one digit would do, the
		// closest decimal of one or two digits: 4.9E-324, not 5.0E-324.
		if d2, e2 := decimalDigits(f, 1, bits); roundTrips(d2, e2, f, bits) {
			digits, exp = bytes.TrimRight(d2, "0"), e2
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

// float32Overflows reports whether the finite f rounds to an infinity as a
// float32: |f| at or beyond MaxFloat32 plus half its ulp (2^128 - 2^103,
// where round-half-even goes up). Spelled out because Go leaves float32(f)
// implementation-defined when f is out of range.
func float32Overflows(f float64) bool {
	return math.Abs(f) >= 0x1p128-0x1p103
}

// decimalDigits returns the significant digits of f (positive, finite) and
// the decimal exponent of the first: f ≈ 0.d1d2d3… × 10^(exp+1). prec is
// the number of digits after the first, or -1 for the shortest that
// round-trips.
func decimalDigits(f float64, prec, bits int) ([]byte, int) {
	var buf [32]byte
	e := strconv.AppendFloat(buf[:0], f, 'e', prec, bits)
	mant, expPart, _ := bytes.Cut(e, []byte{'e'})
	exp, _ := strconv.Atoi(string(expPart))
	digits := make([]byte, 0, len(mant))
	for _, c := range mant {
		if c != '.' {
			digits = append(digits, c)
		}
	}
	return digits, exp
}

// roundTrips reports whether the decimal digits×10^exp reads back as f.
func roundTrips(digits []byte, exp int, f float64, bits int) bool {
	s := string(digits[:1]) + "." + string(digits[1:]) + "e" + strconv.Itoa(exp)
	g, err := strconv.ParseFloat(s, bits)
	return err == nil && g == f
}

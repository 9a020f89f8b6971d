package jsonline

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// scanJSON reports whether data is exactly one JSON value (RFC 8259, with
// optional whitespace around it) and whether it is already compact (no
// whitespace outside strings). It is the file sink's hot path: one pass,
// no allocation below 64 levels of nesting, several times faster than
// encoding/json.Valid. Strings are not checked for valid UTF-8 here: ascii
// says whether data is all ASCII (then it needs no such check; else the
// caller checks).
//
// It is one loop over the tokens with its state in locals, not a
// recursive descent: an event's head (its dozen short keys, strings and
// numbers before a long padding string) then costs about a third of what
// a call per token did.
func scanJSON(data []byte) (valid, compact, ascii bool) {
	var (
		small   [64]bool
		objects = small[:0] // the open containers, innermost last: true for an object
		i       = 0
		n       = len(data)
		ok      bool
		high    bool
	)
	compact, ascii = true, true

value: // a value is due at data[i], after optional whitespace
	if i < n && data[i] <= ' ' {
		if i, ok = skipSpace(data, i); !ok {
			return false, false, false
		}
		compact = false
	}
	if i >= n {
		return false, false, false
	}
	switch c := data[i]; {
	case c == '"':
		if i, ok, high = scanString(data, i+1); !ok {
			return false, false, false
		}
		ascii = ascii && !high
	case c == '{' || c == '[':
		if len(objects) == maxDepth {
			return false, false, false
		}
		objects = append(objects, c == '{')
		i++
		if i < n && data[i] <= ' ' {
			if i, ok = skipSpace(data, i); !ok {
				return false, false, false
			}
			compact = false
		}
		if i < n && data[i] == c+2 { // '}' is '{'+2, ']' is '['+2
			objects = objects[:len(objects)-1]
			i++
			goto after
		}
		if c == '{' {
			goto key
		}
		goto value
	case c == '-' || c >= '0' && c <= '9':
		if i, ok = scanNumber(data, i); !ok {
			return false, false, false
		}
	case c == 't':
		if i, ok = literal(data, i, "true"); !ok {
			return false, false, false
		}
	case c == 'f':
		if i, ok = literal(data, i, "false"); !ok {
			return false, false, false
		}
	case c == 'n':
		if i, ok = literal(data, i, "null"); !ok {
			return false, false, false
		}
	default:
		return false, false, false
	}

after: // a value ended before data[i]
	if i < n && data[i] <= ' ' {
		if i, ok = skipSpace(data, i); !ok {
			return false, false, false
		}
		compact = false
	}
	if len(objects) == 0 {
		return i == n, compact, ascii
	}
	if i >= n {
		return false, false, false
	}
	switch c, inObject := data[i], objects[len(objects)-1]; {
	case c == ',':
		i++
		if inObject {
			goto key
		}
		goto value
	case c == '}' && inObject, c == ']' && !inObject:
		objects = objects[:len(objects)-1]
		i++
		goto after
	}
	return false, false, false

key: // an object's key is due at data[i], after optional whitespace
	if i < n && data[i] <= ' ' {
		if i, ok = skipSpace(data, i); !ok {
			return false, false, false
		}
		compact = false
	}
	if i >= n || data[i] != '"' {
		return false, false, false
	}
	if i, ok, high = scanString(data, i+1); !ok {
		return false, false, false
	}
	ascii = ascii && !high
	if i < n && data[i] <= ' ' {
		if i, ok = skipSpace(data, i); !ok {
			return false, false, false
		}
		compact = false
	}
	if i >= n || data[i] != ':' {
		return false, false, false
	}
	i++
	goto value
}

// maxDepth bounds nesting, as encoding/json does (10000).
const maxDepth = 10000

// skipSpace skips the whitespace from data[i] on and returns where it
// ends; ok is false when data[i] is a byte no JSON text may have there
// (a control character that is not whitespace: the caller calls it only
// for bytes <= ' ').
func skipSpace(data []byte, i int) (end int, ok bool) {
	for ; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
		default:
			return i, data[i] > ' '
		}
	}
	return i, true
}

func literal(data []byte, i int, lit string) (end int, ok bool) {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// scanString scans a string whose opening quote is before data[i] and
// returns where it ends (after its closing quote), whether it is valid and
// whether it holds a byte from 0x80 up.
func scanString(data []byte, i int) (end int, ok, high bool) {
	for i < len(data) {
		// Look at eight bytes at a time: skip them when none needs a look
		// (most of a string: a 1 KiB padded event is mostly one string),
		// else go straight to the first that does. The loop walks a
		// shrinking slice: no bounds checks, no stores.
		if rest := data[i:]; len(rest) >= 8 {
			for words := 0; len(rest) >= 8; words++ {
				if words == 2 {
					// Sixteen plain bytes: a long run (padding, text),
					// skipped faster by plainPrefix.
					rest = rest[plainPrefix(rest):]
					break
				}
				if m := special(binary.LittleEndian.Uint64(rest)); m != 0 {
					rest = rest[bits.TrailingZeros64(m)>>3:]
					break
				}
				rest = rest[8:]
			}
			if i = len(data) - len(rest); len(rest) == 0 {
				break
			}
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true, high
		case c == '\\':
			if i+1 >= len(data) {
				return i, false, high
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(data)-i < 6 {
					return i, false, high
				}
				for _, h := range data[i+2 : i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false, high
					}
				}
				i += 6
			default:
				return i, false, high
			}
		case c < 0x20:
			return i, false, high
		default:
			high = high || c >= 0x80
			i++
		}
	}
	return i, false, high
}

// plainPrefix returns how many bytes of b, the inside of a string, need no
// look: those before the first quote, backslash, control character or
// non-ASCII byte. It finds the quote and the backslash with
// bytes.IndexByte (vectorized) and the others eight bytes at a time.
func plainPrefix(b []byte) int {
	if q := bytes.IndexByte(b, '"'); q >= 0 {
		b = b[:q]
	}
	if e := bytes.IndexByte(b, '\\'); e >= 0 {
		b = b[:e]
	}
	// controlOrHigh sets the high bit of a byte below 0x20 (its borrow
	// may flag later bytes, never earlier ones) or from 0x80 up.
	controlOrHigh := func(w uint64) uint64 { return (w - lsb*0x20) | w }
	rest := b // shrinks: no bounds checks in the loops
	for len(rest) >= 32 {
		w := (*[32]byte)(rest)
		if (controlOrHigh(binary.LittleEndian.Uint64(w[:8]))|controlOrHigh(binary.LittleEndian.Uint64(w[8:16]))|
			controlOrHigh(binary.LittleEndian.Uint64(w[16:24]))|controlOrHigh(binary.LittleEndian.Uint64(w[24:])))&msb != 0 {
			break
		}
		rest = rest[32:]
	}
	for len(rest) >= 8 && controlOrHigh(binary.LittleEndian.Uint64(rest))&msb == 0 {
		rest = rest[8:]
	}
	for len(rest) > 0 && rest[0] >= 0x20 && rest[0] < 0x80 {
		rest = rest[1:]
	}
	return len(b) - len(rest)
}

// Bit tricks on eight bytes at once (Hacker's Delight, ch. 6): lsb has 1
// in every byte, msb 0x80.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// special returns, for the eight bytes of w in little-endian order, the
// high bit of each byte that needs a look inside a JSON string (a quote, a
// backslash, a control character or non-ASCII), exactly for the first such
// byte: the subtraction tricks (Hacker's Delight, ch. 6) may flag bytes
// after it too, but never one before, as borrows only run upward.
func special(w uint64) uint64 {
	const (
		quote     = lsb * '"'
		backslash = lsb * '\\'
	)
	control := (w - lsb*0x20) &^ w // high bit set for bytes < 0x20 (and >= 0x80, flagged by w itself)
	q := w ^ quote
	bs := w ^ backslash
	zero := (q-lsb)&^q | (bs-lsb)&^bs // high bit set where a byte was a quote or backslash
	return (control | zero | w) & msb
}

// scanNumber scans a number starting at data[i] and returns where it ends.
func scanNumber(data []byte, i int) (end int, ok bool) {
	d := data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		return i, false
	}
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			return i, false
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	return i, true
}

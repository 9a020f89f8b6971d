package httptrack

import (
	"encoding/binary"
	"math/bits"
)

// validJSON reports whether b is exactly one JSON value, with optional
// whitespace around it: what encoding/json.Valid answers (it accepts the
// same bytes, invalid UTF-8 inside strings included, and the same nesting
// depth), about twice as fast, which matters because every body is
// validated before the scanners in scan.go slice it.
func validJSON(b []byte) bool {
	i, ok := validValue(b, skipSpace(b, 0), 0, nil)
	return ok && skipSpace(b, i) == len(b)
}

// validIndexed is validJSON that also indexes the objects and arrays of b
// in a (see arena), for the scanners.
func validIndexed(b []byte, a *arena) bool {
	a.starts, a.ends = a.starts[:0], a.ends[:0]
	i, ok := validValue(b, skipSpace(b, 0), 0, a)
	return ok && skipSpace(b, i) == len(b)
}

// maxNesting is encoding/json's limit on nested objects and arrays.
const maxNesting = 10000

// validValue checks the value starting at b[i] and returns the index after
// it; with an arena, it indexes the objects and arrays.
func validValue(b []byte, i, depth int, a *arena) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{':
		if depth++; depth > maxNesting {
			return i, false
		}
		slot := a.open(i)
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == '}' {
			return a.close(slot, i+1), true
		}
		for {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			var ok bool
			if i, ok = validString(b, i); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			if i, ok = validValue(b, skipSpace(b, i+1), depth, a); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case '}':
				return a.close(slot, i+1), true
			default:
				return i, false
			}
		}
	case c == '[':
		if depth++; depth > maxNesting {
			return i, false
		}
		slot := a.open(i)
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return a.close(slot, i+1), true
		}
		for {
			var ok bool
			if i, ok = validValue(b, i, depth, a); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case ']':
				return a.close(slot, i+1), true
			default:
				return i, false
			}
		}
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	}
	return i, false
}

// open indexes an object or array opening at i and returns its slot; a
// nil arena indexes nothing.
func (a *arena) open(i int) int {
	if a == nil {
		return -1
	}
	a.starts = append(a.starts, int32(i))
	a.ends = append(a.ends, 0)
	return len(a.starts) - 1
}

// close records where the container in slot ends and returns end.
func (a *arena) close(slot, end int) int {
	if a != nil {
		a.ends[slot] = int32(end)
	}
	return end
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// validString checks the string literal starting at b[i] (a quote).
func validString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); {
		// Eight bytes at a time, up to the first control character,
		// quote or backslash.
		for len(b)-j >= 8 {
			if t := special8(binary.LittleEndian.Uint64(b[j:])); t != 0 {
				j += bits.TrailingZeros64(t) >> 3
				break
			}
			j += 8
		}
		if j >= len(b) {
			break
		}
		c := b[j]
		if c >= 0x20 && c != '"' && c != '\\' {
			j++
			continue
		}
		switch c {
		case '"':
			return j + 1, true
		case '\\':
			if j+1 >= len(b) {
				return j, false
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return j, false
				}
				j += 6
			default:
				return j, false
			}
		default: // a control character
			return j, false
		}
	}
	return len(b), false
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// special8 flags the control characters (below 0x20), quotes and
// backslashes among the 8 bytes of x (little endian): it returns 0 when
// there is none, else a mask whose lowest set bit is the high bit of the
// first such byte. It is the "has a byte below n" trick, (x - n*ones) &^ x
// & highs, with a byte equal to c a zero byte of x^(c*ones): a borrow may
// flag bytes after the first match, never one before it.
func special8(x uint64) uint64 {
	q := x ^ ('"' * ones)
	bs := x ^ ('\\' * ones)
	t := (x - 0x20*ones) &^ x
	t |= (q - ones) &^ q
	t |= (bs - ones) &^ bs
	return t & highs
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validNumber checks the number starting at b[i]:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	var ok bool
	switch {
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i, _ = digits(i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

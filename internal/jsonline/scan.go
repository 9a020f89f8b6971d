package jsonline

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// scanJSON reports whether data is exactly one JSON value (RFC 8259, with
// optional whitespace around it) and whether it is already compact (no
// whitespace outside strings). It is the file sink's hot path: one pass,
// no allocation, several times faster than encoding/json.Valid. Strings are
// not checked for valid UTF-8 here: ascii says whether data is all ASCII
// (then it needs no such check; else the caller checks).
func scanJSON(data []byte) (valid, compact, ascii bool) {
	s := scanner{data: data, compact: true, ascii: true}
	s.space()
	if !s.value(0) {
		return false, false, false
	}
	s.space()
	return s.i == len(s.data), s.compact, s.ascii
}

// maxDepth bounds nesting, as encoding/json does (10000).
const maxDepth = 10000

type scanner struct {
	data    []byte
	i       int
	compact bool
	ascii   bool // no byte >= 0x80 seen (only strings may hold one)
}

func (s *scanner) space() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.compact = false
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) value(depth int) bool {
	if s.i >= len(s.data) || depth > maxDepth {
		return false
	}
	switch c := s.data[s.i]; {
	case c == '{':
		return s.object(depth + 1)
	case c == '[':
		return s.array(depth + 1)
	case c == '"':
		return s.str()
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *scanner) object(depth int) bool {
	s.i++ // {
	s.space()
	if s.i < len(s.data) && s.data[s.i] == '}' {
		s.i++
		return true
	}
	for {
		if s.i >= len(s.data) || s.data[s.i] != '"' || !s.str() {
			return false
		}
		s.space()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(depth) {
			return false
		}
		s.space()
		if s.i >= len(s.data) {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.space()
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(depth int) bool {
	s.i++ // [
	s.space()
	if s.i < len(s.data) && s.data[s.i] == ']' {
		s.i++
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		s.space()
		if s.i >= len(s.data) {
			return false
		}
		switch s.data[s.i] {
		case ',':
			s.i++
			s.space()
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) str() bool {
	s.i++ // opening quote
	for s.i < len(s.data) {
		// Look at eight bytes at a time: skip them when none needs a look
		// (most of a string: a 1 KiB padded event is mostly one string),
		// else go straight to the first that does. The loop walks a
		// shrinking slice: no bounds checks, no stores.
		if rest := s.data[s.i:]; len(rest) >= 8 {
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
			if s.i = len(s.data) - len(rest); len(rest) == 0 {
				break
			}
		}
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			if s.i+1 >= len(s.data) {
				return false
			}
			switch s.data[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if len(s.data)-s.i < 6 {
					return false
				}
				for _, h := range s.data[s.i+2 : s.i+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		case c < 0x20:
			return false
		default:
			if c >= 0x80 {
				s.ascii = false
			}
			s.i++
		}
	}
	return false
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

func (s *scanner) number() bool {
	d := s.data
	if d[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(d) && d[s.i] == '0':
		s.i++
	case s.i < len(d) && d[s.i] >= '1' && d[s.i] <= '9':
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	default:
		return false
	}
	if s.i < len(d) && d[s.i] == '.' {
		s.i++
		if s.i >= len(d) || d[s.i] < '0' || d[s.i] > '9' {
			return false
		}
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	}
	if s.i < len(d) && (d[s.i] == 'e' || d[s.i] == 'E') {
		s.i++
		if s.i < len(d) && (d[s.i] == '+' || d[s.i] == '-') {
			s.i++
		}
		if s.i >= len(d) || d[s.i] < '0' || d[s.i] > '9' {
			return false
		}
		for s.i < len(d) && d[s.i] >= '0' && d[s.i] <= '9' {
			s.i++
		}
	}
	return true
}

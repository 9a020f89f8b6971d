package mysql

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// MariaDB's own column types UUID (10.7+), INET4 and INET6 (10.10+;
// INET6 10.5+) travel in the binlog as fixed-length binary strings — 16,
// 4 and 16 bytes, in the order of their text form — and nothing in the
// table map tells them from BINARY(16) or BINARY(4): the type comes from
// information_schema (column.MariaType). They are written as strings in
// the text form MariaDB itself prints, so that a streamed value equals
// the snapshot's SELECT of the same value.

// MariaDB type names of column.MariaType.
const (
	mariaUUID  = "uuid"
	mariaINET4 = "inet4"
	mariaINET6 = "inet6"
)

// mariaLength is the binary length of a MariaDB type.
func mariaLength(t string) int {
	if t == mariaINET4 {
		return 4
	}
	return 16
}

// mariaText formats the binary form of a UUID, INET4 or INET6 value.
func mariaText(t string, b []byte) (string, error) {
	if len(b) < mariaLength(t) {
		// The binlog may drop trailing zero bytes of a binary string.
		b = append(append([]byte(nil), b...), make([]byte, mariaLength(t)-len(b))...)
	}
	if len(b) != mariaLength(t) {
		return "", fmt.Errorf("%s value of %d bytes, want %d", t, len(b), mariaLength(t))
	}
	switch t {
	case mariaUUID:
		const hex = "0123456789abcdef"
		out := make([]byte, 0, 36)
		for i, c := range b {
			if i == 4 || i == 6 || i == 8 || i == 10 {
				out = append(out, '-')
			}
			out = append(out, hex[c>>4], hex[c&0xf])
		}
		return string(out), nil
	case mariaINET4:
		return ipv4Text(nil, b), nil
	}
	return inet6Text(b), nil
}

func ipv4Text(out, b []byte) string {
	for i, c := range b {
		if i > 0 {
			out = append(out, '.')
		}
		out = strconv.AppendUint(out, uint64(c), 10)
	}
	return string(out)
}

// inet6Text formats an IPv6 address as MariaDB's INET6 does (its
// inet6_ntop): the longest run of zero words (the first of equal runs),
// a single one too (unlike RFC 5952), becomes "::", IPv4-compatible (::a.b.c.d, the first six words zero and
// the seventh not) and IPv4-mapped (::ffff:a.b.c.d) addresses end in
// dotted quads, hexadecimal words in lower case without leading zeros.
func inet6Text(b []byte) string {
	var w [8]uint16
	for i := range w {
		w[i] = binary.BigEndian.Uint16(b[2*i:])
	}
	gapPos, gapLen := -1, 0
	runPos, runLen := -1, 0
	for i := range w {
		if w[i] != 0 {
			if runPos >= 0 && runLen > gapLen {
				gapPos, gapLen = runPos, runLen
			}
			runPos, runLen = -1, 0
			continue
		}
		if runPos < 0 {
			runPos, runLen = i, 1
		} else {
			runLen++
		}
	}
	if runPos >= 0 && runLen > gapLen {
		gapPos, gapLen = runPos, runLen
	}
	if gapPos == 0 && (gapLen == 6 || (gapLen == 5 && w[5] == 0xffff)) {
		prefix := "::"
		if gapLen == 5 {
			prefix = "::ffff:"
		}
		return ipv4Text([]byte(prefix), b[12:])
	}
	out := make([]byte, 0, 39)
	for i := 0; i < 8; {
		if i == gapPos {
			out = append(out, ':')
			if i == 0 {
				out = append(out, ':')
			}
			i += gapLen
			continue
		}
		out = strconv.AppendUint(out, uint64(w[i]), 16)
		if i < 7 {
			out = append(out, ':')
		}
		i++
	}
	return string(out)
}

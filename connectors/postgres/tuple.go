package postgres

import (
	"encoding/binary"
	"fmt"

	"github.com/jackc/pglogrepl"
)

// pgoutput's row messages (Insert, Update, Delete) are parsed here, in
// place, rather than by pglogrepl.Parse, which allocates a struct and a
// copy per column; they are most of the stream. Formats (protocol 1, as
// the streamer sees them; see "Logical Replication Message Formats"):
//
//	Insert  'I' relid:int32 'N' tuple
//	Update  'U' relid:int32 [('K'|'O') tuple] 'N' tuple
//	Delete  'D' relid:int32 ('K'|'O') tuple
//	tuple   ncols:int16 { 'n' | 'u' | ('t'|'b') len:int32 bytes }

// tupleCol is one column of a tuple: its kind ('n' null, 'u' unchanged
// TOAST, 't' text, 'b' binary) and its bytes, a view into the message.
type tupleCol struct {
	kind byte
	data []byte
}

// rowMessage is a parsed Insert, Update or Delete.
type rowMessage struct {
	typ    byte   // 'I', 'U', 'D'
	relID  uint32 // the relation
	oldTyp byte   // 'K' (old key only), 'O' (old row), 0 (none)
	old    []tupleCol
	new    []tupleCol
}

// parseRowMessage parses data into m, reusing m's column slices.
func parseRowMessage(data []byte, m *rowMessage) error {
	if len(data) < 6 {
		return fmt.Errorf("row message of %d bytes", len(data))
	}
	m.typ, m.relID, m.oldTyp = data[0], binary.BigEndian.Uint32(data[1:5]), 0
	m.old, m.new = m.old[:0], m.new[:0]
	rest := data[5:]
	var err error
	if rest[0] == 'K' || rest[0] == 'O' {
		if m.typ == 'I' {
			return fmt.Errorf("insert with an old tuple")
		}
		m.oldTyp = rest[0]
		if m.old, rest, err = parseTuple(rest[1:], m.old); err != nil {
			return err
		}
		if m.typ == 'D' {
			return trailing(rest)
		}
	}
	if m.typ == 'D' {
		return fmt.Errorf("delete without an old tuple")
	}
	if len(rest) == 0 || rest[0] != 'N' {
		return fmt.Errorf("want a new tuple ('N')")
	}
	if m.new, rest, err = parseTuple(rest[1:], m.new); err != nil {
		return err
	}
	return trailing(rest)
}

func trailing(rest []byte) error {
	if len(rest) != 0 {
		return fmt.Errorf("%d bytes after the tuple", len(rest))
	}
	return nil
}

// parseTuple parses one tuple into cols and returns what follows it.
func parseTuple(b []byte, cols []tupleCol) ([]tupleCol, []byte, error) {
	if len(b) < 2 {
		return cols, nil, fmt.Errorf("tuple without a column count")
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	for i := 0; i < n; i++ {
		if len(b) < 1 {
			return cols, nil, fmt.Errorf("tuple ends before column %d of %d", i+1, n)
		}
		c := tupleCol{kind: b[0]}
		b = b[1:]
		switch c.kind {
		case pglogrepl.TupleDataTypeNull, pglogrepl.TupleDataTypeToast:
		case pglogrepl.TupleDataTypeText, pglogrepl.TupleDataTypeBinary:
			if len(b) < 4 {
				return cols, nil, fmt.Errorf("tuple ends in the length of column %d", i+1)
			}
			l := int(binary.BigEndian.Uint32(b))
			if l < 0 || l > len(b)-4 {
				return cols, nil, fmt.Errorf("column %d has %d bytes, %d are left", i+1, l, len(b)-4)
			}
			c.data = b[4 : 4+l : 4+l]
			b = b[4+l:]
		default:
			return cols, nil, fmt.Errorf("column %d of unknown kind %q", i+1, c.kind)
		}
		cols = append(cols, c)
	}
	return cols, b, nil
}

package postgres

import (
	"bytes"
	"errors"
	"runtime"
	"testing"

	"github.com/jackc/pglogrepl"
)

// rowMessageBytes builds an Insert, Update or Delete message.
func rowMessageBytes(typ byte, rel uint32, oldTyp byte, old, new []tupleCol) []byte {
	tuple := func(b []byte, cols []tupleCol) []byte {
		b = append(b, byte(len(cols)>>8), byte(len(cols)))
		for _, c := range cols {
			b = append(b, c.kind)
			if c.kind == 't' || c.kind == 'b' {
				n := len(c.data)
				b = append(b, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
				b = append(b, c.data...)
			}
		}
		return b
	}
	b := []byte{typ, byte(rel >> 24), byte(rel >> 16), byte(rel >> 8), byte(rel)}
	if oldTyp != 0 {
		b = tuple(append(b, oldTyp), old)
	}
	if typ != 'D' {
		b = tuple(append(b, 'N'), new)
	}
	return b
}

// sameAsPglogrepl checks parseRowMessage against pglogrepl.Parse where
// both read the message.
func sameAsPglogrepl(t *testing.T, data []byte) {
	t.Helper()
	var m rowMessage
	if err := parseRowMessage(data, &m); err != nil {
		// Only agreement on what both read counts, and pglogrepl must
		// not see a column length beyond the message: it allocates it.
		return
	}
	msg, perr := func() (msg pglogrepl.Message, err error) {
		defer func() {
			if recover() != nil { // pglogrepl panics on some truncated tuples
				err = errors.New("pglogrepl panicked")
			}
		}()
		return pglogrepl.Parse(data)
	}()
	if perr != nil {
		// Only agreement on what both read counts: pglogrepl reads
		// unknown column kinds as empty, this parser refuses them.
		return
	}
	var relID uint32
	var oldT uint8
	var old, new *pglogrepl.TupleData
	switch p := msg.(type) {
	case *pglogrepl.InsertMessage:
		relID, new = p.RelationID, p.Tuple
	case *pglogrepl.UpdateMessage:
		relID, oldT, old, new = p.RelationID, p.OldTupleType, p.OldTuple, p.NewTuple
	case *pglogrepl.DeleteMessage:
		relID, oldT, old = p.RelationID, p.OldTupleType, p.OldTuple
	default:
		t.Fatalf("%q: pglogrepl read a %T", data, msg)
	}
	same := func(cols []tupleCol, td *pglogrepl.TupleData) bool {
		if td == nil {
			return len(cols) == 0
		}
		if len(cols) != len(td.Columns) {
			return false
		}
		for i, c := range td.Columns {
			if c.DataType != cols[i].kind || !bytes.Equal(c.Data, cols[i].data) {
				return false
			}
		}
		return true
	}
	if m.relID != relID || m.oldTyp != oldT || !same(m.old, old) || !same(m.new, new) {
		t.Fatalf("%q: parsed %+v, pglogrepl %+v", data, m, msg)
	}
}

func TestParseRowMessage(t *testing.T) {
	cols := []tupleCol{{kind: 't', data: []byte("42")}, {kind: 'n'}, {kind: 'u'}, {kind: 't', data: []byte{}}, {kind: 'b', data: []byte{1, 2}}}
	for _, data := range [][]byte{
		rowMessageBytes('I', 7, 0, nil, cols),
		rowMessageBytes('U', 7, 0, nil, cols),
		rowMessageBytes('U', 7, 'K', cols[:1], cols),
		rowMessageBytes('U', 1<<31, 'O', cols, cols[:2]),
		rowMessageBytes('D', 9, 'K', cols[:1], nil),
		rowMessageBytes('D', 9, 'O', cols, nil),
	} {
		sameAsPglogrepl(t, data)
		var m rowMessage
		if err := parseRowMessage(data, &m); err != nil {
			t.Errorf("%q: %v", data, err)
		}
		// Every cut of a message is an error, never a panic.
		for n := 0; n < len(data); n++ {
			if err := parseRowMessage(data[:n], &m); err == nil {
				t.Errorf("%q cut at %d: no error", data, n)
			}
		}
	}
}

// TestSameAsPglogrepl_BoundedAlloc checks that the fuzz oracle does not
// hand pglogrepl a column length larger than the message: pglogrepl
// allocates the claimed length before it finds the message short, and
// 1.6 GB per input killed fuzzing workers.
func TestSameAsPglogrepl_BoundedAlloc(t *testing.T) {
	data := []byte("I\x00\x00\x04\x00N\x00\x03t_\x00\x00\x01x___")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	sameAsPglogrepl(t, data)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("checking a %d-byte message allocated %d bytes", len(data), n)
	}
}

func FuzzParseRowMessage(f *testing.F) {
	cols := []tupleCol{{kind: 't', data: []byte("x")}, {kind: 'n'}, {kind: 'u'}}
	f.Add(rowMessageBytes('I', 1, 0, nil, cols))
	f.Add(rowMessageBytes('U', 1, 'O', cols, cols))
	f.Add(rowMessageBytes('D', 1, 'K', cols[:1], nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 0 && (data[0] == 'I' || data[0] == 'U' || data[0] == 'D') {
			sameAsPglogrepl(t, data)
		}
	})
}

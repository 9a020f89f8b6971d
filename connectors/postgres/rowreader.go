package postgres

import (
	"bytes"
	"fmt"
	"log/slog"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// rowReader turns rows read by a query (a snapshot chunk, an incremental
// snapshot chunk), in PostgreSQL's text format, into op r records of one
// relation. It is used by one goroutine.
//
// Without embedded schemas it writes the records itself, straight from
// the text (the snapshot's hot path): every op r event of a reader has
// the same source block, so the part of the envelope after the row is
// encoded once by the codec (connect.DebeziumJSON) and reused; integers,
// booleans and strings that need no escaping are copied from the text
// as the codec would write them, and every other value goes through the
// mapper and the codec. The result is byte for byte the codec's
// (TestRowReader_SameAsCodec). With schemas it builds each event and
// encodes it with the codec.
type rowReader struct {
	enc      *encoder
	rel      *relation
	snapshot string    // source.snapshot: true, incremental
	at       time.Time // source.ts_*: when the snapshot started
	lsn      uint64    // source.lsn
	log      *slog.Logger
	now      func() time.Time // ts_*: the processing time; tests fix it

	fast     bool
	names    [][]byte // `"column":`, with a leading comma after the first
	keyNames [][]byte // the same for the key columns, in key order
	mid      []byte   // `,"source":{…},"op":"r"`, as the codec writes it
	spans    [][2]int // scratch: where each column's value is in the record buffer
	size     int      // bytes of a record besides the values, for sizing the buffer
}

// Fixed parts of an op r envelope without schemas.
const (
	readValueStart = `{"before":null,"after":`
	readValueEnd   = `,"ts_ms":null,"ts_us":null,"ts_ns":null,"transaction":null}`
)

func (e *encoder) newRowReader(rel *relation, snapshot string, at time.Time, lsn uint64, log *slog.Logger) *rowReader {
	r := &rowReader{enc: e, rel: rel, snapshot: snapshot, at: at, lsn: lsn, log: log, now: time.Now}
	if e.set.schemas {
		return r
	}
	tmpl, err := e.codec.EncodeValue(&connect.ChangeEvent{Op: connect.OpRead, Source: e.source(rel, snapshot, at, 0, lsn, lsn)})
	if err != nil || !bytes.HasPrefix(tmpl, []byte(readValueStart+"null")) || !bytes.HasSuffix(tmpl, []byte(readValueEnd)) {
		return r // not the envelope this reader knows: let the codec write every record
	}
	r.mid = tmpl[len(readValueStart)+4 : len(tmpl)-len(readValueEnd)]
	r.size = len(readValueStart) + 2 + len(r.mid) + len(readValueEnd) + 3*20 + 2
	name := func(i int, c *column) []byte {
		b := []byte(jsonString(c.name) + ":")
		if i > 0 {
			b = append([]byte{','}, b...)
		}
		return b
	}
	for i := range rel.columns {
		r.names = append(r.names, name(i, &rel.columns[i]))
		r.size += len(r.names[i]) + 2
	}
	for j, k := range rel.keyIdx {
		r.keyNames = append(r.keyNames, name(j, &rel.columns[k]))
		r.size += len(r.keyNames[j])
	}
	r.spans = make([][2]int, len(rel.columns))
	r.fast = true
	return r
}

// read maps one row (nil values for NULL) and encodes its op r event; it
// also returns the key as Row.MarshalJSON writes it when withKey is set
// (the incremental snapshot matches streamed keys against it).
func (r *rowReader) read(vals [][]byte, withKey bool) (rec connect.Record, key []byte, err error) {
	rel := r.rel
	if !r.fast {
		row := make(connect.Row, len(rel.columns))
		for i := range rel.columns {
			row[i].Name = rel.columns[i].name
			row[i].Value = r.decode(i, vals[i])
		}
		ev := &connect.ChangeEvent{Op: connect.OpRead, Key: rel.key(row), After: row,
			Source: r.enc.source(rel, r.snapshot, r.at, 0, r.lsn, r.lsn)}
		ev.SetTime(r.now())
		if rec, err = r.enc.record(rel, ev); err != nil || !withKey {
			return rec, nil, err
		}
		key, err = ev.Key.MarshalJSON()
		return rec, key, err
	}
	size := r.size
	for _, v := range vals {
		size += len(v)
	}
	for _, k := range rel.keyIdx {
		size += len(vals[k])
	}
	b := make([]byte, 0, size+size/8)
	b = append(b, readValueStart...)
	b = append(b, '{')
	for i, v := range vals {
		b = append(b, r.names[i]...)
		start := len(b)
		if b, err = r.appendValue(b, i, v); err != nil {
			return rec, nil, fmt.Errorf("encode the %s event of %s: column %s: %w", connect.OpRead, rel.ref, rel.columns[i].name, err)
		}
		r.spans[i] = [2]int{start, len(b)}
	}
	b = append(b, '}')
	b = append(b, r.mid...)
	ms, us, ns := stamps(r.now())
	b = strconv.AppendInt(append(b, `,"ts_ms":`...), ms, 10)
	b = strconv.AppendInt(append(b, `,"ts_us":`...), us, 10)
	b = strconv.AppendInt(append(b, `,"ts_ns":`...), ns, 10)
	b = append(b, `,"transaction":null}`...)
	rec = connect.Record{Topic: rel.topic, Value: b[:len(b):len(b)]}
	if len(rel.keyIdx) > 0 {
		k0 := len(b)
		b = append(b, '{')
		for j, k := range rel.keyIdx {
			b = append(b, r.keyNames[j]...)
			b = append(b, b[r.spans[k][0]:r.spans[k][1]]...)
		}
		b = append(b, '}')
		rec.Key = b[k0:len(b):len(b)]
	}
	return rec, rec.Key, nil
}

// appendValue appends the JSON of column i's text value v as the codec
// writes the mapped value.
func (r *rowReader) appendValue(b []byte, i int, v []byte) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch r.rel.columns[i].typ.kind {
	case kindInt16, kindInt32, kindInt64:
		if canonicalInt(v) {
			return append(b, v...), nil
		}
	case kindBool:
		if len(v) == 1 && v[0] == 't' {
			return append(b, "true"...), nil
		}
		if len(v) == 1 && v[0] == 'f' {
			return append(b, "false"...), nil
		}
	case kindText, kindUnknown, kindUUID, kindJSON, kindXML, kindEnum:
		if plainJSONText(v) {
			b = append(b, '"')
			b = append(b, v...)
			return append(b, '"'), nil
		}
	}
	j, err := connect.Row{{Name: "v", Value: r.decode(i, v)}}.MarshalJSON()
	if err != nil {
		return b, err
	}
	return append(b, j[len(`{"v":`):len(j)-1]...), nil
}

// decode maps column i's text value (nil for NULL); a value it does not
// understand is logged and becomes null.
func (r *rowReader) decode(i int, v []byte) any {
	if v == nil {
		return nil
	}
	col := &r.rel.columns[i]
	x, err := r.enc.mapper.decode(col.typ, col.effTypmod(), string(v))
	if err != nil {
		r.log.Warn("postgres: value not understood, written as null", "table", r.rel.ref.String(), "column", col.name, "type", col.typ.name, "err", err)
		return nil
	}
	return x
}

// canonicalInt reports whether s is an integer as PostgreSQL prints one
// and strconv formats it: an optional minus, no leading zeros, at most 18
// digits (so that it fits an int64 whatever the digits).
func canonicalInt(s []byte) bool {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	if len(s) == 0 || len(s) > 18 || (s[0] == '0' && (len(s) > 1 || neg)) {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainJSONText reports whether the JSON string of s is s between quotes:
// valid UTF-8 without control characters, quotes or backslashes (the
// codec escapes exactly those).
func plainJSONText(s []byte) bool {
	ascii := true
	for _, c := range s {
		if c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		if c >= utf8.RuneSelf {
			ascii = false
		}
	}
	return ascii || utf8.Valid(s)
}

// stamps returns t in milliseconds, microseconds and nanoseconds since
// the epoch, as connect.ChangeEvent.SetTime sets them.
func stamps(t time.Time) (ms, us, ns int64) {
	var e connect.ChangeEvent
	e.SetTime(t)
	return e.TsMs, e.TsUs, e.TsNs
}

// markSnapshot returns a copy of the value of an op r record whose
// source.snapshot is "true" with marker ("first", "last") in its place.
// The source block is the last part of the envelope with string fields
// (only op, the timestamps and transaction follow it), and a row's
// strings cannot hold an unescaped quote, so the field is the last
// `"snapshot":"true"` of the value.
func markSnapshot(value []byte, marker string) []byte {
	const field = `"snapshot":"true"`
	i := bytes.LastIndex(value, []byte(field))
	if i < 0 {
		return value
	}
	out := make([]byte, 0, len(value)+len(marker))
	out = append(out, value[:i]...)
	out = append(out, `"snapshot":`...)
	out = append(out, jsonString(marker)...)
	return append(out, value[i+len(field):]...)
}

package mysql

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// The stream's hot path writes the Debezium JSON of a change itself, into
// one buffer per record, instead of building a connect.ChangeEvent and
// encoding it with connect.DebeziumJSON (which builds the source block as
// a row of 17 fields and grows its buffers from nothing: most of the
// streaming CPU). It covers the common case only — schemas off, values
// that are null, int64, string or []byte — and says so with ok=false
// otherwise, so that the codec encodes the event. TestFastJSON_MatchesCodec
// holds the output byte for byte equal to the codec's.

// arenaBlock is the size of the blocks an arena hands records out of.
const arenaBlock = 64 << 10

// arena hands out the bytes of records from large blocks, so that a batch
// of records costs a few allocations rather than several each. Records
// are written into scratch first (reused), then copied into the block;
// their slices are capped at their length, so appending to one copies it.
// An arena belongs to one goroutine.
type arena struct {
	scratch []byte
	block   []byte
}

// keep copies b into the current block.
func (a *arena) keep(b []byte) []byte {
	if cap(a.block)-len(a.block) < len(b) {
		a.block = make([]byte, 0, max(arenaBlock, len(b)))
	}
	n := len(a.block)
	a.block = append(a.block, b...)
	return a.block[n:len(a.block):len(a.block)]
}

// fastRecord encodes a change event of t without the codec, into a (or
// into a buffer of its own when a is nil). ok is false when it cannot
// (schemas on, or a value of another type).
func (e *encoder) fastRecord(a *arena, t *table, op connect.Op, before, after connect.Row, si *srcInfo, tx *connect.Transaction, stamps *connect.ChangeEvent) (connect.Record, bool) {
	if e.set.schemas || !fastRow(before) || !fastRow(after) {
		return connect.Record{}, false
	}
	keyRow := after
	if keyRow == nil {
		keyRow = before
	}
	var b []byte
	if a != nil {
		b = a.scratch[:0]
	} else {
		size := 420 + len(e.set.prefix) + len(t.def.DB) + len(t.def.Name) + len(si.file) + len(si.gtid) + rowSize(before) + rowSize(after)
		b = make([]byte, 0, size+rowSize(keyRow)/2)
	}
	var key []byte
	if len(t.def.Key) > 0 {
		b = append(b, '{')
		for i, idx := range t.def.Key {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, keyRow[idx].Name)
			b = append(b, ':')
			b = appendFastValue(b, keyRow[idx].Value)
		}
		b = append(b, '}')
		key = b[:len(b):len(b)]
	}
	start := len(b)
	b = append(b, `{"before":`...)
	b = appendFastRow(b, before)
	b = append(b, `,"after":`...)
	b = appendFastRow(b, after)
	b = append(b, `,"source":{"version":"`+version+`","connector":"`+connect.ConnectorMySQL+`","name":`...)
	b = appendJSONString(b, e.set.prefix)
	var src connect.SourceInfo
	src.SetTime(si.ts)
	b = strconv.AppendInt(append(b, `,"ts_ms":`...), src.TsMs, 10)
	b = append(b, `,"snapshot":`...)
	snap := si.snapshot
	if snap == "" {
		snap = connect.SnapshotFalse
	}
	b = appendJSONString(b, snap)
	b = append(b, `,"db":`...)
	b = appendJSONString(b, t.def.DB)
	b = append(b, `,"sequence":null,"ts_us":`...)
	b = appendOptInt(b, src.TsUs)
	b = append(b, `,"ts_ns":`...)
	b = appendOptInt(b, src.TsNs)
	b = append(b, `,"table":`...)
	b = appendJSONString(b, t.def.Name)
	b = strconv.AppendInt(append(b, `,"server_id":`...), int64(si.serverID), 10)
	b = append(b, `,"gtid":`...)
	if si.gtid != "" {
		b = appendJSONString(b, si.gtid)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"file":`...)
	b = appendJSONString(b, si.file)
	b = strconv.AppendInt(append(b, `,"pos":`...), int64(si.pos), 10)
	b = strconv.AppendInt(append(b, `,"row":`...), int64(si.row), 10)
	b = append(b, `,"thread":`...)
	b = appendOptInt(b, si.thread)
	b = append(b, `,"query":null},"op":"`...)
	b = append(b, op...)
	b = append(b, `","ts_ms":`...)
	b = appendOptInt(b, stamps.TsMs)
	b = append(b, `,"ts_us":`...)
	b = appendOptInt(b, stamps.TsUs)
	b = append(b, `,"ts_ns":`...)
	b = appendOptInt(b, stamps.TsNs)
	b = append(b, `,"transaction":`...)
	if tx == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"id":`...)
		b = appendJSONString(b, tx.ID)
		b = strconv.AppendInt(append(b, `,"total_order":`...), tx.TotalOrder, 10)
		b = strconv.AppendInt(append(b, `,"data_collection_order":`...), tx.DataCollectionOrder, 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	if a == nil {
		return connect.Record{Topic: t.topic, Key: key, Value: b[start:]}, true
	}
	a.scratch = b
	kept := a.keep(b)
	if key != nil {
		key = kept[:start:start]
	}
	return connect.Record{Topic: t.topic, Key: key, Value: kept[start:]}, true
}

// fastRow reports whether fastRecord can write every value of r.
func fastRow(r connect.Row) bool {
	for i := range r {
		switch r[i].Value.(type) {
		case nil, int64, string, []byte:
		default:
			return false
		}
	}
	return true
}

// rowSize estimates the JSON size of r.
func rowSize(r connect.Row) int {
	n := 2
	for i := range r {
		n += len(r[i].Name) + 4
		switch v := r[i].Value.(type) {
		case string:
			n += len(v) + 2
		case []byte:
			n += base64.StdEncoding.EncodedLen(len(v)) + 2
		default:
			n += 20
		}
	}
	return n
}

func appendFastRow(b []byte, r connect.Row) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	for i := range r {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, r[i].Name)
		b = append(b, ':')
		b = appendFastValue(b, r[i].Value)
	}
	return append(b, '}')
}

// appendFastValue writes a value fastRow accepts, as the codec does.
func appendFastValue(b []byte, v any) []byte {
	switch v := v.(type) {
	case int64:
		return strconv.AppendInt(b, v, 10)
	case string:
		return appendJSONString(b, v)
	case []byte:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, v)
		return append(b, '"')
	}
	return append(b, "null"...)
}

func appendOptInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, v, 10)
}

// appendJSONString quotes s as the codec does: the short escapes for
// quote, backslash and the usual control characters, \u00XX for the
// others, invalid UTF-8 bytes as U+FFFD, everything else as it is.
func appendJSONString(b []byte, s string) []byte {
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
			case '"', '\\':
				b = append(b, '\\', c)
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
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

package postgres

import (
	"bytes"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// Without embedded schemas the encoder writes the key and value of a row
// event itself, in one buffer, exactly as connect.DebeziumJSON{} writes
// them (same fields, order and number forms): the codec builds a generic
// row of the source block and grows its buffer for every event, which was
// most of the streaming CPU per change. Integers, booleans, nulls and
// strings without escapes are written here; every other value goes
// through the codec. Before its first use the encoder checks this writer
// against the codec on a sample of every value shape (envelopeSelfCheck)
// and keeps to the codec if they differ; TestEnvelope_SameAsCodec checks
// many more events.

// appendEvent writes the key (nil for a null key) and the value of a row
// event (not a message) without schemas; rel, when it is ev's relation,
// lends its quoted column names.
func appendEvent(ev *connect.ChangeEvent, rel *relation) (key, value []byte, err error) {
	size := 96 + 2*len(ev.Source.Extra)*24 + len(ev.Source.Name) + len(ev.Source.DB)
	for _, r := range [...]connect.Row{ev.Before, ev.After} {
		for i := range r {
			size += len(r[i].Name) + 8
			if s, ok := r[i].Value.(string); ok {
				size += len(s) + 2
			} else {
				size += 16
			}
		}
	}
	size += 2 * len(ev.Key) * 24
	b := make([]byte, 0, size+256)
	b = append(b, `{"before":`...)
	if b, err = appendRowJSON(b, ev.Before, rel); err != nil {
		return nil, nil, err
	}
	b = append(b, `,"after":`...)
	if b, err = appendRowJSON(b, ev.After, rel); err != nil {
		return nil, nil, err
	}
	b = append(b, `,"source":`...)
	if b, err = appendSourceJSON(b, &ev.Source); err != nil {
		return nil, nil, err
	}
	b = append(b, `,"op":`...)
	b = appendPlainString(b, string(ev.Op))
	b = appendOptInt(append(b, `,"ts_ms":`...), ev.TsMs)
	b = appendOptInt(append(b, `,"ts_us":`...), ev.TsUs)
	b = appendOptInt(append(b, `,"ts_ns":`...), ev.TsNs)
	b = append(b, `,"transaction":`...)
	if t := ev.Transaction; t == nil {
		b = append(b, "null"...)
	} else {
		b = appendPlainString(append(b, `{"id":`...), t.ID)
		b = strconv.AppendInt(append(b, `,"total_order":`...), t.TotalOrder, 10)
		b = strconv.AppendInt(append(b, `,"data_collection_order":`...), t.DataCollectionOrder, 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	value = b[:len(b):len(b)]
	if ev.Key == nil {
		return nil, value, nil
	}
	k0 := len(b)
	if b, err = appendRowJSON(b, ev.Key, nil); err != nil {
		return nil, nil, err
	}
	return b[k0:len(b):len(b)], value, nil
}

// appendRowJSON appends a row as an object (null for nil); rel, when set,
// has the field names of a full row already quoted.
func appendRowJSON(b []byte, r connect.Row, rel *relation) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	var names [][]byte
	if rel != nil && len(rel.columns) == len(r) {
		names = rel.quotedNames()
	}
	b = append(b, '{')
	var err error
	for i := range r {
		f := &r[i]
		if names != nil && rel.columns[i].name == f.Name {
			b = append(b, names[i]...)
		} else {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPlainString(b, f.Name)
			b = append(b, ':')
		}
		if b, err = appendAnyJSON(b, f.Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// quotedNames returns `"column":` for every column, with a leading comma
// after the first.
func (rel *relation) quotedNames() [][]byte {
	rel.namesOnce.Do(func() {
		rel.names = make([][]byte, len(rel.columns))
		for i := range rel.columns {
			n := []byte(jsonString(rel.columns[i].name) + ":")
			if i > 0 {
				n = append([]byte{','}, n...)
			}
			rel.names[i] = n
		}
	})
	return rel.names
}

// appendSourceJSON appends the source block as the codec writes it
// without a schema.
func appendSourceJSON(b []byte, s *connect.SourceInfo) ([]byte, error) {
	snapshot := s.Snapshot
	if snapshot == "" {
		snapshot = connect.SnapshotFalse
	}
	b = appendPlainString(append(b, `{"version":`...), s.Version)
	b = appendPlainString(append(b, `,"connector":`...), s.Connector)
	b = appendPlainString(append(b, `,"name":`...), s.Name)
	b = strconv.AppendInt(append(b, `,"ts_ms":`...), s.TsMs, 10)
	b = appendPlainString(append(b, `,"snapshot":`...), snapshot)
	b = appendPlainString(append(b, `,"db":`...), s.DB)
	b = append(b, `,"sequence":`...)
	if s.Sequence == "" {
		b = append(b, "null"...)
	} else {
		b = appendPlainString(b, s.Sequence)
	}
	b = appendOptInt(append(b, `,"ts_us":`...), s.TsUs)
	b = appendOptInt(append(b, `,"ts_ns":`...), s.TsNs)
	var err error
	for i := range s.Extra {
		b = append(b, ',')
		b = appendPlainString(b, s.Extra[i].Name)
		b = append(b, ':')
		if b, err = appendAnyJSON(b, s.Extra[i].Value); err != nil {
			return b, err
		}
	}
	return append(b, '}'), nil
}

// appendAnyJSON appends one value: the common shapes here, the rest by the
// codec.
func appendAnyJSON(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case string:
		return appendPlainString(b, v), nil
	}
	j, err := connect.Row{{Name: "v", Value: v}}.MarshalJSON()
	if err != nil {
		return b, err
	}
	return append(b, j[len(`{"v":`):len(j)-1]...), nil
}

// appendPlainString appends s as a JSON string, as the codec does: here
// when s needs no escape but of quotes and backslashes (a source
// sequence), else by the codec.
func appendPlainString(b []byte, s string) []byte {
	ascii := true
	quotes := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20:
			return append(b, jsonString(s)...)
		case c == '"' || c == '\\':
			quotes = true
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	if !ascii && !utf8.ValidString(s) {
		return append(b, jsonString(s)...)
	}
	b = append(b, '"')
	if !quotes {
		b = append(b, s...)
		return append(b, '"')
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, '\\', c)
		} else {
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendOptInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, v, 10)
}

// envelopeOK is the outcome of envelopeSelfCheck, run once.
var envelopeOK = sync.OnceValue(envelopeSelfCheck)

// envelopeSelfCheck reports whether appendEvent writes what the codec
// writes, for events with every value shape the mapper produces.
func envelopeSelfCheck() bool {
	codec := connect.DebeziumJSON{}
	row := connect.Row{
		{Name: "id", Value: int64(-42)}, {Name: "t", Value: "plain"}, {Name: "q", Value: "a \"quoted\"\n\\ \x01 \xff é"},
		{Name: "b", Value: true}, {Name: "n", Value: nil}, {Name: "f", Value: 1.5}, {Name: "f4", Value: float32(0.1)},
		{Name: "big", Value: 1e300}, {Name: "by", Value: []byte{0xde, 0xad}}, {Name: "arr", Value: []any{int64(1), nil, "x"}},
		{Name: "dec", Value: connect.Row{{Name: "scale", Value: int64(2)}, {Name: "value", Value: []byte{4}}}},
		{Name: "nan", Value: "NaN"}, {Name: "w\"eird", Value: ""},
	}
	rel := &relation{columns: make([]column, len(row))}
	for i := range row {
		rel.columns[i].name = row[i].Name
	}
	src := connect.SourceInfo{Version: version, Connector: connect.ConnectorPostgres, Name: "p\"x", DB: "d",
		Sequence: `["1","2"]`, Extra: connect.Row{{Name: "schema", Value: "public"}, {Name: "table", Value: "t"},
			{Name: "txId", Value: int64(7)}, {Name: "lsn", Value: nil}, {Name: "xmin", Value: nil}}}
	src.SetTime(time.Unix(1700000000, 123456789))
	for _, ev := range []*connect.ChangeEvent{
		{Op: connect.OpCreate, Key: connect.Row{{Name: "id", Value: int64(-42)}}, After: row, Source: src,
			Transaction: &connect.Transaction{ID: "7:99", TotalOrder: 3, DataCollectionOrder: 2}},
		{Op: connect.OpUpdate, Key: row[:2], Before: row, After: row, Source: src},
		{Op: connect.OpDelete, Key: row[:1], Before: row},
		{Op: connect.OpTruncate, Source: src},
	} {
		ev.SetTime(time.Unix(1700000001, 5))
		wantKey, want, err1 := codec.Encode(ev)
		key, got, err2 := appendEvent(ev, rel)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) || !bytes.Equal(key, wantKey) {
			return false
		}
	}
	return true
}

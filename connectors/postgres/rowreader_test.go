package postgres

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestRowReader_SameAsCodec checks the reader's own encoding against the
// codec's, byte for byte, for every kind of column and for values that
// take the fast path (plain text, canonical integers) and values that do
// not (escapes, invalid UTF-8, 19-digit integers, floats, arrays, ...).
func TestRowReader_SameAsCodec(t *testing.T) {
	typ := func(oid uint32) *pgType {
		b := builtinKinds[oid]
		return &pgType{oid: oid, name: b.name, kind: b.kind, typmod: -1}
	}
	arr := &pgType{oid: 1007, name: "_int4", kind: kindArray, elem: typ(23), delim: ',', typmod: -1}
	enum := &pgType{oid: 90000, name: "mood", kind: kindEnum, labels: []string{"sad", "happy"}, typmod: -1}
	unknown := &pgType{oid: 90001, name: "citext", kind: kindUnknown, typmod: -1}
	cols := []column{
		{name: "id", typ: typ(20), typmod: -1, key: true},
		{name: "k2", typ: typ(25), typmod: -1, key: true},
		{name: "i2", typ: typ(21), typmod: -1}, {name: "i4", typ: typ(23), typmod: -1}, {name: "o", typ: typ(26), typmod: -1},
		{name: "b", typ: typ(16), typmod: -1}, {name: "t", typ: typ(25), typmod: -1}, {name: "u", typ: typ(2950), typmod: -1},
		{name: "j", typ: typ(3802), typmod: -1}, {name: "x", typ: typ(142), typmod: -1}, {name: "mo", typ: enum, typmod: -1},
		{name: "ci", typ: unknown, typmod: -1}, {name: "f4", typ: typ(700), typmod: -1}, {name: "f8", typ: typ(701), typmod: -1},
		{name: "n", typ: typ(1700), typmod: 10<<16 | 2 + 4}, {name: "by", typ: typ(17), typmod: -1}, {name: "ts", typ: typ(1114), typmod: -1},
		{name: "ai", typ: arr, typmod: -1}, {name: "pt", typ: typ(600), typmod: -1}, {name: `we"ird`, typ: typ(25), typmod: -1},
	}
	rel := &relation{ref: tableRef{"public", "all"}, columns: cols, keyIdx: []int{1, 0}, ident: 'd', topic: "p.public.all"}
	rows := [][]string{
		{"1", "a", "-32768", "2147483647", "4000000000", "t", "plain text", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
			`{"a": 1}`, "<a>1</a>", "happy", "MiXeD", "1.5", "0.1", "12.30", `\xdeadbeef`, "2024-01-02 03:04:05.123456", "{1,NULL,3}", "(1,2)", "héllo wörld"},
		{"-9223372036854775808", "tab\there", "0", "-0", "00", "f", "quote \" and \\ backslash", "", "", "", "sad", "ctl\x01", "NaN", "-Infinity",
			"NaN", `\x`, "infinity", "{}", "", "bad \xff utf8"},
		{"9223372036854775807", "", "12a", "+5", "1e3", "x", "", "\u2028", "", "", "", "", "1e+38", "1e-7", "0.00", "\\x00", "-infinity", "{{1,2},{3,4}}", "", "\x7f"},
	}
	enc, _ := benchEncoder()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 6, 123456789, time.UTC) }
	for _, snap := range []string{connect.SnapshotTrue, connect.SnapshotIncremental} {
		fast := enc.newRowReader(rel, snap, at, 123456, log)
		if !fast.fast {
			t.Fatal("the reader does not use its own encoding without schemas")
		}
		fast.now = now
		slow := enc.newRowReader(rel, snap, at, 123456, log)
		slow.fast, slow.now = false, now
		for n, row := range rows {
			for nulls := 0; nulls < 2; nulls++ {
				vals := make([][]byte, len(row))
				for i, v := range row {
					if nulls == 0 || i%3 != 2 {
						vals[i] = []byte(v)
					}
				}
				got, gotKey, err := fast.read(vals, true)
				if err != nil {
					t.Fatalf("row %d: %v", n, err)
				}
				want, wantKey, err := slow.read(vals, true)
				if err != nil {
					t.Fatalf("row %d, codec: %v", n, err)
				}
				if !bytes.Equal(got.Value, want.Value) || !bytes.Equal(got.Key, want.Key) || !bytes.Equal(gotKey, wantKey) || got.Topic != want.Topic {
					t.Errorf("row %d (nulls %d):\n got %s %s\nwant %s %s", n, nulls, got.Key, got.Value, want.Key, want.Value)
				}
			}
		}
	}
}

// TestMarkSnapshot checks the first/last marking against the codec.
func TestMarkSnapshot(t *testing.T) {
	for _, schemas := range []bool{false, true} {
		codec := connect.DebeziumJSON{Schemas: schemas}
		ev := &connect.ChangeEvent{Op: connect.OpRead, Key: connect.Row{{Name: "snapshot", Value: "true"}},
			After:  connect.Row{{Name: "snapshot", Value: "true"}, {Name: "s", Value: `"snapshot":"true"`}},
			Source: connect.SourceInfo{Version: "1", Connector: connect.ConnectorPostgres, Name: "p", Snapshot: connect.SnapshotTrue, DB: "d"}}
		ev.SetTime(time.Now())
		_, v, err := codec.Encode(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{connect.SnapshotFirst, connect.SnapshotLast} {
			ev.Source.Snapshot = m
			_, want, _ := codec.Encode(ev)
			if got := markSnapshot(v, m); !bytes.Equal(got, want) {
				t.Errorf("schemas %v, %s:\n got %s\nwant %s", schemas, m, got, want)
			}
			if strings.Contains(string(v), `"snapshot":"`+m) {
				t.Errorf("markSnapshot changed its input")
			}
		}
	}
}

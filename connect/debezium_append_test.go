package connect

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// randomEvents makes n random change events for comparing encoders:
// values of every type of the value model (and some outside it), strings
// that need escaping or are not UTF-8, source blocks of both connectors
// with, now and then, a repeated field name.
func randomEvents(rng *rand.Rand, n int) []*ChangeEvent {
	strs := []string{"", "plain", `q"uote`, `back\slash`, "nl\n cr\r tab\t bs\b ff\f", "\x00\x01\x1f\x7f", "é ü 日本 🚀",
		"bad \xff\xfe utf8", "\u2028\u2029", "<>&", "trunc \xe6\x97", "a/b"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	var value func(depth int) any
	value = func(depth int) any {
		switch rng.IntN(16) {
		case 0, 1:
			return nil
		case 2:
			return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 255, 256}[rng.IntN(7)]
		case 3, 4:
			return rng.Int64() - math.MaxInt64/2
		case 5, 6:
			return str()
		case 7:
			b := make([]byte, rng.IntN(9))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			if rng.IntN(8) == 0 {
				return []byte(nil)
			}
			return b
		case 8:
			return []any{1.5, float32(2), 1e21, math.Copysign(0, -1), math.NaN(), math.Inf(-1), 4.9e-324}[rng.IntN(7)]
		case 9:
			return rng.IntN(2) == 0
		case 10:
			return []any{int32(-7), uint64(math.MaxUint64), uint8(200), int(42), int16(-300)}[rng.IntN(5)]
		case 11:
			return []any{json.Number("12.340"), json.Number("123456789012345678901234"), json.Number("1e"), json.Number("")}[rng.IntN(4)]
		case 12:
			if depth < 2 {
				r := Row{}
				for i := range rng.IntN(3) {
					r = append(r, Field{Name: []string{"a", "b", "c"}[i], Value: value(depth + 1)})
				}
				return r
			}
			return Row(nil)
		case 13:
			if depth < 2 {
				return []any{value(depth + 1), value(depth + 1)}
			}
			return []any{}
		case 14:
			if rng.IntN(20) == 0 {
				return struct{}{} // outside the value model: an error
			}
		}
		return "s" + str()
	}
	names := []string{"id", "name", "na\"me", "ü", "x", "y", "z"}
	row := func(ncol int) Row {
		r := make(Row, ncol)
		for c := range r {
			r[c] = Field{Name: names[c], Value: value(0)}
		}
		if ncol > 1 && rng.IntN(40) == 0 {
			r[ncol-1].Name = r[0].Name
		}
		return r
	}
	events := make([]*ChangeEvent, n)
	for i := range events {
		ncol := 1 + rng.IntN(len(names))
		e := &ChangeEvent{Op: []Op{OpCreate, OpUpdate, OpDelete, OpRead, OpTruncate, OpMessage}[rng.IntN(6)]}
		if rng.IntN(50) == 0 {
			e.Op = "x"
		}
		switch e.Op {
		case OpCreate, OpRead:
			e.After = row(ncol)
		case OpUpdate:
			e.Before, e.After = row(ncol), row(ncol)
		case OpDelete:
			e.Before = row(ncol)
		case OpMessage:
			if rng.IntN(20) > 0 {
				e.Message = &Message{Prefix: str()}
				if rng.IntN(3) > 0 {
					e.Message.Content = []byte(str())
				}
			}
		}
		if e.Op != OpTruncate && rng.IntN(4) > 0 {
			e.Key = row(1 + rng.IntN(2))
		}
		e.Source = SourceInfo{Version: "3.0." + str(), Connector: []string{ConnectorMySQL, ConnectorPostgres, "x"}[rng.IntN(3)],
			Name: str(), TsMs: rng.Int64N(2e12), DB: str()}
		e.Source.Snapshot = []string{"", SnapshotFalse, SnapshotTrue, SnapshotIncremental, str()}[rng.IntN(5)]
		if rng.IntN(2) == 0 {
			e.Source.Sequence = `["1","2"]`
			e.Source.TsUs, e.Source.TsNs = e.Source.TsMs*1000, e.Source.TsMs*1e6
		}
		switch rng.IntN(4) {
		case 0:
			e.Source.Extra = Row{{Name: "table", Value: str()}, {Name: "server_id", Value: rng.Int64N(1 << 31)},
				{Name: "gtid", Value: []any{nil, "0-1-7"}[rng.IntN(2)]}, {Name: "file", Value: "mariadb-bin.000001"},
				{Name: "pos", Value: rng.Int64N(1 << 30)}, {Name: "row", Value: int64(rng.IntN(300))},
				{Name: "thread", Value: []any{nil, rng.Int64N(1e6)}[rng.IntN(2)]}, {Name: "query", Value: nil}}
		case 1:
			e.Source.Extra = Row{{Name: "schema", Value: "public"}, {Name: "table", Value: str()}, {Name: "txId", Value: rng.Int64N(1e6)},
				{Name: "lsn", Value: rng.Int64N(1e12)}, {Name: "xmin", Value: nil}}
		case 2:
			e.Source.Extra = Row{{Name: "v", Value: value(0)}}
		}
		if len(e.Source.Extra) > 0 && rng.IntN(30) == 0 {
			e.Source.Extra[len(e.Source.Extra)-1].Name = []string{"db", "ts_us", e.Source.Extra[0].Name}[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			e.TsMs, e.TsUs, e.TsNs = rng.Int64N(2e12), rng.Int64N(2e15), rng.Int64N(2e18)
		}
		if rng.IntN(2) == 0 {
			e.Transaction = &Transaction{ID: str(), TotalOrder: rng.Int64N(100), DataCollectionOrder: rng.Int64N(100)}
		}
		events[i] = e
	}
	return events
}

// genericEncode encodes e without schemas the slow, obvious way: the
// envelope, the source block and the transaction built as rows, written
// by the generic value writer. It is the model AppendRecord is held to.
func genericEncode(e *ChangeEvent) (key, value []byte, err error) {
	if e.Key != nil {
		if key, err = appendPlain(nil, e.Key); err != nil {
			return nil, nil, err
		}
	}
	if !e.Op.Valid() || (e.Op == OpMessage && e.Message == nil) {
		return nil, nil, errSkip
	}
	opt := func(v int64) any {
		if v == 0 {
			return nil
		}
		return v
	}
	var tx any
	if e.Transaction != nil {
		tx = Row{{"id", e.Transaction.ID}, {"total_order", e.Transaction.TotalOrder}, {"data_collection_order", e.Transaction.DataCollectionOrder}}
	}
	var env Row
	if e.Op == OpMessage {
		var content any
		if e.Message.Content != nil {
			content = e.Message.Content
		}
		env = Row{{"op", string(e.Op)}, {"ts_ms", opt(e.TsMs)}, {"source", e.Source.row(nil)}, {"transaction", tx},
			{"message", Row{{"prefix", e.Message.Prefix}, {"content", content}}}}
	} else {
		env = Row{{"before", e.Before}, {"after", e.After}, {"source", e.Source.row(nil)}, {"op", string(e.Op)},
			{"ts_ms", opt(e.TsMs)}, {"ts_us", opt(e.TsUs)}, {"ts_ns", opt(e.TsNs)}, {"transaction", tx}}
	}
	if value, err = appendPlain(nil, env); err != nil {
		return nil, nil, err
	}
	return key, value, nil
}

var errSkip = &valueError{msg: "the op check comes first"}

// TestDebeziumJSON_AppendRecord_MatchesGeneric holds the fast path (the
// source block written from the struct, rows written inline) to the
// generic writer, byte for byte and error for error, on random events;
// and the shared-buffer forms (AppendRecord, RecordIn) to Encode, with
// and without schemas, checking that no record changes after later ones
// are written into the same buffer.
func TestDebeziumJSON_AppendRecord_MatchesGeneric(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	type kept struct{ key, value, wantKey, wantValue []byte }
	var keep []kept
	var shared []byte
	var blk Blocks
	encoded := 0
	for i, e := range randomEvents(rng, 4000) {
		c := DebeziumJSON{Schemas: i%10 == 0}
		wantKey, wantValue, wantErr := c.Encode(e)
		if !c.Schemas {
			gKey, gValue, gErr := genericEncode(e)
			switch {
			case gErr == errSkip:
				if wantErr == nil {
					t.Fatalf("event %d (%s): no error for op %q or a missing message", i, describeEvent(e), e.Op)
				}
			case (gErr == nil) != (wantErr == nil):
				t.Fatalf("event %d (%s): error %v, generic error %v", i, describeEvent(e), wantErr, gErr)
			case gErr != nil:
				if !bytes.Contains([]byte(wantErr.Error()), []byte(gErr.Error())) {
					t.Fatalf("event %d: error %q, generic error %q", i, wantErr, gErr)
				}
			default:
				if !bytes.Equal(wantKey, gKey) || (wantKey == nil) != (gKey == nil) || !bytes.Equal(wantValue, gValue) {
					t.Fatalf("event %d:\nkey   %s\nwant  %s\nvalue %s\nwant  %s", i, wantKey, gKey, wantValue, gValue)
				}
			}
		}
		// The parts, one at a time.
		k, kErr := c.EncodeKey(e)
		v, vErr := c.EncodeValue(e)
		if wantErr == nil && (kErr != nil || vErr != nil || !bytes.Equal(k, wantKey) || !bytes.Equal(v, wantValue)) {
			t.Fatalf("event %d: EncodeKey/EncodeValue = %s %v, %s %v; Encode = %s, %s", i, k, kErr, v, vErr, wantKey, wantValue)
		}
		// Into a shared buffer.
		before := len(shared)
		key, value, out, err := c.AppendRecord(shared, e)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("event %d: AppendRecord error %v, Encode error %v", i, err, wantErr)
		}
		if err != nil {
			if len(out) != before {
				t.Fatalf("event %d: AppendRecord failed but left %d bytes", i, len(out)-before)
			}
			continue
		}
		encoded++
		if !bytes.Equal(key, wantKey) || (key == nil) != (wantKey == nil) || !bytes.Equal(value, wantValue) {
			t.Fatalf("event %d: AppendRecord\nkey   %s\nwant  %s\nvalue %s\nwant  %s", i, key, wantKey, value, wantValue)
		}
		if cap(value) != len(value) || (key != nil && cap(key) != len(key)) {
			t.Fatalf("event %d: key and value are not capped at their length", i)
		}
		shared = out
		if len(shared) > 1<<20 {
			shared = nil
		}
		rec, err := c.RecordIn(&blk, "t", e)
		if err != nil || !bytes.Equal(rec.Key, wantKey) || !bytes.Equal(rec.Value, wantValue) || rec.Topic != "t" {
			t.Fatalf("event %d: RecordIn = %s %s %v, want %s %s", i, rec.Key, rec.Value, err, wantKey, wantValue)
		}
		keep = append(keep, kept{key, value, wantKey, wantValue}, kept{rec.Key, rec.Value, wantKey, wantValue})
	}
	for i, k := range keep {
		if !bytes.Equal(k.key, k.wantKey) || !bytes.Equal(k.value, k.wantValue) {
			t.Fatalf("record %d changed after later records:\n got %s\nwant %s", i/2, k.value, k.wantValue)
		}
	}
	if encoded < 1000 {
		t.Fatalf("only %d of 4000 random events encoded: the generator makes too many errors", encoded)
	}
}

// TestBlocks_LargeRecords checks records larger than a block, and ones
// whose size the estimate misses (every byte escaped six times over),
// next to small ones in the same Blocks.
func TestBlocks_LargeRecords(t *testing.T) {
	var blk Blocks
	c := DebeziumJSON{}
	var recs []Record
	var want [][]byte
	for i, s := range []string{"small", string(bytes.Repeat([]byte("x"), 100<<10)), "small", string(bytes.Repeat([]byte{1}, 30<<10)), "after"} {
		e := &ChangeEvent{Op: OpCreate, Key: Row{{"id", int64(i)}}, After: Row{{"id", int64(i)}, {"s", s}}, Source: SourceInfo{Connector: "x"}}
		_, v, err := c.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := c.RecordIn(&blk, "t", e)
		if err != nil {
			t.Fatal(err)
		}
		recs, want = append(recs, rec), append(want, v)
	}
	for i := range recs {
		if !bytes.Equal(recs[i].Value, want[i]) {
			t.Fatalf("record %d: value differs from Encode's (%d bytes, want %d)", i, len(recs[i].Value), len(want[i]))
		}
	}
}

// TestBlocks_SourceCache encodes runs of events whose source blocks differ
// from the last one in a few fields at a time, changed in place as the
// connectors do (a new member value, a new type, a renamed, added or
// repeated member, a value outside the model), through one Blocks, and
// holds every record to Encode's bytes, also after later records.
func TestBlocks_SourceCache(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	strs := []string{"", "a", "mariadb-bin.000001", `q"uote`, "é", "0-1-7", "\x01"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	scalar := func() any {
		switch rng.IntN(7) {
		case 0:
			return nil
		case 1, 2:
			return rng.Int64N(4) - 1
		case 3, 4:
			return str()
		case 5:
			return []any{true, int32(7), 1.5, []byte("b")}[rng.IntN(4)]
		}
		if rng.IntN(40) == 0 {
			return struct{}{} // outside the value model: an error
		}
		return int64(rng.IntN(2))
	}
	names := []string{"table", "server_id", "gtid", "file", "pos", "row", "thread", "query"}
	e := &ChangeEvent{Op: OpCreate, Key: Row{{Name: "id", Value: int64(1)}}, After: Row{{Name: "id", Value: int64(1)}}}
	for _, n := range names {
		e.Source.Extra = append(e.Source.Extra, Field{Name: n, Value: scalar()})
	}
	var blk Blocks
	type kept struct{ rec, want []byte }
	var keep []kept
	for i := range 5000 {
		for range 1 + rng.IntN(3) {
			src := &e.Source
			switch rng.IntN(14) {
			case 0:
				src.Version = str()
			case 1:
				src.Connector = str()
			case 2:
				src.Name = str()
			case 3:
				src.TsMs = rng.Int64N(3)
			case 4:
				src.Snapshot = []string{"", SnapshotFalse, SnapshotTrue, str()}[rng.IntN(4)]
			case 5:
				src.DB = str()
			case 6:
				src.Sequence = []string{"", `["1","2"]`}[rng.IntN(2)]
			case 7:
				src.TsUs = rng.Int64N(3)
			case 8:
				src.TsNs = rng.Int64N(3)
			case 9:
				if i := rng.IntN(len(names)); i < len(src.Extra) {
					// Mostly back to its own name; now and then another,
					// which may repeat one.
					src.Extra[i].Name = names[i]
					if rng.IntN(4) == 0 {
						src.Extra[i].Name = []string{"x", "db", "table", "pos"}[rng.IntN(4)]
					}
				}
			case 10:
				if rng.IntN(2) == 0 && len(src.Extra) > 0 {
					src.Extra = src.Extra[:len(src.Extra)-1]
				} else if len(src.Extra) < len(names) {
					src.Extra = append(src.Extra, Field{Name: names[len(src.Extra)], Value: scalar()})
				}
			default:
				if len(src.Extra) > 0 {
					src.Extra[rng.IntN(len(src.Extra))].Value = scalar()
				}
			}
		}
		_, want, wantErr := (DebeziumJSON{}).Encode(e)
		rec, err := (DebeziumJSON{}).RecordIn(&blk, "t", e)
		if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
			t.Fatalf("event %d: RecordIn error %v, Encode error %v", i, err, wantErr)
		}
		if err != nil {
			continue
		}
		if !bytes.Equal(rec.Value, want) {
			t.Fatalf("event %d:\nvalue %s\nwant  %s", i, rec.Value, want)
		}
		keep = append(keep, kept{rec.Value, want})
	}
	for i, k := range keep {
		if !bytes.Equal(k.rec, k.want) {
			t.Fatalf("record %d changed after later records:\n got %s\nwant %s", i, k.rec, k.want)
		}
	}
	t.Logf("%d of 5000 encoded", len(keep))
	if len(keep) < 1000 {
		t.Fatalf("only %d of 5000 events encoded", len(keep))
	}
}

// BenchmarkDebeziumJSON_RecordInMySQLStream is RecordInMySQL with the
// members that change from one single-row transaction to the next (gtid,
// pos, the event's times) changed at every record, in place.
func BenchmarkDebeziumJSON_RecordInMySQLStream(b *testing.B) {
	e := mysqlEvent()
	gtids := make([]string, 64)
	for i := range gtids {
		gtids[i] = "0-1-" + strconv.Itoa(4242+i)
	}
	var blk Blocks
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		e.Source.Extra[2].Value = gtids[i%len(gtids)]
		e.Source.Extra[4].Value = int64(1234567 + 300*i)
		e.TsMs, e.TsUs, e.TsNs = e.TsMs+1, e.TsUs+1000, e.TsNs+1000000
		if _, err := (DebeziumJSON{}).RecordIn(&blk, "bench.shop.orders", e); err != nil {
			b.Fatal(err)
		}
	}
}

package mysql

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestFastJSON_MatchesCodec checks fastRecord against the codec (the
// dumb model) on random events: the same key and value bytes, and ok=false
// exactly when a value is of a type it does not write.
func TestFastJSON_MatchesCodec(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	strs := []string{"", "plain", `q"uote`, `back\slash`, "nl\n cr\r tab\t bs\b ff\f", "\x00\x01\x1f\x7f", "é ü 日本 🚀",
		"bad \xff\xfe utf8", "\u2028\u2029", "<>&", "trunc \xe6\x97"}
	value := func(withOther bool) any {
		switch rng.IntN(7) {
		case 0:
			return nil
		case 1:
			return []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 255, 256}[rng.IntN(7)]
		case 2:
			return rng.Int64() - math.MaxInt64/2
		case 3:
			return strs[rng.IntN(len(strs))]
		case 4:
			b := make([]byte, rng.IntN(9))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			return b
		case 5:
			if withOther && rng.IntN(4) == 0 {
				return []any{float64(1.5), float32(2), "x", true}[rng.IntN(4)]
			}
			return "s" + strs[rng.IntN(len(strs))]
		}
		return int64(rng.IntN(1000))
	}
	shared := &arena{}
	type kept struct{ got, want connect.Record }
	var keep []kept
	defer func() {
		for i, k := range keep {
			if !bytes.Equal(k.got.Key, k.want.Key) || !bytes.Equal(k.got.Value, k.want.Value) {
				t.Fatalf("arena record %d changed after later records:\n got %s\nwant %s", i, k.got.Value, k.want.Value)
			}
		}
	}()
	for i := range 3000 {
		ncol := 1 + rng.IntN(5)
		def := &tableDef{DB: []string{"shop", `d"b`, "ü"}[rng.IntN(3)], Name: []string{"orders", "t\\x"}[rng.IntN(2)]}
		for c := range ncol {
			def.Columns = append(def.Columns, column{Name: []string{"id", "name", "na\"me", "ü", "x"}[c]})
		}
		if rng.IntN(4) > 0 {
			def.Key = []int{0}
			if ncol > 2 && rng.IntN(2) == 0 {
				def.Key = []int{2, 0}
			}
		}
		set := &settings{prefix: []string{"srv", `p"x`}[rng.IntN(2)], schemas: i%50 == 0}
		enc := &encoder{set: set, codec: connect.DebeziumJSON{Schemas: set.schemas}, mapper: &mapper{}}
		tbl, err := enc.mapper.newTable(set, def)
		if err != nil {
			t.Fatal(err)
		}
		row := func() connect.Row {
			r := make(connect.Row, ncol)
			for c := range r {
				r[c] = connect.Field{Name: def.Columns[c].Name, Value: value(true)}
			}
			return r
		}
		var before, after connect.Row
		op := []connect.Op{connect.OpCreate, connect.OpUpdate, connect.OpDelete, connect.OpRead}[rng.IntN(4)]
		if op != connect.OpCreate && op != connect.OpRead {
			before = row()
		}
		if op != connect.OpDelete {
			after = row()
		}
		si := srcInfo{snapshot: []string{"", connect.SnapshotFalse, connect.SnapshotTrue, connect.SnapshotIncremental}[rng.IntN(4)], serverID: uint32(rng.IntN(1 << 31)),
			file: "mariadb-bin.000001", pos: uint32(rng.IntN(1 << 30)), row: rng.IntN(300)}
		if rng.IntN(2) == 0 {
			si.ts = time.Unix(rng.Int64N(2e9), 0)
		}
		if rng.IntN(2) == 0 {
			si.gtid = "0-1-" + string(rune('0'+rng.IntN(10)))
		}
		if rng.IntN(2) == 0 {
			si.thread = rng.Int64N(1e6)
		}
		var tx *connect.Transaction
		if rng.IntN(2) == 0 {
			tx = &connect.Transaction{ID: "0-1-7", TotalOrder: rng.Int64N(100), DataCollectionOrder: rng.Int64N(100)}
		}
		now := time.Unix(0, rng.Int64N(4e18))
		var stamps connect.ChangeEvent
		stamps.SetTime(now)
		var a *arena
		if i%2 == 0 {
			a = shared // records of one arena must not overwrite each other
		}
		got, ok := enc.fastRecord(a, tbl, op, before, after, &si, tx, &stamps)
		wantOK := !set.schemas && fastRow(before) && fastRow(after)
		if ok != wantOK {
			t.Fatalf("event %d: ok = %v, want %v", i, ok, wantOK)
		}
		if !ok {
			continue
		}
		ev := &connect.ChangeEvent{Op: op, Before: before, After: after, Source: enc.source(tbl, &si), Transaction: tx}
		if after != nil {
			ev.Key = tbl.key(after)
		} else {
			ev.Key = tbl.key(before)
		}
		ev.SetTime(now)
		want, err := enc.record(tbl, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Key, want.Key) || (got.Key == nil) != (want.Key == nil) {
			t.Fatalf("event %d: key\n got %s\nwant %s", i, got.Key, want.Key)
		}
		if !bytes.Equal(got.Value, want.Value) {
			t.Fatalf("event %d: value\n got %s\nwant %s", i, got.Value, want.Value)
		}
		if got.Topic != want.Topic {
			t.Fatalf("event %d: topic %q, want %q", i, got.Topic, want.Topic)
		}
		if a != nil {
			keep = append(keep, kept{got, want})
		}
	}
}

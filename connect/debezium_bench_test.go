package connect

import "testing"

func BenchmarkDebeziumJSON_Decode(b *testing.B) {
	for _, name := range []string{"postgres_create", "postgres_update"} {
		b.Run(name, func(b *testing.B) {
			key := readGoldenB(b, name+".key.json")
			value := readGoldenB(b, name+".value.json")
			b.SetBytes(int64(len(key) + len(value)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := (DebeziumJSON{}).Decode(key, value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDebeziumJSON_Encode(b *testing.B) {
	for _, schemas := range []bool{false, true} {
		name := "payload"
		if schemas {
			name = "schemas"
		}
		b.Run(name, func(b *testing.B) {
			e, err := DebeziumJSON{}.Decode(readGoldenB(b, "postgres_create.key.json"), readGoldenB(b, "postgres_create.value.json"))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := (DebeziumJSON{Schemas: schemas}).Encode(e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func readGoldenB(b *testing.B, name string) []byte { return readGolden(b, name, false) }

// mysqlEvent is an update of a typical six-column row with the mysql
// source block, as the mysql source streams them.
func mysqlEvent() *ChangeEvent {
	row := func(qty int64) Row {
		return Row{{Name: "id", Value: int64(123456)}, {Name: "customer", Value: "Ada Lovelace"}, {Name: "qty", Value: qty},
			{Name: "price", Value: "1234.50"}, {Name: "note", Value: nil}, {Name: "payload", Value: []byte("0123456789abcdef")}}
	}
	e := &ChangeEvent{Op: OpUpdate, Key: Row{{Name: "id", Value: int64(123456)}}, Before: row(1), After: row(2),
		Source: SourceInfo{Version: "0.1.0", Connector: ConnectorMySQL, Name: "bench", Snapshot: SnapshotFalse, DB: "shop",
			Extra: Row{{Name: "table", Value: "orders"}, {Name: "server_id", Value: int64(1)}, {Name: "gtid", Value: "0-1-4242"},
				{Name: "file", Value: "mariadb-bin.000001"}, {Name: "pos", Value: int64(1234567)}, {Name: "row", Value: int64(0)},
				{Name: "thread", Value: int64(17)}, {Name: "query", Value: nil}}},
		Transaction: &Transaction{ID: "0-1-4242", TotalOrder: 1, DataCollectionOrder: 1},
		TsMs:        1764400001000, TsUs: 1764400001000000, TsNs: 1764400001000000000}
	e.Source.TsMs = 1764400000000
	return e
}

func BenchmarkDebeziumJSON_EncodeMySQL(b *testing.B) {
	e := mysqlEvent()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := (DebeziumJSON{}).Encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDebeziumJSON_RecordInMySQL(b *testing.B) {
	e := mysqlEvent()
	var blk Blocks
	b.ReportAllocs()
	for b.Loop() {
		if _, err := (DebeziumJSON{}).RecordIn(&blk, "bench.shop.orders", e); err != nil {
			b.Fatal(err)
		}
	}
}

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

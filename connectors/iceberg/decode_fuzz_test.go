package iceberg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ib "github.com/apache/iceberg-go"

	"github.com/tributary-io/tributary/connect"
)

// FuzzDecodeRecord feeds arbitrary record keys and values, as producers
// write them to the topics the sink reads, to decodeRecord and converts
// every field to the column type it asks for and to every other column
// type a table may already have. Nothing panics; a value that is not JSON
// is an error saying so; conversions fail only with errors.
func FuzzDecodeRecord(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "connect", "testdata", "*.value.json"))
	for _, vf := range files {
		value, err := os.ReadFile(vf)
		if err != nil {
			f.Fatal(err)
		}
		key, _ := os.ReadFile(strings.TrimSuffix(vf, ".value.json") + ".key.json")
		f.Add(key, value)
	}
	for _, s := range []string{
		`{"id":1,"amount":"12.50","ts":"2024-05-01T12:00:00Z","tags":[1,"a"],"obj":{"a":null},"b":true,"f":1.5,"n":null}`,
		`{"schema":{"type":"struct","fields":[{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"2","connect.decimal.precision":"4"},"field":"d"},` +
			`{"type":"int32","name":"io.debezium.time.Date","field":"day"},{"type":"struct","name":"io.debezium.data.VariableScaleDecimal","fields":[{"type":"int32","field":"scale"},{"type":"bytes","field":"value"}],"field":"v"}]},` +
			`{"type":"bytes","name":"org.apache.kafka.connect.data.Decimal","parameters":{"scale":"-3"},"field":"neg"}]},` +
			`"payload":{"d":"AQI=","day":19000,"v":{"scale":2,"value":"AQ=="},"neg":"/w=="}}`,
		`{"op":"c","after":{"id":1,"x":"NaN"},"before":null}`, `[]`, `null`, `"x"`, `{"":1}`, `{"schema":{},"payload":{}}`,
	} {
		f.Add([]byte(`{"id":1}`), []byte(s))
	}
	types := []ib.Type{ib.PrimitiveTypes.Bool, ib.PrimitiveTypes.Int32, ib.PrimitiveTypes.Int64, ib.PrimitiveTypes.Float32,
		ib.PrimitiveTypes.Float64, ib.PrimitiveTypes.String, ib.PrimitiveTypes.Binary, ib.PrimitiveTypes.Date, ib.PrimitiveTypes.Time,
		ib.PrimitiveTypes.Timestamp, ib.PrimitiveTypes.TimestampTz, ib.DecimalTypeOf(10, 2), ib.DecimalTypeOf(38, 0), ib.DecimalTypeOf(4, 4)}
	f.Fuzz(func(t *testing.T, key, value []byte) {
		r := &connect.Record{Topic: "db.public.t", Key: key, Value: value}
		if len(value) == 0 {
			r.Value = nil
		}
		ev, err := decodeRecord(r)
		if err != nil {
			if !strings.Contains(err.Error(), "not JSON") {
				t.Fatalf("decodeRecord(%q, %q): error %q", key, value, err)
			}
			return
		}
		_ = tableName("{namespace}.{table}_{topic}", r.Topic, &ev)
		for _, fld := range ev.row {
			var s *connect.Schema
			typ := typeOfValue(fld.Value)
			if ev.rowSchema != nil {
				if fs, ok := ev.rowSchema.FieldSchema(fld.Name); ok {
					s, typ = fs, typeFromConnect(fs)
				}
			}
			if typ != nil {
				_, _ = convert(fld.Value, s, typ)
			}
			for _, other := range types {
				_, _ = convert(fld.Value, s, other)
			}
		}
	})
}

package connect

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// FuzzSchema_UnmarshalJSON feeds arbitrary JSON to the schema decoder, as a
// Debezium envelope or a REST client hands it over. It never panics; an
// error of valid JSON names the schema; and whatever decodes encodes to JSON that decodes
// to the same schema and encodes to the same bytes.
func FuzzSchema_UnmarshalJSON(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var env struct {
			Schema json.RawMessage `json:"schema"`
		}
		if json.Unmarshal(b, &env) == nil && env.Schema != nil {
			f.Add([]byte(env.Schema))
		}
	}
	for _, s := range []string{
		`{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},` +
			`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"default":"AA==","field":"price"},` +
			`{"type":"float","optional":true,"default":0.5,"field":"ratio"},` +
			`{"type":"map","keys":{"type":"int16","optional":false},"values":{"type":"boolean","optional":false},"optional":true,"field":"points"},` +
			`{"type":"array","items":{"type":"string","optional":false},"optional":false,"default":["a"],"field":"tags"}],"optional":false,"name":"srv.public.t.Value","doc":"a table"}`,
		`{"type":"int8","default":300}`, `{"type":"int64","default":9223372036854775808}`, `{"type":"double","default":1e400}`,
		`{"type":"map","keys":{"type":"string"},"values":{"type":"int32"},"default":{"a":1}}`,
		`{"type":"map","keys":{"type":"int32"},"values":{"type":"int32"},"default":[[1,2]]}`,
		`{"type":"struct","fields":[],"default":{"x":1}}`, `{"type":"string","name":5,"version":"1","doc":false,"extra":{}}`,
		`[]`, `null`, `{"type":"bytes","default":"!"}`, `{"type":"boolean","default":null,"optional":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Schema
		if err := json.Unmarshal(data, &s); err != nil {
			if json.Valid(data) && !strings.Contains(err.Error(), "schema") {
				t.Fatalf("Unmarshal(%q): error %q does not name the schema", data, err)
			}
			return
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("Marshal of the schema decoded from %q: %v", data, err)
		}
		var back Schema
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q decodes, its encoding %s does not: %v", data, b, err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("%q decodes to %#v, its encoding %s to %#v", data, s, b, back)
		}
		b2, err := json.Marshal(back)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("encoding is not stable: %s then %s (%v)", b, b2, err)
		}
	})
}

// FuzzParam_Check checks configuration values, as a pipeline file or the
// REST API gives them, against a parameter of each type: Check never
// panics, and a value it accepts reads back through the Config getter of
// its type without an error.
func FuzzParam_Check(f *testing.F) {
	for _, v := range []string{"", "1", "-1", "0.5", "1e400", "true", "10s", "1h30m", "-5ms", "64KiB", "9223372036854775807TiB",
		" 1 MB ", "a,b, c", "127.0.0.1:8080", ":99999", "[::1]:1", "NaN", "Inf", "0x10", "1_000"} {
		f.Add(v)
	}
	params := []Param{
		{Name: "s", Type: TypeString},
		{Name: "i", Type: TypeInt, Min: "-10", Max: "1000"},
		{Name: "f", Type: TypeFloat, Positive: true},
		{Name: "b", Type: TypeBool},
		{Name: "d", Type: TypeDuration, Min: "1ms"},
		{Name: "z", Type: TypeSize, Max: "1GiB"},
		{Name: "l", Type: TypeList, Enum: []string{"a", "b", "c"}},
		{Name: "e", Type: TypeString, Enum: []string{"x", "y"}},
		{Name: "h", Type: TypeString, Format: FormatHostPort},
		{Name: "p", Type: TypePassword},
	}
	spec := Spec{Params: params}
	f.Fuzz(func(t *testing.T, v string) {
		for _, p := range params {
			if err := p.Check(v); err != nil {
				if strings.HasPrefix(err.Error(), "spec:") {
					t.Fatalf("%s.Check(%q): %v blames the spec", p.Name, v, err)
				}
				continue
			}
			c := Config{Values: map[string]string{p.Name: v}, Spec: spec}
			var err error
			switch p.Type {
			case TypeString, TypePassword:
				_, err = c.String(p.Name)
			case TypeInt:
				_, err = c.Int(p.Name)
			case TypeFloat:
				_, err = c.Float(p.Name)
			case TypeBool:
				_, err = c.Bool(p.Name)
			case TypeDuration:
				_, err = c.Duration(p.Name)
			case TypeSize:
				_, err = c.Size(p.Name)
			case TypeList:
				_, err = c.List(p.Name)
			}
			if err != nil {
				t.Fatalf("%s accepts %q, its getter fails: %v", p.Name, v, err)
			}
		}
		if problems := spec.Validate(map[string]string{"i": v, "z": v, "nope": v}); len(problems) == 0 {
			t.Fatalf("Validate accepted the unknown parameter nope")
		}
	})
}

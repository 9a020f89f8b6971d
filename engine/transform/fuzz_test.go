package transform

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func addSeeds(f *testing.F, add func(value []byte)) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		add(b)
	}
	for _, s := range []string{
		`{}`, `[]`, `null`, `"x"`, `1e999`, `{"a":{"b":{"c":[1,{"d":null}]}}}`,
		`{"ts":"2024-05-01T12:00:00Z","email":"a@b","status":"paid","event":"signup","id":1}`,
		`{"schema":{"type":"struct","name":"x.Envelope"},"payload":{"before":{"id":1},"after":null,"op":"d"}}`,
		`{"before":null,"after":{"id":1},"op":"t"}`, `{"op":"c","after":"x"}`, "{\"s\":\"\xff\"}",
	} {
		add([]byte(s))
	}
}

// FuzzJSON checks the value model against encoding/json: whatever parses
// re-encodes to JSON with the same meaning, and re-encoding is stable.
func FuzzJSON(f *testing.F) {
	addSeeds(f, func(v []byte) { f.Add(v) })
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseJSON(data)
		if err != nil {
			if json.Valid(data) && !strings.Contains(err.Error(), "duplicate field") {
				t.Fatalf("valid JSON %q rejected: %v", data, err)
			}
			return
		}
		out, err := encodeJSON(v)
		if err != nil {
			t.Fatalf("encode %q: %v", data, err)
		}
		if !json.Valid(out) {
			t.Fatalf("%q encoded as invalid JSON %q", data, out)
		}
		if want, got := decodeStd(t, data), decodeStd(t, out); !reflect.DeepEqual(want, got) {
			t.Fatalf("%q re-encoded as %q: meaning changed", data, out)
		}
		v2, err := parseJSON(out)
		if err != nil {
			t.Fatalf("re-parse %q: %v", out, err)
		}
		if out2, _ := encodeJSON(v2); !bytes.Equal(out, out2) {
			t.Fatalf("unstable encoding: %q then %q", out, out2)
		}
	})
}

func decodeStd(t *testing.T, data []byte) any {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("encoding/json: %q: %v", data, err)
	}
	return v
}

// fuzzTransforms are configured built-ins for FuzzTransforms.
func fuzzTransforms(t testing.TB) map[string]Transform {
	cfgs := []struct {
		typ string
		cfg map[string]string
	}{
		{"filter", map[string]string{"action": "drop", "field": "status", "in": "paid,1,null"}},
		{"filter", map[string]string{"action": "keep", "field": "a.b", "matches": ".*x.*", "key.matches": ".+", "tombstone": "false"}},
		{"insert_field", map[string]string{"field": "meta.k", "from": "key"}},
		{"insert_field", map[string]string{"field": "a.b.c", "value": `{"x":[1]}`}},
		{"rename_fields", map[string]string{"renames": "id:pk,after.email:mail"}},
		{"drop_fields", map[string]string{"fields": "email,after.email"}},
		{"drop_fields", map[string]string{"keep": "id,after.id,a.b"}},
		{"mask_fields", map[string]string{"fields": "email,after.email,a", "hash": "sha256"}},
		{"route", map[string]string{"topic": "{topic}.{value.event}"}},
		{"route", map[string]string{"topic": "k.{key.id}"}},
		{"route", map[string]string{"regex": "(.*)", "replacement": "${1}.x"}},
		{"key_from_fields", map[string]string{"fields": "id,after.pk"}},
		{"key_from_fields", map[string]string{"fields": "a", "raw": "true"}},
		{"unwrap", map[string]string{"add.fields": "op,table,source.ts_ms,id", "add.headers": "op,lsn", "route.by.field": "t"}},
		{"unwrap", map[string]string{"delete.tombstone.handling.mode": "rewrite-with-tombstone"}},
		{"timestamp_convert", map[string]string{"field": "ts", "target.type": "iso8601"}},
		{"timestamp_convert", map[string]string{"field": "ts", "target.type": "string", "format": "2006-01-02", "input.unit": "s"}},
	}
	out := map[string]Transform{}
	for i, c := range cfgs {
		out[c.typ+"#"+string(rune('a'+i))] = mustNew(t, c.typ, c.cfg)
	}
	return out
}

// FuzzTransforms runs arbitrary records through every built-in: no panic,
// errors only as marked bad records, the input left as it was, and a value
// a transform rewrote is JSON.
func FuzzTransforms(f *testing.F) {
	addSeeds(f, func(v []byte) { f.Add(v, []byte(`{"id":1}`), "t") })
	f.Add([]byte(nil), []byte("k"), "")
	transforms := fuzzTransforms(f)
	f.Fuzz(func(t *testing.T, value, key []byte, topic string) {
		if len(value) == 0 {
			value = nil
		}
		in := connect.Record{Topic: topic, Key: key, Value: value, Headers: []connect.Header{{Key: "h", Value: []byte("v")}}}
		for name, tr := range transforms {
			before := in.Clone()
			out, err := tr.Apply(in)
			if !in.Equal(before) {
				t.Fatalf("%s modified its input", name)
			}
			if err != nil {
				var te *Error
				if !connect.IsBadRecord(err) || !errors.As(err, &te) {
					t.Fatalf("%s: error %v is not a bad record with an *Error", name, err)
				}
				continue
			}
			for _, r := range out {
				if r.Value != nil && !bytes.Equal(r.Value, value) && !json.Valid(r.Value) {
					t.Fatalf("%s wrote invalid JSON %q from %q", name, r.Value, value)
				}
			}
		}
	})
}

package transform

import (
	"errors"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// fuzzBaseConfigs are valid settings of every built-in transform, which
// FuzzConfig varies one setting at a time.
var fuzzBaseConfigs = []struct {
	typ string
	cfg map[string]string
}{
	{"filter", map[string]string{"action": "drop", "field": "status", "in": "paid,1,null"}},
	{"filter", map[string]string{"action": "keep", "field": "a.b", "matches": ".*x.*", "key.matches": ".+", "tombstone": "false"}},
	{"insert_field", map[string]string{"field": "meta.k", "from": "key"}},
	{"insert_field", map[string]string{"field": "a.b.c", "value": `{"x":[1]}`}},
	{"rename_fields", map[string]string{"renames": "id:pk,after.email:mail"}},
	{"drop_fields", map[string]string{"fields": "email,after.email"}},
	{"mask_fields", map[string]string{"fields": "email,after.email,a", "hash": "sha256"}},
	{"route", map[string]string{"topic": "{topic}.{value.event}"}},
	{"route", map[string]string{"regex": "(.*)", "replacement": "${1}.x"}},
	{"key_from_fields", map[string]string{"fields": "id,after.pk"}},
	{"unwrap", map[string]string{"add.fields": "op,table,source.ts_ms,id", "add.headers": "op,lsn", "route.by.field": "t"}},
	{"timestamp_convert", map[string]string{"field": "ts", "target.type": "string", "format": "2006-01-02", "input.unit": "s"}},
}

// FuzzConfig sets one setting of a built-in transform (which one is the
// fuzzer's choice) to an arbitrary value, as a pipeline file or the REST
// API gives it. Building the transform never panics and fails only with a
// *ConfigError naming the transform; a transform that builds takes records
// without panicking, failing only with a bad-record *Error.
func FuzzConfig(f *testing.F) {
	reg := Builtin()
	for i, c := range fuzzBaseConfigs {
		spec, _ := reg.Spec(c.typ)
		for j, p := range spec.Params {
			f.Add(uint8(i), uint8(j), c.cfg[p.Name])
		}
	}
	for _, v := range []string{"", "{", "}", "{value.}", "{key", "a..b", ".a", "a.", "[", "(?P<x", "${2}", "a:b:c", ":", ",", "a,a",
		"x:", "unix_ms", "2006-01-02T15:04:05.999999999Z07:00", "%Y", "\xff", "a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p", "null", "[1,"} {
		f.Add(uint8(0), uint8(2), v)
		f.Add(uint8(7), uint8(0), v)
		f.Add(uint8(11), uint8(2), v)
	}
	records := []connect.Record{
		{Topic: "t", Key: []byte(`{"id":1}`), Value: []byte(`{"ts":"2024-05-01T12:00:00Z","email":"a@b","status":"paid","event":"signup","id":1,"a":{"b":"x"}}`)},
		{Topic: "t", Key: []byte("k"), Value: []byte(`{"before":null,"after":{"id":1,"pk":2,"email":"e"},"op":"c","source":{"ts_ms":5,"table":"t","lsn":9}}`)},
		{Topic: "t", Key: []byte(`{"id":1}`)},
		{Topic: "", Value: []byte(`{"ts":1714564800,"a":[1]}`)},
	}
	f.Fuzz(func(t *testing.T, which, param uint8, value string) {
		c := fuzzBaseConfigs[int(which)%len(fuzzBaseConfigs)]
		spec, _ := reg.Spec(c.typ)
		name := spec.Params[int(param)%len(spec.Params)].Name
		cfg := map[string]string{}
		for k, v := range c.cfg {
			cfg[k] = v
		}
		cfg[name] = value
		tr, err := reg.New(c.typ, cfg)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), c.typ) {
				t.Fatalf("New(%s, %s=%q): error %v is not a *ConfigError naming the transform", c.typ, name, value, err)
			}
			return
		}
		for _, r := range records {
			if _, err := tr.Apply(r.Clone()); err != nil {
				var te *Error
				if !connect.IsBadRecord(err) || !errors.As(err, &te) {
					t.Fatalf("%s with %s=%q: error %v is not a bad record with an *Error", c.typ, name, value, err)
				}
			}
		}
	})
}

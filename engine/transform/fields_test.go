package transform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestInsertField_Apply(t *testing.T) {
	in := rec(`{"id":1,"n":2}`)
	out := func(v string) []connect.Record { return []connect.Record{value(in, v)} }
	runApply(t, "insert_field", []applyCase{
		{"static string", map[string]string{"field": "src", "value": "web"}, in, out(`{"id":1,"n":2,"src":"web"}`), ""},
		{"static number", map[string]string{"field": "v", "value": "42"}, in, out(`{"id":1,"n":2,"v":42}`), ""},
		{"static JSON object", map[string]string{"field": "v", "value": `{"a": [1, true]}`}, in, out(`{"id":1,"n":2,"v":{"a":[1,true]}}`), ""},
		{"quoted string", map[string]string{"field": "v", "value": `"42"`}, in, out(`{"id":1,"n":2,"v":"42"}`), ""},
		{"null", map[string]string{"field": "v", "value": "null"}, in, out(`{"id":1,"n":2,"v":null}`), ""},
		{"replaces in place", map[string]string{"field": "id", "value": "9"}, in, out(`{"id":9,"n":2}`), ""},
		{"nested, created", map[string]string{"field": "meta.src.name", "value": "web"}, in, out(`{"id":1,"n":2,"meta":{"src":{"name":"web"}}}`), ""},
		{"topic", map[string]string{"field": "topic", "from": "topic"}, in, out(`{"id":1,"n":2,"topic":"orders"}`), ""},
		{"partition", map[string]string{"field": "p", "from": "partition"}, in, out(`{"id":1,"n":2,"p":2}`), ""},
		{"offset", map[string]string{"field": "o", "from": "offset"}, in, out(`{"id":1,"n":2,"o":41}`), ""},
		{"timestamp", map[string]string{"field": "ts", "from": "timestamp"}, in, out(`{"id":1,"n":2,"ts":1714564800123}`), ""},
		{"zero timestamp", map[string]string{"field": "ts", "from": "timestamp"}, with(in, func(r *connect.Record) { r.Timestamp = time.Time{} }),
			[]connect.Record{with(value(in, `{"id":1,"n":2,"ts":null}`), func(r *connect.Record) { r.Timestamp = time.Time{} })}, ""},
		{"JSON key", map[string]string{"field": "k", "from": "key"}, in, out(`{"id":1,"n":2,"k":{"id":7}}`), ""},
		{"schema key", map[string]string{"field": "k", "from": "key"}, with(in, func(r *connect.Record) { r.Key = []byte(`{"schema":{"type":"struct"},"payload":{"id":7}}`) }),
			[]connect.Record{with(value(in, `{"id":1,"n":2,"k":{"id":7}}`), func(r *connect.Record) { r.Key = []byte(`{"schema":{"type":"struct"},"payload":{"id":7}}`) })}, ""},
		{"raw key", map[string]string{"field": "k", "from": "key"}, with(in, func(r *connect.Record) { r.Key = []byte("42") }),
			[]connect.Record{with(value(in, `{"id":1,"n":2,"k":"42"}`), func(r *connect.Record) { r.Key = []byte("42") })}, ""},
		{"null key", map[string]string{"field": "k", "from": "key"}, with(in, func(r *connect.Record) { r.Key = nil }),
			[]connect.Record{with(value(in, `{"id":1,"n":2,"k":null}`), func(r *connect.Record) { r.Key = nil })}, ""},
		{"schema value: payload only", map[string]string{"field": "v", "value": "1"}, rec(`{"schema":{"type":"struct"},"payload":{"a":1}}`),
			[]connect.Record{rec(`{"a":1,"v":1}`)}, ""},
		{"tombstone passes", map[string]string{"field": "v", "value": "1"}, rec(""), []connect.Record{rec("")}, ""},
		{"not JSON", map[string]string{"field": "v", "value": "1"}, rec("hello"), nil, "insert_field: field v: the record value is not JSON"},
		{"through a string", map[string]string{"field": "id.x", "value": "1"}, in, nil, "field id.x: id is a number, not an object"},
	})
	runConfig(t, "insert_field", []configCase{
		{"no field", map[string]string{"value": "1"}, "field: required parameter is missing"},
		{"neither", map[string]string{"field": "a"}, "give value"},
		{"both", map[string]string{"field": "a", "value": "1", "from": "topic"}, "not both"},
		{"bad from", map[string]string{"field": "a", "from": "headers"}, `"headers" is not one of`},
	})
}

func TestRenameFields_Apply(t *testing.T) {
	in := rec(`{"id":1,"mail":"a@b","after":{"mail":"x","name":"n"}}`)
	out := func(v string) []connect.Record { return []connect.Record{value(in, v)} }
	runApply(t, "rename_fields", []applyCase{
		{"in place", map[string]string{"renames": "mail:email"}, in, out(`{"id":1,"email":"a@b","after":{"mail":"x","name":"n"}}`), ""},
		{"nested", map[string]string{"renames": "after.mail:email"}, in, out(`{"id":1,"mail":"a@b","after":{"email":"x","name":"n"}}`), ""},
		{"several, in order", map[string]string{"renames": "id:key, key:pk"}, in, out(`{"pk":1,"mail":"a@b","after":{"mail":"x","name":"n"}}`), ""},
		{"missing skipped", map[string]string{"renames": "nope:x,after.nope:y,id.x:z"}, in, out(`{"id":1,"mail":"a@b","after":{"mail":"x","name":"n"}}`), ""},
		{"existing target replaced", map[string]string{"renames": "mail:id"}, in, out(`{"id":"a@b","after":{"mail":"x","name":"n"}}`), ""},
		{"same name", map[string]string{"renames": "mail:mail"}, in, out(`{"id":1,"mail":"a@b","after":{"mail":"x","name":"n"}}`), ""},
		{"tombstone passes", map[string]string{"renames": "a:b"}, rec(""), []connect.Record{rec("")}, ""},
		{"not JSON", map[string]string{"renames": "a:b"}, rec("\x00\x01"), nil, "rename_fields: field a: the record value is not JSON"},
	})
	runConfig(t, "rename_fields", []configCase{
		{"missing", nil, "renames: required parameter is missing"},
		{"no colon", map[string]string{"renames": "a"}, `"a" is not an old:new pair`},
		{"empty side", map[string]string{"renames": "a:"}, "is not an old:new pair"},
		{"two colons", map[string]string{"renames": "a:b:c"}, "is not an old:new pair"},
		{"dotted new", map[string]string{"renames": "after.a:after.b"}, "has a dot"},
		{"bad path", map[string]string{"renames": "a..b:c"}, "empty part"},
		{"empty list", map[string]string{"renames": " , "}, "at least one"},
	})
}

func TestDropFields_Apply(t *testing.T) {
	in := rec(`{"id":1,"email":"a@b","after":{"id":1,"ssn":"x","addr":{"zip":"1","city":"c"}},"before":null,"n":5}`)
	out := func(v string) []connect.Record { return []connect.Record{value(in, v)} }
	runApply(t, "drop_fields", []applyCase{
		{"top level", map[string]string{"fields": "email,n"}, in, out(`{"id":1,"after":{"id":1,"ssn":"x","addr":{"zip":"1","city":"c"}},"before":null}`), ""},
		{"nested", map[string]string{"fields": "after.ssn,after.addr.zip"}, in, out(`{"id":1,"email":"a@b","after":{"id":1,"addr":{"city":"c"}},"before":null,"n":5}`), ""},
		{"missing skipped", map[string]string{"fields": "nope,before.x,id.y"}, in, out(`{"id":1,"email":"a@b","after":{"id":1,"ssn":"x","addr":{"zip":"1","city":"c"}},"before":null,"n":5}`), ""},
		{"keep, value order", map[string]string{"keep": "n,id"}, in, out(`{"id":1,"n":5}`), ""},
		{"keep nested", map[string]string{"keep": "after.addr.city,after.id,before.id"}, in, out(`{"after":{"id":1,"addr":{"city":"c"}},"before":null}`), ""},
		{"keep below a scalar drops it", map[string]string{"keep": "email.x"}, in, out(`{}`), ""},
		{"keep whole and part", map[string]string{"keep": "after,after.id"}, in, out(`{"after":{"id":1,"ssn":"x","addr":{"zip":"1","city":"c"}}}`), ""},
		{"tombstone passes", map[string]string{"fields": "a"}, rec(""), []connect.Record{rec("")}, ""},
		{"not an object", map[string]string{"keep": "a"}, rec(`"text"`), nil, "drop_fields: field a: the record value is a string"},
	})
	runConfig(t, "drop_fields", []configCase{
		{"neither", nil, "give fields"},
		{"both", map[string]string{"fields": "a", "keep": "b"}, "not both"},
		{"bad path", map[string]string{"fields": "a."}, "empty part"},
	})
}

func TestMaskFields_Apply(t *testing.T) {
	in := rec(`{"id":1,"email":"a@example.com","phone":null,"card":{"number":4111,"exp":"12/30"},"tags":["x"]}`)
	out := func(v string) []connect.Record { return []connect.Record{value(in, v)} }
	sum := func(s string) string { return fmt.Sprintf("%x", sha256.Sum256([]byte(s))) }
	mac := hmac.New(sha256.New, []byte("s3cret"))
	mac.Write([]byte("a@example.com"))
	keyed := hex.EncodeToString(mac.Sum(nil))
	runApply(t, "mask_fields", []applyCase{
		{"default replacement", map[string]string{"fields": "email,phone,card.number,tags,nope"}, in,
			out(`{"id":1,"email":"****","phone":null,"card":{"number":"****","exp":"12/30"},"tags":"****"}`), ""},
		{"own replacement", map[string]string{"fields": "email", "replacement": "[redacted]"}, in,
			out(`{"id":1,"email":"[redacted]","phone":null,"card":{"number":4111,"exp":"12/30"},"tags":["x"]}`), ""},
		{"sha256", map[string]string{"fields": "email,card.number,tags", "hash": "sha256"}, in,
			out(`{"id":1,"email":"` + sum("a@example.com") + `","phone":null,"card":{"number":"` + sum("4111") + `","exp":"12/30"},"tags":"` + sum(`["x"]`) + `"}`), ""},
		{"hmac", map[string]string{"fields": "email", "hash": "sha256", "hash.key": "s3cret"}, in,
			out(`{"id":1,"email":"` + keyed + `","phone":null,"card":{"number":4111,"exp":"12/30"},"tags":["x"]}`), ""},
		{"debezium envelope", map[string]string{"fields": "before.email,after.email"}, rec(`{"before":null,"after":{"email":"x"},"op":"c"}`),
			[]connect.Record{rec(`{"before":null,"after":{"email":"****"},"op":"c"}`)}, ""},
		{"tombstone passes", map[string]string{"fields": "email"}, rec(""), []connect.Record{rec("")}, ""},
		{"not JSON", map[string]string{"fields": "email"}, rec("email=a@b"), nil, "mask_fields: field email: the record value is not JSON"},
	})
	runConfig(t, "mask_fields", []configCase{
		{"no fields", nil, "fields: required parameter is missing"},
		{"bad hash", map[string]string{"fields": "a", "hash": "md5"}, `"md5" is not one of: sha256`},
		{"key without hash", map[string]string{"fields": "a", "hash.key": "k"}, "hash.key needs hash"},
	})
	// The hash key is secret: masked in configs shown to people.
	spec, _ := Builtin().Spec("mask_fields")
	if got := spec.Mask(map[string]string{"hash.key": "s3cret"})["hash.key"]; got != connect.Masked {
		t.Errorf("hash.key shows as %q", got)
	}
}

func TestKeyFromFields_Apply(t *testing.T) {
	in := rec(`{"user":{"id":"u-1"},"tenant":3,"ok":true,"n":null}`)
	key := func(k string) []connect.Record {
		return []connect.Record{with(in, func(r *connect.Record) {
			r.Key = nil
			if k != "" {
				r.Key = []byte(k)
			}
		})}
	}
	runApply(t, "key_from_fields", []applyCase{
		{"object in order", map[string]string{"fields": "tenant,user.id"}, in, key(`{"tenant":3,"id":"u-1"}`), ""},
		{"missing is null", map[string]string{"fields": "tenant,nope"}, in, key(`{"tenant":3,"nope":null}`), ""},
		{"raw string", map[string]string{"fields": "user.id", "raw": "true"}, in, key(`u-1`), ""},
		{"raw number", map[string]string{"fields": "tenant", "raw": "true"}, in, key(`3`), ""},
		{"raw boolean", map[string]string{"fields": "ok", "raw": "true"}, in, key(`true`), ""},
		{"raw object", map[string]string{"fields": "user", "raw": "true"}, in, key(`{"id":"u-1"}`), ""},
		{"raw null", map[string]string{"fields": "n", "raw": "true"}, in, key(""), ""},
		{"raw missing", map[string]string{"fields": "nope", "raw": "true"}, in, key(""), ""},
		{"value untouched with schema", map[string]string{"fields": "a"}, rec(`{"schema":{"type":"struct"},"payload":{"a":1}}`),
			[]connect.Record{with(rec(`{"schema":{"type":"struct"},"payload":{"a":1}}`), func(r *connect.Record) { r.Key = []byte(`{"a":1}`) })}, ""},
		{"tombstone keeps its key", map[string]string{"fields": "a"}, rec(""), []connect.Record{rec("")}, ""},
		{"not JSON", map[string]string{"fields": "a"}, rec("a=1"), nil, "key_from_fields: field a: the record value is not JSON"},
	})
	runConfig(t, "key_from_fields", []configCase{
		{"no fields", nil, "fields: required parameter is missing"},
		{"raw with two", map[string]string{"fields": "a,b", "raw": "true"}, "raw needs exactly one field"},
		{"same last name", map[string]string{"fields": "a.id,b.id"}, `would both be "id"`},
	})
}

// rename_fields renames a column of the row state (after.x of a change
// event, x of an unwrapped row) in the unavailable-columns header too; a
// field the rename replaces leaves the header, other renames and records
// without the header are left as they are.
func TestRenameFields_UnavailableColumnsHeader(t *testing.T) {
	listing := func(v string, cols ...string) connect.Record {
		r := rec(v)
		if cols != nil {
			r.Headers = append(r.Headers, connect.UnavailableColumns(cols))
		}
		return r
	}
	env := `{"before":null,"after":{"id":1,"mail":null,"vec":null},"op":"u"}`
	row := `{"id":1,"mail":null,"email":"x","vec":null}`
	runApply(t, "rename_fields", []applyCase{
		{"after of an event", map[string]string{"renames": "after.vec:embedding"}, listing(env, "vec", "mail"),
			[]connect.Record{listing(`{"before":null,"after":{"id":1,"mail":null,"embedding":null},"op":"u"}`, "embedding", "mail")}, ""},
		{"unwrapped row", map[string]string{"renames": "vec:embedding"}, listing(row, "vec"),
			[]connect.Record{listing(`{"id":1,"mail":null,"email":"x","embedding":null}`, "embedding")}, ""},
		{"replaced field leaves", map[string]string{"renames": "id:email"}, listing(row, "email", "vec"),
			[]connect.Record{listing(`{"email":1,"mail":null,"vec":null}`, "vec")}, ""},
		{"root of an event is no column", map[string]string{"renames": "op:vec"}, listing(env, "vec"),
			[]connect.Record{listing(`{"before":null,"after":{"id":1,"mail":null,"vec":null},"vec":"u"}`, "vec")}, ""},
		{"unlisted", map[string]string{"renames": "id:key"}, listing(row, "vec"),
			[]connect.Record{listing(`{"key":1,"mail":null,"email":"x","vec":null}`, "vec")}, ""},
		{"no header", map[string]string{"renames": "vec:embedding"}, listing(row),
			[]connect.Record{listing(`{"id":1,"mail":null,"email":"x","embedding":null}`)}, ""},
	})
}

// The header survives the chain a CDC pipeline runs before an Iceberg
// sink: unwrap, route, rename_fields (which renames it along), and
// drop_fields.
func TestUnavailableColumnsHeader_Chain(t *testing.T) {
	in := rec(`{"before":null,"after":{"id":1,"t":"b","vec":null,"amount":null},"source":{"schema":"public","table":"emb"},"op":"u","ts_ms":1}`)
	in.Headers = append(in.Headers, connect.UnavailableColumns([]string{"vec", "amount"}))
	recs := []connect.Record{in}
	for _, step := range []struct {
		typ string
		cfg map[string]string
	}{
		{"unwrap", map[string]string{"add.fields": "op"}},
		{"route", map[string]string{"regex": "(.*)", "replacement": "lake.$1"}},
		{"rename_fields", map[string]string{"renames": "vec:embedding"}},
		{"drop_fields", map[string]string{"fields": "t"}},
	} {
		got, err := mustNew(t, step.typ, step.cfg).Apply(recs[0])
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v, %d records", step.typ, err, len(got))
		}
		recs = got
	}
	out := recs[0]
	if h, _ := out.Header(connect.UnavailableColumnsHeader); string(h) != `["embedding","amount"]` {
		t.Errorf("header after the chain = %s, want [\"embedding\",\"amount\"]", h)
	}
	if out.Topic != "lake.orders" || string(out.Value) != `{"id":1,"embedding":null,"amount":null,"__op":"u"}` {
		t.Errorf("record after the chain: %s %s", out.Topic, out.Value)
	}
}

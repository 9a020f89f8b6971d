package transform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// event returns the record Debezium writes for testdata/<name>: the value
// file, and the key file when there is one (as it is, pretty-printed: the
// transform must not care).
func event(t *testing.T, name string) connect.Record {
	t.Helper()
	v, err := os.ReadFile(filepath.Join("testdata", name+".value.json"))
	if err != nil {
		t.Fatal(err)
	}
	r := connect.Record{Topic: "dbserver1.public.customers", Partition: 1, Offset: 9, Value: v}
	if k, err := os.ReadFile(filepath.Join("testdata", name+".key.json")); err == nil {
		r.Key = k
	}
	return r
}

// compactEvent is event with the value compacted, for events written
// inline in expectations.
func compactEvent(t *testing.T, name string) connect.Record {
	r := event(t, name)
	var b bytes.Buffer
	if err := json.Compact(&b, r.Value); err != nil {
		t.Fatal(err)
	}
	r.Value = b.Bytes()
	return r
}

// Row states of the testdata events, compact.
const (
	createdRow = `{"id":1001,"first_name":"Sally","email":"sally.thomas@acme.com","balance":"BNI=","score":4.5,"active":true,"created_at":1714000000000123,"updated_at":"2024-04-24T23:06:40.000123Z","profile":"{\"tier\":\"gold\",\"note\":\"<b>&</b>\"}","tags":["vip","é",null]}`
	updatedRow = `{"id":1001,"first_name":"Sally","email":"sally@example.org","score":1.0E10}`
	deletedRow = `{"id":1001,"first_name":"Sally","email":"sally@example.org","score":0.001}`
	mysqlRow   = `{"id":1004,"first_name":"Anne","last_name":"Kretchmar","email":"annek@noanswer.org","rating":1.0E-4,"created":1714000500250,"plan":"pro"}`
)

func TestUnwrap_Apply(t *testing.T) {
	create := event(t, "postgres_create") // schemas embedded
	update := event(t, "postgres_update") // no schemas
	del := event(t, "postgres_delete")
	tomb := connect.Tombstone(del)
	truncate := event(t, "postgres_truncate")
	message := event(t, "postgres_message")
	mysql := event(t, "mysql_create")
	one := func(r connect.Record, v string) []connect.Record { return []connect.Record{value(r, v)} }
	same := func(r connect.Record) []connect.Record { return []connect.Record{r} }
	var none []connect.Record
	mode := func(m string) map[string]string { return map[string]string{"delete.tombstone.handling.mode": m} }
	snapshot := compactEvent(t, "postgres_update")
	snapshot.Value = bytes.Replace(snapshot.Value, []byte(`"before":{"id":1001,"first_name":"Sally","email":"sally.thomas@acme.com","score":4.5}`), []byte(`"before":null`), 1)
	snapshot.Value = bytes.Replace(snapshot.Value, []byte(`"op":"u"`), []byte(`"op":"r"`), 1)
	snapshot.Value = bytes.Replace(snapshot.Value, []byte(`"snapshot":"false"`), []byte(`"snapshot":"true"`), 1)

	runApply(t, "unwrap", []applyCase{
		// Defaults: delete.tombstone.handling.mode=tombstone.
		{"create with schema", nil, create, one(create, createdRow), ""},
		{"mysql create with schema", nil, mysql, one(mysql, mysqlRow), ""},
		{"update", nil, update, one(update, updatedRow), ""},
		{"snapshot read", nil, snapshot, one(snapshot, updatedRow), ""},
		{"delete becomes a tombstone", nil, del, one(del, ""), ""},
		{"tombstone dropped", nil, tomb, none, ""},
		{"truncate dropped", nil, truncate, none, ""},
		{"message passes", nil, message, same(message), ""},

		{"drop: create", mode("drop"), update, one(update, updatedRow), ""},
		{"drop: delete", mode("drop"), del, none, ""},
		{"drop: tombstone", mode("drop"), tomb, none, ""},
		{"drop: truncate", mode("drop"), truncate, none, ""},

		{"rewrite: create", mode("rewrite"), create, one(create, createdRow[:len(createdRow)-1]+`,"__deleted":"false"}`), ""},
		{"rewrite: update", mode("rewrite"), update, one(update, updatedRow[:len(updatedRow)-1]+`,"__deleted":"false"}`), ""},
		{"rewrite: delete", mode("rewrite"), del, one(del, deletedRow[:len(deletedRow)-1]+`,"__deleted":"true"}`), ""},
		{"rewrite: tombstone dropped", mode("rewrite"), tomb, none, ""},
		{"rewrite: truncate dropped", mode("rewrite"), truncate, none, ""},

		{"rewrite-with-tombstone: delete", mode("rewrite-with-tombstone"), del, one(del, deletedRow[:len(deletedRow)-1]+`,"__deleted":"true"}`), ""},
		{"rewrite-with-tombstone: tombstone kept", mode("rewrite-with-tombstone"), tomb, same(tomb), ""},
		{"rewrite-with-tombstone: create", mode("rewrite-with-tombstone"), update, one(update, updatedRow[:len(updatedRow)-1]+`,"__deleted":"false"}`), ""},

		{"add.fields", map[string]string{"add.fields": "op,table,lsn,source.ts_ms"}, update,
			one(update, updatedRow[:len(updatedRow)-1]+`,"__op":"u","__table":"customers","__lsn":24023200,"__source_ts_ms":1714000100000}`), ""},
		{"add.fields with schema", map[string]string{"add.fields": "op,db"}, create,
			one(create, createdRow[:len(createdRow)-1]+`,"__op":"c","__db":"inventory"}`), ""},
		{"add.fields, envelope and transaction", map[string]string{"add.fields": "ts_ms,ts_us,id,total_order,transaction.id"}, create,
			one(create, createdRow[:len(createdRow)-1]+`,"__ts_ms":1714000000142,"__ts_us":1714000000142345,"__id":"555:24023128","__total_order":1,"__transaction_id":"555:24023128"}`), ""},
		{"add.fields, null transaction", map[string]string{"add.fields": "id"}, update,
			one(update, updatedRow[:len(updatedRow)-1]+`,"__id":null}`), ""},
		{"add.fields, missing skipped", map[string]string{"add.fields": "gtid,source.nope,op"}, update,
			one(update, updatedRow[:len(updatedRow)-1]+`,"__op":"u"}`), ""},
		{"add.fields, mysql", map[string]string{"add.fields": "file,pos,gtid"}, mysql,
			one(mysql, mysqlRow[:len(mysqlRow)-1]+`,"__file":"mysql-bin.000003","__pos":154,"__gtid":"3e11fa47-71ca-11e1-9e33-c80aa9429562:23"}`), ""},
		{"add.fields, alias and prefix", map[string]string{"add.fields": "source.ts_ms:event_ms,op:operation", "add.fields.prefix": "_"}, update,
			one(update, updatedRow[:len(updatedRow)-1]+`,"_event_ms":1714000100000,"_operation":"u"}`), ""},
		{"add.fields with rewrite delete", map[string]string{"add.fields": "op,lsn", "delete.tombstone.handling.mode": "rewrite"}, del,
			one(del, deletedRow[:len(deletedRow)-1]+`,"__deleted":"true","__op":"d","__lsn":24023304}`), ""},
		{"add.fields on a tombstone delete", map[string]string{"add.fields": "op"}, del, one(del, ""), ""},

		{"add.headers", map[string]string{"add.headers": "op,lsn,source.ts_ms,transaction,xmin"}, update,
			[]connect.Record{with(value(update, updatedRow), func(r *connect.Record) {
				r.Headers = []connect.Header{{Key: "__op", Value: []byte("u")}, {Key: "__lsn", Value: []byte("24023200")}, {Key: "__source_ts_ms", Value: []byte("1714000100000")}, {Key: "__transaction", Value: nil}, {Key: "__xmin", Value: nil}}
			})}, ""},
		{"add.headers on a delete", map[string]string{"add.headers": "op", "add.headers.prefix": "dbz."}, del,
			[]connect.Record{with(value(del, ""), func(r *connect.Record) { r.Headers = []connect.Header{{Key: "dbz.op", Value: []byte("d")}} })}, ""},
		{"add.headers on a kept tombstone", map[string]string{"add.headers": "op,lsn", "delete.tombstone.handling.mode": "rewrite-with-tombstone"}, tomb,
			[]connect.Record{with(tomb, func(r *connect.Record) { r.Headers = []connect.Header{{Key: "__op", Value: []byte("d")}} })}, ""},

		{"route.by.field", map[string]string{"route.by.field": "first_name"}, update,
			[]connect.Record{with(value(update, updatedRow), func(r *connect.Record) { r.Topic = "Sally" })}, ""},
		{"route.by.field on a delete", map[string]string{"route.by.field": "email"}, del,
			[]connect.Record{with(value(del, ""), func(r *connect.Record) { r.Topic = "sally@example.org" })}, ""},
		{"route.by.field, not a string", map[string]string{"route.by.field": "id"}, update, one(update, updatedRow), ""},

		{"heartbeat passes", nil, rec(`{"ts_ms":1714000000000}`), same(rec(`{"ts_ms":1714000000000}`)), ""},
		{"transaction boundary passes", nil, rec(`{"status":"BEGIN","id":"571:53195829","event_count":null,"data_collections":null,"ts_ms":1}`),
			same(rec(`{"status":"BEGIN","id":"571:53195829","event_count":null,"data_collections":null,"ts_ms":1}`)), ""},
		{"not JSON passes", nil, rec(`hello`), same(rec(`hello`)), ""},
		{"unknown op passes", nil, rec(`{"op":"x","after":{}}`), same(rec(`{"op":"x","after":{}}`)), ""},
		{"op without state passes", nil, rec(`{"op":"c","value":1}`), same(rec(`{"op":"c","value":1}`)), ""},
		{"not an envelope schema passes", nil, rec(`{"schema":{"type":"struct","name":"io.debezium.connector.postgresql.MessageValue"},"payload":{"op":"c","after":{"a":1}}}`),
			same(rec(`{"schema":{"type":"struct","name":"io.debezium.connector.postgresql.MessageValue"},"payload":{"op":"c","after":{"a":1}}}`)), ""},
		{"schemaless envelope, payload null", nil, rec(`{"schema":null,"payload":{"before":null,"after":{"a":1},"op":"c"}}`), one(rec(""), `{"a":1}`), ""},
		{"null payload is a tombstone", nil, rec(`{"schema":{"type":"struct","name":"x.Envelope"},"payload":null}`), none, ""},
		{"JSON null is a tombstone", nil, rec(`null`), none, ""},
		{"null payload kept", mode("rewrite-with-tombstone"), rec(`{"schema":null,"payload":null}`), same(rec(`{"schema":null,"payload":null}`)), ""},
		{"after not an object", nil, rec(`{"before":null,"after":"x","op":"c"}`), nil, `unwrap: field after: the change event's after is a string`},
		{"before not an object", map[string]string{"delete.tombstone.handling.mode": "rewrite"}, rec(`{"before":[1],"after":null,"op":"d"}`), nil, `field before: the change event's before is an array`},
	})
}

func TestUnwrap_Config(t *testing.T) {
	runConfig(t, "unwrap", []configCase{
		{"bad mode", map[string]string{"delete.tombstone.handling.mode": "none"}, `"none" is not one of: tombstone, drop, rewrite, rewrite-with-tombstone`},
		{"bad field", map[string]string{"add.fields": "source.a.b"}, `"source.a.b" is not a field`},
		{"empty struct", map[string]string{"add.fields": ".ts_ms"}, "is not a field"},
		{"empty alias", map[string]string{"add.headers": "op:"}, "is not a field"},
		{"unknown option", map[string]string{"drop.tombstones": "false"}, `drop.tombstones: unknown parameter`},
	})
	spec, _ := Builtin().Spec("unwrap")
	if p, _ := spec.Param("delete.tombstone.handling.mode"); p.Default != "tombstone" {
		t.Errorf("default mode %q, want Debezium's: tombstone", p.Default)
	}
}

// A chain of unwrap and key_from_fields works on events written by
// connect's codec, with and without schemas.
func TestUnwrap_CodecEvents(t *testing.T) {
	for _, schemas := range []bool{false, true} {
		codec := connect.DebeziumJSON{Schemas: schemas}
		ev := &connect.ChangeEvent{
			Op:     connect.OpUpdate,
			Key:    connect.Row{{Name: "id", Value: int64(3)}},
			Before: connect.Row{{Name: "id", Value: int64(3)}, {Name: "qty", Value: int64(1)}},
			After:  connect.Row{{Name: "id", Value: int64(3)}, {Name: "qty", Value: int64(2)}},
			Source: connect.SourceInfo{Version: "0.1.0", Connector: connect.ConnectorPostgres, Name: "pg", DB: "shop", TsMs: 1714000000000,
				Extra: connect.Row{{Name: "schema", Value: "public"}, {Name: "table", Value: "items"}, {Name: "txId", Value: int64(9)}, {Name: "lsn", Value: int64(100)}}},
			TsMs: 1714000000001,
		}
		r, err := codec.Record("pg.public.items", ev)
		if err != nil {
			t.Fatal(err)
		}
		chain := Chain{
			mustNew(t, "unwrap", map[string]string{"add.fields": "op,table"}),
			mustNew(t, "key_from_fields", map[string]string{"fields": "id", "raw": "true"}),
		}
		got, err := chain.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		want := []connect.Record{{Topic: "pg.public.items", Key: []byte("3"), Value: []byte(`{"id":3,"qty":2,"__op":"u","__table":"items"}`)}}
		if !equalRecords(got, want) {
			t.Errorf("schemas=%v:\n got  %s\n want %s", schemas, show(got), show(want))
		}

		ev.Op, ev.After = connect.OpDelete, nil
		if r, err = codec.Record("pg.public.items", ev); err != nil {
			t.Fatal(err)
		}
		got, err = chain.Apply(r)
		if err != nil {
			t.Fatal(err)
		}
		// The delete became a tombstone, which key_from_fields leaves alone.
		want = []connect.Record{{Topic: "pg.public.items", Key: r.Key}}
		if !equalRecords(got, want) {
			t.Errorf("schemas=%v delete:\n got  %s\n want %s", schemas, show(got), show(want))
		}
	}
}

// The unwrap example of docs/transforms.md.
func TestUnwrap_DocsExample(t *testing.T) {
	tr := mustNew(t, "unwrap", map[string]string{"delete.tombstone.handling.mode": "rewrite", "add.fields": "op,table,lsn,source.ts_ms"})
	del := event(t, "postgres_delete")
	got, err := tr.Apply(del)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":1001,"first_name":"Sally","email":"sally@example.org","score":0.001,"__deleted":"true","__op":"d","__table":"customers","__lsn":24023304,"__source_ts_ms":1714000200000}`
	if len(got) != 1 || string(got[0].Value) != want {
		t.Errorf("got %s, want %s", show(got), want)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "transforms.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(want)) {
		t.Error("docs/transforms.md does not show this output")
	}
	if got, _ := tr.Apply(connect.Tombstone(del)); len(got) != 0 {
		t.Errorf("tombstone: %s", show(got))
	}
}

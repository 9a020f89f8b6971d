package mysql

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// streamThenSnapshot streams the rows the inserts write into table t of
// d, then snapshots the table, both with values; it returns the records
// of both.
func streamThenSnapshot(t *testing.T, d *testDB, values map[string]string, inserts ...string) (streamed, snap []connect.Record) {
	t.Helper()
	v := map[string]string{"snapshot.mode": "never"}
	for k, x := range values {
		v[k] = x
	}
	s := openSource(t, d, v, nil)
	for _, q := range inserts {
		d.exec(t, q)
	}
	streamed = readRecords(t, s, len(inserts), 30*time.Second)
	s.Close(context.Background())
	v["snapshot.mode"] = "initial_only"
	s2 := openSource(t, d, v, nil)
	snap = readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	})
	s2.Close(context.Background())
	return streamed, snap
}

func TestTypes_DecimalHandlingModes(t *testing.T) {
	inserts := []string{
		"INSERT INTO t VALUES (1, -1234567.891, 18446744073709551615)",
		"INSERT INTO t VALUES (2, 0.5, 0)",
		"INSERT INTO t VALUES (3, 12.34, 1234)",
	}
	cases := []struct {
		mode string
		want []string
	}{
		{"string", []string{
			`{"id":1,"dc":"-1234567.891","u":"18446744073709551615"}`,
			`{"id":2,"dc":"0.500","u":"0"}`,
			`{"id":3,"dc":"12.340","u":"1234"}`,
		}},
		// Kafka Connect's Decimal: base64 of the unscaled value, big-endian
		// two's complement (Java's BigInteger.toByteArray): -1234567891,
		// 2^64-1 (with a leading zero byte), 500, 0, 12340, 1234.
		{"precise", []string{
			`{"id":1,"dc":"tmn9LQ==","u":"AP//////////"}`,
			`{"id":2,"dc":"AfQ=","u":"AA=="}`,
			`{"id":3,"dc":"MDQ=","u":"BNI="}`,
		}},
		// Doubles as Kafka Connect's JsonConverter (Jackson) writes them.
		{"double", []string{
			`{"id":1,"dc":-1234567.891,"u":1.8446744073709552E19}`,
			`{"id":2,"dc":0.5,"u":0.0}`,
			`{"id":3,"dc":12.34,"u":1234.0}`,
		}},
	}
	for _, c := range cases {
		t.Run(c.mode, func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, dc decimal(10,3), u bigint unsigned)")
			streamed, snap := streamThenSnapshot(t, d, map[string]string{"decimal.handling.mode": c.mode}, inserts...)
			for name, recs := range map[string][]connect.Record{"streamed": streamed, "snapshot": snap} {
				got := afters(t, recs)
				if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
					t.Errorf("%s:\n%s\nwant:\n%s", name, strings.Join(got, "\n"), strings.Join(c.want, "\n"))
				}
			}
		})
	}
}

// TestTypes_SchemasEmbedded checks the Kafka Connect schemas of keys and
// values (schemas=true), streamed and snapshotted alike: Debezium's names
// for the envelope, the key and the logical types.
func TestTypes_SchemasEmbedded(t *testing.T) {
	d := newDB(t, `CREATE TABLE t (id int PRIMARY KEY, dc decimal(5,2), u bigint unsigned NOT NULL, e enum('a','b'),
		ts timestamp(3) NULL, dt datetime(6), d date, b bit(12), j json, g point)`)
	streamed, snap := streamThenSnapshot(t, d, map[string]string{"decimal.handling.mode": "precise", "schemas": "true", "topic.prefix": "pre"},
		"INSERT INTO t VALUES (1, 1.5, 7, 'b', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.123456', '2024-01-02', b'101', '[1]', ST_GeomFromText('POINT(1 2)'))")
	topic := "pre." + d.name + ".t"
	want := map[string]string{
		"id": `{"type":"int32","optional":false,"field":"id"}`,
		"dc": `{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"5"},"field":"dc"}`,
		"u":  `{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"0","connect.decimal.precision":"20"},"field":"u"}`,
		"e":  `{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"a,b"},"field":"e"}`,
		"ts": `{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"ts"}`,
		"dt": `{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"field":"dt"}`,
		"d":  `{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"field":"d"}`,
		"b":  `{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"12"},"field":"b"}`,
		"j":  `{"type":"string","optional":true,"field":"j"}`, // MariaDB's JSON is LONGTEXT
		"g":  `{"type":"struct","fields":[{"type":"bytes","optional":false,"field":"wkb"},{"type":"int32","optional":true,"field":"srid"}],"optional":true,"name":"io.debezium.data.geometry.Geometry","doc":"Geometry","field":"g"}`,
	}
	var afterSchemas []string
	for name, recs := range map[string][]connect.Record{"streamed": streamed, "snapshot": snap} {
		if len(recs) != 1 {
			t.Fatalf("%s: %d records:\n%s", name, len(recs), dump(recs))
		}
		r := recs[0]
		if r.Topic != topic {
			t.Errorf("%s: topic %s", name, r.Topic)
		}
		var key struct {
			Schema  json.RawMessage `json:"schema"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(r.Key, &key); err != nil {
			t.Fatalf("%s: key %s: %v", name, r.Key, err)
		}
		if got, w := string(key.Schema), `{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"`+topic+`.Key"}`; got != w {
			t.Errorf("%s: key schema\n got %s\nwant %s", name, got, w)
		}
		if string(key.Payload) != `{"id":1}` {
			t.Errorf("%s: key payload %s", name, key.Payload)
		}
		var value struct {
			Schema struct {
				Name   string `json:"name"`
				Fields []struct {
					Field  string            `json:"field"`
					Name   string            `json:"name"`
					Fields []json.RawMessage `json:"fields"`
				} `json:"fields"`
			} `json:"schema"`
			Payload struct {
				After map[string]any `json:"after"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(r.Value, &value); err != nil {
			t.Fatalf("%s: value %s: %v", name, r.Value, err)
		}
		if value.Schema.Name != topic+".Envelope" {
			t.Errorf("%s: envelope schema name %q", name, value.Schema.Name)
		}
		var fields []string
		for _, f := range value.Schema.Fields {
			fields = append(fields, f.Field)
			if f.Field != "after" {
				continue
			}
			if f.Name != topic+".Value" {
				t.Errorf("%s: after schema name %q", name, f.Name)
			}
			var all []string
			for _, col := range f.Fields {
				var c struct{ Field string }
				json.Unmarshal(col, &c)
				if w := want[c.Field]; string(col) != w {
					t.Errorf("%s: schema of %s\n got %s\nwant %s", name, c.Field, col, w)
				}
				all = append(all, string(col))
			}
			if len(all) != len(want) {
				t.Errorf("%s: %d columns in the after schema, want %d", name, len(all), len(want))
			}
			afterSchemas = append(afterSchemas, strings.Join(all, ","))
		}
		if got := strings.Join(fields, ","); !strings.HasPrefix(got, "before,after,source,op,ts_ms") {
			t.Errorf("%s: envelope fields %s", name, got)
		}
		if got := fmt.Sprint(value.Payload.After["dc"], " ", value.Payload.After["u"]); got != "AJY= Bw==" {
			t.Errorf("%s: dc, u = %s", name, got)
		}
	}
	if len(afterSchemas) == 2 && afterSchemas[0] != afterSchemas[1] {
		t.Errorf("streamed and snapshot schemas differ:\n%s\n%s", afterSchemas[0], afterSchemas[1])
	}
}

// TestSnapshot_TableWithoutPrimaryKey reads a table without a primary key
// in one pass, handed over in chunks: null keys, every row once, and a
// restart from a chunk's position reads the table again from the start.
func TestSnapshot_TableWithoutPrimaryKey(t *testing.T) {
	d := newDB(t, "CREATE TABLE nopk (a int, b varchar(10))", "CREATE TABLE withpk (id int PRIMARY KEY)")
	for i := range 25 {
		d.exec(t, fmt.Sprintf("INSERT INTO nopk VALUES (%d, 'r%d'), (%d, 'r%d')", i%5, i, i%5, i)) // duplicate rows, too
	}
	d.exec(t, "INSERT INTO withpk VALUES (1), (2)")
	s := openSource(t, d, map[string]string{"snapshot.chunk.size": "10", "snapshot.workers": "1"}, nil)
	done := func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	}
	recs := readUntil(t, s, 30*time.Second, done)
	rows := map[string]int{}
	for _, e := range decode(t, recs) {
		if !strings.HasSuffix(e.Rec.Topic, ".nopk") {
			continue
		}
		if e.Rec.Key != nil || e.Ev.Key != nil {
			t.Errorf("key %s for a table without a primary key", e.Rec.Key)
		}
		if e.Ev.Op != connect.OpRead {
			t.Errorf("op %s", e.Ev.Op)
		}
		rows[e.Ev.After.String()]++
	}
	if len(rows) != 25 {
		t.Errorf("%d distinct rows, want 25", len(rows))
	}
	for r, n := range rows {
		if n != 2 {
			t.Errorf("row %s read %d times, want 2", r, n)
		}
	}
	var chunkPos connect.Position
	for _, r := range recs {
		if r.Position != nil && strings.Contains(string(r.Position), `"snapshot"`) && strings.HasSuffix(r.Topic, ".nopk") {
			chunkPos = r.Position
			break
		}
	}
	if chunkPos == nil {
		t.Fatalf("no chunk of nopk carries the snapshot's progress:\n%s", dump(recs))
	}
	// Streamed changes of the table have null keys too, and deletes no
	// tombstone (there is no key to compact).
	d.exec(t, "INSERT INTO nopk VALUES (99, 'new')")
	d.exec(t, "DELETE FROM nopk WHERE a = 99")
	more := decode(t, readRecords(t, s, 2, 30*time.Second))
	if len(more) != 2 || more[0].Rec.Key != nil || more[0].Ev.Op != connect.OpCreate || more[1].Ev == nil || more[1].Ev.Op != connect.OpDelete {
		t.Errorf("streamed: %s", dump([]connect.Record{more[0].Rec, more[len(more)-1].Rec}))
	}
	expectQuiet(t, s, 300*time.Millisecond)
	s.Close(context.Background())

	// Resuming from a chunk's position reads the keyless table from the
	// start again (it cannot resume in the middle).
	s2 := openSource(t, d, map[string]string{"snapshot.chunk.size": "10", "snapshot.workers": "1"}, chunkPos)
	again := 0
	for _, e := range decode(t, readUntil(t, s2, 30*time.Second, done)) {
		if strings.HasSuffix(e.Rec.Topic, ".nopk") && e.Ev.Op == connect.OpRead {
			again++
		}
	}
	if again != 50 {
		t.Errorf("resumed snapshot read %d rows of nopk, want all 50", again)
	}
}

// TestTypes_Charsets writes text in columns of many charsets; streamed
// (the binlog carries the column charset's bytes) and snapshotted (the
// server converts to utf8mb4) it is the same UTF-8.
func TestTypes_Charsets(t *testing.T) {
	cols := []struct{ charset, text string }{
		{"latin2", "Zażółć gęślą"},
		{"cp1250", "Příliš žluťoučký"},
		{"cp1251", "Привет, мир"},
		{"koi8r", "Съешь же ещё"},
		{"greek", "Καλημέρα"},
		{"hebrew", "שלום"},
		{"latin5", "Iğdır"},
		{"sjis", "日本語テキスト"},
		{"cp932", "ｶﾀｶﾅ①"},
		{"ujis", "漢字かな"},
		{"gbk", "中文字符"},
		{"gb2312", "简体中文"},
		{"big5", "繁體中文"},
		{"euckr", "한국어"},
		{"ucs2", "Ωmega ✓"},
		{"utf16", "😀 surrogate"},
		{"utf32", "𝄞 clef"},
	}
	var defs, names, vals []string
	var want strings.Builder
	want.WriteString(`{"id":1`)
	for i, c := range cols {
		name := fmt.Sprintf("c%d_%s", i, c.charset)
		defs = append(defs, fmt.Sprintf("%s varchar(40) CHARACTER SET %s", name, c.charset))
		names = append(names, name)
		vals = append(vals, "'"+c.text+"'")
		fmt.Fprintf(&want, `,%q:%q`, name, c.text)
	}
	want.WriteString("}")
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, "+strings.Join(defs, ", ")+")")
	streamed, snap := streamThenSnapshot(t, d, nil, "INSERT INTO t (id, "+strings.Join(names, ", ")+") VALUES (1, "+strings.Join(vals, ", ")+")")
	for name, recs := range map[string][]connect.Record{"streamed": streamed, "snapshot": snap} {
		got := afters(t, recs)
		if len(got) != 1 || got[0] != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", name, got, want.String())
		}
	}
}

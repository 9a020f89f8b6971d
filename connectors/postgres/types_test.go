package postgres

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestTypes_RoundTrip writes one row of every mapped type, reads it by
// snapshot and by streaming, and checks both against the documented
// mapping (docs/connectors/postgres.md).
func TestTypes_RoundTrip(t *testing.T) {
	db := newDB(t,
		"CREATE TYPE mood AS ENUM ('sad', 'happy')",
		"CREATE DOMAIN posint AS int CHECK (VALUE > 0)",
		`CREATE TABLE types (
			id int PRIMARY KEY,
			i2 smallint, i4 integer, i8 bigint, o oid,
			n numeric(10,2), nv numeric, m money,
			f4 real, f8 double precision, fnan double precision, finf real,
			b bool, t text, vc varchar(10), c char(3), by bytea, u uuid,
			j json, jb jsonb, x xml,
			d date, tm time, tm3 time(3), ttz timetz,
			ts timestamp, ts3 timestamp(3), tstz timestamptz, iv interval,
			ai int[], at text[], mo mood, dom posint, r int4range,
			pt point, ip inet, cidr cidr, mac macaddr, bits bit(4),
			dinf date, tsinf timestamp, tspinf timestamp, ts3inf timestamp(3))`,
		`INSERT INTO types VALUES (1,
			-32768, 2147483647, 9007199254740993, 4000000000,
			12.3, 3.14159265358979323846264338327950288, 1234.56,
			1.5, 0.1, 'NaN', '-Infinity',
			true, 'héllo "q"', 'v', 'ab', '\xdeadbeef', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
			'{"b": 1, "a": [1,2]}', '{"b": 1, "a": [1,2]}', '<a>1</a>',
			'2024-02-29', '12:34:56.789012', '12:34:56.789', '12:34:56+02',
			'2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.123', '2024-01-02 03:04:05.5+01', '1 year 2 mons 3 days 04:05:06.5',
			'{1,NULL,3}', '{"a b","c,d",NULL}', 'happy', 5, '[1,5)',
			'(1,2)', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', B'1010',
			'infinity', '-infinity', 'infinity', '-infinity')`,
	)
	day := func(y int, m time.Month, d int) int64 { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() / 86400 }
	want := `{"id":1,"i2":-32768,"i4":2147483647,"i8":9007199254740993,"o":4000000000,` +
		`"n":"12.30","nv":"3.14159265358979323846264338327950288","m":"1234.56",` +
		`"f4":1.5,"f8":0.1,"fnan":"NaN","finf":"-Infinity",` +
		`"b":true,"t":"héllo \"q\"","vc":"v","c":"ab ","by":"3q2+7w==","u":"a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",` +
		`"j":"{\"b\": 1, \"a\": [1,2]}","jb":"{\"a\": [1, 2], \"b\": 1}","x":"<a>1</a>",` +
		`"d":` + itoa(day(2024, 2, 29)) + `,"tm":45296789012,"tm3":45296789,"ttz":"10:34:56Z",` +
		`"ts":` + itoa(time.Date(2024, 1, 2, 3, 4, 5, 123456000, time.UTC).UnixMicro()) +
		`,"ts3":` + itoa(time.Date(2024, 1, 2, 3, 4, 5, 123000000, time.UTC).UnixMilli()) +
		`,"tstz":"2024-01-02T02:04:05.5Z","iv":` + itoa(usPerYear+2*usPerMonth+3*usPerDay+(4*3600+5*60+6)*1e6+500000) + `,` +
		`"ai":[1,null,3],"at":["a b","c,d",null],"mo":"happy","dom":5,"r":"[1,5)",` +
		`"pt":"(1,2)","ip":"192.168.0.1/24","cidr":"10.0.0.0/8","mac":"08:00:2b:01:02:03","bits":"1010",` +
		`"dinf":` + itoa(math.MaxInt32) + `,"tsinf":-9223372036832400000,"tspinf":9223372036825200000,"ts3inf":-9223372036832400}`

	s := openSource(t, db, map[string]string{"schemas": "true"}, nil)
	snap := decode(t, readRecords(t, s, 1, 30*time.Second))
	db.exec(t, "INSERT INTO types SELECT 2, i2, i4, i8, o, n, nv, m, f4, f8, fnan, finf, b, t, vc, c, by, u, j, jb, x, d, tm, tm3, ttz, ts, ts3, tstz, iv, ai, at, mo, dom, r, pt, ip, cidr, mac, bits, dinf, tsinf, tspinf, ts3inf FROM types WHERE id = 1")
	stream := decode(t, readRecords(t, s, 1, 30*time.Second))
	if got := snap[0].Ev.After.String(); got != want {
		t.Errorf("snapshot row:\n got %s\nwant %s", got, want)
	}
	if got := stream[0].Ev.After.String(); got != strings.Replace(want, `{"id":1,`, `{"id":2,`, 1) {
		t.Errorf("streamed row:\n got %s\nwant %s", got, want)
	}
	// The embedded schema names the logical types.
	es := stream[0].Ev.Schema
	for field, name := range map[string]string{"d": connect.LogicalDate, "tm": connect.LogicalMicroTime, "tm3": connect.LogicalTime,
		"ts": connect.LogicalMicroTimestamp, "ts3": connect.LogicalTimestamp, "tstz": connect.LogicalZonedTimestamp,
		"iv": connect.LogicalMicroDuration, "u": connect.LogicalUUID, "jb": connect.LogicalJSON, "mo": connect.LogicalEnum, "ttz": connect.LogicalZonedTime} {
		if fs, ok := es.Row.FieldSchema(field); !ok || fs.Name != name {
			t.Errorf("schema of %s: %+v, want name %s", field, fs, name)
		}
	}
	if fs, _ := es.Row.FieldSchema("mo"); fs != nil {
		if v, _ := fs.Param("allowed"); v != "sad,happy" {
			t.Errorf("enum allowed = %q", v)
		}
	}

	// Without schemas the snapshot writes records itself (rowreader.go):
	// the same values.
	plain := decode(t, readRecords(t, openSource(t, db, map[string]string{"snapshot.mode": "initial_only", "tables": "public.types"}, nil), 2, 30*time.Second))
	for i, e := range plain[:2] {
		w := want
		if i == 1 {
			w = strings.Replace(want, `{"id":1,`, `{"id":2,`, 1)
		}
		if got := e.Ev.After.String(); got != w {
			t.Errorf("snapshot row without schemas:\n got %s\nwant %s", got, w)
		}
	}

	// And the stream without schemas.
	ps := openSource(t, db, map[string]string{"snapshot.mode": "never", "tables": "public.types", "slot": "types_plain_stream"}, nil)
	db.exec(t, "INSERT INTO types SELECT 3, i2, i4, i8, o, n, nv, m, f4, f8, fnan, finf, b, t, vc, c, by, u, j, jb, x, d, tm, tm3, ttz, ts, ts3, tstz, iv, ai, at, mo, dom, r, pt, ip, cidr, mac, bits, dinf, tsinf, tspinf, ts3inf FROM types WHERE id = 1")
	if got, w := decode(t, readRecords(t, ps, 1, 30*time.Second))[0].Ev.After.String(), strings.Replace(want, `{"id":1,`, `{"id":3,`, 1); got != w {
		t.Errorf("streamed row without schemas:\n got %s\nwant %s", got, w)
	}
	ps.Close(t.Context())
	db.exec(t, "DELETE FROM types WHERE id = 3")

	// decimal.handling.mode precise and double.
	for mode, want := range map[string]string{
		"precise": `"n":"BM4=","nv":{"scale":35,"value":"`,
		"double":  `"n":12.3,"nv":3.141592653589793,"m":1234.56`,
	} {
		s := openSource(t, db, map[string]string{"snapshot.mode": "initial_only", "tables": "public.types", "decimal.handling.mode": mode}, nil)
		evs := decode(t, readRecords(t, s, 2, 30*time.Second))
		if got := evs[0].Ev.After.String(); !strings.Contains(got, want) {
			t.Errorf("decimal.handling.mode=%s: %s does not contain %s", mode, got, want)
		}
		if mode == "precise" && !strings.Contains(evs[0].Ev.After.String(), `"m":"AeJA"`) {
			t.Errorf("precise money: %s", evs[0].Ev.After)
		}
	}
}

func itoa(n int64) string { return jsonOf(n) }

func TestParseInterval(t *testing.T) {
	for in, want := range map[string]int64{
		"PT0S":                0,
		"P1Y2M3DT4H5M6.5S":    usPerYear + 2*usPerMonth + 3*usPerDay + 14706500000,
		"P-1DT2H":             -usPerDay + 7200e6,
		"PT-0.000001S":        -1,
		"P-1Y-2M3DT-4H-5M-6S": -usPerYear - 2*usPerMonth + 3*usPerDay - 14706e6,
	} {
		got, err := parseInterval(in)
		if err != nil || got != want {
			t.Errorf("parseInterval(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "1 day", "P1", "PT1Y", "P1X"} {
		if _, err := parseInterval(bad); err == nil {
			t.Errorf("parseInterval(%q): no error", bad)
		}
	}
}

func TestParseArray(t *testing.T) {
	for in, want := range map[string]string{
		`{}`:                         `[]`,
		`{1,2,NULL}`:                 `["1","2",null]`,
		`{"a b","c\"d","NULL",x\,y}`: `["a b","c\"d","NULL","x,y"]`,
		`{{1,2},{3,4}}`:              `[["1","2"],["3","4"]]`,
		`[0:1]={7,8}`:                `["7","8"]`,
	} {
		got, err := parseArray(in, ',')
		if err != nil || jsonOf(got) != want {
			t.Errorf("parseArray(%s) = %s, %v; want %s", in, jsonOf(got), err, want)
		}
	}
	for _, bad := range []string{`{`, `{1,2`, `{"a}`, `{1}x`, `1`} {
		if _, err := parseArray(bad, ','); err == nil {
			t.Errorf("parseArray(%s): no error", bad)
		}
	}
}

func TestDecimalBytes(t *testing.T) {
	for in, want := range map[string]string{"0": "00", "127": "7f", "128": "0080", "-1": "ff", "-128": "80", "-129": "ff7f", "1230": "04ce"} {
		n, _, _ := parseDecimal(in)
		if got := jsonOf(connect.DecimalBytes(n)); got != jsonOf(mustHex(want)) {
			t.Errorf("DecimalBytes(%s) = %s, want %s", in, got, want)
		}
		if back := connect.DecimalBig(mustHex(want)); back.Cmp(n) != 0 {
			t.Errorf("DecimalBig(%s) = %s, want %s", want, back, in)
		}
	}
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			if c >= 'a' {
				v |= byte(c-'a') + 10
			} else {
				v |= byte(c - '0')
			}
		}
		b[i] = v
	}
	return b
}

func FuzzParsers(f *testing.F) {
	for _, s := range []string{`{1,"a",NULL}`, "P1Y2M3DT4H5M6.5S", "2024-01-02 03:04:05.5+01", "12:34:56+02", "0044-03-15 BC"} {
		f.Add(s)
	}
	m := &mapper{decimals: decimalPrecise, placeholder: connect.UnavailableValue}
	f.Fuzz(func(t *testing.T, s string) {
		parseArray(s, ',')
		parseInterval(s)
		parseTimestampTZ(s)
		parseTimeTZ(s)
		parseDate(s)
		m.decode(&pgType{kind: kindNumeric}, -1, s)
		m.decode(&pgType{kind: kindBytea}, -1, s)
	})
}

// TestSchema_Nullability checks that the embedded schema describes NOT
// NULL columns (and those of a NOT NULL domain) as required and the others
// as optional, in the snapshot and in the stream, and again after ALTER
// TABLE … DROP/SET NOT NULL.
func TestSchema_Nullability(t *testing.T) {
	db := newDB(t,
		"CREATE DOMAIN code AS text NOT NULL",
		"CREATE TABLE orders (id int PRIMARY KEY, customer_id int NOT NULL, note text, amount numeric(10,2) NOT NULL, tags text[], c code)",
		"INSERT INTO orders VALUES (1, 10, 'x', 1.50, '{a}', 'k')",
	)
	// optional returns "field:optional" for every row field of e's schema.
	optional := func(e event) string {
		t.Helper()
		if e.Ev == nil || e.Ev.Schema == nil || e.Ev.Schema.Row == nil {
			t.Fatalf("no row schema in %s", e.Rec.Value)
		}
		var parts []string
		for _, f := range e.Ev.Schema.Row.Fields {
			parts = append(parts, f.Field+":"+strconv.FormatBool(f.Optional))
		}
		return strings.Join(parts, " ")
	}
	check := func(what string, e event, want string) {
		t.Helper()
		if got := optional(e); got != want {
			t.Errorf("%s: optional\n got %s\nwant %s", what, got, want)
		}
	}
	const declared = "id:false customer_id:false note:true amount:false tags:true c:false"

	s := openSource(t, db, map[string]string{"schemas": "true"}, nil)
	snap := readRecords(t, s, 1, 30*time.Second)
	check("snapshot", decode(t, snap)[0], declared)
	// The exact shape Debezium gives a NOT NULL int column, and the key.
	if v := string(snap[0].Value); !strings.Contains(v, `{"type":"int32","optional":false,"field":"customer_id"}`) ||
		!strings.Contains(v, `{"type":"string","optional":true,"field":"note"}`) {
		t.Errorf("snapshot value schema: %s", v)
	}
	if k := string(snap[0].Key); !strings.HasPrefix(k, `{"schema":{"type":"struct","fields":[{"type":"int32","optional":false,"field":"id"}],"optional":false,"name":"src.public.orders.Key"}`) {
		t.Errorf("snapshot key: %s", k)
	}

	// Streamed: the relation comes from pgoutput's Relation message.
	db.exec(t, "INSERT INTO orders VALUES (2, 20, NULL, 2.50, NULL, 'k')")
	check("streamed insert", decode(t, readRecords(t, s, 1, 30*time.Second))[0], declared)

	// A delete under REPLICA IDENTITY DEFAULT has only the key in its old
	// row: the NOT NULL columns it lacks are optional in that event, and
	// the event decodes against its own schema.
	db.exec(t, "DELETE FROM orders WHERE id = 2")
	recs := readRecords(t, s, 2, 30*time.Second)
	del := decode(t, recs)
	if len(del) != 2 || del[0].Ev == nil || del[0].Ev.Op != connect.OpDelete || del[1].Ev != nil {
		t.Fatalf("want a delete and a tombstone, got\n%s", dump(recs))
	}
	check("delete", del[0], "id:false customer_id:true note:true amount:true tags:true c:true")
	if got := del[0].Ev.Before.String(); got != `{"id":2,"customer_id":null,"note":null,"amount":null,"tags":null,"c":null}` {
		t.Errorf("delete before %s", got)
	}

	// DROP NOT NULL mid-stream: pgoutput describes the table again, and
	// the relation reads the nullability again.
	db.exec(t, "ALTER TABLE orders ALTER customer_id DROP NOT NULL")
	db.exec(t, "INSERT INTO orders VALUES (3, NULL, 'y', 3.50, NULL, 'k')")
	ins := decode(t, readRecords(t, s, 1, 30*time.Second))[0]
	check("after DROP NOT NULL", ins, "id:false customer_id:true note:true amount:false tags:true c:false")
	if got := ins.Ev.After.String(); got != `{"id":3,"customer_id":null,"note":"y","amount":"3.50","tags":null,"c":"k"}` {
		t.Errorf("after DROP NOT NULL: after %s", got)
	}

	// And SET NOT NULL.
	db.exec(t, "ALTER TABLE orders ALTER note SET NOT NULL")
	db.exec(t, "UPDATE orders SET amount = 4 WHERE id = 3")
	check("after SET NOT NULL", decode(t, readRecords(t, s, 1, 30*time.Second))[0], "id:false customer_id:true note:false amount:false tags:true c:false")

	// A snapshot taken now reads the same from the catalogue.
	now := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "slot": "nullability_again"}, nil)
	for _, e := range decode(t, readRecords(t, now, 2, 30*time.Second)) {
		check("second snapshot", e, "id:false customer_id:true note:false amount:false tags:true c:false")
	}
}

// TestTypes_HstoreAndBit: hstore is a JSON string of its pairs (Debezium's
// default hstore.handling.mode=json) and bit(1) a boolean, as Debezium
// maps them, in the snapshot and the stream alike.
func TestTypes_HstoreAndBit(t *testing.T) {
	db := newDB(t,
		"CREATE EXTENSION hstore",
		"CREATE TABLE hb (id int PRIMARY KEY, h hstore, b1 bit, b4 bit(4), ha hstore[])",
		`INSERT INTO hb VALUES (1, 'a=>1, "b c"=>NULL, "q\"x"=>"y\\z", e=>""', B'1', B'1010', ARRAY['k=>v']::hstore[])`,
	)
	s := openSource(t, db, map[string]string{"schemas": "true"}, nil)
	snap := decode(t, readRecords(t, s, 1, 30*time.Second))
	db.exec(t, "INSERT INTO hb SELECT 2, h, B'0', b4, ha FROM hb WHERE id = 1")
	stream := decode(t, readRecords(t, s, 1, 30*time.Second))
	for i, e := range []event{snap[0], stream[0]} {
		after := e.Ev.After
		h, _ := after.Get("h")
		var pairs map[string]*string
		if err := json.Unmarshal([]byte(h.(string)), &pairs); err != nil {
			t.Fatalf("row %d: h = %v, not a JSON object: %v", i, h, err)
		}
		got := jsonOf(pairs)
		if want := `{"a":"1","b c":null,"e":"","q\"x":"y\\z"}`; got != want {
			t.Errorf("row %d: h = %s, want %s", i, got, want)
		}
		if b1, _ := after.Get("b1"); b1 != (i == 0) {
			t.Errorf("row %d: b1 = %v, want %v", i, b1, i == 0)
		}
		if b4, _ := after.Get("b4"); b4 != "1010" {
			t.Errorf("row %d: b4 = %v, want 1010", i, b4)
		}
		if ha, _ := after.Get("ha"); jsonOf(ha) != `["{\"k\":\"v\"}"]` {
			t.Errorf("row %d: ha = %s", i, jsonOf(ha))
		}
		for field, want := range map[string]string{"h": connect.LogicalJSON, "b1": ""} {
			fs, ok := e.Ev.Schema.Row.FieldSchema(field)
			if !ok || fs.Name != want {
				t.Errorf("row %d: schema of %s: %+v, want name %q", i, field, fs, want)
			}
		}
		if fs, _ := e.Ev.Schema.Row.FieldSchema("b1"); fs == nil || fs.Type != connect.SchemaBoolean {
			t.Errorf("row %d: schema of b1: %+v, want boolean", i, fs)
		}
	}
}

func TestHstoreJSON(t *testing.T) {
	for in, want := range map[string]string{
		``:                          `{}`,
		`"a"=>"1"`:                  `{"a":"1"}`,
		`"a"=>NULL, "b"=>"NULL"`:    `{"a":null,"b":"NULL"}`,
		`"x\"y"=>"\\", "é"=>"=>, "`: `{"x\"y":"\\","é":"=>, "}`,
	} {
		if got, err := hstoreJSON(in); err != nil || got != want {
			t.Errorf("hstoreJSON(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`a=>1`, `"a"=>`, `"a"=>"1" "b"=>"2"`, `"a`} {
		if got, err := hstoreJSON(in); err == nil {
			t.Errorf("hstoreJSON(%q) = %s, want an error", in, got)
		}
	}
}

// Arrays of floats holding NaN or ±Infinity, with schemas on: the items
// keep their float/double schema and carry the strings "NaN", "Infinity",
// "-Infinity" as Debezium (Jackson) writes them, for float8[], real[] and
// numeric[] in decimal.handling.mode=double alike; the event is not refused.
func TestTypes_FloatArrayNonFiniteWithSchemas(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE fa (id int PRIMARY KEY, v float8[], r real[], n numeric[])",
		"INSERT INTO fa VALUES (1, '{1.5,NaN,-Infinity}', '{Infinity,2.5}', '{NaN,12.5}')",
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.fa", "decimal.handling.mode": "double"}, nil)
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	if got, want := evs[0].Ev.After.String(), `{"id":1,"v":[1.5,"NaN","-Infinity"],"r":["Infinity",2.5],"n":["NaN",12.5]}`; got != want {
		t.Errorf("after = %s, want %s", got, want)
	}
	fs, _ := evs[0].Ev.Schema.Row.FieldSchema("v")
	if fs.Type != connect.SchemaArray || fs.Items.Type != connect.SchemaFloat64 {
		t.Errorf("v schema = %s of %s, want array of double", fs.Type, fs.Items.Type)
	}
}

// numeric with a negative scale (PostgreSQL 15+: numeric(5,-2) rounds to
// hundreds) in decimal.handling.mode=precise: the type modifier's scale is
// an 11-bit signed field (numeric.c, make_numeric_typmod), and a Kafka
// Connect Decimal (Java BigDecimal) takes a negative scale: 12300 is
// scale -2, unscaled 123, not scale 2046.
func TestTypes_NegativeScaleNumericPrecise(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE ns (id int PRIMARY KEY, n numeric(5,-2), m numeric(3,5))",
		"INSERT INTO ns VALUES (1, 12345, 0.00123)", // n stored as 12300
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.ns", "decimal.handling.mode": "precise"}, nil)
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	e, err := connect.DebeziumJSON{}.Decode(evs[0].Rec.Key, evs[0].Rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		col, scale, prec string
		unscaled         byte
	}{{"n", "-2", "5", 123}, {"m", "5", "3", 123}} {
		fs, ok := e.Schema.Row.FieldSchema(tt.col)
		if !ok {
			t.Fatalf("no schema for %s", tt.col)
		}
		scale, _ := fs.Param("scale")
		prec, _ := fs.Param("connect.decimal.precision")
		v, _ := e.After.Get(tt.col)
		b, _ := v.([]byte)
		if scale != tt.scale || prec != tt.prec || len(b) != 1 || b[0] != tt.unscaled {
			t.Errorf("%s: scale %q precision %q, unscaled % x; want scale %s precision %s, unscaled %d", tt.col, scale, prec, b, tt.scale, tt.prec, tt.unscaled)
		}
	}
}

func TestNumericScale(t *testing.T) {
	// make_numeric_typmod: ((precision << 16) | (scale & 0x7ff)) + 4.
	typmod := func(p, s int) int32 { return int32((p<<16)|(s&0x7ff)) + 4 }
	for _, tt := range []struct{ p, s int }{{5, -2}, {10, 2}, {1000, 1000}, {1, -1000}, {3, 5}, {1, 0}} {
		p, s, ok := numericScale(typmod(tt.p, tt.s))
		if !ok || p != tt.p || s != tt.s {
			t.Errorf("numericScale(numeric(%d,%d)) = %d, %d, %v", tt.p, tt.s, p, s, ok)
		}
	}
	if _, _, ok := numericScale(-1); ok {
		t.Errorf("numericScale(-1): ok, want variable scale")
	}
}

// A timestamptz after year 9999: Debezium formats ZonedTimestamp with
// java.time's ISO formatter, which writes years beyond four digits with a
// sign ("+10000-01-01T00:00:00Z").
func TestTypes_ZonedTimestampYearBeyond9999(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE zt (id int PRIMARY KEY, t timestamptz)",
		"INSERT INTO zt VALUES (1, '10000-01-01 00:00:00+00')",
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.zt"}, nil)
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	if got := evs[0].Ev.After.String(); !strings.Contains(got, `"t":"+10000-01-01T00:00:00Z"`) {
		t.Errorf("after = %s, want t \"+10000-01-01T00:00:00Z\" as java.time writes it", got)
	}
}

func TestParseTimestampTZ_Years(t *testing.T) {
	for in, want := range map[string]string{
		"9999-12-31 23:59:59.5+00":  "9999-12-31T23:59:59.5Z",
		"10000-01-01 00:00:00+00":   "+10000-01-01T00:00:00Z",
		"294276-12-31 23:59:59+00":  "+294276-12-31T23:59:59Z",
		"0001-01-01 00:00:00+00":    "0001-01-01T00:00:00Z",
		"0001-01-01 00:00:00+00 BC": "0000-01-01T00:00:00Z",
		"0002-06-01 00:00:00+00 BC": "-0001-06-01T00:00:00Z",
	} {
		got, err := parseTimestampTZ(in)
		if err != nil || got != want {
			t.Errorf("parseTimestampTZ(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
}

// TestTypes_MultiDimensionalArraysWithSchemas: a column's array type does
// not say how many dimensions its values have (int[] holds '{{1,2},{3,4}}'
// too); with schemas on, each event's schema has as many levels of array
// as its value, so that the event encodes (it stopped the connector) and
// decodes back to the nested arrays.
func TestTypes_MultiDimensionalArraysWithSchemas(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE md (id int PRIMARY KEY, a int[], r real[][], s text[])",
		"INSERT INTO md VALUES (1, '{{1,2},{3,NULL}}', '{{{1.5}},{{NaN}}}', '{x,y}'), (2, '{}', NULL, '{{a},{b}}')",
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.md"}, nil)
	evs := decode(t, readRecords(t, s, 2, 30*time.Second))
	want := map[int64]string{
		1: `{"id":1,"a":[[1,2],[3,null]],"r":[[[1.5]],[["NaN"]]],"s":["x","y"]}`,
		2: `{"id":2,"a":[],"r":null,"s":[["a"],["b"]]}`,
	}
	depths := map[int64]map[string]int{1: {"a": 2, "r": 3, "s": 1}, 2: {"a": 1, "s": 2}}
	for _, e := range evs {
		id, _ := e.Ev.After.Get("id")
		if got := e.Ev.After.String(); got != want[id.(int64)] {
			t.Errorf("row %d: after = %s, want %s", id, got, want[id.(int64)])
		}
		for col, depth := range depths[id.(int64)] {
			fs, _ := e.Ev.Schema.Row.FieldSchema(col)
			d := 0
			for sc := fs; sc != nil && sc.Type == connect.SchemaArray; sc = sc.Items {
				d++
			}
			if d != depth {
				t.Errorf("row %d: %s schema has %d levels of array, want %d", id, col, d, depth)
			}
		}
	}
}

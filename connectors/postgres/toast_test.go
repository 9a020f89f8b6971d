package postgres

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/syncbuf"
)

// toastCol is a column of the unchanged-TOAST tests: its type, the SQL of
// a value large enough to be stored out of line, and the JSON the update
// that leaves it alone carries for it.
type toastCol struct{ name, typ, value, want string }

const (
	// phJSON is the default placeholder as a JSON string.
	phJSON = `"__debezium_unavailable_value"`
	// phBase64 is the placeholder's bytes as JSON writes bytes.
	phBase64 = `"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="`
	// phInts is the placeholder's bytes, one number each: Debezium's
	// placeholder for int[], bigint[] and date[]
	// (UnchangedToastedPlaceholder).
	phInts = `[95,95,100,101,98,101,122,105,117,109,95,117,110,97,118,97,105,108,97,98,108,101,95,118,97,108,117,101]`
	// phUUID is Debezium's placeholder element for uuid[]:
	// UUID.nameUUIDFromBytes of the placeholder's bytes (DBZ-6720).
	phUUID = `"b68a35a7-17ad-35b3-af2a-ae46edb4545a"`
)

// toastTest creates table tt with cols (every value stored out of line:
// STORAGE EXTERNAL, toast_tuple_target 128), once under REPLICA IDENTITY
// DEFAULT and once, as tt_full, under FULL; inserts a row into each and
// updates only its column k. It returns the JSON of each field of the
// update's after block (tt) and the log of the source; under FULL the
// update must carry the inserted values. Under DEFAULT the update must
// name all cols in connect.UnavailableColumnsHeader.
func toastTest(t *testing.T, settings map[string]string, cols []toastCol) (map[string]string, string) {
	t.Helper()
	setup := []string{"CREATE EXTENSION hstore"}
	var defs, vals []string
	for _, c := range cols {
		defs = append(defs, c.name+" "+c.typ)
		vals = append(vals, c.value)
	}
	for _, tbl := range []string{"tt", "tt_full"} {
		setup = append(setup, fmt.Sprintf("CREATE TABLE %s (id int PRIMARY KEY, k int, %s) WITH (toast_tuple_target = 128)", tbl, strings.Join(defs, ", ")))
		for _, c := range cols {
			setup = append(setup, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET STORAGE EXTERNAL", tbl, c.name))
		}
	}
	setup = append(setup, "ALTER TABLE tt_full REPLICA IDENTITY FULL")
	db := newDB(t, setup...)
	cfg := map[string]string{"snapshot.mode": "never"}
	for k, v := range settings {
		cfg[k] = v
	}
	var log syncbuf.Buffer
	s, err := tryOpenSource(t, db.dsn, cfg, func(s *Source) { s.logger = slog.New(slog.NewTextHandler(&log, nil)) }, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(t.Context()) })
	for _, tbl := range []string{"tt", "tt_full"} {
		db.exec(t, fmt.Sprintf("INSERT INTO %s VALUES (1, 1, %s)", tbl, strings.Join(vals, ", ")))
		// Every value must be out of line, else the update carries it.
		toast := db.queryString(t, "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = $1::regclass", tbl)
		if got := db.queryString(t, "SELECT count(DISTINCT chunk_id)::text FROM "+toast); got != fmt.Sprint(len(cols)) {
			t.Fatalf("%s has %s values out of line, want all %d", tbl, got, len(cols))
		}
		db.exec(t, fmt.Sprintf("UPDATE %s SET k = 2 WHERE id = 1", tbl))
	}
	recs := readRecords(t, s, 4, 30*time.Second)
	if len(recs) != 4 {
		t.Fatalf("got %d records, want 4", len(recs))
	}
	// The update under DEFAULT names every column it lacks the value of
	// in a header, placeholder and null alike; no other record has one.
	var names []string
	for _, c := range cols {
		names = append(names, c.name)
	}
	for i, r := range recs {
		h, ok := r.Header(connect.UnavailableColumnsHeader)
		if i != 1 {
			if ok {
				t.Errorf("record %d has header %s: %s", i, connect.UnavailableColumnsHeader, h)
			}
			continue
		}
		if got, want := string(h), string(connect.UnavailableColumns(names).Value); got != want {
			t.Errorf("the update's header %s = %s, want %s", connect.UnavailableColumnsHeader, got, want)
		}
	}
	inserted, updated := afterFields(t, recs[2].Value), afterFields(t, recs[3].Value)
	for _, c := range cols {
		if inserted[c.name] != updated[c.name] {
			t.Errorf("REPLICA IDENTITY FULL: %s (%s) = %.60s, want the inserted %.60s", c.name, c.typ, updated[c.name], inserted[c.name])
		}
	}
	return afterFields(t, recs[1].Value), log.String()
}

// afterFields returns the JSON of each field of the after block of a
// change event, with or without an embedded schema.
func afterFields(t *testing.T, value []byte) map[string]string {
	t.Helper()
	var env struct {
		Payload json.RawMessage `json:"payload"`
		After   map[string]json.RawMessage
	}
	if err := json.Unmarshal(value, &env); err != nil {
		t.Fatalf("decode %s: %v", value, err)
	}
	if env.Payload != nil {
		if err := json.Unmarshal(env.Payload, &env); err != nil {
			t.Fatalf("decode payload %s: %v", env.Payload, err)
		}
	}
	out := map[string]string{}
	for k, v := range env.After {
		out[k] = string(v)
	}
	return out
}

// TestStream_UnchangedToastByType: an update that leaves TOASTed values
// alone under REPLICA IDENTITY DEFAULT (pgoutput marks them 'u' and sends
// no value) carries, for each, the placeholder in the form Debezium gives
// its type: the text; its bytes for bytea; a JSON object of it for hstore;
// a one-element array for arrays of text-like types and of bytea; its
// bytes as numbers for int[], bigint[] and date[]; the placeholder's
// name-based UUID for uuid[]. Schemas on or off change none of it.
func TestStream_UnchangedToastByType(t *testing.T) {
	cols := []toastCol{
		{"t", "text", "repeat('x', 3000)", phJSON},
		{"vc", "varchar(4000)", "repeat('x', 3000)", phJSON},
		{"j", "jsonb", "jsonb_build_object('k', repeat('x', 3000))", phJSON},
		{"js", "json", "json_build_object('k', repeat('x', 3000))", phJSON},
		{"x", "xml", "xmlelement(name a, repeat('x', 3000))", phJSON},
		{"b", "bytea", "convert_to(repeat('x', 3000), 'UTF8')", phBase64},
		{"h", "hstore", "hstore('k', repeat('x', 3000))", `"{\"__debezium_unavailable_value\":\"__debezium_unavailable_value\"}"`},
		{"n", "numeric", "repeat('9', 3000)::numeric", phJSON}, // decimal.handling.mode=string
		{"ta", "text[]", "array_fill(repeat('x', 10), ARRAY[300])", "[" + phJSON + "]"},
		{"va", "varchar(20)[]", "array_fill(repeat('x', 10)::varchar, ARRAY[300])", "[" + phJSON + "]"},
		{"ca", "char(10)[]", "array_fill(repeat('x', 10)::char(10), ARRAY[300])", "[" + phJSON + "]"},
		{"ja", "jsonb[]", "array_fill('{}'::jsonb, ARRAY[1000])", "[" + phJSON + "]"},
		{"bya", "bytea[]", `array_fill('\x00'::bytea, ARRAY[1000])`, "[" + phBase64 + "]"},
		{"ia", "int[]", "array(SELECT generate_series(1, 1000))", phInts},
		{"la", "bigint[]", "array(SELECT generate_series(1, 1000)::bigint)", phInts},
		{"da", "date[]", "array(SELECT date '2020-01-01' + g FROM generate_series(1, 1000) g)", phInts},
		{"ua", "uuid[]", "array_fill('00000000-0000-0000-0000-000000000001'::uuid, ARRAY[300])", "[" + phUUID + "]"},
	}
	for _, schemas := range []string{"false", "true"} {
		t.Run("schemas="+schemas, func(t *testing.T) {
			got, _ := toastTest(t, map[string]string{"schemas": schemas}, cols)
			for _, c := range cols {
				if got[c.name] != c.want {
					t.Errorf("%s (%s) = %.120s, want %s", c.name, c.typ, got[c.name], c.want)
				}
			}
		})
	}
}

// TestStream_UnchangedToastNoPlaceholder: where the column's type cannot
// hold the placeholder (a number, a boolean, a time, and arrays of them
// but for int[], bigint[] and date[]; numeric under decimal.handling.mode
// precise or double), the value is null, as Debezium leaves such a field
// (its value converter fails and event.converting.failure.handling.mode
// warn writes null), and never silently: a warning names the table, the
// column and the fix. Arrays of other text-like types, which Debezium
// leaves null too, carry the one-element placeholder array here.
func TestStream_UnchangedToastNoPlaceholder(t *testing.T) {
	nulls := []toastCol{
		{"sa", "smallint[]", "array_fill(1::smallint, ARRAY[1000])", "null"},
		{"fa", "float8[]", "array_fill(1.5::float8, ARRAY[1000])", "null"},
		{"ra", "real[]", "array_fill(1.5::real, ARRAY[1000])", "null"},
		{"boa", "boolean[]", "array_fill(true, ARRAY[3000])", "null"},
		{"tsa", "timestamp[]", "array_fill(timestamp '2020-01-01 01:02:03', ARRAY[1000])", "null"},
		{"n", "numeric", "repeat('9', 300)::numeric", "null"},
		{"nf", "numeric(1000,2)", "repeat('9', 300)::numeric", "null"},
	}
	for _, mode := range []string{"precise", "double"} {
		t.Run(mode, func(t *testing.T) {
			got, log := toastTest(t, map[string]string{"decimal.handling.mode": mode, "schemas": "true"}, nulls)
			for _, c := range nulls {
				if got[c.name] != c.want {
					t.Errorf("%s (%s) = %.120s, want null", c.name, c.typ, got[c.name])
				}
				want := fmt.Sprintf("column=%s ", c.name)
				if !strings.Contains(log, want) || !strings.Contains(log, "REPLICA IDENTITY FULL") {
					t.Errorf("no warning naming column %s and REPLICA IDENTITY FULL in:\n%s", c.name, log)
				}
			}
		})
	}
	t.Run("text-like arrays", func(t *testing.T) {
		cols := []toastCol{
			{"na", "numeric[]", "array_fill(1.5, ARRAY[1000])", "[" + phJSON + "]"}, // decimal.handling.mode=string
			{"tza", "timestamptz[]", "array_fill(timestamptz '2020-01-01 01:02:03Z', ARRAY[1000])", "[" + phJSON + "]"},
			{"ina", "inet[]", "array_fill('10.0.0.1'::inet, ARRAY[1000])", "[" + phJSON + "]"},
			{"ha", "hstore[]", "array_fill(hstore('k', 'v'), ARRAY[1000])", `["{\"__debezium_unavailable_value\":\"__debezium_unavailable_value\"}"]`},
		}
		got, log := toastTest(t, nil, cols)
		for _, c := range cols {
			if got[c.name] != c.want {
				t.Errorf("%s (%s) = %.120s, want %s", c.name, c.typ, got[c.name], c.want)
			}
		}
		if strings.Contains(log, "level=WARN") {
			t.Errorf("warnings for values that hold the placeholder:\n%s", log)
		}
	})
}

package postgres

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// A float8[] (or real[]) holding NaN or ±Infinity, with schemas on: the
// elements are the strings "NaN"/"Infinity", the schema says array of
// double, schemaFor only fixes top-level columns, and the codec refuses the
// event: the source fails.
func TestReviewDbz_FloatArrayNaNWithSchemas(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE fa (id int PRIMARY KEY, v float8[])",
		"INSERT INTO fa VALUES (1, '{1.5,NaN,-Infinity}')",
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.fa"}, nil)
	recs, err := s.Read(t.Context())
	deadline := time.Now().Add(30 * time.Second)
	for err == nil && len(recs) == 0 && time.Now().Before(deadline) {
		recs, err = s.Read(t.Context())
	}
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	evs := decode(t, recs)
	if got := evs[0].Ev.After.String(); got != `{"id":1,"v":[1.5,"NaN","-Infinity"]}` {
		t.Errorf("after = %s", got)
	}
}

// numeric with a negative scale (PostgreSQL 15+: numeric(5,-2) rounds to
// hundreds) in decimal.handling.mode=precise: the type modifier's scale is
// an 11-bit signed field (numeric.c, make_numeric_typmod), read here as
// unsigned 16 bits: the schema says "scale":"2046" (with precision 5) and
// the value 12300 is written as 12300 * 10^2046, 850 bytes of base64. A
// Kafka Connect Decimal (Java BigDecimal) takes a negative scale: scale -2,
// unscaled 123.
func TestReviewDbz_NegativeScaleNumericPrecise(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE ns (id int PRIMARY KEY, n numeric(5,-2))",
		"INSERT INTO ns VALUES (1, 12345)", // stored as 12300
	)
	s := openSource(t, db, map[string]string{"schemas": "true", "snapshot.mode": "initial_only", "tables": "public.ns", "decimal.handling.mode": "precise"}, nil)
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	e, err := connect.DebeziumJSON{}.Decode(evs[0].Rec.Key, evs[0].Rec.Value)
	if err != nil {
		t.Fatal(err)
	}
	fs, ok := e.Schema.Row.FieldSchema("n")
	if !ok {
		t.Fatalf("no schema for n")
	}
	scale, _ := fs.Param("scale")
	v, _ := e.After.Get("n")
	b, _ := v.([]byte)
	if scale != "-2" || len(b) != 1 || b[0] != 123 {
		t.Errorf("numeric(5,-2) 12300: scale %q, unscaled %d bytes (%s…); want scale -2, unscaled 123", scale, len(b), new(big.Int).SetBytes(b).String()[:min(20, len(b)*2)])
	}
}

// A timestamptz after year 9999: Debezium formats ZonedTimestamp with
// java.time's ISO formatter, which writes years beyond four digits with a
// sign ("+10000-01-01T00:00:00Z"); the connector writes "10000-01-01T…".
func TestReviewDbz_ZonedTimestampYearBeyond9999(t *testing.T) {
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

package postgres

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/syncbuf"
)

// TestTypes_NumericSpecialValues writes numeric NaN, Infinity and
// -Infinity (PostgreSQL 14+), and values beyond a double's range, and
// reads them by snapshot and by streaming under each
// decimal.handling.mode, with schemas on. The records must be what
// Debezium's PostgresValueConverter (SpecialValueDecimal.fromLogical) and
// Kafka's JsonConverter put in Kafka:
//   - string: SpecialValueDecimal's names, "NAN", "POSITIVE_INFINITY",
//     "NEGATIVE_INFINITY", under a string schema;
//   - double: Double.NaN and the infinities (BigDecimal.doubleValue()
//     overflows to them), which Jackson writes as the strings "NaN",
//     "Infinity", "-Infinity", under the column's double schema;
//   - precise: no decimal form; Debezium's converter throws, its
//     TableSchemaBuilder logs the column and leaves the field null (a
//     numeric[] holding one: the whole field).
//
// numeric[] items take the scalar forms.
func TestTypes_NumericSpecialValues(t *testing.T) {
	db := newDB(t,
		// A numeric with a precision cannot hold an infinity, only NaN.
		"CREATE TABLE sv (id int PRIMARY KEY, n numeric(10,2), nv numeric, na numeric[])",
		"INSERT INTO sv VALUES (1, 'NaN', 'NaN', '{NaN,Infinity,1.5}'), (2, NULL, 'Infinity', NULL), (3, NULL, '-Infinity', NULL), (4, 1.5, '1e400', NULL), (5, 1.5, '-1e400', NULL)",
	)
	for _, tt := range []struct {
		mode          string
		after         map[int]string // by id, the snapshot's; streamed rows are id+10
		nType, nvType string         // the schema types of n and nv in every event
		warn          bool           // a WARN naming column nv
	}{
		{"string", map[int]string{
			1: `{"id":1,"n":"NAN","nv":"NAN","na":["NAN","POSITIVE_INFINITY","1.5"]}`,
			2: `{"id":2,"n":null,"nv":"POSITIVE_INFINITY","na":null}`,
			3: `{"id":3,"n":null,"nv":"NEGATIVE_INFINITY","na":null}`,
		}, "string", "string", false},
		{"double", map[int]string{
			1: `{"id":1,"n":"NaN","nv":"NaN","na":["NaN","Infinity",1.5]}`,
			2: `{"id":2,"n":null,"nv":"Infinity","na":null}`,
			3: `{"id":3,"n":null,"nv":"-Infinity","na":null}`,
			4: `{"id":4,"n":1.5,"nv":"Infinity","na":null}`,
			5: `{"id":5,"n":1.5,"nv":"-Infinity","na":null}`,
		}, "double", "double", false},
		{"precise", map[int]string{
			1: `{"id":1,"n":null,"nv":null,"na":null}`,
			2: `{"id":2,"n":null,"nv":null,"na":null}`,
			3: `{"id":3,"n":null,"nv":null,"na":null}`,
		}, "bytes", "struct", true},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			var log syncbuf.Buffer
			s, err := tryOpenSource(t, db.dsn, map[string]string{"schemas": "true", "tables": "public.sv", "decimal.handling.mode": tt.mode},
				func(s *Source) { s.logger = slog.New(slog.NewTextHandler(&log, nil)) }, nil)
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { s.Close(t.Context()) })
			check := func(what string, offset int) {
				t.Helper()
				for _, e := range decode(t, readRecords(t, s, 5, 30*time.Second)) {
					var rec struct {
						Schema struct {
							Fields []struct {
								Field  string
								Fields []struct {
									Field    string
									Type     string
									Optional bool
								}
							}
						}
						Payload struct{ After json.RawMessage }
					}
					if err := json.Unmarshal(e.Rec.Value, &rec); err != nil {
						t.Fatalf("%s: %v in %s", what, err, e.Rec.Value)
					}
					var row struct{ ID int }
					if err := json.Unmarshal(rec.Payload.After, &row); err != nil {
						t.Fatalf("%s: %v in %s", what, err, rec.Payload.After)
					}
					if want, ok := tt.after[row.ID-offset]; ok {
						want = strings.Replace(want, `"id":`+itoa(int64(row.ID-offset)), `"id":`+itoa(int64(row.ID)), 1)
						if got := string(rec.Payload.After); got != want {
							t.Errorf("%s after:\n got %s\nwant %s", what, got, want)
						}
					}
					for _, f := range rec.Schema.Fields {
						if f.Field != "after" {
							continue
						}
						for _, c := range f.Fields {
							want := map[string]string{"id": "int32", "n": tt.nType, "nv": tt.nvType, "na": "array"}[c.Field]
							if c.Type != want || (c.Field != "id" && !c.Optional) {
								t.Errorf("%s row %d: schema of %s is %s (optional %v), want optional %s", what, row.ID, c.Field, c.Type, c.Optional, want)
							}
						}
					}
				}
			}
			check("snapshot", 0)
			db.exec(t, "INSERT INTO sv SELECT id + 10, n, nv, na FROM sv WHERE id <= 5")
			check("stream", 10)
			db.exec(t, "DELETE FROM sv WHERE id > 10")
			if got := strings.Contains(log.String(), "level=WARN") && strings.Contains(log.String(), "column=nv"); got != tt.warn {
				t.Errorf("a WARN naming column nv: %v, want %v; log:\n%s", got, tt.warn, log.String())
			}
		})
	}
}

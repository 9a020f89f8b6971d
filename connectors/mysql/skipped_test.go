package mysql

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/cdctest"
)

// openStreaming opens a streaming-only source on d with extra settings;
// goMySQL has go-mysql's parser decode the rows events (the path of MySQL's
// binary JSON columns) instead of the connector's own decoder.
func openStreaming(t *testing.T, d *testDB, values map[string]string, goMySQL bool) *Source {
	t.Helper()
	v := map[string]string{"dsn": d.dsn, "heartbeat.interval": "0", "snapshot.mode": "never"}
	for k, x := range withTables(d, values) {
		v[k] = x
	}
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	s.goMySQLRows = goMySQL
	cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec()}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	if err := s.Open(t.Context(), cfg); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// describe writes a record as "op {key}" with the key-change headers, "t"
// for a truncate (no key), "tombstone {key}" for a tombstone.
func describe(e cdctest.Event) string {
	short := strings.NewReplacer(`{"id":`, "{")
	key := short.Replace(string(e.Rec.Key))
	var d string
	switch {
	case e.Ev == nil:
		d = "tombstone " + key
	case e.Ev.Op == connect.OpTruncate:
		d = "t" + key
	default:
		d = string(e.Ev.Op) + " " + key
	}
	for _, h := range []string{"__debezium.newkey", "__debezium.oldkey"} {
		if v, ok := e.Rec.Header(h); ok {
			d += " " + strings.TrimPrefix(h, "__debezium.") + "=" + short.Replace(string(v))
		}
	}
	return d
}

// TestStream_SkippedOperations checks skipped.operations as Debezium's
// MySQL connector reads it: by default a truncate is not emitted; none
// emits it; c, u and d leave out their events, u every update (key
// changes included), d and c each half of a key change that u lets
// through. Both row decoders run it.
func TestStream_SkippedOperations(t *testing.T) {
	for _, tc := range []struct {
		skip string // "" for the default
		want []string
	}{
		// c 1, u 1, key change 1→2 (d, tombstone, c), d 2 (+ tombstone), t, c 9, u 9, d 9 (+ tombstone)
		{"", []string{"c {1}", "u {1}", "d {1} newkey={2}", "tombstone {1}", "c {2} oldkey={1}", "d {2}", "tombstone {2}", "c {9}", "u {9}", "d {9}", "tombstone {9}"}},
		{"none", []string{"c {1}", "u {1}", "d {1} newkey={2}", "tombstone {1}", "c {2} oldkey={1}", "d {2}", "tombstone {2}", "t", "c {9}", "u {9}", "d {9}", "tombstone {9}"}},
		{"t", []string{"c {1}", "u {1}", "d {1} newkey={2}", "tombstone {1}", "c {2} oldkey={1}", "d {2}", "tombstone {2}", "c {9}", "u {9}", "d {9}", "tombstone {9}"}},
		{"c", []string{"u {1}", "d {1} newkey={2}", "tombstone {1}", "d {2}", "tombstone {2}", "t", "u {9}", "d {9}", "tombstone {9}"}},
		{"u", []string{"c {1}", "d {2}", "tombstone {2}", "t", "c {9}", "d {9}", "tombstone {9}"}},
		{"d", []string{"c {1}", "u {1}", "c {2} oldkey={1}", "t", "c {9}", "u {9}"}},
		{"c,d", []string{"u {1}", "t", "u {9}"}},
		{"c,u,d", []string{"t"}},
		{"d,t", []string{"c {1}", "u {1}", "c {2} oldkey={1}", "c {9}", "u {9}"}},
	} {
		for _, goMySQL := range []bool{false, true} {
			name := strings.ReplaceAll(tc.skip, ",", "_")
			if name == "" {
				name = "default"
			}
			if goMySQL {
				name += "/go-mysql"
			}
			t.Run(name, func(t *testing.T) {
				d := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)")
				cfg := map[string]string{}
				if tc.skip != "" {
					cfg["skipped.operations"] = tc.skip
				}
				s := openStreaming(t, d, cfg, goMySQL)
				d.exec(t, "INSERT INTO k VALUES (1, 'a')")
				d.exec(t, "UPDATE k SET v = 'b' WHERE id = 1")
				d.exec(t, "UPDATE k SET id = 2 WHERE id = 1")
				d.exec(t, "DELETE FROM k WHERE id = 2")
				d.exec(t, "TRUNCATE TABLE k")
				d.exec(t, "INSERT INTO k VALUES (9, 'marker')")
				d.exec(t, "UPDATE k SET v = 'end' WHERE id = 9")
				d.exec(t, "DELETE FROM k WHERE id = 9")
				recs := readRecords(t, s, len(tc.want), 30*time.Second)
				expectQuiet(t, s, 300*time.Millisecond) // nothing skipped comes late
				var got []string
				for _, e := range decode(t, recs) {
					got = append(got, describe(e))
				}
				if strings.Join(got, "; ") != strings.Join(tc.want, "; ") {
					t.Errorf("skipped.operations=%q:\n got %s\nwant %s\n%s", tc.skip, strings.Join(got, "; "), strings.Join(tc.want, "; "), dump(recs))
				}
				if len(recs) > 0 && recs[len(recs)-1].Position == nil {
					t.Errorf("the last record carries no position")
				}
			})
		}
	}
}

// TestStream_SkippedCreateOfKeyChange: with c skipped, a key change ends
// with the delete's tombstone, which carries the transaction's position;
// with tombstones off, the delete itself does. Transaction metadata counts
// the events emitted only, and a transaction whose changes are all skipped
// has no BEGIN or END record.
func TestStream_SkippedCreateOfKeyChange(t *testing.T) {
	for _, tombstones := range []string{"true", "false"} {
		t.Run("tombstones="+tombstones, func(t *testing.T) {
			d := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)", "INSERT INTO k VALUES (1, 'a')")
			s := openStreaming(t, d, map[string]string{"skipped.operations": "c", "tombstones.on.delete": tombstones,
				"provide.transaction.metadata": "true"}, false)
			d.exec(t, "INSERT INTO k VALUES (5, 'e')") // skipped: no BEGIN or END either
			d.exec(t, "UPDATE k SET id = 2 WHERE id = 1")
			n := 4 // BEGIN, d, tombstone, END
			if tombstones == "false" {
				n = 3
			}
			recs := readRecords(t, s, n, 30*time.Second)
			if len(recs) != n {
				t.Fatalf("got %d records, want %d:\n%s", len(recs), n, dump(recs))
			}
			last := recs[n-2] // the last one of the table, before END
			if last.Position != nil {
				// The END record carries it when transaction metadata is on.
				t.Errorf("record %d carries the position, want the END record:\n%s", n-2, dump(recs))
			}
			if recs[n-1].Position == nil || !strings.Contains(string(recs[n-1].Value), `"event_count":1`) {
				t.Errorf("END record %s (position %s), want event_count 1 and the position", recs[n-1].Value, recs[n-1].Position)
			}
			evs := decode(t, recs[1:n-1])
			if evs[0].Ev == nil || evs[0].Ev.Op != connect.OpDelete || evs[0].Ev.Transaction == nil || evs[0].Ev.Transaction.TotalOrder != 1 {
				t.Errorf("want the delete, first of its transaction:\n%s", dump(recs))
			}
			if v, ok := evs[0].Rec.Header("__debezium.newkey"); !ok || string(v) != `{"id":2}` {
				t.Errorf("newkey header %q", v)
			}
		})
	}
	t.Run("position without metadata", func(t *testing.T) {
		d := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)", "INSERT INTO k VALUES (1, 'a')")
		s := openStreaming(t, d, map[string]string{"skipped.operations": "c"}, false)
		d.exec(t, "UPDATE k SET id = 2 WHERE id = 1")
		recs := readRecords(t, s, 2, 30*time.Second)
		if len(recs) != 2 || recs[1].Value != nil || recs[1].Position == nil {
			t.Fatalf("want the delete, then its tombstone with the position:\n%s", dump(recs))
		}
	})
}

// TestStream_Truncate checks the truncate event with skipped.operations
// none, as Debezium writes it: on the table's topic, a null key, op t, no
// before or after, source.table and (include.query) source.query set, no
// transaction block; with schemas, the table's envelope schema. A truncate
// of a table that is not captured emits nothing.
func TestStream_Truncate(t *testing.T) {
	d := newDB(t, "CREATE TABLE k (id int PRIMARY KEY, v text)", "CREATE TABLE other (id int PRIMARY KEY)")
	s := openStreaming(t, d, map[string]string{"skipped.operations": "none", "schemas": "true", "include.query": "true",
		"provide.transaction.metadata": "true", "topic.prefix": "shop", "tables": d.name + ".k"}, false)
	d.exec(t, "TRUNCATE other")
	d.exec(t, "TRUNCATE TABLE k")
	d.exec(t, "INSERT INTO k VALUES (1, 'a')")
	recs := readRecords(t, s, 4, 30*time.Second) // t, then BEGIN, c, END
	if len(recs) != 4 {
		t.Fatalf("got %d records:\n%s", len(recs), dump(recs))
	}
	r := recs[0]
	if r.Topic != "shop."+d.name+".k" || r.Key != nil || r.Position == nil {
		t.Fatalf("truncate record: topic %s key %s position %s", r.Topic, r.Key, r.Position)
	}
	var v struct {
		Schema struct {
			Name string `json:"name"`
		} `json:"schema"`
		Payload struct {
			Before      json.RawMessage `json:"before"`
			After       json.RawMessage `json:"after"`
			Op          string          `json:"op"`
			TsMs        int64           `json:"ts_ms"`
			Transaction json.RawMessage `json:"transaction"`
			Source      struct {
				DB       string `json:"db"`
				Table    string `json:"table"`
				Snapshot string `json:"snapshot"`
				Query    string `json:"query"`
				GTID     string `json:"gtid"`
				Thread   *int64 `json:"thread"`
				TsMs     int64  `json:"ts_ms"`
			} `json:"source"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("%v: %s", err, r.Value)
	}
	p := v.Payload
	if p.Op != "t" || string(p.Before) != "null" || string(p.After) != "null" || string(p.Transaction) != "null" || p.TsMs == 0 {
		t.Errorf("truncate payload: %s", r.Value)
	}
	if p.Source.DB != d.name || p.Source.Table != "k" || p.Source.Snapshot != "false" || p.Source.Query != "TRUNCATE TABLE k" ||
		p.Source.GTID == "" || p.Source.TsMs == 0 || p.Source.Thread == nil {
		t.Errorf("truncate source: %s", r.Value)
	}
	if v.Schema.Name != "shop."+d.name+".k.Envelope" {
		t.Errorf("truncate schema name %q, want the table's envelope", v.Schema.Name)
	}
	if !strings.Contains(string(recs[1].Value), `"BEGIN"`) || decode(t, recs[2:3])[0].Ev.Op != connect.OpCreate {
		t.Errorf("after the truncate:\n%s", dump(recs))
	}
}

// TestConfig_SkippedOperations: a value that is not an operation is
// refused naming the key and the valid choices, when the configuration
// is validated (pipeline load) and when the source opens; none cannot be
// combined with operations.
func TestConfig_SkippedOperations(t *testing.T) {
	cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
		Values: map[string]string{"dsn": "mysql://u:p@127.0.0.1:1", "skipped.operations": "c,x"}}
	err := cfg.Validate()
	var fe connect.FieldError
	if !errors.As(err, &fe) || fe.Param != "skipped.operations" || !strings.Contains(err.Error(), `"x" is not one of: c, u, d, t, none`) {
		t.Errorf("validate: %v", err)
	}
	for bad, want := range map[string]string{"none,c": "none cannot be combined with other operations", "x": "c, u, d, t, none"} {
		cfg.Values["skipped.operations"] = bad
		if err := cfg.Validate(); !errors.As(err, &fe) || fe.Param != "skipped.operations" || !strings.Contains(err.Error(), want) {
			t.Errorf("validate %s: %v, want %q", bad, err, want)
		}
		_, err = parseSettings(cfg)
		if !errors.As(err, &fe) || fe.Param != "skipped.operations" || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", bad, err, want)
		}
	}
	// Opening refuses it before connecting (the DSN's server does not exist).
	s := Connector().NewSource().(*Source)
	if err := s.Open(t.Context(), cfg); err == nil || !strings.Contains(err.Error(), "skipped.operations") {
		t.Errorf("Open: %v", err)
	}
	for _, good := range []string{"none", "c,u,d,t", "t", ""} {
		cfg.Values["skipped.operations"] = good
		if err := cfg.Validate(); err != nil {
			t.Errorf("%q: %v", good, err)
		}
		if _, err := parseSettings(cfg); err != nil {
			t.Errorf("%q: %v", good, err)
		}
	}
}

// TestTruncate_EmptiesOpenChunk: a TRUNCATE of the table of an
// incremental snapshot's open chunk drops the chunk's rows (they are gone:
// emitting them after the truncate would bring them back), whether the
// truncate event is skipped or not; a TRUNCATE of another table, or of a
// table that is not captured, leaves the chunk alone.
func TestTruncate_EmptiesOpenChunk(t *testing.T) {
	set, err := parseSettings(connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
		Values: map[string]string{"dsn": "mysql://u:p@127.0.0.1:1", "tables": "shop.*"}})
	if err != nil {
		t.Fatal(err)
	}
	h := &replication.EventHeader{LogPos: 100, EventSize: 50}
	for _, tc := range []struct {
		schema, query string
		emptied       bool
	}{
		{"shop", "TRUNCATE k", true},
		{"other", "truncate table `shop`.`k`", true},
		{"shop", "/* why */ TRUNCATE TABLE k", true},
		{"shop", "SET STATEMENT max_statement_time=100 FOR TRUNCATE k", true},
		{"shop", "TRUNCATE k2", false},
		{"other", "TRUNCATE k", false},
		{"shop", "ALTER TABLE k ADD COLUMN x int", false},
	} {
		st := &streamer{src: &Source{set: set}, chunk: &incChunk{table: "shop.k", open: true,
			keys: []string{`{"id":1}`}, recs: map[string]connect.Record{`{"id":1}`: {}}}}
		if err := st.truncate(t.Context(), h, tc.schema, tc.query, 0); err != nil {
			t.Fatalf("%s: %v", tc.query, err)
		}
		if got := len(st.chunk.recs) == 0; got != tc.emptied {
			t.Errorf("%s (in %s): chunk emptied %v, want %v", tc.query, tc.schema, got, tc.emptied)
		}
		if len(st.pending) != 0 {
			t.Errorf("%s: a truncate event although t is skipped", tc.query)
		}
	}
}

// TestConfig_TLSCAFileCheckedAtValidate: a tls.ca file that is missing or
// holds no certificate is found by validate, not only at Open.
func TestConfig_TLSCAFileCheckedAtValidate(t *testing.T) {
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ca := range []string{filepath.Join(t.TempDir(), "missing.pem"), notPEM} {
		cfg := connect.Config{Pipeline: "p", Connector: "src", Spec: spec(),
			Values: map[string]string{"dsn": "mysql://u:p@127.0.0.1:1", "tls.mode": "verify-ca", "tls.ca": ca}}
		err := cfg.Validate()
		var fe connect.FieldError
		if !errors.As(err, &fe) || fe.Param != "tls.ca" || !strings.Contains(err.Error(), ca) {
			t.Errorf("tls.ca %s: validate = %v; want a tls.ca error naming the file", ca, err)
		}
	}
}

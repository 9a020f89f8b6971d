package postgres

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// pubTableSetup is a table published with a row filter (region = 'eu',
// on a key column, as PostgreSQL requires of a publication of updates and
// deletes) and a column list without secret, holding rows on both sides of
// the filter and values in the columns left out.
var pubTableSetup = []string{
	`CREATE TABLE acct (region text, id int, name text NOT NULL, secret text, v numeric(6,2),
		g int GENERATED ALWAYS AS (id * 2) STORED, PRIMARY KEY (region, id))`,
	`INSERT INTO acct (region, id, name, secret, v) VALUES
		('eu', 1, 'ann', 'pw-ann', 1.5), ('us', 2, 'bob', 'pw-bob', 2.5), ('eu', 3, 'cy', 'pw-cy', 3.5), ('us', 4, 'dee', 'pw-dee', 4.5)`,
	`CREATE TABLE sig (id varchar(64) PRIMARY KEY, type varchar(32) NOT NULL, data varchar(2048))`,
	`CREATE PUBLICATION pub_eu FOR TABLE acct (region, id, name, v) WHERE (region = 'eu'), sig`,
}

// pubColumns are the columns pub_eu publishes of acct, in table order.
var pubColumns = []string{"region", "id", "name", "v"}

// afterColumns returns the field names of an event's after (or before)
// row, in order.
func afterColumns(t *testing.T, value []byte) []string {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(value, &env); err != nil {
		t.Fatalf("%s: %v", value, err)
	}
	if p, ok := env["payload"]; ok {
		env = nil
		if err := json.Unmarshal(p, &env); err != nil {
			t.Fatal(err)
		}
	}
	row := env["after"]
	if string(row) == "null" || row == nil {
		row = env["before"]
	}
	dec := json.NewDecoder(strings.NewReader(string(row)))
	var names []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatalf("%s: %v", row, err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// withoutSource returns a change event's value without the fields that
// differ between a snapshot read and a streamed insert of the same row
// (source, op and the timestamps), as canonical JSON in which the schema
// and the before and after rows are kept byte for byte.
func withoutSource(t *testing.T, value []byte) string {
	t.Helper()
	strip := func(b []byte) map[string]json.RawMessage {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for _, k := range []string{"source", "op", "ts_ms", "ts_us", "ts_ns", "transaction"} {
			delete(m, k)
		}
		return m
	}
	var env map[string]json.RawMessage
	if err := json.Unmarshal(value, &env); err != nil {
		t.Fatalf("%s: %v", value, err)
	}
	var out any = strip(value)
	if p, ok := env["payload"]; ok {
		out = map[string]any{"schema": env["schema"], "payload": strip(p)}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// findEvent returns the first event of op with key among recs.
func findEvent(t *testing.T, recs []connect.Record, op connect.Op, key string) *connect.Record {
	t.Helper()
	for _, e := range decode(t, recs) {
		if e.Ev != nil && e.Ev.Op == op && keyJSON(e.Ev.Key) == key {
			r := e.Rec
			return &r
		}
	}
	return nil
}

// TestSnapshot_PublicationRowFilterAndColumnList takes the initial
// snapshot of a table whose publication has a row filter and a column
// list, then streams changes to it: the snapshot reads exactly what the
// stream publishes (the rows of the filter, the listed columns, never the
// secret), and a snapshot record is the streamed insert of the same row
// byte for byte but for source, op and timestamps, schema included.
func TestSnapshot_PublicationRowFilterAndColumnList(t *testing.T) {
	for _, schemas := range []string{"false", "true"} {
		t.Run("schemas="+schemas, func(t *testing.T) {
			db := newDB(t, pubTableSetup...)
			s := openSource(t, db, map[string]string{"tables": "public.acct", "publication": "pub_eu", "publication.autocreate.mode": "disabled",
				"schemas": schemas}, nil)
			snap := readSnapshot(t, s)
			var keys []string
			for _, e := range decode(t, snap) {
				if e.Ev == nil || e.Ev.Op != connect.OpRead {
					t.Errorf("snapshot record %s %s", e.Rec.Key, e.Rec.Value)
					continue
				}
				keys = append(keys, keyJSON(e.Ev.Key))
				if got := afterColumns(t, e.Rec.Value); !slices.Equal(got, pubColumns) {
					t.Errorf("snapshot row %s has columns %v, want the column list %v", keyJSON(e.Ev.Key), got, pubColumns)
				}
				if strings.Contains(string(e.Rec.Value), "pw-") {
					t.Errorf("snapshot row leaks a column left out of the column list: %s", e.Rec.Value)
				}
			}
			if want := []string{`{"region":"eu","id":1}`, `{"region":"eu","id":3}`}; !slices.Equal(keys, want) {
				t.Errorf("snapshot rows %v, want the rows of the row filter %v", keys, want)
			}

			// The same row again, streamed; rows on both sides of the filter.
			db.exec(t, "DELETE FROM acct WHERE region = 'eu' AND id = 1")
			db.exec(t, "INSERT INTO acct (region, id, name, secret, v) VALUES ('eu', 1, 'ann', 'pw-ann', 1.5), ('us', 5, 'eve', 'pw-eve', 5.5), ('eu', 6, 'fay', 'pw-fay', 6.5)")
			db.exec(t, "UPDATE acct SET name = 'bo' WHERE region = 'us' AND id = 2")
			db.exec(t, "UPDATE acct SET name = 'cyd', secret = 'pw-cyd' WHERE region = 'eu' AND id = 3")
			db.exec(t, "DELETE FROM acct WHERE region = 'us' AND id = 4")
			// Out of the filter and into it: pgoutput sends a delete and an insert.
			db.exec(t, "UPDATE acct SET region = 'us' WHERE region = 'eu' AND id = 6")
			db.exec(t, "UPDATE acct SET region = 'eu' WHERE region = 'us' AND id = 5")
			db.exec(t, "INSERT INTO acct (region, id, name) VALUES ('eu', -1, 'marker')")
			streamed := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
				return findEvent(t, r, connect.OpCreate, `{"region":"eu","id":-1}`) != nil
			})
			var got []string
			for _, e := range decode(t, streamed) {
				if e.Ev == nil {
					continue
				}
				got = append(got, string(e.Ev.Op)+" "+keyJSON(e.Ev.Key))
				if c := afterColumns(t, e.Rec.Value); !slices.Equal(c, pubColumns) {
					t.Errorf("streamed %s has columns %v, want %v", keyJSON(e.Ev.Key), c, pubColumns)
				}
			}
			want := []string{`d {"region":"eu","id":1}`, `c {"region":"eu","id":1}`, `c {"region":"eu","id":6}`, `u {"region":"eu","id":3}`,
				`d {"region":"eu","id":6}`, `c {"region":"eu","id":5}`, `c {"region":"eu","id":-1}`}
			if !slices.Equal(got, want) {
				t.Errorf("streamed events %v, want %v", got, want)
			}
			read := findEvent(t, snap, connect.OpRead, `{"region":"eu","id":1}`)
			ins := findEvent(t, streamed, connect.OpCreate, `{"region":"eu","id":1}`)
			if read == nil || ins == nil {
				t.Fatalf("no snapshot record (%v) or streamed insert (%v) of eu/1", read != nil, ins != nil)
			}
			if string(read.Key) != string(ins.Key) {
				t.Errorf("keys differ:\nsnapshot %s\nstreamed %s", read.Key, ins.Key)
			}
			if a, b := withoutSource(t, read.Value), withoutSource(t, ins.Value); a != b {
				t.Errorf("snapshot record and streamed insert of the same row differ:\nsnapshot %s\nstreamed %s", a, b)
			}
		})
	}
}

// TestIncrementalSnapshot_PublicationRowFilterAndColumnList streams the
// table of TestSnapshot_PublicationRowFilterAndColumnList without an
// initial snapshot, then takes an incremental snapshot of it: it reads
// the rows of the filter and the listed columns only, each record the
// streamed insert of its row but for source, op and timestamps.
func TestIncrementalSnapshot_PublicationRowFilterAndColumnList(t *testing.T) {
	for _, schemas := range []string{"false", "true"} {
		t.Run("schemas="+schemas, func(t *testing.T) {
			db := newDB(t, pubTableSetup...)
			s := openSource(t, db, map[string]string{"tables": "public.acct", "publication": "pub_eu", "publication.autocreate.mode": "disabled",
				"snapshot.mode": "never", "signal.data.collection": "public.sig", "snapshot.chunk.size": "2", "schemas": schemas}, nil)
			db.exec(t, "INSERT INTO acct (region, id, name, secret, v) VALUES ('eu', 5, 'eve', 'pw-eve', 5.5), ('us', 6, 'fay', 'pw-fay', 6.5)")
			streamed := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
				return findEvent(t, r, connect.OpCreate, `{"region":"eu","id":5}`) != nil
			})
			db.exec(t, `INSERT INTO sig VALUES ('s1', 'execute-snapshot', '{"data-collections": ["public.acct"], "type": "incremental"}')`)
			inc := readUntil(t, s, 60*time.Second, untilIncrementalDone)
			var keys []string
			for _, e := range decode(t, inc) {
				if e.Ev == nil || e.Ev.Op != connect.OpRead {
					continue
				}
				keys = append(keys, keyJSON(e.Ev.Key))
				if got := afterColumns(t, e.Rec.Value); !slices.Equal(got, pubColumns) {
					t.Errorf("incremental row %s has columns %v, want the column list %v", keyJSON(e.Ev.Key), got, pubColumns)
				}
				if strings.Contains(string(e.Rec.Value), "pw-") {
					t.Errorf("incremental row leaks a column left out of the column list: %s", e.Rec.Value)
				}
			}
			if want := []string{`{"region":"eu","id":1}`, `{"region":"eu","id":3}`, `{"region":"eu","id":5}`}; !slices.Equal(keys, want) {
				t.Errorf("incremental snapshot rows %v, want the rows of the row filter %v", keys, want)
			}
			read := findEvent(t, inc, connect.OpRead, `{"region":"eu","id":5}`)
			ins := findEvent(t, streamed, connect.OpCreate, `{"region":"eu","id":5}`)
			if read == nil || ins == nil {
				t.Fatalf("no incremental record (%v) or streamed insert (%v) of eu/5", read != nil, ins != nil)
			}
			if string(read.Key) != string(ins.Key) {
				t.Errorf("keys differ:\nsnapshot %s\nstreamed %s", read.Key, ins.Key)
			}
			if a, b := withoutSource(t, read.Value), withoutSource(t, ins.Value); a != b {
				t.Errorf("incremental record and streamed insert of the same row differ:\nsnapshot %s\nstreamed %s", a, b)
			}

			// Streaming goes on after it, by the same filter.
			db.exec(t, "UPDATE acct SET name = 'x' WHERE region = 'us'")
			db.exec(t, "UPDATE acct SET name = 'y', secret = 'pw-y' WHERE region = 'eu' AND id = 3")
			db.exec(t, "INSERT INTO acct (region, id, name) VALUES ('eu', -1, 'marker')")
			after := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
				return findEvent(t, r, connect.OpCreate, `{"region":"eu","id":-1}`) != nil
			})
			var got []string
			for _, e := range decode(t, after) {
				if e.Ev != nil && e.Rec.Topic == "src.public.acct" {
					got = append(got, string(e.Ev.Op)+" "+keyJSON(e.Ev.Key))
				}
			}
			if want := []string{`u {"region":"eu","id":3}`, `c {"region":"eu","id":-1}`}; !slices.Equal(got, want) {
				t.Errorf("streamed after the incremental snapshot %v, want %v", got, want)
			}
		})
	}
}

// TestPublication_ColumnListWithoutKey fails, saying what to run, when the
// publication's column list leaves out a key column: the events' keys
// could not be formed (and PostgreSQL refuses updates and deletes of the
// table when the publication publishes them).
func TestPublication_ColumnListWithoutKey(t *testing.T) {
	for _, mode := range []string{"never", "initial", "initial_only"} {
		t.Run(mode, func(t *testing.T) {
			db := newDB(t,
				"CREATE TABLE k (id int PRIMARY KEY, a text, b text)",
				"INSERT INTO k VALUES (1, 'a', 'b')",
				"CREATE PUBLICATION pub_k FOR TABLE k (a, b) WITH (publish = 'insert')",
			)
			s, err := tryOpen(t, db.dsn, map[string]string{"tables": "public.k", "publication": "pub_k", "snapshot.mode": mode}, nil)
			if err == nil {
				t.Cleanup(func() { s.Close(context.Background()) })
				deadline := time.Now().Add(30 * time.Second)
				for err == nil && time.Now().Before(deadline) {
					var recs []connect.Record
					recs, err = s.Read(t.Context())
					if len(recs) > 0 {
						t.Fatalf("records of a table whose key is not published:\n%s", dump(recs))
					}
				}
			}
			if err == nil || !strings.Contains(err.Error(), "id") || !strings.Contains(err.Error(), "ALTER PUBLICATION") {
				t.Fatalf("got %v, want an error naming the key column and the ALTER PUBLICATION to run", err)
			}
			if !connect.IsPermanent(err) {
				t.Errorf("error %v is not permanent", err)
			}
		})
	}
}

// keyJSON renders an event's key as JSON.
func keyJSON(k connect.Row) string {
	b, _ := k.MarshalJSON()
	return string(b)
}

// TestSnapshot_NoPublication reads every row and every column but the
// generated ones of a table no publication publishes (initial_only makes
// none), as on PostgreSQL 14, where pg_publication_tables has no row
// filters nor column lists.
func TestSnapshot_NoPublication(t *testing.T) {
	db := newDB(t, pubTableSetup[:2]...)
	s := openSource(t, db, map[string]string{"tables": "public.acct", "snapshot.mode": "initial_only"}, nil)
	recs := readRecords(t, s, 4, 30*time.Second)
	var keys []string
	for _, e := range decode(t, recs) {
		keys = append(keys, keyJSON(e.Ev.Key))
		if got, want := afterColumns(t, e.Rec.Value), []string{"region", "id", "name", "secret", "v"}; !slices.Equal(got, want) {
			t.Errorf("row %s has columns %v, want %v", keyJSON(e.Ev.Key), got, want)
		}
	}
	if len(keys) != 4 {
		t.Errorf("rows %v, want all 4", keys)
	}
}

// TestSnapshot_RowFilterProgress: the snapshot's progress of a table the
// publication filters estimates the rows the filter lets through, not the
// table's: a filter that keeps a tenth of the rows would otherwise show
// the snapshot at a tenth while it reads them all, then jump to 100%.
func TestSnapshot_RowFilterProgress(t *testing.T) {
	db := newDB(t, "CREATE TABLE f (id int PRIMARY KEY, v int)",
		"INSERT INTO f SELECT g, g FROM generate_series(1, 2000) g",
		"ANALYZE f",
		"CREATE PUBLICATION pub_f FOR TABLE f WHERE (id <= 200)")
	s := openSource(t, db, map[string]string{"tables": "public.f", "publication": "pub_f", "publication.autocreate.mode": "disabled",
		"snapshot.chunk.size": "10", "batch.size": "10"}, nil)
	// The runner waits for Read after a few chunks: the snapshot is still
	// on, its progress shown.
	prog := snapshotProgress(t, s, "public.f")["public.f"]
	t.Logf("progress while the snapshot runs: %d of %d rows", prog.Done, prog.Total)
	if prog.Total < 100 || prog.Total > 400 {
		t.Errorf("public.f estimated at %d rows, want about the 200 the row filter lets through (the table has 2000)", prog.Total)
	}
	if n := len(ids(t, readRecords(t, s, 200, 30*time.Second))); n != 200 {
		t.Errorf("%d rows read, want 200", n)
	}
}

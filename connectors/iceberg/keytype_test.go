package iceberg

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/tributary-io/tributary/connect"
)

// A key whose value is a fraction would make a double identifier field,
// which equality deletes cannot use: every commit would fail and the task
// restart forever. It is a bad record, and no table is created.
func TestSink_Upsert_FloatKeyIsBadRecord(t *testing.T) {
	e := newEnv(t, map[string]string{"mode": "upsert"})
	s := e.open(t)
	keyed := func(off int64, key, value string) connect.Record {
		r := rec("t.f", 0, off, value)
		r.Key = []byte(key)
		return r
	}
	err := s.Write(t.Context(), []connect.Record{keyed(0, `{"k":1.5}`, `{"k":1.5,"v":"a"}`)})
	if err == nil || !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "floating point") {
		t.Fatalf("Write of a record with a fractional key = %v, want a bad record about the key's type", err)
	}
	flush(t, s)
	if _, err := s.cat.LoadTable(t.Context(), catalog.ToIdentifier("t", "f")); err == nil {
		t.Errorf("a table was created for a record that was refused")
	}
	// An integer key is fine.
	write(t, s, keyed(1, `{"k":2}`, `{"k":2,"v":"b"}`))
	flush(t, s)
	if got := js(e.rows(t, "t.f", "k")); !strings.Contains(got, `"k":2`) {
		t.Errorf("table holds %s", got)
	}
}

// Upsert into an existing table partitioned by a column that is not a key
// column: equality deletes (key columns only) cannot find a row's
// partition, so every commit would fail and the task restart forever.
// The first record says so, as a permanent error, before anything is
// committed.
func TestSink_Upsert_TablePartitionedByNonKey(t *testing.T) {
	e := newEnv(t, map[string]string{"partition": "identity(g)", "metadata.columns": "false"})
	k := func(off int64, id, value string) connect.Record {
		r := rec("t.u", 0, off, value)
		r.Key = []byte(`{"id":` + id + `}`)
		return r
	}
	s := e.open(t)
	write(t, s, k(0, "1", `{"id":1,"g":"a"}`))
	flush(t, s)

	e.values["mode"] = "upsert"
	delete(e.values, "partition")
	u := e.open(t)
	err := u.Write(t.Context(), []connect.Record{k(1, "1", `{"id":1,"g":"b"}`)})
	if err == nil || !connect.IsPermanent(err) || !strings.Contains(err.Error(), "partitioned by") {
		t.Fatalf("Write = %v, want a permanent error about the table's partitioning", err)
	}
	flush(t, u)
	if got := js(e.rows(t, "t.u", "id")); got != `[{"g":"a","id":1}]` {
		t.Errorf("table holds %s", got)
	}
}

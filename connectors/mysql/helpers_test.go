package mysql

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/cdctest"
)

// openSource opens a source on d with the given settings (dsn and the
// database's tables are filled in) and closes it when the test ends.
func openSource(t *testing.T, d *testDB, values map[string]string, pos connect.Position) *Source {
	t.Helper()
	s, err := tryOpen(t, d.dsn, withTables(d, values), pos)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// withTables limits the source to the test's database unless values say
// otherwise.
func withTables(d *testDB, values map[string]string) map[string]string {
	v := map[string]string{"tables": d.name + ".*"}
	for k, x := range values {
		v[k] = x
	}
	return v
}

func tryOpen(t *testing.T, dsn string, values map[string]string, pos connect.Position) (*Source, error) {
	t.Helper()
	v := map[string]string{"dsn": dsn, "heartbeat.interval": "0"}
	for k, x := range values {
		v[k] = x
	}
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec(), Position: pos}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	err := s.Open(t.Context(), cfg)
	return s, err
}

// Shared with the other CDC source's tests (internal/cdctest).
var (
	readRecords  = cdctest.ReadRecords
	readUntil    = cdctest.ReadUntil
	expectQuiet  = cdctest.ExpectQuiet
	dump         = cdctest.Dump
	decode       = cdctest.Decode
	apply        = cdctest.Apply
	diffStates   = cdctest.DiffStates
	lastPosition = cdctest.LastPosition
)

// tableState reads a table as the same key JSON → row JSON map, through
// the connector's own value mapping (via a snapshot-only source).
func tableState(t *testing.T, d *testDB, table string) map[string]string {
	t.Helper()
	s := openSource(t, d, map[string]string{"snapshot.mode": "initial_only", "tables": d.name + "." + table}, nil)
	state := map[string]string{}
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		if len(r) == 0 {
			var n int
			d.db.QueryRow("SELECT count(*) FROM " + quoteIdent(table)).Scan(&n)
			return n == 0
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		return r[len(r)-1].Position != nil && p.Snapshot == nil
	})
	apply(t, state, recs)
	s.Close(context.Background())
	return state
}

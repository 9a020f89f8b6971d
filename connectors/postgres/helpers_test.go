package postgres

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/cdctest"
)

// openSource opens a source on db with the given settings (dsn is filled
// in) and closes it when the test ends.
func openSource(t *testing.T, db *testDB, values map[string]string, pos connect.Position) *Source {
	t.Helper()
	s, err := tryOpen(t, db.dsn, values, pos)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func tryOpen(t *testing.T, dsn string, values map[string]string, pos connect.Position) (*Source, error) {
	t.Helper()
	return tryOpenSource(t, dsn, values, nil, pos)
}

// tryOpenSource is tryOpen with a hook that adjusts the source before Open.
func tryOpenSource(t *testing.T, dsn string, values map[string]string, adjust func(*Source), pos connect.Position) (*Source, error) {
	t.Helper()
	slot := "slot_" + sanitizeIdent(t.Name())
	if len(slot) > 60 {
		slot = slot[:60]
	}
	v := map[string]string{"dsn": dsn, "heartbeat.interval": "0", "slot": slot}
	for k, x := range values {
		v[k] = x
	}
	s := Connector().NewSource().(*Source)
	s.idle = 100 * time.Millisecond
	s.reportEvery = 100 * time.Millisecond
	if adjust != nil {
		adjust(s)
	}
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

// event is a decoded change-event record.
type event = cdctest.Event

// tableState reads a table as the same key JSON → row JSON map, through
// the connector's own value mapping (via a snapshot-only source).
func tableState(t *testing.T, db *testDB, table string) map[string]string {
	t.Helper()
	s := openSource(t, db, map[string]string{"snapshot.mode": "initial_only", "tables": table}, nil)
	state := map[string]string{}
	recs := readUntil(t, s, 60*time.Second, func(r []connect.Record) bool {
		if len(r) == 0 {
			var n int
			db.conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n)
			return n == 0
		}
		p, _ := decodePosition(r[len(r)-1].Position)
		return r[len(r)-1].Position != nil && p.Snapshot == nil
	})
	apply(t, state, recs)
	s.Close(context.Background())
	return state
}

// jsonOf renders v as compact JSON for comparisons.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

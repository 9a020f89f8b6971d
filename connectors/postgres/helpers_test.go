package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
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

// readRecords reads until it has at least n records, failing after the
// timeout.
func readRecords(t *testing.T, s *Source, n int, timeout time.Duration) []connect.Record {
	t.Helper()
	var out []connect.Record
	deadline := time.Now().Add(timeout)
	for len(out) < n {
		if time.Now().After(deadline) {
			t.Fatalf("read %d records within %s, want %d:\n%s", len(out), timeout, n, dump(out))
		}
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, recs...)
	}
	return out
}

// readUntil reads until done(records so far) holds.
func readUntil(t *testing.T, s *Source, timeout time.Duration, done func([]connect.Record) bool) []connect.Record {
	t.Helper()
	var out []connect.Record
	deadline := time.Now().Add(timeout)
	for !done(out) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s after %d records:\n%s", timeout, len(out), dump(out))
		}
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, recs...)
	}
	return out
}

// expectQuiet reads for d and fails on any record.
func expectQuiet(t *testing.T, s *Source, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(recs) > 0 {
			t.Fatalf("unexpected records:\n%s", dump(recs))
		}
	}
}

func dump(recs []connect.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s key=%s value=%s pos=%s\n", r.Topic, r.Key, r.Value, r.Position)
	}
	return b.String()
}

// event is a decoded change-event record.
type event struct {
	rec connect.Record
	ev  *connect.ChangeEvent // nil for a tombstone
}

// decode decodes the change events among recs, skipping heartbeat and
// transaction records.
func decode(t *testing.T, recs []connect.Record) []event {
	t.Helper()
	var out []event
	for _, r := range recs {
		if strings.HasPrefix(r.Topic, "__debezium-heartbeat.") || strings.HasSuffix(r.Topic, ".transaction") {
			continue
		}
		e, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
		if errors.Is(err, connect.ErrTombstone) {
			out = append(out, event{rec: r})
			continue
		}
		if err != nil {
			t.Fatalf("decode %s: %v", r.Value, err)
		}
		out = append(out, event{rec: r, ev: e})
	}
	return out
}

// apply rebuilds table state from change records: key JSON → after JSON.
func apply(t *testing.T, state map[string]string, recs []connect.Record) {
	t.Helper()
	for _, e := range decode(t, recs) {
		if e.ev == nil {
			delete(state, string(e.rec.Key))
			continue
		}
		switch e.ev.Op {
		case connect.OpCreate, connect.OpUpdate, connect.OpRead:
			state[string(e.rec.Key)] = e.ev.After.String()
		case connect.OpDelete:
			delete(state, string(e.rec.Key))
		case connect.OpTruncate:
			for k := range state {
				delete(state, k)
			}
		}
	}
}

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

func diffStates(want, got map[string]string) string {
	var b strings.Builder
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range got {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	n := 0
	for _, k := range sorted {
		if want[k] != got[k] && n < 20 {
			fmt.Fprintf(&b, "  key %s: want %s, got %s\n", k, want[k], got[k])
			n++
		}
	}
	return b.String()
}

// lastPosition returns the last non-nil position among recs.
func lastPosition(recs []connect.Record) connect.Position {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Position != nil {
			return recs[i].Position
		}
	}
	return nil
}

// jsonOf renders v as compact JSON for comparisons.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Package cdctest holds what the tests of the CDC sources (postgres, mysql)
// share: reading a source until a condition holds, decoding its Debezium
// records, and rebuilding a table's state from them to compare with the
// database's own.
package cdctest

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// ReadRecords reads s until it has at least n records, failing after the
// timeout.
func ReadRecords(t testing.TB, s connect.Source, n int, timeout time.Duration) []connect.Record {
	t.Helper()
	return ReadUntil(t, s, timeout, func(recs []connect.Record) bool { return len(recs) >= n })
}

// ReadUntil reads s until done(records so far) holds, failing after the
// timeout with the records read.
func ReadUntil(t testing.TB, s connect.Source, timeout time.Duration, done func([]connect.Record) bool) []connect.Record {
	t.Helper()
	var out []connect.Record
	deadline := time.Now().Add(timeout)
	for !done(out) {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s after %d records:\n%s", timeout, len(out), Dump(out))
		}
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		out = append(out, recs...)
	}
	return out
}

// ExpectQuiet reads s for d and fails on any record.
func ExpectQuiet(t testing.TB, s connect.Source, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		recs, err := s.Read(t.Context())
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		if len(recs) > 0 {
			t.Fatalf("unexpected records:\n%s", Dump(recs))
		}
	}
}

// Dump renders records a line each, for failure messages.
func Dump(recs []connect.Record) string {
	var b strings.Builder
	for _, r := range recs {
		fmt.Fprintf(&b, "  %s key=%s value=%s pos=%s\n", r.Topic, r.Key, r.Value, r.Position)
	}
	return b.String()
}

// Event is a decoded change-event record.
type Event struct {
	Rec connect.Record
	Ev  *connect.ChangeEvent // nil for a tombstone
}

// Decode decodes the change events among recs, skipping heartbeat and
// transaction records.
func Decode(t testing.TB, recs []connect.Record) []Event {
	t.Helper()
	var out []Event
	for _, r := range recs {
		if strings.HasPrefix(r.Topic, "__debezium-heartbeat.") || strings.HasSuffix(r.Topic, ".transaction") {
			continue
		}
		e, err := connect.DebeziumJSON{}.Decode(r.Key, r.Value)
		if errors.Is(err, connect.ErrTombstone) {
			out = append(out, Event{Rec: r})
			continue
		}
		if err != nil {
			t.Fatalf("decode %s: %v", r.Value, err)
		}
		out = append(out, Event{Rec: r, Ev: e})
	}
	return out
}

// Apply rebuilds table state from change records: key JSON → after JSON.
func Apply(t testing.TB, state map[string]string, recs []connect.Record) {
	t.Helper()
	for _, e := range Decode(t, recs) {
		if e.Ev == nil {
			delete(state, string(e.Rec.Key))
			continue
		}
		switch e.Ev.Op {
		case connect.OpCreate, connect.OpUpdate, connect.OpRead:
			state[string(e.Rec.Key)] = e.Ev.After.String()
		case connect.OpDelete:
			delete(state, string(e.Rec.Key))
		case connect.OpTruncate:
			clear(state)
		}
	}
}

// DiffStates lists (up to 20) keys whose rows differ between two states,
// empty when they are equal.
func DiffStates(want, got map[string]string) string {
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
	var b strings.Builder
	n := 0
	for _, k := range sorted {
		if want[k] != got[k] && n < 20 {
			fmt.Fprintf(&b, "  key %s: want %s, got %s\n", k, want[k], got[k])
			n++
		}
	}
	return b.String()
}

// LastPosition returns the last non-nil position among recs.
func LastPosition(recs []connect.Record) connect.Position {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Position != nil {
			return recs[i].Position
		}
	}
	return nil
}

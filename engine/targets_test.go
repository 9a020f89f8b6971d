package engine

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// The newest record of the target states' topic wins, whichever order the
// follower and the worker's own writes arrive in; a record for another
// pipeline's connector of the same name, or a tombstone, leaves the
// connector as it is.
func TestTargets_NewestRecordWins(t *testing.T) {
	h := newHarness(t, t.TempDir())
	w := h.worker
	spec := ConnectorSpec{Pipeline: "p", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers", Config: map[string]string{"max": "10"}}
	if err := w.Start(t.Context(), spec, StateStopped); err != nil {
		t.Fatal(err)
	}
	r, err := w.runner("src")
	if err != nil {
		t.Fatal(err)
	}
	id := targetID{"p", "src"}
	steps := []struct {
		id      targetID
		state   State
		offset  int64
		applied bool
		want    State
	}{
		{id, StatePaused, 5, true, StatePaused},
		{id, StateRunning, 3, false, StatePaused},                   // older: a write the follower reads late
		{id, StateRunning, 5, false, StatePaused},                   // the same record again (own write, read back)
		{id, StateStopped, 7, true, StateStopped},                   // newer
		{targetID{"q", "src"}, StateRunning, 8, true, StateStopped}, // another pipeline's src
		{id, "", 9, true, StateStopped},                             // a tombstone forgets, changes nothing
		{id, StatePaused, 8, false, StateStopped},                   // older than the tombstone
		{id, StateRunning, 10, true, StateRunning},                  // newer again
	}
	w.mu.Lock()
	w.targets = map[targetID]clusterTarget{}
	w.mu.Unlock()
	for i, s := range steps {
		w.mu.Lock()
		applied := w.applyTargetLocked(s.id, s.state, s.offset)
		w.mu.Unlock()
		if applied != s.applied || r.targetState() != s.want {
			t.Fatalf("step %d (%v %q at %d): applied %v, target %s; want %v, %s", i, s.id, s.state, s.offset, applied, r.targetState(), s.applied, s.want)
		}
	}
	w.mu.Lock()
	got := w.recordedTargetLocked("q", "src")
	w.mu.Unlock()
	if got != StateRunning {
		t.Fatalf("recorded target of q/src = %q, want RUNNING", got)
	}
}

// Records that are not target states are skipped, not applied.
func TestTargets_DecodeSkipsForeignRecords(t *testing.T) {
	key := targetKey(targetID{"p", "src"})
	for _, tc := range []struct {
		name   string
		rec    connect.Record
		ok     bool
		id     targetID
		state  State
		worker string
	}{
		{"state", connect.Record{Key: key, Value: []byte(`{"state":"PAUSED","worker_id":"w1","ts_ms":1}`)}, true, targetID{"p", "src"}, StatePaused, "w1"},
		{"tombstone", connect.Record{Key: key}, true, targetID{"p", "src"}, "", ""},
		{"unknown state", connect.Record{Key: key, Value: []byte(`{"state":"FAILED"}`)}, false, targetID{}, "", ""},
		{"bad value", connect.Record{Key: key, Value: []byte(`PAUSED`)}, false, targetID{}, "", ""},
		{"kafka connect key", connect.Record{Key: []byte(`target-state-src`), Value: []byte(`{"state":"PAUSED"}`)}, false, targetID{}, "", ""},
		{"short key", connect.Record{Key: []byte(`["src"]`), Value: []byte(`{"state":"PAUSED"}`)}, false, targetID{}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, v, ok := decodeTarget(tc.rec)
			if ok != tc.ok || (ok && (id != tc.id || v.State != tc.state || v.WorkerID != tc.worker)) {
				t.Fatalf("decodeTarget = %v %+v %v; want %v %q %q %v", id, v, ok, tc.id, tc.state, tc.worker, tc.ok)
			}
		})
	}
}

// The embedded backend shares no target states: a pause stays in the
// worker's memory, and no targets topic is created.
func TestTargets_EmbeddedWritesNothing(t *testing.T) {
	h := newHarness(t, t.TempDir())
	spec := ConnectorSpec{Pipeline: "p", Name: "src", Kind: connect.KindSource, Connector: "count", Topic: "numbers", Config: map[string]string{"max": "10"}}
	if err := h.worker.Start(t.Context(), spec, StatePaused); err != nil {
		t.Fatal(err)
	}
	if err := h.worker.PauseContext(t.Context(), "src"); err != nil {
		t.Fatal(err)
	}
	if st, _ := h.worker.Status("src"); st.State != StatePaused {
		t.Fatalf("state %s, want PAUSED", st.State)
	}
	topics, err := h.worker.Backend().ListTopics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(topics, TargetsTopic) {
		t.Fatalf("the embedded backend has %s: %v", TargetsTopic, topics)
	}
}

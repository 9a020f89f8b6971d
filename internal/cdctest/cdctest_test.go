package cdctest

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func record(t *testing.T, op connect.Op, id int64, name string) connect.Record {
	t.Helper()
	row := connect.Row{{Name: "id", Value: id}, {Name: "name", Value: name}}
	e := &connect.ChangeEvent{Op: op, Key: connect.Row{{Name: "id", Value: id}},
		Source: connect.SourceInfo{Connector: "mysql", Name: "db", DB: "shop", Extra: connect.Row{{Name: "table", Value: "items"}}}}
	if op == connect.OpDelete {
		e.Before = row
	} else {
		e.After = row
	}
	r, err := connect.DebeziumJSON{}.Record("db.shop.items", e)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestApply rebuilds a table from creates, updates, deletes and a
// tombstone, skipping heartbeats, and DiffStates names the differing key.
func TestApply(t *testing.T) {
	c1, c2 := record(t, connect.OpCreate, 1, "a"), record(t, connect.OpCreate, 2, "b")
	u1 := record(t, connect.OpUpdate, 1, "a2")
	d2 := record(t, connect.OpDelete, 2, "b")
	tomb := connect.Record{Topic: d2.Topic, Key: d2.Key}
	heartbeat := connect.Record{Topic: "__debezium-heartbeat.db", Value: []byte(`{"ts_ms":1}`)}
	state := map[string]string{}
	Apply(t, state, []connect.Record{c1, c2, heartbeat, u1, d2, tomb})
	if len(state) != 1 || !strings.Contains(state[string(c1.Key)], `"a2"`) {
		t.Fatalf("state %v, want only id 1 named a2", state)
	}
	want := map[string]string{string(c1.Key): state[string(c1.Key)], string(c2.Key): "x"}
	if d := DiffStates(want, state); !strings.Contains(d, string(c2.Key)) || strings.Contains(d, string(c1.Key)) {
		t.Fatalf("DiffStates = %q, want only key 2", d)
	}
	if DiffStates(state, state) != "" {
		t.Fatal("DiffStates of equal states is not empty")
	}
	c1.Position = connect.Position("p1")
	if p := LastPosition([]connect.Record{c1, c2}); string(p) != "p1" {
		t.Fatalf("LastPosition = %q", p)
	}
}

package cdc

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestNullsOptional(t *testing.T) {
	es, err := connect.NewEventSchema("p.db.t", []connect.Schema{
		{Type: connect.SchemaInt64, Field: "id"},
		{Type: connect.SchemaString, Field: "req"},
		{Type: connect.SchemaString, Optional: true, Field: "opt"},
		{Type: connect.SchemaInt32, Field: "req2"},
	}, []string{"id"})
	if err != nil {
		t.Fatal(err)
	}
	row := func(vals ...any) connect.Row {
		r := make(connect.Row, len(vals))
		for i, v := range vals {
			r[i] = connect.Field{Name: es.Row.Fields[i].Field, Value: v}
		}
		return r
	}
	optional := func(s *connect.EventSchema) []bool {
		var o []bool
		for _, f := range s.Row.Fields {
			o = append(o, f.Optional)
		}
		return o
	}
	for _, tc := range []struct {
		name          string
		before, after connect.Row
		same          bool
		want          []bool
	}{
		{"no nulls", nil, row(int64(1), "a", "b", int32(2)), true, nil},
		{"null in an optional column", row(int64(1), "a", nil, int32(2)), row(int64(1), "a", nil, int32(3)), true, nil},
		{"null after", nil, row(int64(1), nil, "b", int32(2)), false, []bool{false, true, true, false}},
		{"null before only", row(int64(1), "a", "b", nil), row(int64(1), "a", "b", int32(2)), false, []bool{false, false, true, true}},
		{"both", row(int64(1), nil, nil, int32(1)), row(int64(1), "a", nil, nil), false, []bool{false, true, true, true}},
		{"short row", nil, row(int64(1)), true, nil},
	} {
		got := NullsOptional(es, tc.before, tc.after)
		if tc.same {
			if got != es {
				t.Errorf("%s: got a copy, want the table's schema", tc.name)
			}
			continue
		}
		if got == es || got.Row == es.Row {
			t.Fatalf("%s: the table's schema was changed in place", tc.name)
		}
		if o := optional(got); len(o) != len(tc.want) || o[0] != tc.want[0] || o[1] != tc.want[1] || o[2] != tc.want[2] || o[3] != tc.want[3] {
			t.Errorf("%s: optional = %v, want %v", tc.name, o, tc.want)
		}
		if o := optional(es); o[0] || o[1] || !o[2] || o[3] {
			t.Errorf("%s: the table's schema changed: optional = %v", tc.name, o)
		}
		if got.Key != es.Key || got.Name != es.Name || got.Row.Name != es.Row.Name {
			t.Errorf("%s: the copy differs beyond the row's fields", tc.name)
		}
	}
	if NullsOptional(nil, nil, nil) != nil {
		t.Error("NullsOptional(nil) != nil")
	}
}

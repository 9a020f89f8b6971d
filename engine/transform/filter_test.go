package transform

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestFilter_Apply(t *testing.T) {
	paid := rec(`{"status":"paid","amount":10.0,"vip":true,"note":null,"tags":["a"],"user":{"plan":"pro"}}`)
	keep := func(r connect.Record) []connect.Record { return []connect.Record{r} }
	var none []connect.Record
	cfg := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	runApply(t, "filter", []applyCase{
		{"equals string, drop", cfg("action", "drop", "field", "status", "equals", "paid"), paid, none, ""},
		{"equals string, keep", cfg("action", "keep", "field", "status", "equals", "paid"), paid, keep(paid), ""},
		{"equals other, drop passes", cfg("action", "drop", "field", "status", "equals", "open"), paid, keep(paid), ""},
		{"equals other, keep drops", cfg("action", "keep", "field", "status", "equals", "open"), paid, none, ""},
		{"number by value", cfg("action", "keep", "field", "amount", "equals", "10"), paid, keep(paid), ""},
		{"boolean", cfg("action", "keep", "field", "vip", "equals", "true"), paid, keep(paid), ""},
		{"null", cfg("action", "keep", "field", "note", "equals", "null"), paid, keep(paid), ""},
		{"nested path", cfg("action", "keep", "field", "user.plan", "equals", "pro"), paid, keep(paid), ""},
		{"missing field never equals", cfg("action", "keep", "field", "user.email", "equals", "null"), paid, none, ""},
		{"not.equals", cfg("action", "keep", "field", "status", "not.equals", "open"), paid, keep(paid), ""},
		{"not.equals same", cfg("action", "keep", "field", "status", "not.equals", "paid"), paid, none, ""},
		{"not.equals missing field", cfg("action", "keep", "field", "nope", "not.equals", "x"), paid, keep(paid), ""},
		{"in", cfg("action", "keep", "field", "status", "in", "open, paid"), paid, keep(paid), ""},
		{"in, none", cfg("action", "keep", "field", "status", "in", "open,void"), paid, none, ""},
		{"matches whole", cfg("action", "keep", "field", "status", "matches", "pa.d"), paid, keep(paid), ""},
		{"matches is anchored", cfg("action", "keep", "field", "status", "matches", "pa"), paid, none, ""},
		{"matches an array as JSON", cfg("action", "keep", "field", "tags", "matches", `\["a"\]`), paid, keep(paid), ""},
		{"exists", cfg("action", "keep", "field", "note", "exists", "true"), paid, keep(paid), ""},
		{"exists false", cfg("action", "keep", "field", "note", "exists", "false"), paid, none, ""},
		{"absent", cfg("action", "drop", "field", "deleted_at", "exists", "false"), paid, none, ""},
		{"topic", cfg("action", "keep", "topic.matches", "ord.*"), paid, keep(paid), ""},
		{"topic anchored", cfg("action", "keep", "topic.matches", "ord"), paid, none, ""},
		{"key", cfg("action", "drop", "key.matches", `\{"id":7\}`), paid, none, ""},
		{"null key never matches", cfg("action", "keep", "key.matches", ".*"), with(paid, func(r *connect.Record) { r.Key = nil }), none, ""},
		{"drop tombstones", cfg("action", "drop", "tombstone", "true"), rec(""), none, ""},
		{"keep non-tombstones", cfg("action", "keep", "tombstone", "false"), paid, keep(paid), ""},
		{"all conditions must hold", cfg("action", "keep", "topic.matches", "orders", "field", "status", "equals", "open"), paid, none, ""},
		{"all conditions hold", cfg("action", "keep", "topic.matches", "orders", "tombstone", "false", "field", "status", "equals", "paid"), paid, keep(paid), ""},
		{"tombstone has no fields", cfg("action", "keep", "field", "status", "exists", "false"), rec(""), keep(rec("")), ""},
		{"tombstone and equals", cfg("action", "keep", "field", "status", "equals", "paid"), rec(""), none, ""},
		{"schema envelope", cfg("action", "keep", "field", "status", "equals", "paid"),
			rec(`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":{"status":"paid"}}`),
			keep(rec(`{"schema":{"type":"struct","fields":[{"type":"string","field":"status"}]},"payload":{"status":"paid"}}`)), ""},
		{"debezium after", cfg("action", "drop", "field", "after.status", "equals", "test"),
			rec(`{"before":null,"after":{"status":"test"},"op":"c"}`), none, ""},
		{"value not JSON", cfg("action", "keep", "field", "status", "equals", "x"), rec(`status=paid`), nil, "filter: field status: the record value is not JSON"},
		{"value not an object", cfg("action", "keep", "field", "status", "equals", "x"), rec(`[1,2]`), nil, "the record value is an array"},
		{"non-JSON value passes topic conditions", cfg("action", "keep", "topic.matches", "orders"), rec(`status=paid`), keep(rec(`status=paid`)), ""},
	})
}

func TestFilter_Config(t *testing.T) {
	runConfig(t, "filter", []configCase{
		{"no action", map[string]string{"field": "a", "equals": "b"}, "action: required parameter is missing"},
		{"bad action", map[string]string{"action": "maybe", "tombstone": "true"}, `"maybe" is not one of: drop, keep`},
		{"no condition", map[string]string{"action": "drop"}, "a filter needs a condition"},
		{"field without test", map[string]string{"action": "drop", "field": "a"}, "give one of equals"},
		{"two tests", map[string]string{"action": "drop", "field": "a", "equals": "1", "in": "1,2"}, "give only one of"},
		{"test without field", map[string]string{"action": "drop", "equals": "1"}, "equals needs field"},
		{"bad regexp", map[string]string{"action": "drop", "field": "a", "matches": "("}, "matches: \"(\" is not a valid regular expression"},
		{"bad topic regexp", map[string]string{"action": "drop", "topic.matches": "[a"}, "topic.matches:"},
		{"bad key regexp", map[string]string{"action": "drop", "key.matches": "*"}, "key.matches:"},
		{"bad path", map[string]string{"action": "drop", "field": "a..b", "exists": "true"}, "empty part"},
		{"bad bool", map[string]string{"action": "drop", "tombstone": "yes"}, "not a boolean"},
	})
}

// A filter on a 64-bit id (a bigint primary key, a snowflake id) must not
// match a different id: integers are compared exactly, not through
// float64, where ids that differ only beyond 2^53 are equal.
func TestFilter_EqualsComparesIntegersExactly(t *testing.T) {
	tr := mustNew(t, "filter", map[string]string{"action": "drop", "field": "id", "equals": "1234567890123456789"})
	in := rec(`{"id":1234567890123456788}`)
	got, err := tr.Apply(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Errorf("filter equals 1234567890123456789 dropped the record of id 1234567890123456788")
	}
	tr = mustNew(t, "filter", map[string]string{"action": "keep", "field": "id", "in": "9007199254740992"})
	if got, _ := tr.Apply(rec(`{"id":9007199254740993}`)); len(got) != 0 {
		t.Errorf("filter in [9007199254740992] kept the record of id 9007199254740993")
	}
	// Numbers with a fraction or an exponent are still compared by value.
	tr = mustNew(t, "filter", map[string]string{"action": "keep", "field": "n", "equals": "1e3"})
	if got, _ := tr.Apply(rec(`{"n":1000.0}`)); len(got) != 1 {
		t.Errorf("filter equals 1e3 dropped the record of n 1000.0")
	}
	tr = mustNew(t, "filter", map[string]string{"action": "keep", "field": "n", "equals": "-0"})
	if got, _ := tr.Apply(rec(`{"n":0}`)); len(got) != 1 {
		t.Errorf("filter equals -0 dropped the record of n 0")
	}
}

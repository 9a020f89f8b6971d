package transform

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestRoute_Apply(t *testing.T) {
	in := rec(`{"event":"Order Completed","type":"track","n":3,"props":{"region":"eu"},"obj":{},"nil":null}`)
	to := func(r connect.Record, topic string) []connect.Record {
		return []connect.Record{with(r, func(r *connect.Record) { r.Topic = topic })}
	}
	raw := with(in, func(r *connect.Record) { r.Key = []byte("user-42") })
	runApply(t, "route", []applyCase{
		{"static", map[string]string{"topic": "archive"}, in, to(in, "archive"), ""},
		{"topic suffix", map[string]string{"topic": "{topic}-archive"}, in, to(in, "orders-archive"), ""},
		{"value field", map[string]string{"topic": "events.{value.type}"}, in, to(in, "events.track"), ""},
		{"nested and number", map[string]string{"topic": "{value.props.region}.{value.n}"}, in, to(in, "eu.3"), ""},
		{"partition and offset", map[string]string{"topic": "p{partition}_o{offset}"}, in, to(in, "p2_o41"), ""},
		{"raw key", map[string]string{"topic": "by-user.{key}"}, raw, to(raw, "by-user.user-42"), ""},
		{"key field", map[string]string{"topic": "t.{key.id}"}, in, to(in, "t.7"), ""},
		{"schema value", map[string]string{"topic": "{value.type}"}, rec(`{"schema":{"type":"struct"},"payload":{"type":"page"}}`),
			to(rec(`{"schema":{"type":"struct"},"payload":{"type":"page"}}`), "page"), ""},
		{"value with a space is no topic", map[string]string{"topic": "{value.event}"}, in, nil, `route: topic name "Order Completed" has " "`},
		{"missing field", map[string]string{"topic": "{value.nope}"}, in, nil, "route: field nope: {value.nope}: the field is missing"},
		{"null field", map[string]string{"topic": "{value.nil}"}, in, nil, "the field is null"},
		{"object field", map[string]string{"topic": "{value.obj}"}, in, nil, "the field is an object"},
		{"not JSON", map[string]string{"topic": "{value.type}"}, rec("type=x"), nil, "route: field type: the record value is not JSON"},
		{"tombstone with value field", map[string]string{"topic": "{value.type}"}, rec(""), nil, "the record value is null"},
		{"tombstone with topic", map[string]string{"topic": "{topic}.x"}, rec(""), to(rec(""), "orders.x"), ""},
		{"null key", map[string]string{"topic": "{key}"}, with(in, func(r *connect.Record) { r.Key = nil }), nil, "the record key is null"},
		{"JSON key is no topic", map[string]string{"topic": "{key}"}, in, nil, `topic name "{\"id\":7}"`},
		{"key not an object", map[string]string{"topic": "{key.id}"}, raw, nil, "the record key is not a JSON object"},
		{"too long", map[string]string{"topic": strings.Repeat("a", 245) + "{topic}"}, in, nil, "longer than 249"},
		{"regex", map[string]string{"regex": `dbserver1\.inventory\.(.*)`, "replacement": "cdc.${1}"},
			with(in, func(r *connect.Record) { r.Topic = "dbserver1.inventory.orders" }), to(in, "cdc.orders"), ""},
		{"regex $1", map[string]string{"regex": `(.*)`, "replacement": "$1-archive"}, in, to(in, "orders-archive"), ""},
		{"regex no match", map[string]string{"regex": `ord`, "replacement": "x"}, in, to(in, "orders"), ""},
		{"regex to a bad name", map[string]string{"regex": `orders`, "replacement": "a b"}, in, nil, "topic name"},
	})
	runConfig(t, "route", []configCase{
		{"nothing", nil, "give topic"},
		{"both", map[string]string{"topic": "a", "regex": "b", "replacement": "c"}, "not both"},
		{"regex alone", map[string]string{"regex": "b"}, "regex needs replacement"},
		{"replacement alone", map[string]string{"topic": "a", "replacement": "c"}, "replacement goes with regex"},
		{"bad regex", map[string]string{"regex": "(", "replacement": "c"}, "not a valid regular expression"},
		{"unclosed", map[string]string{"topic": "a.{value.x"}, "without a closing }"},
		{"unknown placeholder", map[string]string{"topic": "{table}"}, "unknown placeholder {table}"},
		{"bad path", map[string]string{"topic": "{value.}"}, "placeholder {value.}"},
		{"bad literal", map[string]string{"topic": "a b.{topic}"}, `" " cannot be part of a topic name`},
	})
}

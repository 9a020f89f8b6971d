package transform_test

import (
	"fmt"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine/transform"
)

// A chain that flattens a Debezium change event, hides the e-mail address
// and routes the row by its status.
func Example() {
	reg := transform.Builtin()
	var chain transform.Chain
	for _, step := range []struct {
		typ string
		cfg map[string]string
	}{
		{"unwrap", map[string]string{"add.fields": "op,source.ts_ms"}},
		{"mask_fields", map[string]string{"fields": "email"}},
		{"route", map[string]string{"topic": "orders.{value.status}"}},
	} {
		t, err := reg.New(step.typ, step.cfg)
		if err != nil {
			fmt.Println(err)
			return
		}
		chain = append(chain, t)
	}

	out, err := chain.Apply(connect.Record{
		Topic: "pg.public.orders",
		Key:   []byte(`{"id":7}`),
		Value: []byte(`{"before":null,"after":{"id":7,"email":"ann@example.com","status":"paid"},` +
			`"source":{"connector":"postgresql","ts_ms":1714000000000,"table":"orders"},"op":"c","ts_ms":1714000000042}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range out {
		fmt.Printf("%s %s %s\n", r.Topic, r.Key, r.Value)
	}
	// Output:
	// orders.paid {"id":7} {"id":7,"email":"****","status":"paid","__op":"c","__source_ts_ms":1714000000000}
}

// Registry.New checks a configuration against the transform's spec and
// reports every problem at once.
func ExampleRegistry_New() {
	_, err := transform.Builtin().New("filter", map[string]string{"action": "skip", "field": "status", "equal": "test"})
	fmt.Println(err)
	// Output:
	// transform filter: action: "skip" is not one of: drop, keep; equal: unknown parameter; valid ones are: action, equals, exists, field, in, key.matches, matches, not.equals, tombstone, topic.matches
}

// A record the transform cannot handle is a bad record: the worker
// dead-letters it.
func ExampleError() {
	mask, _ := transform.Builtin().New("mask_fields", map[string]string{"fields": "email"})
	_, err := mask.Apply(connect.Record{Topic: "users", Value: []byte("email=ann@example.com")})
	fmt.Println(connect.IsBadRecord(err))
	fmt.Println(err)
	// Output:
	// true
	// mask_fields: field email: the record value is not JSON: invalid character 'e' looking for beginning of value
}

package transform

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

type passThrough struct{}

func (passThrough) Apply(r connect.Record) ([]connect.Record, error) { return []connect.Record{r}, nil }

func TestRegistry_Register(t *testing.T) {
	newPass := func(connect.Config) (Transform, error) { return passThrough{}, nil }
	tests := []struct {
		name string
		def  Definition
		err  string
	}{
		{"ok", Definition{Name: "pass", New: newPass}, ""},
		{"no name", Definition{New: newPass}, "needs a name"},
		{"no constructor", Definition{Name: "x"}, "no constructor"},
		{"duplicate parameter", Definition{Name: "x", New: newPass, Spec: connect.Spec{Params: []connect.Param{{Name: "a"}, {Name: "a"}}}}, `parameter "a" is declared twice`},
		{"bad default", Definition{Name: "x", New: newPass, Spec: connect.Spec{Params: []connect.Param{{Name: "n", Type: connect.TypeInt, Default: "many"}}}}, "invalid default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := NewRegistry().Register(tc.def)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Register: error %v, want one containing %q", err, tc.err)
			}
		})
	}

	r := NewRegistry()
	r.MustRegister(Definition{Name: "pass", New: newPass})
	if err := r.Register(Definition{Name: "pass", New: newPass}); err == nil {
		t.Error("registering a name twice succeeded")
	}
}

func TestRegistry_Lookup(t *testing.T) {
	r := NewRegistry()
	_, err := r.Lookup("filter")
	if !errors.Is(err, ErrUnknownTransform) || !strings.Contains(err.Error(), "no transforms are registered") {
		t.Errorf("empty registry: %v", err)
	}
	_, err = Builtin().Lookup("fitler")
	if !errors.Is(err, ErrUnknownTransform) || !strings.Contains(err.Error(), "valid: drop_fields, filter,") {
		t.Errorf("unknown name: %v", err)
	}
	if d, err := Builtin().Lookup("unwrap"); err != nil || d.Name != "unwrap" || d.Description == "" {
		t.Errorf("Lookup(unwrap) = %+v, %v", d, err)
	}
}

func TestBuiltin(t *testing.T) {
	want := []string{"drop_fields", "filter", "insert_field", "key_from_fields", "mask_fields", "rename_fields", "route", "timestamp_convert", "unwrap"}
	b := Builtin()
	if got := b.Names(); !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for _, name := range want {
		spec, ok := b.Spec(name)
		if !ok || len(spec.Params) == 0 {
			t.Errorf("Spec(%s) = %v, %v", name, spec, ok)
		}
		for _, p := range spec.Params {
			if p.Description == "" {
				t.Errorf("%s: parameter %s has no description", name, p.Name)
			}
		}
	}
	if _, ok := b.Spec("nope"); ok {
		t.Error("Spec(nope) found a spec")
	}
	// Each call is a new registry: adding to one leaves the others alone.
	b.MustRegister(Definition{Name: "extra", New: func(connect.Config) (Transform, error) { return passThrough{}, nil }})
	if _, ok := Builtin().Spec("extra"); ok {
		t.Error("Builtin registries share state")
	}
}

func TestRegistry_New(t *testing.T) {
	b := Builtin()
	_, err := b.New("filter", map[string]string{"action": "sometimes", "colour": "red", "exists": "maybe"})
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New: error %v, want a *ConfigError", err)
	}
	var params []string
	for _, p := range ce.Problems {
		params = append(params, p.Param)
	}
	if want := []string{"action", "colour", "exists"}; !reflect.DeepEqual(params, want) {
		t.Errorf("problems with %v, want all of %v: %v", params, want, err)
	}
	if !strings.HasPrefix(err.Error(), "transform filter: action: ") {
		t.Errorf("message %q", err)
	}

	// Defaults are filled in before the constructor runs.
	r := NewRegistry()
	var seen map[string]string
	r.MustRegister(Definition{
		Name: "probe",
		Spec: connect.Spec{Params: []connect.Param{{Name: "a", Type: connect.TypeString, Default: "x"}, {Name: "b", Type: connect.TypeString}}},
		New: func(cfg connect.Config) (Transform, error) {
			seen = cfg.Values
			return passThrough{}, nil
		},
	})
	if _, err := r.New("probe", nil); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, map[string]string{"a": "x"}) {
		t.Errorf("constructor saw %v", seen)
	}

	// Other constructor errors name the transform.
	r.MustRegister(Definition{Name: "broken", New: func(connect.Config) (Transform, error) { return nil, errors.New("boom") }})
	if _, err := r.New("broken", nil); err == nil || err.Error() != "transform broken: boom" {
		t.Errorf("constructor error: %v", err)
	}
	if _, err := r.New("nope", nil); !errors.Is(err, ErrUnknownTransform) {
		t.Errorf("unknown type: %v", err)
	}
}

// The factory the worker takes is func(string, map[string]string)
// (Transformer, error) with Transformer's method set equal to Transform's.
func TestRegistry_New_FactoryShape(t *testing.T) {
	type transformer interface {
		Apply(r connect.Record) ([]connect.Record, error)
	}
	b := Builtin()
	factory := func(typ string, cfg map[string]string) (transformer, error) { return b.New(typ, cfg) }
	tr, err := factory("route", map[string]string{"topic": "x"})
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.Apply(rec(`{}`))
	if err != nil || len(out) != 1 || out[0].Topic != "x" {
		t.Errorf("Apply = %v, %v", out, err)
	}
}

func TestChain(t *testing.T) {
	chain := Chain{
		mustNew(t, "unwrap", map[string]string{"add.fields": "op"}),
		mustNew(t, "filter", map[string]string{"field": "status", "equals": "test", "action": "drop"}),
		mustNew(t, "mask_fields", map[string]string{"fields": "email", "hash": "sha256"}),
		mustNew(t, "rename_fields", map[string]string{"renames": "__op:op"}),
		mustNew(t, "key_from_fields", map[string]string{"fields": "id"}),
		mustNew(t, "route", map[string]string{"topic": "{topic}.{value.op}"}),
	}
	event := func(op, status string) connect.Record {
		return rec(`{"before":null,"after":{"id":1,"email":"a@example.com","status":"` + status + `"},"source":{"table":"orders"},"op":"` + op + `","ts_ms":1}`)
	}
	got, err := chain.Apply(event("c", "paid"))
	if err != nil {
		t.Fatal(err)
	}
	digest := fmt.Sprintf("%x", sha256.Sum256([]byte("a@example.com")))
	want := with(rec(`{"id":1,"email":"`+digest+`","status":"paid","op":"c"}`), func(r *connect.Record) {
		r.Key = []byte(`{"id":1}`)
		r.Topic = "orders.c"
	})
	if !equalRecords(got, []connect.Record{want}) {
		t.Errorf("got  %s\nwant %s", show(got), show([]connect.Record{want}))
	}

	if got, err := chain.Apply(event("u", "test")); err != nil || len(got) != 0 {
		t.Errorf("filtered record: %s, %v", show(got), err)
	}
	if got, err := chain.Apply(rec("")); err != nil || len(got) != 0 {
		t.Errorf("tombstone (dropped by unwrap): %s, %v", show(got), err)
	}
	_, err = Chain{mustNew(t, "mask_fields", map[string]string{"fields": "email"})}.Apply(rec("not json"))
	checkBadRecord(t, err, "mask_fields", "field email: the record value is not JSON")

	if got, err := (Chain{}).Apply(rec(`{"a":1}`)); err != nil || !equalRecords(got, []connect.Record{rec(`{"a":1}`)}) {
		t.Errorf("empty chain: %s, %v", show(got), err)
	}
}

// A transform that returns several records feeds each through the rest.
func TestChain_FanOut(t *testing.T) {
	split := fanOut{}
	chain := Chain{split, mustNew(t, "insert_field", map[string]string{"field": "n", "from": "offset"})}
	got, err := chain.Apply(rec(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []connect.Record{
		with(rec(`{"n":41}`), func(r *connect.Record) {}),
		with(rec(`{"n":42}`), func(r *connect.Record) { r.Offset = 42 }),
	}
	if !equalRecords(got, want) {
		t.Errorf("got %s\nwant %s", show(got), show(want))
	}
}

type fanOut struct{}

func (fanOut) Apply(r connect.Record) ([]connect.Record, error) {
	second := r
	second.Offset++
	return []connect.Record{r, second}, nil
}

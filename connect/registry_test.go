package connect

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
)

// nopSource and nopSink are the smallest connectors, for registry tests.
type nopSource struct{}

var _ Source = (*nopSource)(nil)

func (*nopSource) Open(context.Context, Config) error     { return nil }
func (*nopSource) Read(context.Context) ([]Record, error) { return nil, nil }
func (*nopSource) Ack(context.Context, Position) error    { return nil }
func (*nopSource) Close(context.Context) error            { return nil }
func newNopSource() Source                                { return &nopSource{} }

type nopSink struct{}

var _ Sink = (*nopSink)(nil)

func (*nopSink) Open(context.Context, Config) error    { return nil }
func (*nopSink) Write(context.Context, []Record) error { return nil }
func (*nopSink) Close(context.Context) error           { return nil }
func newNopSink() Sink                                 { return &nopSink{} }

func TestRegistry(t *testing.T) {
	r := NewRegistry()
	for _, c := range []Connector{
		{Name: "postgres", Kind: KindSource, NewSource: newNopSource},
		{Name: "generator", Kind: KindSource, NewSource: newNopSource},
		{Name: "file", Kind: KindSink, NewSink: newNopSink},
		{Name: "file", Kind: KindSource, NewSource: newNopSource}, // same name, other kind
	} {
		if err := r.Register(c); err != nil {
			t.Fatalf("Register(%s %s): %v", c.Kind, c.Name, err)
		}
	}
	c, err := r.Lookup(KindSink, "file")
	if err != nil || c.Name != "file" || c.Kind != KindSink || c.NewSink == nil {
		t.Errorf("Lookup(sink, file) = %+v, %v", c, err)
	}
	_, err = r.Lookup(KindSource, "mysql")
	if !errors.Is(err, ErrUnknownConnector) || !strings.Contains(err.Error(), "valid: file, generator, postgres") {
		t.Errorf("Lookup(source, mysql) error = %v, want ErrUnknownConnector listing the sources", err)
	}
	_, err = NewRegistry().Lookup(KindSink, "x")
	if !errors.Is(err, ErrUnknownConnector) || !strings.Contains(err.Error(), "no sink connectors are registered") {
		t.Errorf("Lookup in an empty registry: %v", err)
	}
	if got, want := r.Names(KindSource), []string{"file", "generator", "postgres"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names(source) = %v, want %v", got, want)
	}
	var listed []string
	for _, c := range r.List() {
		listed = append(listed, string(c.Kind)+"/"+c.Name)
	}
	if want := []string{"sink/file", "source/file", "source/generator", "source/postgres"}; !reflect.DeepEqual(listed, want) {
		t.Errorf("List = %v, want %v", listed, want)
	}

	clone := r.Clone()
	clone.MustRegister(Connector{Name: "test", Kind: KindSink, NewSink: newNopSink})
	if _, err := r.Lookup(KindSink, "test"); err == nil {
		t.Error("registering into a clone changed the original")
	}
	if _, err := clone.Lookup(KindSource, "postgres"); err != nil {
		t.Errorf("clone lacks the original's connectors: %v", err)
	}
}

func TestRegistry_RegisterErrors(t *testing.T) {
	r := NewRegistry()
	r.MustRegister(Connector{Name: "file", Kind: KindSink, NewSink: newNopSink})
	tests := []struct {
		name string
		c    Connector
		want string
	}{
		{"no name", Connector{Kind: KindSink, NewSink: newNopSink}, "no name"},
		{"bad kind", Connector{Name: "x", Kind: "transform"}, `kind "transform" is neither`},
		{"source without factory", Connector{Name: "x", Kind: KindSource}, "set NewSource"},
		{"sink with source factory", Connector{Name: "x", Kind: KindSink, NewSink: newNopSink, NewSource: newNopSource}, "only NewSink"},
		{"duplicate", Connector{Name: "file", Kind: KindSink, NewSink: newNopSink}, `sink connector "file" is already registered`},
		{"duplicate param", Connector{Name: "x", Kind: KindSink, NewSink: newNopSink,
			Spec: Spec{Params: []Param{{Name: "a", Type: TypeString}, {Name: "a", Type: TypeInt}}}}, `parameter "a" is declared twice`},
		{"bad default", Connector{Name: "x", Kind: KindSink, NewSink: newNopSink,
			Spec: Spec{Params: []Param{{Name: "n", Type: TypeInt, Default: "ten"}}}}, `default of "n": "ten" is not an integer`},
	}
	for _, tt := range tests {
		err := r.Register(tt.c)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Register error = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("MustRegister of a duplicate did not panic")
		}
	}()
	r.MustRegister(Connector{Name: "file", Kind: KindSink, NewSink: newNopSink})
}

func TestRegistry_Concurrent(t *testing.T) {
	r := NewRegistry()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("sink-%d", i)
			if err := r.Register(Connector{Name: name, Kind: KindSink, NewSink: newNopSink}); err != nil {
				t.Error(err)
			}
			if _, err := r.Lookup(KindSink, name); err != nil {
				t.Error(err)
			}
			_ = r.List()
		})
	}
	wg.Wait()
	if n := len(r.Names(KindSink)); n != 8 {
		t.Errorf("%d sinks registered, want 8", n)
	}
}

func TestDefault(t *testing.T) {
	a, b := Default(), Default()
	if a == nil || a != b {
		t.Error("Default is not one registry")
	}
}

package transform

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/connect"
)

// ErrUnknownTransform is returned by Registry.Lookup and Registry.New for a
// name that is not registered; the error's message lists the valid names.
var ErrUnknownTransform = errors.New("unknown transform")

// Definition describes one transform type.
type Definition struct {
	// Name is the type name written in pipeline files ("filter").
	Name string
	// Description says in one sentence what the transform does.
	Description string
	// Spec declares the transform's settings.
	Spec connect.Spec
	// New builds a transform from a configuration that Registry.New has
	// checked against Spec, with defaults filled in. It reports problems
	// that the spec cannot express (settings that exclude each other, an
	// invalid regular expression) as connect.FieldError values.
	New func(cfg connect.Config) (Transform, error)
}

// Registry holds transform definitions by name. It is a value: the binary
// builds one with Builtin (and may add its own), tests make an empty one
// with NewRegistry. A Registry is safe for concurrent use.
type Registry struct {
	mu   sync.RWMutex
	defs map[string]Definition
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{defs: make(map[string]Definition)}
}

// Builtin returns a new registry holding every built-in transform: filter,
// insert_field, rename_fields, drop_fields, mask_fields, route,
// key_from_fields, unwrap and timestamp_convert.
func Builtin() *Registry {
	r := NewRegistry()
	for _, d := range builtins() {
		r.MustRegister(d)
	}
	return r
}

func builtins() []Definition {
	return []Definition{
		filterDefinition(),
		insertFieldDefinition(),
		renameFieldsDefinition(),
		dropFieldsDefinition(),
		maskFieldsDefinition(),
		routeDefinition(),
		keyFromFieldsDefinition(),
		unwrapDefinition(),
		timestampConvertDefinition(),
	}
}

// Register adds a definition. It fails when the definition is incomplete
// (no name, no constructor), declares a parameter twice or with an invalid
// default, or when its name is taken.
func (r *Registry) Register(d Definition) error {
	if err := d.validate(); err != nil {
		return fmt.Errorf("register transform: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.defs[d.Name]; dup {
		return fmt.Errorf("register transform: %q is already registered", d.Name)
	}
	r.defs[d.Name] = d
	return nil
}

// MustRegister is Register for code that registers fixed definitions: it
// panics on error, which there is a programming error.
func (r *Registry) MustRegister(d Definition) {
	if err := r.Register(d); err != nil {
		panic(err)
	}
}

func (d Definition) validate() error {
	if d.Name == "" {
		return errors.New("a transform needs a name")
	}
	if d.New == nil {
		return fmt.Errorf("transform %q has no constructor (New)", d.Name)
	}
	seen := make(map[string]bool, len(d.Spec.Params))
	for _, p := range d.Spec.Params {
		if p.Name == "" {
			return fmt.Errorf("transform %q: a parameter has no name", d.Name)
		}
		if seen[p.Name] {
			return fmt.Errorf("transform %q: parameter %q is declared twice", d.Name, p.Name)
		}
		seen[p.Name] = true
		if p.Default != "" {
			if err := p.Check(p.Default); err != nil {
				return fmt.Errorf("transform %q: parameter %q: invalid default: %w", d.Name, p.Name, err)
			}
		}
	}
	return nil
}

// Lookup returns the definition called name. The error wraps
// ErrUnknownTransform and lists the valid names.
func (r *Registry) Lookup(name string) (Definition, error) {
	r.mu.RLock()
	d, ok := r.defs[name]
	r.mu.RUnlock()
	if ok {
		return d, nil
	}
	valid := r.Names()
	if len(valid) == 0 {
		return Definition{}, fmt.Errorf("%w %q (no transforms are registered)", ErrUnknownTransform, name)
	}
	return Definition{}, fmt.Errorf("%w %q (valid: %s)", ErrUnknownTransform, name, strings.Join(valid, ", "))
}

// Names returns the names of the registered transforms, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.defs))
	for n := range r.defs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Spec returns the configuration spec of the transform called name, and
// whether there is one. Pipeline validation uses it.
func (r *Registry) Spec(name string) (connect.Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	d, ok := r.defs[name]
	return d.Spec, ok
}

// New builds a transform of type typ from its settings: it checks cfg
// against the type's spec (unknown names, missing required settings,
// values of the wrong type or outside the allowed ones), fills in the
// defaults and calls the constructor. Configuration problems come back as
// one *ConfigError listing them all. New has the shape of the worker's
// transform factory.
func (r *Registry) New(typ string, cfg map[string]string) (Transform, error) {
	d, err := r.Lookup(typ)
	if err != nil {
		return nil, err
	}
	if problems := d.Spec.Validate(cfg); len(problems) > 0 {
		return nil, &ConfigError{Transform: typ, Problems: problems}
	}
	t, err := d.New(connect.Config{Values: d.Spec.WithDefaults(cfg), Spec: d.Spec})
	if err != nil {
		var fe connect.FieldError
		if errors.As(err, &fe) {
			return nil, &ConfigError{Transform: typ, Problems: []connect.FieldError{fe}}
		}
		return nil, fmt.Errorf("transform %s: %w", typ, err)
	}
	return t, nil
}

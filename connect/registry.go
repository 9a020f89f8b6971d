package connect

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
)

// ErrUnknownConnector is returned by Registry.Lookup for a name that is not
// registered; the error's message lists the valid names.
var ErrUnknownConnector = errors.New("unknown connector")

// Registry holds the connectors a worker can run, by kind and name. It is a
// value: the worker is given one, and tests make an empty one with
// NewRegistry. Built-in connectors register into Default from an init
// function, and do nothing else there. A Registry is safe for concurrent
// use.
type Registry struct {
	mu         sync.RWMutex
	connectors map[registryKey]Connector
}

type registryKey struct {
	kind Kind
	name string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{connectors: make(map[registryKey]Connector)}
}

var defaultRegistry = NewRegistry()

// Default returns the registry that built-in connectors register into from
// their init functions.
func Default() *Registry { return defaultRegistry }

// Register adds a connector. It fails when the description is incomplete
// (no name, no factory of its kind, a parameter declared twice, an invalid
// default) or when the kind and name are taken.
func (r *Registry) Register(c Connector) error {
	if err := c.validate(); err != nil {
		return fmt.Errorf("register connector: %w", err)
	}
	k := registryKey{c.Kind, c.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.connectors[k]; dup {
		return fmt.Errorf("register connector: %s connector %q is already registered", c.Kind, c.Name)
	}
	r.connectors[k] = c
	return nil
}

// MustRegister is Register for init functions: it panics on error, which
// there is a programming error.
func (r *Registry) MustRegister(c Connector) {
	if err := r.Register(c); err != nil {
		panic(err)
	}
}

// Lookup returns the connector of the given kind and name. The error wraps
// ErrUnknownConnector and lists the valid names of that kind.
func (r *Registry) Lookup(kind Kind, name string) (Connector, error) {
	r.mu.RLock()
	c, ok := r.connectors[registryKey{kind, name}]
	r.mu.RUnlock()
	if ok {
		return c, nil
	}
	valid := r.Names(kind)
	if len(valid) == 0 {
		return Connector{}, fmt.Errorf("%w: %s %q (no %s connectors are registered)", ErrUnknownConnector, kind, name, kind)
	}
	return Connector{}, fmt.Errorf("%w: %s %q (valid: %s)", ErrUnknownConnector, kind, name, strings.Join(valid, ", "))
}

// Names returns the names of the connectors of one kind, sorted.
func (r *Registry) Names(kind Kind) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var names []string
	for k := range r.connectors {
		if k.kind == kind {
			names = append(names, k.name)
		}
	}
	sort.Strings(names)
	return names
}

// List returns every connector, sorted by kind (sinks, then sources) and name.
func (r *Registry) List() []Connector {
	r.mu.RLock()
	list := make([]Connector, 0, len(r.connectors))
	for _, c := range r.connectors {
		list = append(list, c)
	}
	r.mu.RUnlock()
	sort.Slice(list, func(i, j int) bool {
		if list[i].Kind != list[j].Kind {
			return list[i].Kind < list[j].Kind
		}
		return list[i].Name < list[j].Name
	})
	return list
}

// Clone returns a new registry holding the same connectors, for a test that
// adds its own to the built-ins.
func (r *Registry) Clone() *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := NewRegistry()
	for k, v := range r.connectors {
		c.connectors[k] = v
	}
	return c
}

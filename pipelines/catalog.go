package pipelines

import (
	"sort"

	"github.com/tributary-io/tributary/connect"
)

// Kind is the kind of a plugin point named in a pipeline file.
type Kind string

// Kinds.
const (
	KindSource    Kind = "source"
	KindSink      Kind = "sink"
	KindTransform Kind = "transform"
)

// Catalog tells the loader which connectors and transforms exist and what
// configuration each accepts. The engine's registry implements it; tests use
// Specs. The loader calls it only while loading, from one goroutine.
type Catalog interface {
	// Spec returns the configuration spec of the named connector or
	// transform of kind k, and whether it exists.
	Spec(k Kind, name string) (connect.Spec, bool)
	// Names returns every name of kind k, for "valid choices" hints.
	Names(k Kind) []string
}

// Specs is a Catalog held in memory: kind, then name, then spec.
type Specs map[Kind]map[string]connect.Spec

var _ Catalog = Specs(nil)

// Spec implements Catalog.
func (s Specs) Spec(k Kind, name string) (connect.Spec, bool) {
	spec, ok := s[k][name]
	return spec, ok
}

// Names implements Catalog; the names are sorted.
func (s Specs) Names(k Kind) []string {
	names := make([]string, 0, len(s[k]))
	for n := range s[k] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

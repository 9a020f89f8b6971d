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

// TransformBuilder is a Catalog that can build transforms too. With one,
// the loader builds every transform whose settings pass its spec and
// reports what the transform's constructor refuses (an invalid regular
// expression, an unknown placeholder in a topic template) at the setting it
// names: problems a worker would otherwise meet only when it starts the
// pipeline, failing the task at every restart.
type TransformBuilder interface {
	Catalog
	// CheckTransform builds a transform of type typ with the settings cfg
	// as written (defaults not filled in) and returns its problems, each
	// naming its setting (Param "" when it is about none); nil means the
	// transform builds.
	CheckTransform(typ string, cfg map[string]string) []connect.FieldError
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

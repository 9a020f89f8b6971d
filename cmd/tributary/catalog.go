package main

import (
	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/pipelines"
	"github.com/tributary-io/tributary/plugins"

	// Built-in connectors register themselves.
	_ "github.com/tributary-io/tributary/connectors/file"
	_ "github.com/tributary-io/tributary/connectors/generator"
	_ "github.com/tributary-io/tributary/connectors/httptrack"
	_ "github.com/tributary-io/tributary/connectors/iceberg"
	_ "github.com/tributary-io/tributary/connectors/mysql"
	_ "github.com/tributary-io/tributary/connectors/postgres"
	_ "github.com/tributary-io/tributary/connectors/stdout"
	_ "github.com/tributary-io/tributary/connectors/webhook"
)

// catalog is what pipeline files can name: the connectors of a registry and
// the built-in transforms.
type catalog struct {
	connectors *connect.Registry
	transforms *transform.Registry
	// plugins found the plugin connectors, if any; it runs their helper
	// processes (a plugin's Redact), which close stops.
	plugins *plugins.Host
}

// close stops the plugin helper processes the catalog started.
func (c catalog) close() {
	if c.plugins != nil {
		c.plugins.Close()
	}
}

var _ pipelines.Catalog = catalog{}

func newCatalog() catalog {
	return catalog{connectors: connect.Default(), transforms: transform.Builtin()}
}

func (c catalog) Spec(k pipelines.Kind, name string) (connect.Spec, bool) {
	switch k {
	case pipelines.KindTransform:
		return c.transforms.Spec(name)
	case pipelines.KindSource, pipelines.KindSink:
		conn, err := c.connectors.Lookup(connect.Kind(k), name)
		if err != nil {
			return connect.Spec{}, false
		}
		return conn.Spec, true
	}
	return connect.Spec{}, false
}

func (c catalog) Names(k pipelines.Kind) []string {
	if k == pipelines.KindTransform {
		return c.transforms.Names()
	}
	return c.connectors.Names(connect.Kind(k))
}

// transformFactory adapts the transform registry to the engine.
func (c catalog) transformFactory() engine.TransformFactory {
	return func(typ string, cfg map[string]string) (engine.Transformer, error) {
		return c.transforms.New(typ, cfg)
	}
}

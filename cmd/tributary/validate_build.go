package main

import (
	"errors"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/pipelines"
)

// The loader builds every transform with the registry's constructors, so
// that validate, and run before it starts anything, report what only a
// constructor finds (an invalid regular expression, an unknown placeholder)
// at its place in the file.
var _ pipelines.TransformBuilder = catalog{}

// CheckTransform implements pipelines.TransformBuilder: it builds the
// transform as the worker will and returns the problems the build found.
func (c catalog) CheckTransform(typ string, cfg map[string]string) []connect.FieldError {
	_, err := c.transforms.New(typ, cfg)
	if err == nil {
		return nil
	}
	var ce *transform.ConfigError
	if errors.As(err, &ce) {
		return ce.Problems
	}
	return []connect.FieldError{{Message: err.Error()}}
}

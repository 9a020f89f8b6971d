package main

import (
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/pipelines"
)

// TestExamples_Validate loads every example pipeline with the binary's
// catalog, so an example never drifts from the connectors it names.
func TestExamples_Validate(t *testing.T) {
	files, err := filepath.Glob("../../examples/*/pipeline.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no example pipelines found: %v", err)
	}
	env := map[string]string{"TRACKING_WRITE_KEY": "example-key"}
	lookup := func(k string) (string, bool) {
		v, ok := env[k]
		return v, ok
	}
	for _, f := range files {
		// Plugin pipelines name connectors the binary does not have built
		// in; their own tests build the plugins and validate them.
		if p, err := pipelines.LoadFile(f, pipelines.Options{LookupEnv: lookup}); err == nil && len(p.Plugins.Dirs) > 0 {
			continue
		}
		_, err := pipelines.LoadFile(f, pipelines.Options{Catalog: newCatalog(), LookupEnv: lookup})
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

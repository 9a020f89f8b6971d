package generator

import (
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/docstest"
)

// TestDocs checks that the configuration table in the connector's page
// under docs/connectors is Spec.Markdown(); -update rewrites it.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "connectors", Name+".md")
	docstest.CheckSpecTable(t, path, "./connectors/"+Name, Connector().Spec, *update)
}

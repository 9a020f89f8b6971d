package iceberg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDocs checks that the configuration table in the connector's page
// under docs/connectors is Spec.Markdown(); -update rewrites it.
func TestDocs(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "connectors", Name+".md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	const begin, end = "<!-- BEGIN GENERATED", "<!-- END GENERATED -->"
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, begin, end)
	}
	i += strings.IndexByte(doc[i:], '\n') + 1
	want := Connector().Spec.Markdown()
	if doc[i:j] == want {
		return
	}
	if !*update {
		t.Fatalf("the configuration table in %s is out of date (go test ./connectors/%s -run TestDocs -update rewrites it)\ngot:\n%s\nwant:\n%s", path, Name, doc[i:j], want)
	}
	if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

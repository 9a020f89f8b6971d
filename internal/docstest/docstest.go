// Package docstest keeps the generated configuration tables in the
// connectors' pages under docs/connectors equal to their config specs.
package docstest

import (
	"os"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// Section markers around the generated table in a connector's page.
const (
	begin = "<!-- BEGIN GENERATED"
	end   = "<!-- END GENERATED -->"
)

// CheckSpecTable fails t when the generated section of the page at path is
// not spec.Markdown(); with update set it rewrites the section instead. pkg
// is the package path shown in the hint, e.g. "./connectors/postgres".
func CheckSpecTable(t testing.TB, path, pkg string, spec connect.Spec, update bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, begin, end)
	}
	i += strings.IndexByte(doc[i:], '\n') + 1
	want := spec.Markdown()
	if doc[i:j] == want {
		return
	}
	if !update {
		t.Fatalf("the configuration table in %s is out of date (go test %s -run TestDocs -update rewrites it)\ngot:\n%s\nwant:\n%s", path, pkg, doc[i:j], want)
	}
	if err := os.WriteFile(path, []byte(doc[:i]+want+doc[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

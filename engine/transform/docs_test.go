package transform_test

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/pipelines"
)

var update = flag.Bool("update", false, "rewrite the generated option tables in docs/transforms.md")

var docsPath = filepath.Join("..", "..", "docs", "transforms.md")

// optionsBlock matches a generated options table with its markers.
var optionsBlock = regexp.MustCompile(`(?s)<!-- options:([a-z_]+) -->\n.*?<!-- end options -->`)

// The option tables in docs/transforms.md are Spec.Markdown of each
// transform; go test -run TestDocs -update rewrites them.
func TestDocs_OptionTables(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	reg := transform.Builtin()
	seen := map[string]bool{}
	out := optionsBlock.ReplaceAllStringFunc(doc, func(block string) string {
		name := optionsBlock.FindStringSubmatch(block)[1]
		seen[name] = true
		spec, ok := reg.Spec(name)
		if !ok {
			t.Errorf("docs have options of %q, which is not a built-in", name)
			return block
		}
		return "<!-- options:" + name + " -->\n" + spec.Markdown() + "<!-- end options -->"
	})
	for _, name := range reg.Names() {
		if !seen[name] {
			t.Errorf("docs have no options table for %s (add <!-- options:%s --><!-- end options -->)", name, name)
		}
		if !strings.Contains(doc, "\n## "+name+"\n") {
			t.Errorf("docs have no section ## %s", name)
		}
	}
	if out == doc {
		return
	}
	if *update {
		if err := os.WriteFile(docsPath, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the option tables in %s are out of date; run go test ./engine/transform -run TestDocs -update", docsPath)
}

// yamlBlock matches a fenced YAML example that is a transform chain.
var yamlBlock = regexp.MustCompile("(?s)```yaml\n(transforms:\n.*?)```")

// Every transforms: example in the docs loads with the pipeline loader and
// builds with the registry.
func TestDocs_Examples(t *testing.T) {
	raw, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	reg := transform.Builtin()
	catalog := pipelines.Specs{
		pipelines.KindSource:    {"generator": connect.Spec{}},
		pipelines.KindTransform: {},
	}
	for _, name := range reg.Names() {
		spec, _ := reg.Spec(name)
		catalog[pipelines.KindTransform][name] = spec
	}
	env := func(name string) (string, bool) { return "secret-from-" + name, true }
	blocks := yamlBlock.FindAllStringSubmatch(string(raw), -1)
	if len(blocks) < len(reg.Names()) {
		t.Fatalf("found %d transform examples, want one per transform at least", len(blocks))
	}
	for i, m := range blocks {
		var b strings.Builder
		b.WriteString("version: 1\nsources:\n  - name: s\n    connector: generator\n    topic: t\n")
		for _, line := range strings.Split(strings.TrimRight(m[1], "\n"), "\n") {
			b.WriteString("    " + line + "\n")
		}
		p, err := pipelines.Parse("example.yaml", []byte(b.String()), pipelines.Options{Catalog: catalog, LookupEnv: env})
		if err != nil {
			t.Errorf("example %d:\n%s\ndoes not load: %v", i+1, m[1], err)
			continue
		}
		for _, tr := range p.Sources[0].Transforms {
			if _, err := reg.New(tr.Type, tr.Config); err != nil {
				t.Errorf("example %d: %v", i+1, err)
			}
		}
	}
}

// In a pipeline file ${...} takes an environment variable, so a regex
// group before a name character is written $${1}, as the docs say.
func TestRoute_ReplacementInPipelineFile(t *testing.T) {
	reg := transform.Builtin()
	spec, _ := reg.Spec("route")
	catalog := pipelines.Specs{
		pipelines.KindSource:    {"generator": connect.Spec{}},
		pipelines.KindTransform: {"route": spec},
	}
	file := "version: 1\nsources:\n  - name: s\n    connector: generator\n    topic: t\n" +
		"    transforms:\n      - type: route\n        regex: 'db\\.(.*)'\n        replacement: $${1}_v2\n"
	p, err := pipelines.Parse("p.yaml", []byte(file), pipelines.Options{Catalog: catalog})
	if err != nil {
		t.Fatal(err)
	}
	tc := p.Sources[0].Transforms[0]
	tr, err := reg.New(tc.Type, tc.Config)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.Apply(connect.Record{Topic: "db.orders"})
	if err != nil || len(out) != 1 || out[0].Topic != "orders_v2" {
		t.Errorf("Apply = %v, %v; want topic orders_v2", out, err)
	}
}

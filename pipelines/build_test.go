package pipelines

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// builderCatalog is testCatalog with constructors: filter compiles its
// condition as a regular expression, route refuses placeholders other than
// {topic}, mask refuses a field called "secret" naming no setting.
type builderCatalog struct {
	Specs
	calls []string
}

func (c *builderCatalog) CheckTransform(typ string, cfg map[string]string) []connect.FieldError {
	c.calls = append(c.calls, typ)
	switch typ {
	case "filter":
		if _, err := regexp.Compile(cfg["condition"]); err != nil {
			return []connect.FieldError{{Param: "condition", Message: `"` + cfg["condition"] + `" is not a valid regular expression`}}
		}
	case "route":
		if t := cfg["topic"]; strings.Contains(strings.ReplaceAll(t, "{topic}", ""), "{") {
			return []connect.FieldError{{Param: "topic", Message: "unknown placeholder in " + t}}
		}
	case "mask":
		if strings.Contains(cfg["fields"], "secret") {
			return []connect.FieldError{{Message: "cannot mask secret"}}
		}
	}
	return nil
}

func TestParse_TransformsAreBuilt(t *testing.T) {
	src := `version: 1
name: p
sources:
  - name: gen
    connector: generator
    topic: web.tracking
    transforms:
      - type: filter
        condition: "pur(chase"
      - type: route
        topic: "web.{event}"
      - type: mask
        fields: [a, secret]
      - type: route
        topic: "copy.{topic}"
      - type: route
        topic: "${CRM_TENANT}.{event}"
      - type: filter
        condition: ok
        bogus: 1
`
	cat := &builderCatalog{Specs: testCatalog}
	_, err := Parse("p.yaml", []byte(src), Options{Catalog: cat, LookupEnv: testOpts.LookupEnv})
	list := errorList(t, err)
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	want := []string{
		`p.yaml:9:20: sources[0].transforms[0].condition: "pur(chase" is not a valid regular expression; condition: keep records that match (string)`,
		`p.yaml:11:16: sources[0].transforms[1].topic: unknown placeholder in web.{event}; topic: topic template (string)`,
		`p.yaml:12:15: sources[0].transforms[2].type: cannot mask secret`,
		// A value from the environment is not shown.
		`p.yaml:17:16: sources[0].transforms[4].topic: unknown placeholder in ******** (from ${CRM_TENANT}); topic: topic template (string)`,
		`p.yaml:20:9: sources[0].transforms[5].bogus: unknown setting "bogus" for transform "filter"; valid settings: condition`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got %s\nwant %s\n%s", strings.Join(got, "\n     "), strings.Join(want, "\n     "), annotate(src, list))
	}
	// A transform whose settings break its spec is not built: the spec's
	// error says it all.
	if wantCalls := []string{"filter", "route", "mask", "route", "route"}; !reflect.DeepEqual(cat.calls, wantCalls) {
		t.Errorf("built %v, want %v", cat.calls, wantCalls)
	}
	// A plain Catalog is not asked to build.
	if _, err := Parse("p.yaml", []byte(src), testOpts); err == nil || strings.Contains(err.Error(), "regular expression") {
		t.Errorf("Parse without a builder = %v", err)
	}
}

// A spec's whole-config check is reported at the setting each problem
// names, at the config when the setting is not written, and never shows a
// value from the environment, even a part of one.
func TestParse_SpecCheck(t *testing.T) {
	hook := connect.Spec{Params: []connect.Param{
		{Name: "url", Type: connect.TypeString, Required: true, Description: "where to send"},
		{Name: "headers", Type: connect.TypeString, Description: "Name: value lines"},
		{Name: "mode", Type: connect.TypeString, Default: "post", Description: "how to send"},
	}, Check: func(cfg connect.Config) error {
		var errs []error
		if h := cfg.Values["headers"]; h != "" && !strings.Contains(h, ":") {
			errs = append(errs, connect.FieldError{Param: "headers", Message: fmt.Sprintf("%q is not a header line", h)})
		}
		if strings.HasPrefix(cfg.Values["url"], "ftp:") {
			errs = append(errs, connect.FieldError{Param: "mode", Message: cfg.Values["mode"] + " does not work with ftp"})
			errs = append(errs, errors.New("ftp is not supported at all"))
		}
		return errors.Join(errs...)
	}}
	cat := Specs{KindSource: testCatalog[KindSource], KindSink: {"hook": hook}}
	src := `version: 1
name: p
sources:
  - {name: gen, connector: generator, topic: t}
sinks:
  - name: a
    connector: hook
    topics: [t]
    config:
      url: ftp://x
      headers: Authorization Bearer ${CRM_TOKEN}
  - name: b
    connector: hook
    topics: [t]
    config: {url: "ftp://y", mode: 1}
`
	_, err := Parse("p.yaml", []byte(src), Options{Catalog: cat, LookupEnv: testOpts.LookupEnv})
	list := errorList(t, err)
	var got []string
	for _, e := range list {
		got = append(got, e.Error())
	}
	want := []string{
		`p.yaml:9:5: sinks[0].config: ftp is not supported at all`,
		`p.yaml:9:5: sinks[0].config.mode: post does not work with ftp; mode: how to send (string)`,
		`p.yaml:11:16: sinks[0].config.headers: "********" is not a header line (from ${CRM_TOKEN}); headers: Name: value lines (string)`,
		`p.yaml:15:5: sinks[1].config: ftp is not supported at all`,
		`p.yaml:15:36: sinks[1].config.mode: 1 does not work with ftp; mode: how to send (string)`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("errors:\n got %s\nwant %s\n%s", strings.Join(got, "\n     "), strings.Join(want, "\n     "), annotate(src, list))
	}
	if strings.Contains(err.Error(), "tok-123") {
		t.Errorf("the errors show an environment value: %v", err)
	}
}

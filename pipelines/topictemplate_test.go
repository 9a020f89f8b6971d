package pipelines

import (
	"strings"
	"testing"
)

// A source's topic template names only the placeholders its connector
// replaces (connectors/postgres: {prefix}, {schema}, {table};
// connectors/mysql: {prefix}, {database}, {table}), with its braces
// paired, and is a valid topic name once they are replaced: the
// connector leaves anything else as it is, so a typo ({schem}) would
// pass `tributary validate` and fail only at run time. Each problem is
// reported where it is in the value.
func TestParse_SourceTopicTemplate(t *testing.T) {
	cat := Specs{KindSource: {"postgres": testCatalog[KindSource]["postgres"], "mysql": {}, "generator": testCatalog[KindSource]["generator"]}}
	opts := Options{Catalog: cat, LookupEnv: testEnv(map[string]string{"SCHEMA_WORD": "{schem}"})}
	file := func(connector, topic string) string {
		cfg := ""
		if connector == "postgres" {
			cfg = `, config: {url: "postgres://x"}`
		}
		return "version: 1\nname: p\nsources:\n  - {name: s, connector: " + connector + ", topic: \"" + topic + "\"" + cfg + "}\n"
	}
	for _, c := range []struct{ connector, topic, want string }{
		{"postgres", "cdc.{schem}.{table}",
			`p.yaml:4:48: sources[0].topic: unknown placeholder {schem} in topic template "cdc.{schem}.{table}"; did you mean {schema}? the postgres connector replaces {prefix}, {schema}, {table}`},
		{"postgres", "cdc.{schema.{table}}",
			`p.yaml:4:48: sources[0].topic: topic template "cdc.{schema.{table}}" has a "{" without its "}"; the postgres connector replaces {prefix}, {schema}, {table}, each written whole`},
		{"postgres", "cdc.{schema}.{table",
			`p.yaml:4:57: sources[0].topic: topic template "cdc.{schema}.{table" has a "{" without its "}"; the postgres connector replaces {prefix}, {schema}, {table}, each written whole`},
		{"postgres", "cdc.{schema}}.x",
			`p.yaml:4:56: sources[0].topic: topic template "cdc.{schema}}.x" has a "}" without its "{"; the postgres connector replaces {prefix}, {schema}, {table}, each written whole`},
		{"postgres", "cdc/{schema}.{table}",
			`p.yaml:4:47: sources[0].topic: invalid topic name "cdc/{schema}.{table}": with its placeholders replaced it is not a valid topic name; around the placeholders, use letters, digits, '.', '_' and '-' (at most 249 characters in all)`},
		{"postgres", "cdc.{database}.{table}",
			`p.yaml:4:48: sources[0].topic: unknown placeholder {database} in topic template "cdc.{database}.{table}"; the postgres connector replaces {prefix}, {schema}, {table}`},
		{"mysql", "cdc.{schema}.{table}",
			`p.yaml:4:45: sources[0].topic: unknown placeholder {schema} in topic template "cdc.{schema}.{table}"; the mysql connector replaces {prefix}, {database}, {table}`},
		{"generator", "x.{tabel}",
			`p.yaml:4:47: sources[0].topic: unknown placeholder {tabel} in topic template "x.{tabel}"; did you mean {table}? a source's topic template may hold {prefix}, {schema}, {database}, {table}`},
		// From the environment: reported at the value.
		{"postgres", "cdc.${SCHEMA_WORD}.{table}",
			`p.yaml:4:43: sources[0].topic: unknown placeholder {schem} in topic template "cdc.{schem}.{table}"; did you mean {schema}? the postgres connector replaces {prefix}, {schema}, {table}`},
	} {
		_, err := Parse("p.yaml", []byte(file(c.connector, c.topic)), opts)
		if err == nil {
			t.Errorf("%s topic %q: loaded without a problem; want %s", c.connector, c.topic, c.want)
			continue
		}
		if got := strings.TrimSpace(err.Error()); got != c.want {
			t.Errorf("%s topic %q:\ngot  %s\nwant %s", c.connector, c.topic, got, c.want)
		}
	}
	for _, c := range []struct{ connector, topic string }{
		{"postgres", "cdc.{schema}.{table}"},
		{"postgres", "{prefix}.{schema}.{table}"},
		{"postgres", "all-{table}"},
		{"mysql", "{prefix}.{database}.{table}"},
		{"postgres", "plain.topic"},
	} {
		if _, err := Parse("p.yaml", []byte(file(c.connector, c.topic)), opts); err != nil {
			t.Errorf("%s topic %q: %v", c.connector, c.topic, err)
		}
	}
}

// CheckSource, the rules the REST API applies, checks a template as the
// loader does.
func TestCheckSource_TopicTemplate(t *testing.T) {
	for _, c := range []struct{ connector, topic, want string }{
		{"postgres", "cdc.{schem}.{table}", `topic: unknown placeholder {schem} in topic template "cdc.{schem}.{table}"; did you mean {schema}?`},
		{"mysql", "cdc.{database}.{table", `topic: topic template "cdc.{database}.{table" has a "{" without its "}"`},
		{"postgres", "cdc/{schema}", `topic: invalid topic name "cdc/{schema}"`},
	} {
		ps := CheckSource(Source{Name: "s", Connector: c.connector, Topic: c.topic})
		if len(ps) != 1 || !strings.HasPrefix(ps[0].String(), c.want) {
			t.Errorf("CheckSource(%s, %q) = %v; want one problem starting %s", c.connector, c.topic, ps, c.want)
		}
	}
	if ps := CheckSource(Source{Name: "s", Connector: "mysql", Topic: "{prefix}.{database}.{table}"}); len(ps) != 0 {
		t.Errorf("CheckSource(mysql, {prefix}.{database}.{table}) = %v; want none", ps)
	}
}

package pipelines

import "testing"

// A ${VAR:-default} whose default holds braces ends at the first "}": with
// TOPIC unset, "${TOPIC:-cdc.{schema}.{table}}" (the CDC sources' topic
// template as a default) expands to "cdc.{schema.{table}}", which the
// loader accepts as a topic template without a word. Either the default
// should keep its balanced braces (as a shell does) or the file should get
// an error at the reference.
func TestReviewRest_EnvDefaultWithBraces(t *testing.T) {
	src := "version: 1\nname: p\nsources:\n  - {name: s, connector: postgres, topic: \"${TOPIC:-cdc.{schema}.{table}}\", config: {url: \"postgres://x\"}}\n"
	p, err := Parse("p.yaml", []byte(src), testOpts)
	if err != nil {
		return // reported: fine
	}
	if got, want := p.Sources[0].Topic, "cdc.{schema}.{table}"; got != want {
		t.Errorf("topic = %q, want %q (or an error at the ${...}); the file loaded without a problem", got, want)
	}
}

// expand itself: the same reference in any value.
func TestReviewRest_ExpandDefaultWithBraces(t *testing.T) {
	got, _, errs := expand("${T:-a.{b}.{c}}", testEnv(nil))
	if len(errs) == 0 && got != "a.{b}.{c}" {
		t.Errorf("expand(${T:-a.{b}.{c}}) = %q with no error, want a.{b}.{c} or an error", got)
	}
}

// A source's topic template is accepted as soon as it holds a "{": a typo
// in a placeholder ({schem}) or unbalanced braces validate, and the
// connector (strings.NewReplacer of {prefix}, {schema}/{database},
// {table}) leaves the text as it is, so every event goes to a topic named
// "cdc.{schem}.orders", which is not a valid topic name: the file passes
// `tributary validate` and fails only at run time.
func TestReviewRest_TopicTemplateUnchecked(t *testing.T) {
	for _, topic := range []string{"cdc.{schem}.{table}", "cdc.{schema.{table}}", "cdc.{schema}.{table", "cdc/{schema}.{table}"} {
		src := "version: 1\nname: p\nsources:\n  - {name: s, connector: postgres, topic: \"" + topic + "\", config: {url: \"postgres://x\"}}\n"
		if _, err := Parse("p.yaml", []byte(src), testOpts); err == nil {
			t.Errorf("topic %q: loaded without a problem; want an error naming the placeholders ({prefix}, {schema}, {database}, {table}) or the invalid character", topic)
		}
	}
}

package pipelines

import "testing"

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

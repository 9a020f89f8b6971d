package pipelines

import (
	"strings"
	"testing"
)

// TestParse_Syntax checks that YAML syntax and encoding errors get a line
// and, where the parser's own report allows it, a column.
func TestParse_Syntax(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want string
	}{
		{"tab indentation", "version: 1\nlog:\n\tdir: x\n",
			`p.yaml:3:1: tab character in indentation; YAML indents with spaces only`},
		{"tab after spaces", "version: 1\nlog:\n  \tdir: x\n",
			`p.yaml:3:3: tab character in indentation; YAML indents with spaces only`},
		{"unclosed flow list", "version: 1\nsinks: [a, b\nname: x\n",
			`p.yaml:2:9: invalid YAML: did not find expected ',' or ']'`},
		{"unclosed quote", "version: 1\nname: \"quick\n",
			`p.yaml:2:7: invalid YAML: found unexpected end of stream`},
		{"mapping value in a value", "version: 1\nname: a: b\n",
			`p.yaml:2:8: invalid YAML: mapping values are not allowed in this context`},
		{"mapping value on the first line", "version: 1: 2\n",
			`p.yaml:1:11: invalid YAML: mapping values are not allowed in this context`},
		{"bad indentation", "version: 1\nlog:\n  dir: x\n backend: y\n",
			`p.yaml:4:2: invalid YAML: did not find expected key`},
		{"list item after mapping", "version: 1\n- a\n",
			`p.yaml:2:1: invalid YAML: did not find expected key`},
		{"unknown anchor", "version: 1\nname: *nope\n",
			`p.yaml:2:7: invalid YAML: unknown anchor 'nope' referenced`},
		{"invalid UTF-8", "version: 1\nname: caf\xe9\n",
			`p.yaml:2:10: invalid UTF-8 byte 0xE9; save pipeline files as UTF-8`},
		{"control character", "version: 1\nname: a\x01b\n",
			`p.yaml:2:8: control character U+0001 is not allowed in YAML; remove it, or write it as an escape in a double-quoted string`},
		{"UTF-16", "\xff\xfev\x00",
			`p.yaml:1:1: file is encoded as UTF-16; save pipeline files as UTF-8`},
		{"column counts characters", "version: 1\nname: \"é\" x\n",
			`p.yaml:2:11: invalid YAML: did not find expected key`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("p.yaml", []byte(tt.yaml), testOpts)
			if err == nil {
				t.Fatal("got no error")
			}
			list := errorList(t, err)
			if got := err.Error(); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s\nat:\n%s", got, tt.want, annotate(tt.yaml, list))
			}
		})
	}
}

func TestParse_TooLarge(t *testing.T) {
	data := []byte("version: 1\n" + strings.Repeat("#", maxFileSize))
	_, err := Parse("p.yaml", data, testOpts)
	if err == nil || !strings.Contains(err.Error(), "a pipeline file may have at most") {
		t.Errorf("got %v, want a size error", err)
	}
}

package webhook

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// FuzzParseHeaders checks that the headers setting never panics, that
// every parsed header has a valid name and a value without line breaks,
// and that writing the headers back one per line parses the same.
func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{
		"Authorization: Bearer x\nX-A: {{ .Topic }}",
		"Accept: a, b,X-Other: c",
		"A:,B:", "# comment\n\n", ":", "a: {{", "X: {{ .Value.a }}, Y: z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		hs, err := parseHeaders(v)
		if err != nil {
			return
		}
		var lines []string
		for _, h := range hs {
			if !validHeaderName(h.name) {
				t.Fatalf("invalid name %q from %q", h.name, v)
			}
			text := h.value.static
			if h.value.t != nil {
				text = h.value.t.Root.String()
			}
			if strings.ContainsAny(h.value.static, "\r\n") {
				t.Fatalf("value with a line break from %q", v)
			}
			if h.value.t == nil {
				lines = append(lines, h.name+": "+text)
			}
		}
		again, err := parseHeaders(strings.Join(lines, "\n"))
		if err != nil {
			t.Fatalf("the parsed static headers of %q do not parse again: %v", v, err)
		}
		if len(again) != len(lines) {
			t.Fatalf("%q: %d static headers parse back as %d", v, len(lines), len(again))
		}
	})
}

// FuzzRender runs arbitrary record values and keys through templates that
// read them: no panic, and a record either renders or fails with an error.
func FuzzRender(f *testing.F) {
	for _, s := range []string{`{"a":{"b":1}}`, `[1,2]`, `null`, `"x"`, `{"a":null}`, "not json", `{"a":1e999}`, ""} {
		f.Add([]byte(s), []byte(`{"id":1}`))
	}
	set, err := parseSettings(connect.Config{Spec: spec(), Values: spec().WithDefaults(map[string]string{
		"url":     "http://x/{{ get .Value \"a.b\" | str | pathEscape }}",
		"headers": "X-K: {{ .Key | json | replace \"\\n\" \"\" }}",
		"body":    `{"v":{{ json .Value }},"d":{{ json (default "x" .Value) }},"l":{{ json (lower .Value) }}}`,
	})})
	if err != nil {
		f.Fatal(err)
	}
	s := &Sink{set: set}
	f.Fuzz(func(t *testing.T, value, key []byte) {
		rec := connect.Record{Topic: "t", Value: value, Key: key}
		it, err := s.render(0, &rec)
		if err != nil {
			return
		}
		if !json.Valid(it.body) {
			t.Fatalf("body %q of value %q is not JSON", it.body, value)
		}
	})
}

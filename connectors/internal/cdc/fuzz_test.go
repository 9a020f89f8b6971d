package cdc

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// FuzzKeyValues_UnmarshalJSON feeds arbitrary JSON to the key of a stored
// snapshot position, as a restart or a PATCH of the connector's offsets
// hands it over. It never panics; what decodes encodes to JSON that
// decodes to the same key.
func FuzzKeyValues_UnmarshalJSON(f *testing.F) {
	for _, k := range []KeyValues{{"1", "x"}, {}, {"\xff\x00\x80"}, {"é", "\xc3"}, nil} {
		b, err := json.Marshal(k)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`null`, `{"base64":null}`, `{"base64":["!"]}`, `{"base64":[1]}`, `[1]`, `["\ud800"]`, `{"base64":["AA=="],"x":1}`, `"a"`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var k KeyValues
		if err := k.UnmarshalJSON(data); err != nil {
			if !strings.Contains(err.Error(), "key") {
				t.Fatalf("UnmarshalJSON(%q): error %q does not say it is a key", data, err)
			}
			return
		}
		b, err := json.Marshal(k)
		if err != nil {
			t.Fatalf("Marshal(%q) of a decoded key: %v", k, err)
		}
		var back KeyValues
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%q decodes, its encoding %s does not: %v", data, b, err)
		}
		if len(k) != len(back) || (len(k) > 0 && !reflect.DeepEqual(k, back)) {
			t.Fatalf("%q decodes to %q, its encoding %s to %q", data, k, b, back)
		}
	})
}

// FuzzParseSkippedOps feeds arbitrary skipped.operations lists to
// ParseSkippedOps: it never panics, errors quote the value, and an
// accepted list skips exactly the operations it names.
func FuzzParseSkippedOps(f *testing.F) {
	for _, s := range []string{"", "c", "c,u,d,t", "none", "none,c", " D ", "x", "c,,u"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		values := strings.Split(list, ",")
		s, err := ParseSkippedOps(values)
		if err != nil {
			if !strings.Contains(err.Error(), "give any of") && !strings.Contains(err.Error(), "none cannot be combined") {
				t.Fatalf("ParseSkippedOps(%q): unclear error %q", values, err)
			}
			return
		}
		for _, op := range []string{"c", "u", "d", "t"} {
			want := false
			for _, v := range values {
				if strings.ToLower(strings.TrimSpace(v)) == op {
					want = true
				}
			}
			if got := s.Skips(connect.Op(op)); got != want {
				t.Fatalf("ParseSkippedOps(%q).Skips(%s) = %v, want %v)", values, op, got, want)
			}
		}
	})
}

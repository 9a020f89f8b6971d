package transform

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestJSON_RoundTrip(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"order kept", `{"z":1,"a":2,"m":{"y":true,"b":null}}`, `{"z":1,"a":2,"m":{"y":true,"b":null}}`},
		{"whitespace dropped", " {\n \"a\" : [ 1 , 2 ] ,\t\"b\":{ } } ", `{"a":[1,2],"b":{}}`},
		{"numbers kept digit for digit", `{"a":1.50,"b":1e3,"c":-0.0,"d":12345678901234567890123,"e":1E-7}`, `{"a":1.50,"b":1e3,"c":-0.0,"d":12345678901234567890123,"e":1E-7}`},
		{"escapes", `{"s":"a\"b\\c\n\u00e9\u0001\/"}`, `{"s":"a\"b\\c\né\u0001/"}`},
		{"non-ASCII kept", `{"s":"Grüße 日本"}`, `{"s":"Grüße 日本"}`},
		{"surrogate pair", `{"s":"\ud83d\ude00"}`, `{"s":"😀"}`},
		{"invalid UTF-8 replaced", "{\"s\":\"a\xffb\"}", `{"s":"a` + "\ufffd" + `b"}`},
		{"top-level scalar", `"x"`, `"x"`},
		{"empty array and object", `[[],{}]`, `[[],{}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v, err := parseJSON([]byte(tc.in))
			if err != nil {
				t.Fatalf("parseJSON: %v", err)
			}
			got, err := encodeJSON(v)
			if err != nil {
				t.Fatalf("encodeJSON: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestJSON_Invalid(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a":}`, `{"a":1,}`, `nul`, `{"a":1}x`, `{"a":1,"a":2}`, `[01]`, "\x00"} {
		if v, err := parseJSON([]byte(in)); err == nil {
			t.Errorf("parseJSON(%q) = %v, want an error", in, v)
		}
	}
	_, err := parseJSON([]byte(`{"a":1,"b":2,"a":3}`))
	if err == nil || !strings.Contains(err.Error(), `duplicate field "a"`) {
		t.Errorf("duplicate field: error %v", err)
	}
}

func TestJSON_DuplicateInLargeObject(t *testing.T) {
	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		b.WriteString(`"f` + string(rune('A'+i)) + `":1,`)
	}
	b.WriteString(`"fB":2}`)
	if _, err := parseJSON([]byte(b.String())); err == nil {
		t.Error("a duplicate after the 16th field was accepted")
	}
}

func TestJSON_DeepNesting(t *testing.T) {
	// encoding/json's validator bounds the depth the parser recurses to.
	deep := strings.Repeat("[", 100000) + strings.Repeat("]", 100000)
	if _, err := parseJSON([]byte(deep)); err == nil {
		t.Error("100000 levels of nesting were accepted")
	}
	ok := strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)
	if _, err := parseJSON([]byte(ok)); err != nil {
		t.Errorf("5000 levels: %v", err)
	}
}

func TestReadObject(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // encoded row; "" for no object
		err      string
	}{
		{"object", `{"a":1}`, `{"a":1}`, ""},
		{"schema envelope", `{"schema":{"type":"struct"},"payload":{"a":1}}`, `{"a":1}`, ""},
		{"schema envelope, payload first", `{"payload":{"a":1},"schema":null}`, `{"a":1}`, ""},
		{"null payload", `{"schema":{"type":"struct"},"payload":null}`, "", ""},
		{"json null", `null`, "", ""},
		{"schema and payload and more", `{"schema":{},"payload":{"a":1},"x":1}`, `{"schema":{},"payload":{"a":1},"x":1}`, ""},
		{"not JSON", `user=42`, "", "mask_fields: field email: the record value is not JSON"},
		{"array", `[1]`, "", "the record value is an array, want a JSON object"},
		{"string payload", `{"schema":{"type":"string"},"payload":"x"}`, "", "the record value is a string, want a JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row, ok, err := readObject("mask_fields", "email", []byte(tc.in))
			if tc.err != "" {
				checkBadRecord(t, err, "mask_fields", tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if tc.want != "" {
					t.Fatalf("no object, want %s", tc.want)
				}
				return
			}
			got, _ := encodeJSON(row)
			if string(got) != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if _, ok, err := readObject("x", "f", nil); ok || err != nil {
		t.Errorf("tombstone: ok %v, err %v", ok, err)
	}
}

func TestPath(t *testing.T) {
	row := func(s string) connect.Row {
		v, err := parseJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return v.(connect.Row)
	}
	p := func(s string) path {
		pp, err := parsePath(s)
		if err != nil {
			t.Fatal(err)
		}
		return pp
	}
	enc := func(r connect.Row) string {
		b, err := encodeJSON(r)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}

	if v, ok := get(row(`{"a":{"b":{"c":3}}}`), p("a.b.c")); !ok || textOf(v) != "3" {
		t.Errorf("get a.b.c = %v, %v", v, ok)
	}
	if _, ok := get(row(`{"a":{"b":"x"}}`), p("a.b.c")); ok {
		t.Error("get through a string found something")
	}
	r, err := set(row(`{"a":{"x":1}}`), p("a.b.c"), "v")
	if err != nil || enc(r) != `{"a":{"x":1,"b":{"c":"v"}}}` {
		t.Errorf("set a.b.c = %s, %v", enc(r), err)
	}
	r, err = set(row(`{"a":null}`), p("a.b"), int64(1))
	if err != nil || enc(r) != `{"a":{"b":1}}` {
		t.Errorf("set through null = %s, %v", enc(r), err)
	}
	if _, err = set(row(`{"x":{"a":{"b":[1]}}}`), p("x.a.b.c"), 1); err == nil || err.Error() != "x.a.b is an array, not an object" {
		t.Errorf("set through an array: %v", err)
	}
	if r = remove(row(`{"a":{"b":1,"c":2},"d":3}`), p("a.b")); enc(r) != `{"a":{"c":2},"d":3}` {
		t.Errorf("remove a.b = %s", enc(r))
	}
	if r = remove(row(`{"a":1}`), p("a.b")); enc(r) != `{"a":1}` {
		t.Errorf("remove below a number = %s", enc(r))
	}
	for _, bad := range []string{"", " ", "a..b", ".a", "a."} {
		if _, err := parsePath(bad); err == nil {
			t.Errorf("parsePath(%q) succeeded", bad)
		}
	}
}

package connect

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestAppendJavaFloat(t *testing.T) {
	tests := []struct {
		f    float64
		bits int
		want string
	}{
		{0, 64, "0.0"},
		{math.Copysign(0, -1), 64, "-0.0"},
		{1, 64, "1.0"},
		{-4.5, 64, "-4.5"},
		{100, 64, "100.0"},
		{12.34, 64, "12.34"},
		{0.001, 64, "0.001"},
		{0.0001, 64, "1.0E-4"},
		{1.25e-5, 64, "1.25E-5"},
		{9999999, 64, "9999999.0"},
		{1e7, 64, "1.0E7"},
		{123456789, 64, "1.23456789E8"},
		{1e10, 64, "1.0E10"},
		{1e23, 64, "1.0E23"},
		{2e23, 64, "2.0E23"},
		{0.30000000000000004, 64, "0.30000000000000004"},
		{math.MaxFloat64, 64, "1.7976931348623157E308"},
		{math.SmallestNonzeroFloat64, 64, "4.9E-324"},
		{float64(float32(1.1)), 32, "1.1"},
		{math.MaxFloat32, 32, "3.4028235E38"},
		{math.SmallestNonzeroFloat32, 32, "1.4E-45"},
	}
	for _, tt := range tests {
		got, err := appendJavaFloat(nil, tt.f, tt.bits)
		if err != nil {
			t.Errorf("appendJavaFloat(%v, %d): %v", tt.f, tt.bits, err)
			continue
		}
		if string(got) != tt.want {
			t.Errorf("appendJavaFloat(%v, %d) = %s, want %s", tt.f, tt.bits, got, tt.want)
		}
	}
	// JSON lacks these; Jackson (Kafka Connect, Debezium) writes strings.
	for f, want := range map[float64]string{math.Inf(1): `"Infinity"`, math.Inf(-1): `"-Infinity"`} {
		if got, err := appendJavaFloat(nil, f, 64); err != nil || string(got) != want {
			t.Errorf("appendJavaFloat(%v) = %s, %v; want %s", f, got, err, want)
		}
	}
	if got, err := appendJavaFloat(nil, math.NaN(), 64); err != nil || string(got) != `"NaN"` {
		t.Errorf("appendJavaFloat(NaN) = %s, %v; want \"NaN\"", got, err)
	}
}

func TestAppendString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`a"b\c`, `"a\"b\\c"`},
		{"tab\tnl\ncr\rbs\bff\f", `"tab\tnl\ncr\rbs\bff\f"`},
		{"\x00\x1f", `"\u0000\u001f"`},
		{"<b>&</b>", `"<b>&</b>"`},
		{"é€😀", `"é€😀"`},
		{"bad\xffutf8", "\"bad\ufffdutf8\""},
	}
	for _, tt := range tests {
		got := string(appendString(nil, tt.in))
		if got != tt.want {
			t.Errorf("appendString(%q) = %s, want %s", tt.in, got, tt.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("appendString(%q) = %s is not valid JSON: %v", tt.in, got, err)
		}
	}
}

func TestParseJSON(t *testing.T) {
	got, err := parseJSON([]byte(` {"b": 1, "a": [1.5, 1.0E10, "x", null, true], "big": 123456789012345678901, "huge": 1e400, "neg": -0} `))
	if err != nil {
		t.Fatal(err)
	}
	want := Row{
		{"b", int64(1)},
		{"a", []any{1.5, 1e10, "x", nil, true}},
		{"big", json.Number("123456789012345678901")},
		{"huge", json.Number("1e400")},
		{"neg", int64(0)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseJSON = %#v, want %#v", got, want)
	}
}

func TestParseJSON_Errors(t *testing.T) {
	deep := make([]byte, 0, 2*maxJSONDepth+2)
	for i := 0; i <= maxJSONDepth; i++ {
		deep = append(deep, '[')
	}
	for i := 0; i <= maxJSONDepth; i++ {
		deep = append(deep, ']')
	}
	for _, in := range []string{
		``,
		`{`,
		`{"a":1,"a":2}`,
		`{"a":1} {}`,
		`[1,]`,
		`nul`,
		string(deep),
	} {
		if _, err := parseJSON([]byte(in)); err == nil {
			t.Errorf("parseJSON(%.40q): no error", in)
		}
	}
}

func TestValidNumber(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "1.0E-4", "123456789012345678901"} {
		if !validNumber(s) {
			t.Errorf("validNumber(%q) = false", s)
		}
	}
	for _, s := range []string{"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "1x", "NaN", "0x10"} {
		if validNumber(s) {
			t.Errorf("validNumber(%q) = true", s)
		}
	}
}

// FuzzParseJSON checks the hand-written parser against encoding/json: it
// accepts exactly the valid JSON (but for duplicate keys and excessive
// nesting, which it rejects on purpose) and reads the same values.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e3,"x\u00e9\ud83d\ude00\n",null,true,false,{}],"b":{"c":[]}}`,
		`"\ud800 lone"`, `"bad \xff utf8"`, `-0`, `1E400`, `123456789012345678901`, ` [ ] `,
		`{"a":1,"a":2}`, `{"a" 1}`, `[1,]`, `"\x01"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseJSON(data)
		valid := json.Valid(data)
		if err == nil && !valid {
			t.Fatalf("parseJSON accepted invalid JSON %q", data)
		}
		if err != nil {
			if valid && !strings.Contains(err.Error(), "duplicate field") && !strings.Contains(err.Error(), "nested deeper") {
				t.Fatalf("parseJSON rejected valid JSON %q: %v", data, err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if g, w := canonical(got), canonical(want); !reflect.DeepEqual(g, w) {
			t.Fatalf("parseJSON(%q) = %#v, encoding/json reads %#v", data, g, w)
		}
	})
}

// canonical maps both parsers' output to one form: objects as maps, numbers
// as float64 (or their text when beyond float64).
func canonical(v any) any {
	switch v := v.(type) {
	case Row:
		m := make(map[string]any, len(v))
		for _, f := range v {
			m[f.Name] = canonical(f.Value)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = canonical(e)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = canonical(e)
		}
		return out
	case int64:
		return float64(v)
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(f, 0) {
			return "number " + string(v)
		}
		return f
	}
	return v
}

// TestPlainWord checks the eight-byte test against the byte table, for
// every byte value in every position among plain neighbours.
func TestPlainWord(t *testing.T) {
	for pos := range 8 {
		for c := range 256 {
			w := uint64(0x6161616161616161) // "aaaaaaaa"
			w = w&^(0xff<<(8*pos)) | uint64(c)<<(8*pos)
			if got, want := plainWord(w), plainASCII[c]; got != want {
				t.Fatalf("byte %#x at %d: plainWord = %v, want %v", c, pos, got, want)
			}
		}
	}
	for _, s := range []string{"abcdefg\x00", "\"abcdefg", "abc\\defg", "abcdefg\x7f", "abcdefg\xff", "\x1fabcdefg"} {
		if got := appendString(nil, s); string(got) != string(appendEscapedString(nil, s, 0)) {
			t.Errorf("appendString(%q) = %s", s, got)
		}
	}
}

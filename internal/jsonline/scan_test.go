package jsonline

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

func TestScanJSON(t *testing.T) {
	tests := []struct {
		in             string
		valid, compact bool
	}{
		{`{"a":1,"b":[true,false,null],"c":"x\"y\\u00e9"}`, true, true},
		{` {"a": 1} `, true, false},
		{"{\n\"a\":1}", true, false},
		{`-0.5e+10`, true, true},
		{`"plain"`, true, true},
		{`{"a":1,}`, false, false},
		{`[1 2]`, false, false},
		{`01`, false, false},
		{`1.`, false, false},
		{`"\x"`, false, false},
		{"\"a\tb\"", false, false},
		{`{"a":1}{"b":2}`, false, false},
		{`tru`, false, false},
		{``, false, false},
		{`{"a":"\ud83d"}`, true, true},
	}
	for _, tt := range tests {
		valid, compact, _ := scanJSON([]byte(tt.in))
		if valid != tt.valid || (valid && compact != tt.compact) {
			t.Errorf("scanJSON(%q) = %v, %v; want %v, %v", tt.in, valid, compact, tt.valid, tt.compact)
		}
		if valid != json.Valid([]byte(tt.in)) {
			t.Errorf("scanJSON(%q) valid = %v, encoding/json says %v", tt.in, valid, !valid)
		}
	}
}

// TestScanJSON_SpecialAtEveryPosition puts a byte that needs a look (an
// escape, a quote, a control character, non-ASCII) at every position of
// strings around the eight-byte steps of the scanner, and checks the
// verdicts against encoding/json.
func TestScanJSON_SpecialAtEveryPosition(t *testing.T) {
	for n := 0; n <= 90; n++ {
		for pos := 0; pos < n; pos++ {
			for _, special := range []string{`\"`, `\\`, `\n`, `\u00e9`, "\t", "é", "\xff", `"`, `\x`} {
				str := strings.Repeat("a", pos) + special + strings.Repeat("b", n-pos)
				data := []byte(`{"k":"` + str + `","n":1}`)
				valid, _, ascii := scanJSON(data)
				if want := json.Valid(data); valid != want {
					t.Fatalf("scanJSON(%q) valid = %v, encoding/json says %v", data, valid, want)
				}
				if wantASCII := !strings.ContainsFunc(string(data), func(r rune) bool { return r >= 0x80 }); valid && ascii != wantASCII {
					t.Fatalf("scanJSON(%q) ascii = %v", data, ascii)
				}
			}
		}
	}
}

// FuzzScanJSON checks scanJSON against encoding/json: same validity, and
// "compact" exactly when json.Compact would change nothing.
func FuzzScanJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2,{"b":"c"}]`, ` 1 `, `"\u0041"`, `{"a":[]}`, `-1.5E-3`, `nul`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		valid, compact, ascii := scanJSON(data)
		if want := json.Valid(data); valid != want {
			t.Fatalf("scanJSON(%q) valid = %v, encoding/json says %v", data, valid, want)
		}
		if !valid {
			return
		}
		if want := !bytes.ContainsFunc(data, func(r rune) bool { return r >= 0x80 || r == utf8.RuneError }); ascii != want {
			t.Fatalf("scanJSON(%q) ascii = %v, want %v", data, ascii, want)
		}
		var b bytes.Buffer
		if err := json.Compact(&b, data); err != nil {
			t.Fatal(err)
		}
		if isCompact := bytes.Equal(b.Bytes(), data); compact != isCompact {
			t.Fatalf("scanJSON(%q) compact = %v, json.Compact gives %q", data, compact, b.Bytes())
		}
	})
}

func BenchmarkScanJSON(b *testing.B) {
	v := []byte(`{"seq":1683,"user_id":"user-313","event":"page_view","properties":{"path":"/about","referrer":"https://example.com"},"timestamp":"2026-11-29T08:28:15.848973532Z","pad":"` + string(bytes.Repeat([]byte("x"), 800)) + `"}`)
	b.SetBytes(int64(len(v)))
	b.Run("scanJSON", func(b *testing.B) {
		for b.Loop() {
			scanJSON(v)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(v)
		}
	})
}

func BenchmarkAppendLine(b *testing.B) {
	event := `{"seq":1,"user_id":"user-1","event":"page_view","properties":{"path":"/"}},`
	v := []byte("[" + strings.TrimSuffix(strings.Repeat(event, 14), ",") + "]") // about 1 KiB
	r := connect.Record{Topic: "web.tracking", Key: []byte("user-1"), Value: v, Timestamp: time.Now()}
	var buf bytes.Buffer
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		Append(&buf, &r, true)
	}
}

// TestScanJSON_Depth checks the nesting limit against encoding/json's
// (10000 levels), in arrays, objects and both mixed, across the 64 levels
// the scanner keeps on its stack.
func TestScanJSON_Depth(t *testing.T) {
	for _, depth := range []int{1, 63, 64, 65, 200, maxDepth - 1, maxDepth, maxDepth + 1} {
		for _, kind := range []string{"arrays", "objects", "mixed"} {
			var open, close strings.Builder
			for level := range depth {
				if kind == "arrays" || kind == "mixed" && level%2 == 0 {
					open.WriteString("[")
					close.WriteString("]")
				} else {
					open.WriteString(`{"k":`)
					close.WriteString("}")
				}
			}
			closing := []byte(close.String())
			slices.Reverse(closing)
			data := []byte(open.String() + "1" + string(closing))
			valid, compact, _ := scanJSON(data)
			if want := json.Valid(data); valid != want || valid && !compact {
				t.Errorf("%s nested %d deep: scanJSON valid = %v, compact = %v; encoding/json says valid = %v", kind, depth, valid, compact, want)
			}
		}
	}
}

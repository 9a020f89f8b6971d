package connect

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestRow_GetSetDelete(t *testing.T) {
	var r Row
	r.Set("id", int64(1))
	r.Set("name", "a")
	r.Set("id", int64(2)) // replaces in place
	if got, want := r, (Row{{"id", int64(2)}, {"name", "a"}}); !reflect.DeepEqual(got, want) {
		t.Fatalf("after Set: got %v, want %v", got, want)
	}
	if v, ok := r.Get("name"); !ok || v != "a" {
		t.Errorf(`Get("name") = %v, %v; want "a", true`, v, ok)
	}
	if v, ok := r.Get("missing"); ok || v != nil {
		t.Errorf(`Get("missing") = %v, %v; want nil, false`, v, ok)
	}
	if !r.Delete("id") || r.Delete("id") {
		t.Error("Delete: want true, then false")
	}
	if got, want := r.Names(), []string{"name"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
}

func TestRow_Select(t *testing.T) {
	r := Row{{"a", 1}, {"b", 2}, {"c", 3}}
	if got, want := r.Select("c", "a", "zz"), (Row{{"c", 3}, {"a", 1}}); !reflect.DeepEqual(got, want) {
		t.Errorf("Select = %v, want %v", got, want)
	}
	if got := r.Select(); got != nil {
		t.Errorf("Select() = %v, want nil", got)
	}
}

func TestRow_JSON(t *testing.T) {
	r := Row{
		{"z", int64(1)},
		{"a", "x"},
		{"n", nil},
		{"f", 2.5},
		{"nested", Row{{"k", true}}},
		{"list", []any{int64(1), "two"}},
	}
	b, err := json.Marshal(struct {
		Row Row `json:"row"`
	}{r})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"row":{"z":1,"a":"x","n":null,"f":2.5,"nested":{"k":true},"list":[1,"two"]}}`
	if string(b) != want {
		t.Errorf("Marshal = %s, want %s", b, want)
	}
	var back struct {
		Row Row `json:"row"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Row, r) {
		t.Errorf("Unmarshal = %v, want %v", back.Row, r)
	}
	var null Row = Row{{"x", 1}}
	if err := json.Unmarshal([]byte("null"), &null); err != nil || null != nil {
		t.Errorf("Unmarshal(null) = %v, %v; want nil row", null, err)
	}
	if err := json.Unmarshal([]byte(`[1]`), &null); err == nil {
		t.Error("Unmarshal([1]): no error")
	}
	if got := (Row{{"a", 1}, {"a", 2}}).String(); got == "" || got[0] != '%' {
		t.Errorf("String of a row with duplicates = %q, want an error marker", got)
	}
}

func TestRow_MarshalJSON_Types(t *testing.T) {
	r := Row{
		{"i8", int8(-8)}, {"u64", uint64(18446744073709551615)}, {"f32", float32(1.1)},
		{"bytes", []byte{0x04, 0xd2}}, {"num", json.Number("123456789012345678901")},
	}
	got, err := r.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"i8":-8,"u64":18446744073709551615,"f32":1.1,"bytes":"BNI=","num":123456789012345678901}`
	if string(got) != want {
		t.Errorf("MarshalJSON = %s, want %s", got, want)
	}
	if _, err := (Row{{"bad", json.Number("12abc")}}).MarshalJSON(); err == nil {
		t.Error("invalid json.Number: no error")
	}
}

// TestCheckUniqueNames_MatchesExact holds the masked check to the
// pairwise one on random rows of short names (many collide in the mask).
func TestCheckUniqueNames_MatchesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	letters := "ab\"é"
	for i := range 20000 {
		r := make(Row, rng.IntN(70))
		for j := range r {
			name := make([]byte, rng.IntN(4))
			for k := range name {
				name[k] = letters[rng.IntN(len(letters))]
			}
			r[j].Name = string(name)
		}
		got, want := checkUniqueNames(r), checkUniqueNamesExact(r)
		if (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
			t.Fatalf("row %d %v: checkUniqueNames = %v, want %v", i, r.Names(), got, want)
		}
	}
}

// A number too small for float64 (it would underflow to 0) stays a
// json.Number holding its text, as the value model promises for any number
// that a float64 would change.
func TestRow_JSON_UnderflowKeepsText(t *testing.T) {
	for _, n := range []json.Number{"1e-400", "-2.5E-350", "0.0000e-400"} {
		r := Row{{"n", n}}
		b, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Row
		if err := back.UnmarshalJSON(b); err != nil {
			t.Fatal(err)
		}
		want := any(n)
		if n == "0.0000e-400" {
			want = float64(0) // a zero loses nothing as a float64
		}
		if v, _ := back.Get("n"); !reflect.DeepEqual(v, want) {
			t.Errorf("%s round-tripped to %#v (%s -> %s)", n, v, b, back)
		}
	}
}

package httptrack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzDecodeRequest feeds arbitrary bodies to the request decoder, as a
// batch and as a single track message: it must not panic, it must account
// for every message (accepted or rejected with a problem naming its index),
// and every accepted message must enrich into a JSON object that keeps its
// type, ids and messageId.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"batch":[{"type":"track","userId":"u","event":"E","messageId":"m"}],"writeKey":"k","sentAt":"2026-01-02T03:04:05.000Z"}`,
		`{"batch":[{"type":"identify","anonymousId":"a","traits":{"x":1},"context":{"ip":"1.2.3.4"}},{"type":"alias"}],"context":{"library":{}}}`,
		`{"userId":42,"event":"E","timestamp":"2026-01-02T03:04:05Z","properties":{"a":[1,2,{"b":null}]}}`,
		`{"batch":[{"type":"group","userId":"u","groupId":"g","integrations":{"All":false}}],"integrations":{"X":true}}`,
		`{"batch":[1,null,"x",{"type":"page","userId":"\u00e9\ud800"}]}`,
		`{"userId":"u","event":"E","messageId":null,"sentAt":null}`,
		`[`, `{}`, `null`,
	} {
		f.Add([]byte(s))
	}
	lim := limits{maxMessageBytes: 32 << 10, maxBatchBytes: 500 << 10, maxBatchEvents: 2500}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, typ := range []string{"", "track"} {
			d, p := decodeRequest(body, typ, lim)
			if p != nil {
				if d != nil || p.Index != -1 || p.Code == "" || p.Message == "" {
					t.Fatalf("request problem %+v with result %v", p, d)
				}
				continue
			}
			if len(d.msgs)+len(d.problems) != d.total {
				t.Fatalf("%d accepted + %d rejected != %d messages", len(d.msgs), len(d.problems), d.total)
			}
			for _, pr := range d.problems {
				if pr.Index < 0 || pr.Index >= d.total || pr.Code == "" || pr.Message == "" {
					t.Fatalf("problem %+v of %d messages", pr, d.total)
				}
			}
			// The values of a request share slabs: build them all before
			// checking any, so that one overwriting another shows.
			st := newStamps(now, len(body)+len(d.msgs)*100)
			var es []enriched
			for _, m := range d.msgs {
				es = append(es, enrichStamped(m, st, "127.0.0.1", func() string { return "gen" }))
			}
			for i, m := range d.msgs {
				e := es[i]
				var v map[string]any
				if err := json.Unmarshal(e.value, &v); err != nil {
					t.Fatalf("enriched value is not JSON: %v\n%s", err, e.value)
				}
				if v["type"] != m.typ || v["messageId"] != e.messageID || e.key == "" {
					t.Fatalf("enriched value lost type, messageId or key: %s", e.value)
				}
				if m.userID != "" && v["userId"] != m.userID {
					t.Fatalf("userId %q became %v", m.userID, v["userId"])
				}
				if _, ok := v["writeKey"]; ok {
					t.Fatalf("writeKey kept: %s", e.value)
				}
			}
			checkPreserved(t, body, typ, d, es)
		}
	})
}

// checkPreserved checks that every accepted message of a decoded request
// is stored whole and unchanged: decoded independently with encoding/json,
// each member the client sent is in the enriched value with the same
// value, except those the enrichment owns (type, ids, times, writeKey);
// context and integrations keep every member of the message's own object
// and, in a batch, those of the batch's object the message does not set.
// The accepted messages are the indexes no problem names, in order.
func checkPreserved(t *testing.T, body []byte, typ string, d *decoded, es []enriched) {
	t.Helper()
	dec := func(b []byte) (map[string]any, bool) {
		var m map[string]any
		jd := json.NewDecoder(bytes.NewReader(b))
		jd.UseNumber()
		if err := jd.Decode(&m); err != nil || m == nil {
			return nil, false
		}
		return m, true
	}
	top, ok := dec(body)
	if !ok {
		t.Fatalf("accepted a request encoding/json does not decode as an object: %q", body)
	}
	var items []any
	var batchCtx, batchInteg map[string]any
	if typ != "" {
		items = []any{top}
	} else {
		items, _ = top["batch"].([]any)
		batchCtx, _ = top["context"].(map[string]any)
		batchInteg, _ = top["integrations"].(map[string]any)
	}
	if len(items) != d.total {
		t.Fatalf("decoder counts %d messages, encoding/json %d", d.total, len(items))
	}
	rejected := map[int]bool{}
	for _, p := range d.problems {
		rejected[p.Index] = true
	}
	j := 0
	for i, item := range items {
		if rejected[i] {
			continue
		}
		if j >= len(es) {
			t.Fatalf("message %d was neither accepted nor rejected", i)
		}
		in, ok := item.(map[string]any)
		if !ok {
			t.Fatalf("accepted message %d is not an object: %v", i, item)
		}
		out, ok := dec(es[j].value)
		if !ok {
			t.Fatalf("enriched message %d does not decode: %s", i, es[j].value)
		}
		j++
		for k, want := range in {
			switch k {
			case "type", "writeKey", "timestamp", "originalTimestamp", "sentAt", "receivedAt":
				continue
			case "messageId":
				// An empty messageId is a missing one: it is generated,
				// never kept, else all such messages would be duplicates.
				if want == "" && !es[j-1].generated {
					t.Fatalf("message %d: empty messageId stored as %v, not generated", i, out[k])
				}
				if want != nil && want != "" && out[k] != want {
					t.Fatalf("message %d: messageId %v stored as %v", i, want, out[k])
				}
				continue
			case "userId", "anonymousId":
				if want != nil && fmt.Sprint(out[k]) != fmt.Sprint(want) {
					t.Fatalf("message %d: %s %v stored as %v", i, k, want, out[k])
				}
				continue
			case "context", "integrations":
				continue // below
			}
			if got, ok := out[k]; !ok || !reflect.DeepEqual(got, want) {
				t.Fatalf("message %d: member %q = %v stored as %v (present %v)\nin:  %s\nout: %s", i, k, want, got, ok, body, es[j-1].value)
			}
		}
		for _, f := range []struct {
			name  string
			batch map[string]any
		}{{"context", batchCtx}, {"integrations", batchInteg}} {
			own, _ := in[f.name].(map[string]any)
			got, _ := out[f.name].(map[string]any)
			for k, want := range f.batch {
				if _, ok := own[k]; !ok && !reflect.DeepEqual(got[k], want) {
					t.Fatalf("message %d: batch %s.%s = %v stored as %v", i, f.name, k, want, got[k])
				}
			}
			for k, want := range own {
				if !reflect.DeepEqual(got[k], want) {
					t.Fatalf("message %d: %s.%s = %v stored as %v", i, f.name, k, want, got[k])
				}
			}
		}
	}
	if j != len(es) {
		t.Fatalf("%d messages accepted, %d enriched", j, len(es))
	}
}

// FuzzScanMembers checks the scanners against encoding/json: on valid JSON
// they find the same members and elements, byte for byte.
func FuzzScanMembers(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":"x\"}","c":{"d":[1,{"e":"]"}]},"a":2}`, `[1, "a", {"b": null}, [true]]`, ` { } `, `"s"`, `{"\u00e9\\":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var want map[string]json.RawMessage
		werr := json.Unmarshal(b, &want)
		got, gerr := scanMembers(nil, b)
		if (werr == nil && want != nil) != (gerr == nil) {
			t.Fatalf("encoding/json: %v (%v), scanMembers: %v", werr, want, gerr)
		}
		if gerr == nil {
			if len(got) != len(want) {
				t.Fatalf("%d members, encoding/json finds %d", len(got), len(want))
			}
			for k, v := range want {
				if g, _ := got.get(k); string(g) != string(v) {
					t.Fatalf("member %q: %s, encoding/json: %s", k, g, v)
				}
			}
			if (want == nil) != (got == nil) {
				t.Fatalf("members %v, encoding/json %v: want both nil or neither", got, want)
			}
		}
		var wantElems []json.RawMessage
		werr = json.Unmarshal(b, &wantElems)
		gotElems, gerr := scanElements(b)
		if (werr == nil && wantElems != nil) != (gerr == nil) {
			t.Fatalf("elements: encoding/json: %v, scanElements: %v", werr, gerr)
		}
		for i := range gotElems {
			if string(gotElems[i]) != string(wantElems[i]) {
				t.Fatalf("element %d: %s, encoding/json: %s", i, gotElems[i], wantElems[i])
			}
		}
		checkIndexed(t, b)
	})
}

// checkIndexed checks that the scanners find the same members and
// elements, at every level, with the index of validIndexed as without.
func checkIndexed(t *testing.T, b []byte) {
	t.Helper()
	a := &arena{}
	if !validIndexed(b, a) {
		t.Fatalf("validIndexed refuses valid JSON %q", b)
	}
	var walk func(v []byte, off, depth int)
	walk = func(v []byte, off, depth int) {
		if depth > 20 {
			return
		}
		if plain, perr := scanMembers(nil, v); perr == nil {
			got, err := scanMembersAt(a, v, off)
			if err != nil || len(got) != len(plain) {
				t.Fatalf("indexed members of %q: %v, %d members; unindexed %d", v, err, len(got), len(plain))
			}
			for i := range got {
				if got[i].name != plain[i].name || string(got[i].value) != string(plain[i].value) || string(b[got[i].off:got[i].off+len(got[i].value)]) != string(got[i].value) {
					t.Fatalf("indexed member %d of %q: %q=%s at %d, unindexed %q=%s", i, v, got[i].name, got[i].value, got[i].off, plain[i].name, plain[i].value)
				}
				walk(got[i].value, got[i].off, depth+1)
			}
		}
		if plain, perr := scanElements(v); perr == nil {
			got, offs, err := scanElementsAt(a, v, off)
			if err != nil || len(got) != len(plain) {
				t.Fatalf("indexed elements of %q: %v, %d; unindexed %d", v, err, len(got), len(plain))
			}
			for i := range got {
				if string(got[i]) != string(plain[i]) || string(b[offs[i]:offs[i]+len(got[i])]) != string(got[i]) {
					t.Fatalf("indexed element %d of %q: %s at %d, unindexed %s", i, v, got[i], offs[i], plain[i])
				}
				walk(got[i], offs[i], depth+1)
			}
		}
	}
	i := skipSpace(b, 0)
	walk(b[i:], i, 0)
}

// FuzzValidJSON checks validJSON against encoding/json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e+3,0,true,false,null,"x\u00e9\n"],"b":{}}`, ` [ ] `, `01`, `1.`, `-`, `1e`, `"\x"`, `"a` + "\x01" + `"`,
		`{"a" 1}`, `[1,]`, `{,}`, `nul`, `"\ud800"`, "\"\xff\"", `{"a":1}{}`, `[[[[[]]]]]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, encoding/json.Valid = %v", b, got, want)
		}
	})
}

// TestValidJSON_Depth checks the nesting limit against encoding/json's.
func TestValidJSON_Depth(t *testing.T) {
	for _, n := range []int{9999, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closer := "]"
			if open != "[" {
				closer = "}"
			}
			b := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closer, n))
			if got, want := validJSON(b), json.Valid(b); got != want {
				t.Errorf("depth %d of %s: validJSON %v, encoding/json.Valid %v", n, open, got, want)
			}
		}
	}
}

// FuzzAppendTime checks appendTime against time.Time.AppendFormat.
func FuzzAppendTime(f *testing.F) {
	for _, ns := range []int64{0, 1, -1, 1764410400123456789, -62135596800000000, 253402300799999999} {
		f.Add(ns/1e9, ns%1e9)
	}
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("x", 3600))
		if got, want := string(appendTime(nil, tm)), tm.UTC().Format(timeLayout); got != want {
			t.Fatalf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	})
}

package postgres

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// TestPosition_EncodeSameAsJSON checks the hand-written encoding of
// streaming positions against encoding/json.
func TestPosition_EncodeSameAsJSON(t *testing.T) {
	for _, p := range []position{{}, {LSN: 1}, {LSN: 1 << 63, TxID: 1<<32 - 1, TsUsec: -5}, {LSN: 7, TsUsec: 1700000000000000}, {TxID: 3},
		{LSN: 9, Incremental: &incState{Tables: []string{"a"}, Paused: true}}, {LSN: 9, Snapshot: &progress{Done: []string{"x"}}}} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.encode(); !bytes.Equal(got, want) {
			t.Errorf("%+v: got %s, want %s", p, got, want)
		}
	}
}

// TestStreamLSN checks the quick reading of streaming positions against
// decodePosition: the same LSN, or a refusal (decodePosition then reads it).
func TestStreamLSN(t *testing.T) {
	for _, s := range []string{`{"lsn":1}`, `{"lsn":18446744073709551615,"txId":4294967295,"ts_usec":-5}`, `{"lsn":7,"ts_usec":1700000000000000}`,
		`{"lsn":7,"txId":3}`, `{"lsn":9,"incremental":{"tables":["a"]}}`, `{"lsn":9,"snapshot":{}}`, `{"lsn":}`, `{"lsn":1,"txId":-1}`,
		`{"lsn":1} `, `{"lsn":99999999999999999999}`, `{"txId":1,"lsn":2}`, ``} {
		lsn, ok := streamLSN([]byte(s))
		p, err := decodePosition(connect.Position(s))
		if ok && (err != nil || p.LSN != lsn || p.Snapshot != nil || p.Incremental != nil) {
			t.Errorf("%s: streamLSN %d, decodePosition %+v %v", s, lsn, p, err)
		}
		if !ok && s == `{"lsn":1}` {
			t.Errorf("%s: refused", s)
		}
	}
	for _, p := range []position{{LSN: 5}, {LSN: 1 << 60, TxID: 9, TsUsec: 12}} {
		if lsn, ok := streamLSN(p.encode()); !ok || lsn != p.LSN {
			t.Errorf("%s: %d %v", p.encode(), lsn, ok)
		}
	}
}

// TestPosition_NonUTF8KeyRoundTrips: a last key or split boundary that is
// not UTF-8 (a LATIN1 or SQL_ASCII database's text) keeps its bytes
// through the position, as base64; UTF-8 keys stay plain arrays, as
// positions of earlier versions hold every key, and those still decode.
func TestPosition_NonUTF8KeyRoundTrips(t *testing.T) {
	bin := keyValues{"7", "\xe9t\xe9\xff"}
	p := position{LSN: 42, Snapshot: &progress{Last: map[string]keyValues{"public.a": bin, "public.b": {"été"}},
		Split: map[string]keyValues{"public.a": {"\xc0", "m"}}},
		Incremental: &incState{Tables: []string{"public.a"}, Last: bin}}
	enc := p.encode()
	for _, want := range []string{`"public.a":{"base64":["Nw==","6XTp/w=="]}`, `"public.b":["été"]`, `"split":{"public.a":{"base64":["wA==","bQ=="]}}`, `"last":{"base64":["Nw==","6XTp/w=="]}`} {
		if !strings.Contains(string(enc), want) {
			t.Errorf("position %s: want %s in it", enc, want)
		}
	}
	back, err := decodePosition(enc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Snapshot.Last["public.a"], bin) || !slices.Equal(back.Incremental.Last, bin) ||
		!slices.Equal(back.Snapshot.Split["public.a"], keyValues{"\xc0", "m"}) || !slices.Equal(back.Snapshot.Last["public.b"], keyValues{"été"}) {
		t.Errorf("position %s decodes to %+v %+v", enc, back.Snapshot, back.Incremental)
	}
	old := `{"lsn":42,"snapshot":{"last":{"public.a":["42"]},"split":{"public.a":["10"]}},"incremental":{"tables":["public.a"],"last":["7"]}}`
	back, err = decodePosition([]byte(old))
	if err != nil || !slices.Equal(back.Snapshot.Last["public.a"], keyValues{"42"}) || !slices.Equal(back.Snapshot.Split["public.a"], keyValues{"10"}) || !slices.Equal(back.Incremental.Last, keyValues{"7"}) {
		t.Errorf("position of the earlier format %s decodes to %+v, %v", old, back, err)
	}
	if _, err := decodePosition([]byte(`{"lsn":1,"snapshot":{"last":{"public.a":{"base64":["!"]}}}}`)); err == nil || !strings.Contains(err.Error(), "stored position") {
		t.Errorf("a key that is not base64: %v, want an error naming the position", err)
	}
}

package postgres

import (
	"bytes"
	"encoding/json"
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

package postgres

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tributary-io/tributary/connect"
)

// FuzzPositionDecode feeds arbitrary stored positions, as a restart or a
// PATCH of the connector's offsets hands them over, to decodePosition. It
// never panics; errors name the stored position; what decodes encodes to
// JSON that decodes to the same position; and streamLSN, the quick reading
// Ack uses, reads the same LSN where both read one.
func FuzzPositionDecode(f *testing.F) {
	for _, p := range []position{
		{}, {LSN: 1}, {LSN: 1 << 63, TxID: 1<<32 - 1, TsUsec: -5}, {LSN: 7, TsUsec: 1700000000000000},
		{LSN: 9, Incremental: &incState{Tables: []string{"a"}, Paused: true}},
		{LSN: 9, Snapshot: &progress{Done: []string{"x"}, Rows: map[string]int64{"x": 3}}},
		{LSN: 42, Snapshot: &progress{Last: map[string]keyValues{"public.a": {"7", "\xe9t\xe9\xff"}, "public.b": {"été"}},
			Split: map[string]keyValues{"public.a": {"\xc0", "m"}}}, Incremental: &incState{Tables: []string{"public.a"}, Last: keyValues{"1"}}},
	} {
		f.Add([]byte(p.encode()))
	}
	for _, s := range []string{`{"lsn":}`, `{"lsn":1,"txId":-1}`, `{"lsn":1} `, `{"lsn":99999999999999999999}`, `{"txId":1,"lsn":2}`, ``,
		`{"lsn":1,"txId":4294967296}`, `{"lsn":1,"snapshot":{"last":{"a":{"base64":["!"]}}}}`, `{"lsn":1,"incremental":{"last":{"base64":null}}}`,
		`{"lsn":1,"snapshot":null}`, `null`, `{"lsn":"1"}`, `{"lsn":1,"snapshot":{"split":{"t":[]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePosition(connect.Position(b))
		// streamLSN is laxer than decodePosition on txId and ts_usec
		// (any 19 digits), which Ack, the one caller, never meets: it
		// reads positions the source wrote itself.
		if lsn, ok := streamLSN(b); ok && err == nil && lsn != p.LSN {
			t.Fatalf("%q: streamLSN reads %d, decodePosition %d, %v", b, lsn, p.LSN, err)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "stored position ") {
				t.Fatalf("%q: error %q does not name the stored position", b, err)
			}
			return
		}
		enc := p.encode()
		if !json.Valid(enc) || !utf8.Valid(enc) {
			t.Fatalf("encoding %q is not JSON", enc)
		}
		back, err := decodePosition(enc)
		if err != nil {
			t.Fatalf("%q decodes, its encoding %s does not: %v", b, enc, err)
		}
		if !reflect.DeepEqual(normalPosition(p), normalPosition(back)) {
			t.Fatalf("%q decodes to %+v, its encoding %s to %+v", b, p, enc, back)
		}
		if lsn, ok := streamLSN(enc); ok && lsn != p.LSN {
			t.Fatalf("streamLSN(%s) = %d, want %d", enc, lsn, p.LSN)
		}
	})
}

// normalPosition makes empty collections nil, as omitempty writes them.
func normalPosition(p position) position {
	if p.Snapshot != nil {
		s := *p.Snapshot
		if len(s.Done) == 0 {
			s.Done = nil
		}
		if len(s.Last) == 0 {
			s.Last = nil
		}
		if len(s.Rows) == 0 {
			s.Rows = nil
		}
		if len(s.Split) == 0 {
			s.Split = nil
		}
		p.Snapshot = &s
	}
	if p.Incremental != nil {
		s := *p.Incremental
		if len(s.Last) == 0 {
			s.Last = nil
		}
		p.Incremental = &s
	}
	return p
}

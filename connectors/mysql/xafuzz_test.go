package mysql

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// canonicalXID is the form xidString writes: hex in pairs, upper case, and
// a formatID of at most 32 bits without leading zeros.
var canonicalXID = regexp.MustCompile(`^X'((?:[0-9A-F]{2})*)',X'((?:[0-9A-F]{2})*)',(0|[1-9][0-9]{0,9})$`)

// checkCanonical fails t unless xid, if it looks canonical, is what
// xidString writes for the bytes and number it shows: the XIDs the stream
// compares are equal exactly when the transactions are.
func checkCanonical(t *testing.T, from, xid string) {
	t.Helper()
	m := canonicalXID.FindStringSubmatch(xid)
	if m == nil {
		return
	}
	g, err1 := hex.DecodeString(m[1])
	b, err2 := hex.DecodeString(m[2])
	n, err3 := strconv.ParseUint(m[3], 10, 32)
	if err1 != nil || err2 != nil || err3 != nil {
		t.Fatalf("%s: xid %q looks canonical but is not (%v, %v, %v)", from, xid, err1, err2, err3)
	}
	if back := xidString(g, b, uint32(n)); back != xid {
		t.Fatalf("%s: xid %q re-formats as %q", from, xid, back)
	}
}

// FuzzXAStatement feeds the XA statement parser any query text, as the
// streamer hands it over (trimmed, starting with "XA "). It never panics;
// an XID in canonical form re-formats to itself, and the statement written
// again with it parses to the same verb and XID.
func FuzzXAStatement(f *testing.F) {
	for _, q := range []string{
		"XA START X'7831',X'',1", "XA END X'7831',X'',1", "XA COMMIT X'7834',X'6234',7",
		"xa rollback x'ab', x'cd' ,007", "XA COMMIT X'01',X'',1 ONE PHASE", "XA COMMIT 'plain'",
		"XA COMMIT X'01',X'',4294967297", "XA START 'r1'", "XA COMMIT 'o1' ONE PHASE",
		`XA PREPARE 'it''s', "a\"b\\", 0x1F`, "XA START b'101', 0b1, 18446744073709551615 JOIN",
		"XA END 0xABC SUSPEND FOR MIGRATE", "XA COMMIT 'one phase'", "XA COMMIT X'0 1',X'',1",
		"XA ROLLBACK 'x' ONE", "XA  ", "XA RECOVER CONVERT XID",
	} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		xaStatement(q) // whatever it is given
		q = strings.TrimSpace(q)
		if !isXA(q) {
			return
		}
		verb, xid := xaStatement(q)
		checkCanonical(t, q, xid)
		if canonicalXID.MatchString(xid) {
			again := "XA " + verb + " " + xid
			if v, ok := strings.CutSuffix(verb, " ONE PHASE"); ok {
				again = "XA " + v + " " + xid + " ONE PHASE"
			}
			if v2, x2 := xaStatement(again); v2 != verb || x2 != xid {
				t.Fatalf("%q → %q %q; written again %q → %q %q", q, verb, xid, again, v2, x2)
			}
		}
	})
}

// xaPrepareBody is the body of an XA_PREPARE_LOG_EVENT.
func xaPrepareBody(onePhase bool, format uint32, gtrid, bqual []byte) []byte {
	b := make([]byte, 13, 13+len(gtrid)+len(bqual))
	if onePhase {
		b[0] = 1
	}
	binary.LittleEndian.PutUint32(b[1:], format)
	binary.LittleEndian.PutUint32(b[5:], uint32(len(gtrid)))
	binary.LittleEndian.PutUint32(b[9:], uint32(len(bqual)))
	return append(append(b, gtrid...), bqual...)
}

// xidLiteral writes b as one of the string forms an XA statement takes.
func xidLiteral(b []byte, form byte) string {
	switch form % 8 {
	case 1:
		return "x'" + hex.EncodeToString(b) + "'"
	case 2:
		if len(b) > 0 {
			return "0x" + strings.ToUpper(hex.EncodeToString(b))
		}
	case 3, 4, 7:
		q := byte('\'')
		if form%8 == 4 {
			q = '"'
		}
		var s strings.Builder
		s.WriteByte(q)
		for _, c := range b {
			switch {
			case c == q && form%8 == 7:
				s.WriteString(`\` + string(q))
			case c == q:
				s.WriteString(string(q) + string(q))
			case c == '\\':
				s.WriteString(`\\`)
			case c == 0 && form%8 == 7:
				s.WriteString(`\0`)
			default:
				s.WriteByte(c)
			}
		}
		s.WriteByte(q)
		return s.String()
	case 5, 6:
		var bits strings.Builder
		for _, c := range b {
			fmt.Fprintf(&bits, "%08b", c)
		}
		if form%8 == 5 {
			return "b'" + bits.String() + "'"
		}
		if len(b) > 0 {
			return "0b" + bits.String()
		}
	}
	return "X'" + strings.ToUpper(hex.EncodeToString(b)) + "'"
}

// FuzzXAPrepareEvent feeds the XA_PREPARE_LOG_EVENT parser any body. It
// never panics; an XID it reads is canonical, and an XA statement naming
// the same XID (written in any of the forms MySQL reads, with MySQL's
// 64-bit formatID whose upper half the event drops) parses to the same.
func FuzzXAPrepareEvent(f *testing.F) {
	f.Add(xaPrepareBody(false, 1, []byte("x1"), nil), uint32(0), byte(0))
	f.Add(xaPrepareBody(true, 1, []byte("x2"), nil), uint32(0), byte(3))
	f.Add(xaPrepareBody(false, 7, []byte("x4"), []byte("b4")), uint32(1), byte(0x5a))
	f.Add(xaPrepareBody(false, 0xffffffff, []byte("it's \\ \"q\"\x00"), []byte{0, 1, 0xfe}), uint32(0xffffffff), byte(0xf7))
	f.Add([]byte{0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 'a'}, uint32(0), byte(0))
	f.Add([]byte{1, 2, 3}, uint32(0), byte(0))
	f.Fuzz(func(t *testing.T, body []byte, high uint32, form byte) {
		onePhase, xid, err := parseXAPrepare(body)
		if err != nil {
			return
		}
		if !canonicalXID.MatchString(xid) {
			t.Fatalf("body %x: xid %q not canonical", body, xid)
		}
		checkCanonical(t, fmt.Sprintf("body %x", body), xid)
		format := binary.LittleEndian.Uint32(body[1:])
		gl := binary.LittleEndian.Uint32(body[5:])
		gtrid, bqual := body[13:13+gl], body[13+gl:13+gl+binary.LittleEndian.Uint32(body[9:])]
		if again := xaPrepareBody(onePhase, format, gtrid, bqual); !bytes.HasPrefix(body, again) && !(body[0] != 0 && bytes.Equal(body[1:len(again)], again[1:])) {
			t.Fatalf("body %x reads as %q, which writes %x", body, xid, again)
		}

		// The statement of the same XID.
		var sp string
		if form&0x80 != 0 {
			sp = " \t"
		}
		lit := sp + xidLiteral(gtrid, form) + sp
		full := uint64(high)<<32 | uint64(format)
		switch {
		case form&0x40 != 0 && full == 1 && len(bqual) == 0:
			// both left out
		case form&0x40 != 0 && full == 1:
			lit += "," + sp + xidLiteral(bqual, form>>3) + sp
		default:
			lit += "," + sp + xidLiteral(bqual, form>>3) + sp + "," + sp + strconv.FormatUint(full, 10)
		}
		q, want := "XA PREPARE "+lit, "PREPARE"
		if onePhase {
			q, want = "XA COMMIT "+lit+" ONE PHASE", "COMMIT ONE PHASE"
		}
		q = strings.TrimSpace(q)
		if verb, sxid := xaStatement(q); verb != want || sxid != xid {
			t.Fatalf("statement %q → %q %q; event %x → %q", q, verb, sxid, body, xid)
		}
	})
}

// TestParseXAPrepare: bodies too short for their XID are refused, lengths
// near 2^32 included.
func TestParseXAPrepare(t *testing.T) {
	if one, xid, err := parseXAPrepare(xaPrepareBody(false, 7, []byte("x4"), []byte("b4"))); err != nil || one || xid != "X'7834',X'6234',7" {
		t.Errorf("parseXAPrepare = %v, %q, %v", one, xid, err)
	}
	for _, body := range [][]byte{
		nil, make([]byte, 12),
		{0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0},
		{0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 'a'},
		{0, 1, 0, 0, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 'a'},
	} {
		if _, xid, err := parseXAPrepare(body); err == nil {
			t.Errorf("parseXAPrepare(%x) = %q, want an error", body, xid)
		}
	}
}

// FuzzPositionDecode feeds the position decoder any stored bytes. It never
// panics; what it refuses gets an error naming the stored position, and
// what it takes encodes to bytes that decode to the same position.
func FuzzPositionDecode(f *testing.F) {
	for _, p := range []position{
		{File: "binlog.000001", Pos: 4, ServerID: 1},
		{File: "binlog.000042", Pos: 4294967295, GTIDs: "0-1-42,1-7-3", ServerID: 5400000, TsSec: 1700000000},
		{File: "binlog.000003", Pos: 1200, GTIDs: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1", ServerID: 1,
			Emitted: &emittedMark{File: "binlog.000003", Pos: 5000, GTIDs: "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2"}},
		{File: "binlog.000007", Pos: 330, Emitted: &emittedMark{File: "binlog.000008", Pos: 4}},
		{File: `we"ird\<&>é`, Pos: 1},
		{File: "f", Snapshot: &progress{Done: []string{"a.b"}, Last: map[string]keyValues{"c.d": {"1", "x"}}}},
		{File: "f", Pos: 9, Incremental: &incState{Tables: []string{"d.t"}, Last: []string{"7"}, Paused: true}},
		{File: "f", Snapshot: &progress{Last: map[string]keyValues{"c.d": {"1", "\xff\x00\x80"}}}},
		{File: "f", Pos: 9, Incremental: &incState{Tables: []string{"d.t"}, Last: keyValues{"\xc3"}}},
	} {
		f.Add([]byte(p.encode()))
	}
	for _, s := range []string{`{"file":"f","emitted":{}}`, `{"file":"f","emitted":"x"}`, `{"file":"f","emitted":null}`,
		`{"gtids":"0-1-1","emitted":{"gtids":"0-1-2"}}`, `{"file":"f","pos":-1}`, `null`, `{}`, `[`, "\xff",
		`{"file":"f","snapshot":{"last":{"d.t":{"base64":["!"]}}}}`, `{"file":"f","incremental":{"tables":["d.t"],"last":{"base64":null}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := decodePosition(b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "stored position ") {
				t.Fatalf("%q: error %q does not name the stored position", b, err)
			}
			return
		}
		enc := p.encode()
		back, err := decodePosition(enc)
		if err != nil {
			t.Fatalf("%q decodes, its encoding %s does not: %v", b, enc, err)
		}
		if !reflect.DeepEqual(normalPosition(p), normalPosition(back)) {
			t.Fatalf("%q decodes to %+v, its encoding %s to %+v", b, p, enc, back)
		}
		if !json.Valid(enc) || !utf8.Valid(enc) {
			t.Fatalf("encoding %q is not JSON", enc)
		}
	})
}

// normalPosition is p with empty lists as nil, which JSON does not tell
// apart from absent ones (omitempty).
func normalPosition(p position) position {
	if p.Snapshot != nil {
		s := *p.Snapshot
		if len(s.Done) == 0 {
			s.Done = nil
		}
		if len(s.Last) == 0 {
			s.Last = nil
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

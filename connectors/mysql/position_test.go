package mysql

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestPosition_EncodeIsJSON(t *testing.T) {
	for _, p := range []position{
		{File: "binlog.000001", Pos: 4, ServerID: 1},
		{File: "binlog.000042", Pos: 4294967295, GTIDs: "0-1-42,1-7-3", Row: 2, Event: 1, ServerID: 5400000, TsSec: 1700000000},
		{File: "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7", GTIDs: "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n4e11:1"},
		{File: `we"ird\<&>é`, Pos: 1},
		{File: "f", Snapshot: &progress{Done: []string{"a.b"}, Last: map[string]keyValues{"c.d": {"1", "x"}}}},
	} {
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.encode(); string(got) != string(want) {
			t.Errorf("encode:\n got %s\nwant %s", got, want)
		}
		back, err := decodePosition(p.encode())
		if err != nil || back.File != p.File || back.GTIDs != p.GTIDs || back.Pos != p.Pos {
			t.Errorf("round trip of %s: %+v, %v", p.encode(), back, err)
		}
	}
}

// TestPosition_EmittedMark: a position with an emitted mark round-trips,
// and a mark naming nothing is refused as the position it is in.
func TestPosition_EmittedMark(t *testing.T) {
	p := position{File: "binlog.000003", Pos: 1200, GTIDs: "0-1-7", ServerID: 1,
		Emitted: &emittedMark{File: "binlog.000004", Pos: 4, GTIDs: "0-1-9"}}
	back, err := decodePosition(p.encode())
	if err != nil || back.Emitted == nil || *back.Emitted != *p.Emitted {
		t.Fatalf("round trip of %s: %+v, %v", p.encode(), back, err)
	}
	for _, s := range []string{`{"file":"f","emitted":{}}`, `{"file":"f","emitted":{"pos":7}}`, `{"file":"f","emitted":"x"}`} {
		if _, err := decodePosition([]byte(s)); err == nil || !strings.Contains(err.Error(), "stored position "+strconv.Quote(s)) {
			t.Errorf("decodePosition(%s): %v, want an error naming the position", s, err)
		}
	}
}

// TestPosition_BinaryKeyRoundTrips: a snapshot's last key that is not
// UTF-8 (BINARY(16), BIT) keeps its bytes through the position, as base64;
// a UTF-8 key stays a plain array, as positions of earlier versions hold
// every key, and those still decode.
func TestPosition_BinaryKeyRoundTrips(t *testing.T) {
	bin := keyValues{"7", "\x00\x9f\xff\x80\xc3(\xe2\x82"}
	p := position{File: "binlog.000001", Pos: 4,
		Snapshot:    &progress{Done: []string{"d.a"}, Last: map[string]keyValues{"d.bin": bin, "d.text": {"é", "x\x00"}}},
		Incremental: &incState{Tables: []string{"d.bin"}, Last: bin}}
	enc := p.encode()
	for _, want := range []string{`"d.bin":{"base64":["Nw==","AJ//gMMo4oI="]}`, `"d.text":["é","x\u0000"]`, `"last":{"base64":["Nw==","AJ//gMMo4oI="]}`} {
		if !strings.Contains(string(enc), want) {
			t.Errorf("position %s: want %s in it", enc, want)
		}
	}
	back, err := decodePosition(enc)
	if err != nil {
		t.Fatal(err)
	}
	if got := back.Snapshot.Last["d.bin"]; !slices.Equal(got, bin) {
		t.Errorf("snapshot key decodes to %q, want %q", got, bin)
	}
	if got := back.Snapshot.Last["d.text"]; !slices.Equal(got, keyValues{"é", "x\x00"}) {
		t.Errorf("text key decodes to %q", got)
	}
	if got := back.Incremental.Last; !slices.Equal(got, bin) {
		t.Errorf("incremental key decodes to %q, want %q", got, bin)
	}

	old := `{"file":"binlog.000001","pos":4,"row":0,"event":0,"server_id":1,"snapshot":{"last":{"d.a":["42","k"]}},"incremental":{"tables":["d.a"],"last":["7"]}}`
	back, err = decodePosition([]byte(old))
	if err != nil || !slices.Equal(back.Snapshot.Last["d.a"], keyValues{"42", "k"}) || !slices.Equal(back.Incremental.Last, keyValues{"7"}) {
		t.Errorf("position of the earlier format %s decodes to %+v, %v", old, back, err)
	}
	for _, bad := range []string{`{"file":"f","snapshot":{"last":{"d.a":{"base64":["!"]}}}}`, `{"file":"f","incremental":{"tables":["d.a"],"last":{"b64":["AA=="]}}}`} {
		if _, err := decodePosition([]byte(bad)); err == nil || !strings.Contains(err.Error(), "stored position") {
			t.Errorf("decodePosition(%s): %v, want an error naming the position", bad, err)
		}
	}
}

package mysql

import (
	"encoding/json"
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
		{File: "f", Snapshot: &progress{Done: []string{"a.b"}, Last: map[string][]string{"c.d": {"1", "x"}}}},
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

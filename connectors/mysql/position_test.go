package mysql

import (
	"encoding/json"
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

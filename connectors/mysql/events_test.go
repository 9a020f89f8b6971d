package mysql

import (
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestSourceIn_MatchesSource checks the reused source block against a
// fresh one over random runs of changes: tables, files, GTIDs, positions,
// rows and threads changing now and then, as in a binlog.
func TestSourceIn_MatchesSource(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	set := &settings{prefix: "srv"}
	enc := &encoder{set: set, codec: connect.DebeziumJSON{}, mapper: &mapper{}}
	var tables []*table
	for _, name := range []string{"orders", "customers"} {
		tbl, err := enc.mapper.newTable(set, &tableDef{DB: "shop", Name: name, Columns: []column{{Name: "id"}}, Key: []int{0}})
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, tbl)
	}
	var sb sourceBox
	si := srcInfo{snapshot: connect.SnapshotFalse, serverID: 1, file: "mariadb-bin.000001", pos: 4}
	tbl := tables[0]
	for i := range 2000 {
		switch rng.IntN(8) {
		case 0:
			tbl = tables[rng.IntN(len(tables))]
		case 1:
			si.gtid = []string{"", "0-1-7", "0-1-8"}[rng.IntN(3)]
			si.pos = uint32(rng.IntN(1 << 30))
		case 2:
			si.file = []string{"mariadb-bin.000001", "mariadb-bin.000002"}[rng.IntN(2)]
		case 3:
			si.thread = []int64{0, 7, 1 << 40}[rng.IntN(3)]
		case 4:
			si.serverID = uint32(rng.IntN(3))
		case 5:
			si.snapshot = []string{connect.SnapshotFalse, connect.SnapshotIncremental}[rng.IntN(2)]
		}
		si.row = rng.IntN(3) * 300
		si.ts = time.Unix(rng.Int64N(2e9), 0)
		got, want := enc.sourceIn(&sb, tbl, &si), enc.source(tbl, &si)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("change %d: source block\n got %+v\nwant %+v", i, got, want)
		}
	}
}

package postgres

import (
	"context"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/internal/cdc"
)

// TestSkippedChange_IncrementalChunk checks what a skipped change does to
// an incremental snapshot's open chunk, as in Debezium: nothing (the
// chunk's row is still emitted as read), but for a truncate, which
// empties the chunk, and for the emitted half of a key change, whose key
// leaves it.
func TestSkippedChange_IncrementalChunk(t *testing.T) {
	rel := &relation{ref: tableRef{"public", "k"}, columns: []column{{name: "id"}, {name: "v"}}, keyIdx: []int{0}}
	row := func(id int64) connect.Row { return connect.Row{{Name: "id", Value: id}, {Name: "v", Value: "x"}} }
	keyOf := func(id int64) string {
		b, err := rel.key(row(id)).MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	left := func(st *streamer) []string {
		var ks []string
		for k := range st.chunk.recs {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	newStreamer := func(t *testing.T, skip ...string) *streamer {
		t.Helper()
		ops, err := cdc.ParseSkippedOps(skip)
		if err != nil {
			t.Fatal(err)
		}
		recs := map[string]connect.Record{}
		for _, id := range []int64{1, 2, 3} {
			recs[keyOf(id)] = connect.Record{}
		}
		return &streamer{
			src:   &Source{set: settings{skipped: ops}},
			chunk: &incChunk{table: "public.k", open: true, rel: rel, recs: recs},
		}
	}
	ctx := context.Background()

	t.Run("skipped update leaves the row", func(t *testing.T) {
		st := newStreamer(t, "u")
		if err := st.change(ctx, rel, connect.OpUpdate, row(2), row(2), nil, 1); err != nil {
			t.Fatal(err)
		}
		if got, want := left(st), []string{keyOf(1), keyOf(2), keyOf(3)}; !slices.Equal(got, want) {
			t.Errorf("chunk keys %v, want %v", got, want)
		}
	})
	t.Run("skipped delete leaves the row", func(t *testing.T) {
		st := newStreamer(t, "d")
		if err := st.change(ctx, rel, connect.OpDelete, row(3), nil, nil, 1); err != nil {
			t.Fatal(err)
		}
		if got := len(left(st)); got != 3 {
			t.Errorf("chunk has %d rows, want 3", got)
		}
	})
	t.Run("skipped truncate empties the chunk", func(t *testing.T) {
		st := newStreamer(t, "t")
		if err := st.change(ctx, rel, connect.OpTruncate, nil, nil, nil, 1); err != nil {
			t.Fatal(err)
		}
		if got := left(st); len(got) != 0 {
			t.Errorf("chunk keys %v after a truncate, want none", got)
		}
	})
	t.Run("key change with both halves skipped leaves both rows", func(t *testing.T) {
		st := newStreamer(t, "c", "d")
		if err := st.keyChange(ctx, rel, row(1), row(2), nil, 1); err != nil {
			t.Fatal(err)
		}
		if got := len(left(st)); got != 3 {
			t.Errorf("chunk has %d rows, want 3", got)
		}
	})
}

package mysql

import (
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// A slab comes back to newChange, cleared, only once every one of its
// changes was encoded.
func TestSlab_ReusedOnlyWhenAllEncoded(t *testing.T) {
	st := &streamer{free: make(chan *slab, freeSlabs)}
	tbl := &table{}
	var first []*change
	for range changeSlab {
		c := st.newChange()
		c.t, c.kind, c.pos = tbl, rowsInsert, &connect.Position{}
		first = append(first, c)
	}
	s := st.slab
	for _, c := range first[:changeSlab-1] {
		st.encoded(c)
	}
	if len(st.free) != 0 {
		t.Fatalf("a slab with a change not yet encoded was handed back")
	}
	next := st.newChange() // a new slab: the first is not back
	if st.slab == s {
		t.Fatalf("newChange reused a slab with a change not yet encoded")
	}
	st.encoded(first[changeSlab-1])
	if len(st.free) != 1 {
		t.Fatalf("the slab of encoded changes was not handed back")
	}
	for i := range s.changes {
		if c := &s.changes[i]; c.t != nil || c.pos != nil || c.kind != 0 || c.slab != nil {
			t.Fatalf("change %d of the slab handed back was not cleared: %+v", i, *c)
		}
	}
	for range changeSlab - 1 {
		st.newChange()
	}
	if c := st.newChange(); st.slab != s || c != &s.changes[0] || c.slab != s {
		t.Fatalf("newChange did not take the slab handed back")
	}
	_ = next
}

// Changes allocated elsewhere (go-mysql's parsed rows) have no slab.
func TestSlab_ChangeWithoutSlab(t *testing.T) {
	st := &streamer{free: make(chan *slab, freeSlabs)}
	st.encoded(&change{kind: rowsDelete})
	if len(st.free) != 0 {
		t.Fatal("a change without a slab handed a slab back")
	}
}

// An encoded batch's item slice comes back to items cleared, whole, and
// only for a batch it can hold.
func TestItems_Recycled(t *testing.T) {
	st := &streamer{freeItems: make(chan []item, freeBatches)}
	pending := st.items(8)
	if cap(pending) != 8 || len(pending) != 0 {
		t.Fatalf("items(8) = len %d cap %d", len(pending), cap(pending))
	}
	rec := connect.Record{Topic: "x"}
	pending = append(pending, item{ch: &change{}}, recordItem(rec), item{ch: &change{}})
	batch := pending[:2] // flush hands over the first two, the third stays
	st.recycle(batch)
	if len(st.freeItems) != 1 {
		t.Fatal("the encoded batch's items were not handed back")
	}
	for i, it := range pending[:cap(pending)] {
		if it.ch != nil || it.rec != nil {
			t.Fatalf("item %d of the slice handed back was not cleared", i)
		}
	}
	if got := st.items(16); cap(got) != 16 || len(st.freeItems) != 0 {
		t.Fatalf("items(16) = cap %d, want a new slice of 16 (the one back holds 8)", cap(got))
	}
	st.recycle(pending[:1])
	if got := st.items(8); cap(got) != 8 || len(got) != 0 || &got[:1][0] != &pending[:1][0] {
		t.Fatal("items(8) did not take the slice handed back")
	}
	for range freeBatches + 2 {
		st.recycle(make([]item, 1))
	}
	if len(st.freeItems) != freeBatches {
		t.Fatalf("%d slices kept, want at most %d", len(st.freeItems), freeBatches)
	}
}

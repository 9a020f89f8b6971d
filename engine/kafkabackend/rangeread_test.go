package kafkabackend

import (
	"fmt"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A transaction ends with a commit marker, a control record no reader
// sees: ReadRange and ReadAll end at the end of the partition all the same
// instead of waiting for a record at the marker's offset. Only kfake of
// the Kafka implementations under test speaks transactions.
func TestBackend_ReadRangeEndsAtTransactionMarker(t *testing.T) {
	c := startKfake(t)
	b := c.backend(t)
	ctx := t.Context()
	if err := b.EnsureTopic(ctx, "tx", 1, nil); err != nil {
		t.Fatal(err)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(c.addrs...), kgo.TransactionalID("range-test"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for tx, end := range []kgo.TransactionEndTry{kgo.TryCommit, kgo.TryAbort} {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if err := p.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("t%d-%d", tx, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.EndTransaction(ctx, end); err != nil {
			t.Fatal(err)
		}
	}
	// Offsets 0..2 committed, 3 commit marker, 4..6 aborted (read
	// uncommitted: returned), 7 abort marker; the end is 8.
	bounds, err := b.EndOffsets(ctx, "tx")
	if err != nil {
		t.Fatal(err)
	}
	if bounds[0].End != 8 {
		t.Fatalf("the partition ends at %d, want 8 (3 records and a marker, twice)", bounds[0].End)
	}
	want := []int64{0, 1, 2, 4, 5, 6}
	for _, r := range [][2]int64{{0, 8}, {0, 100}, {3, 8}, {7, 8}} {
		var got []int64
		err := b.ReadRange(ctx, "tx", 0, r[0], r[1], func(recs []connect.Record) error {
			for _, rec := range recs {
				got = append(got, rec.Offset)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("ReadRange(%d, %d): %v", r[0], r[1], err)
		}
		var exp []int64
		for _, o := range want {
			if o >= r[0] && o < r[1] {
				exp = append(exp, o)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(exp) {
			t.Fatalf("ReadRange(%d, %d) returned offsets %v, want %v", r[0], r[1], got, exp)
		}
	}
	var all int
	if err := b.ReadAll(ctx, "tx", func(connect.Record) error { all++; return nil }); err != nil {
		t.Fatal(err)
	}
	if all != len(want) {
		t.Fatalf("ReadAll returned %d records, want %d", all, len(want))
	}
}

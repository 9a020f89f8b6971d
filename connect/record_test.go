package connect

import (
	"testing"
	"time"
)

func TestRecord_Clone(t *testing.T) {
	r := Record{
		Key:       []byte("k"),
		Value:     []byte{},
		Headers:   []Header{{Key: "h", Value: []byte("v")}, {Key: "nil"}},
		Timestamp: time.UnixMilli(1714000000000),
		Topic:     "t",
		Partition: 2,
		Offset:    42,
		Position:  Position(`{"lsn":1}`),
	}
	c := r.Clone()
	if !c.Equal(r) {
		t.Fatalf("Clone = %+v, want %+v", c, r)
	}
	c.Key[0] = 'x'
	c.Headers[0].Value[0] = 'x'
	c.Position[0] = 'x'
	if string(r.Key) != "k" || string(r.Headers[0].Value) != "v" || r.Position.String() != `{"lsn":1}` {
		t.Errorf("Clone shares memory with the original: %+v", r)
	}
	if c.Value == nil || c.Headers[1].Value != nil {
		t.Errorf("Clone changed nil-ness: value %v, header %v", c.Value, c.Headers[1].Value)
	}
	if (Record{}).Clone().Headers != nil {
		t.Error("Clone of no headers made some")
	}
}

func TestRecord_Equal(t *testing.T) {
	base := Record{Key: []byte("k"), Value: []byte("v"), Timestamp: time.UnixMilli(5)}
	tests := []struct {
		name string
		edit func(r *Record)
	}{
		{"key", func(r *Record) { r.Key = []byte("x") }},
		{"nil value vs empty", func(r *Record) { r.Value = nil }},
		{"timestamp", func(r *Record) { r.Timestamp = time.UnixMilli(6) }},
		{"topic", func(r *Record) { r.Topic = "t" }},
		{"partition", func(r *Record) { r.Partition = 1 }},
		{"offset", func(r *Record) { r.Offset = 1 }},
		{"original topic", func(r *Record) { r.OriginalTopic = "t" }},
		{"original partition", func(r *Record) { r.OriginalPartition = 1 }},
		{"original offset", func(r *Record) { r.OriginalOffset = 1 }},
		{"position", func(r *Record) { r.Position = Position("p") }},
		{"headers", func(r *Record) { r.Headers = []Header{{Key: "h"}} }},
	}
	for _, tt := range tests {
		o := base.Clone()
		tt.edit(&o)
		if base.Equal(o) {
			t.Errorf("%s: records equal after a change", tt.name)
		}
	}
	same := base.Clone()
	same.Timestamp = same.Timestamp.In(time.FixedZone("x", 3600))
	if !base.Equal(same) {
		t.Error("same instant in another zone: not equal")
	}
}

func TestRecord_Original(t *testing.T) {
	r := Record{Topic: "shop.orders", Partition: 0, Offset: 3}
	if topic, p, off := r.Original(); topic != "shop.orders" || p != 0 || off != 3 {
		t.Errorf("Original of a record without originals = %s/%d@%d, want its own coordinates", topic, p, off)
	}
	r.OriginalTopic, r.OriginalPartition, r.OriginalOffset = "shop2.orders", 1, 0
	if topic, p, off := r.Original(); topic != "shop2.orders" || p != 1 || off != 0 {
		t.Errorf("Original = %s/%d@%d, want shop2.orders/1@0", topic, p, off)
	}
}

func TestRecord_Header(t *testing.T) {
	r := Record{Headers: []Header{{"a", []byte("1")}, {"b", []byte("2")}, {"a", []byte("3")}}}
	if v, ok := r.Header("a"); !ok || string(v) != "3" {
		t.Errorf(`Header("a") = %q, %v; want the last one, "3"`, v, ok)
	}
	if _, ok := r.Header("c"); ok {
		t.Error(`Header("c") found`)
	}
}

func TestTombstone(t *testing.T) {
	r := Record{Topic: "t", Key: []byte("k"), Value: []byte("v"), Headers: []Header{{"h", nil}}, Position: Position("p")}
	tomb := Tombstone(r)
	want := Record{Topic: "t", Key: []byte("k"), Position: Position("p")}
	if !tomb.Equal(want) || !tomb.IsTombstone() {
		t.Errorf("Tombstone = %+v, want %+v", tomb, want)
	}
	tomb.Key[0] = 'x'
	if string(r.Key) != "k" {
		t.Error("Tombstone shares the key with the original")
	}
}

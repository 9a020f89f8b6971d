package postgres

import (
	"crypto/md5"
	"encoding/hex"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchRelation is the bench/postgres table: id bigint PRIMARY KEY,
// payload text (~200 bytes).
func benchRelation(set *settings) *relation {
	return &relation{
		ref:     tableRef{"public", "snap"},
		columns: []column{{name: "id", typ: &pgType{oid: 20, name: "int8", kind: kindInt64, typmod: -1}, typmod: -1, key: true}, {name: "payload", typ: &pgType{oid: 25, name: "text", kind: kindText, typmod: -1}, typmod: -1}},
		keyIdx:  []int{0},
		ident:   'd',
		topic:   set.topicFor("public", "snap"),
	}
}

func benchEncoder() (*encoder, *settings) {
	set := &settings{prefix: "bench", topic: "{prefix}.{schema}.{table}", decimals: decimalString, placeholder: "__debezium_unavailable_value", tombstones: true}
	m := &mapper{decimals: set.decimals, placeholder: set.placeholder}
	return &encoder{set: set, db: "postgres", mapper: m}, set
}

func benchRows(n int) [][][]byte {
	rows := make([][][]byte, n)
	for i := range rows {
		sum := md5.Sum([]byte(strconv.Itoa(i + 1)))
		rows[i] = [][]byte{[]byte(strconv.Itoa(i + 1)), []byte(strings.Repeat(hex.EncodeToString(sum[:]), 6))}
	}
	return rows
}

// BenchmarkRowReader_Snapshot measures the CPU and allocations of one
// snapshot row of the bench table, from text values to an encoded record.
func BenchmarkRowReader_Snapshot(b *testing.B) {
	enc, set := benchEncoder()
	rel := benchRelation(set)
	r := enc.newRowReader(rel, "true", time.Now(), 12345678, slog.New(slog.NewTextHandler(io.Discard, nil)))
	rows := benchRows(1024)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := r.read(rows[i%len(rows)], false); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStream_Insert measures the CPU and allocations of one streamed
// insert of the bench table, from the pgoutput message to the record.
func BenchmarkStream_Insert(b *testing.B) {
	enc, set := benchEncoder()
	set.batchSize = 1 << 30
	rel := benchRelation(set)
	src := &Source{set: *set, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	st := &streamer{src: src, enc: enc, rels: map[uint32]*relation{1: rel}}
	var msgs [][]byte
	for _, row := range benchRows(1024) {
		m := []byte{'I', 0, 0, 0, 1, 'N', 0, 2}
		for _, v := range row {
			m = append(m, 't', 0, 0, byte(len(v)>>8), byte(len(v)))
			m = append(m, v...)
		}
		msgs = append(msgs, m)
	}
	st.begin(77, 1000, time.Now())
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := st.handle(b.Context(), uint64(1000+i), msgs[i%len(msgs)]); err != nil {
			b.Fatal(err)
		}
		if len(st.pending) > 1000 {
			st.pending = st.pending[:0]
		}
	}
}

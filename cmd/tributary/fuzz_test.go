package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	tlog "github.com/tributary-io/tributary/log"
)

// memProduce is a produceClient that keeps what is appended, by partition.
type memProduce struct {
	n     int
	mu    sync.Mutex
	parts map[int32][]tlog.Record
}

func (m *memProduce) DescribeTopic(context.Context, string) (tlog.TopicDescription, error) {
	return tlog.TopicDescription{}, nil
}

func (m *memProduce) Partitions(context.Context, string, bool) (int, error) { return m.n, nil }

func (m *memProduce) Append(_ context.Context, _ string, p int32, recs []tlog.Record) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	base := int64(len(m.parts[p]))
	for _, r := range recs {
		r.Key, r.Value = bytes.Clone(r.Key), bytes.Clone(r.Value) // the producer reuses its buffers
		m.parts[p] = append(m.parts[p], r)
	}
	return base, nil
}

// FuzzProduceLines feeds arbitrary input, with an arbitrary -K key
// delimiter, -Z, -k and -p, to the producer of `tributary produce`. It
// never panics or fails, and the records appended are the input's
// non-empty lines split as the flags say, each keyed record on its
// murmur2 partition, and each partition's records in input order.
func FuzzProduceLines(f *testing.F) {
	f.Add([]byte("first\n\nsecond\r\nlast without newline"), "", false, "", false, int8(-1), uint8(1), uint16(10))
	f.Add([]byte("user-1:{\"plan\":\"pro\"}\nuser-2:{\"plan\":\"free\"}\n:\nk:\n:v\nnodelim\n"), ":", true, "", false, int8(-1), uint8(3), uint16(40))
	f.Add([]byte("a::b\n::\n:::\n"), "::", false, "fixed", true, int8(-1), uint8(4), uint16(1))
	f.Add([]byte("x\ny\n"), "", false, "", true, int8(2), uint8(3), uint16(65535))
	f.Fuzz(func(t *testing.T, in []byte, delim string, nullEmpty bool, key string, keySet bool, part int8, nparts uint8, appendBytes uint16) {
		n := 1 + int(nparts)%4
		o := produceOptions{keyDelim: delim, key: key, keySet: keySet, nullEmpty: nullEmpty, partition: int32(part), appendBytes: 1 + int(appendBytes)}
		if o.partition < -1 || int(o.partition) >= n {
			o.partition = -1
		}
		c := &memProduce{n: n, parts: map[int32][]tlog.Record{}}
		p, err := newProducer(t.Context(), c, "t", o, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.run(bytes.NewReader(in)); err != nil {
			t.Fatalf("run: %v", err)
		}

		var want []tlog.Record
		for _, line := range bytes.Split(in, []byte("\n")) {
			if len(line) == 0 {
				continue
			}
			r := tlog.Record{Value: line}
			if delim != "" {
				if k, v, ok := bytes.Cut(line, []byte(delim)); ok {
					r.Key, r.Value = k, v
					if r.Key == nil {
						r.Key = []byte{}
					}
					if nullEmpty && len(k) == 0 {
						r.Key = nil
					}
					if nullEmpty && len(v) == 0 {
						r.Value = nil
					} else if r.Value == nil {
						r.Value = []byte{}
					}
				}
			}
			if r.Key == nil && keySet {
				r.Key = []byte(key)
			}
			want = append(want, r)
		}
		if got := p.acked.Load(); got != int64(len(want)) {
			t.Fatalf("acknowledged %d records, the input has %d lines", got, len(want))
		}
		total := 0
		for pi, recs := range c.parts {
			total += len(recs)
			i := 0 // recs must be a subsequence of want, in order
			for _, r := range recs {
				if o.partition >= 0 && pi != o.partition {
					t.Fatalf("record on partition %d with -p %d", pi, o.partition)
				}
				if r.Key != nil && o.partition < 0 && tlog.KeyPartition(r.Key, n) != pi {
					t.Fatalf("record keyed %q on partition %d, murmur2 says %d", r.Key, pi, tlog.KeyPartition(r.Key, n))
				}
				for i < len(want) && !sameKV(want[i], r) {
					i++
				}
				if i == len(want) {
					t.Fatalf("partition %d holds key %q value %q out of input order or not in the input", pi, r.Key, r.Value)
				}
				i++
			}
		}
		if total != len(want) {
			t.Fatalf("appended %d records, the input has %d lines", total, len(want))
		}
	})
}

func sameKV(a, b tlog.Record) bool {
	return (a.Key == nil) == (b.Key == nil) && bytes.Equal(a.Key, b.Key) && (a.Value == nil) == (b.Value == nil) && bytes.Equal(a.Value, b.Value)
}

// FuzzParseOffsets feeds arbitrary -o values to parseOffsets: it never
// panics, errors are usage errors that quote the value, and an accepted
// start offset plans a start inside the partition.
func FuzzParseOffsets(f *testing.F) {
	for _, v := range []string{"beginning", "end", "stored", "5", "-7", "-0", "s@1700000000000", "e@1", "e@x", "-9223372036854775808", "9223372036854775807", "+3", "x"} {
		f.Add(v, "", "")
		f.Add(v, "e@5", "g")
	}
	f.Fuzz(func(t *testing.T, v, v2, group string) {
		vals := []string{v}
		if v2 != "" {
			vals = append(vals, v2)
		}
		start, _, err := parseOffsets("tributary consume", vals, group)
		if err != nil {
			if !strings.Contains(err.Error(), "-o ") {
				t.Fatalf("parseOffsets(%q): error %q does not name the flag", vals, err)
			}
			return
		}
		for _, r := range [][2]int64{{0, 0}, {0, 10}, {5, 1 << 40}} {
			first, end := r[0], r[1]
			var from int64
			switch start.kind {
			case "rel":
				from = max(first, end-start.n)
			case "abs":
				from = min(max(start.n, first), end)
			default:
				continue
			}
			if from < first || from > end {
				t.Fatalf("-o %q plans offset %d in a partition of [%d, %d)", v, from, first, end)
			}
		}
	})
}

// FuzzParseFormat feeds arbitrary -f formats to parseFormat and renders a
// record with what parses. Neither panics; errors quote the format; a
// format without % or \ renders as itself.
func FuzzParseFormat(f *testing.F) {
	for _, s := range []string{"%s\n", "%k:%s %S %K %t %p %o %T %h %%\\n", "\\x41\\x4", "\\", "%", "%z", "\\xzz", "plain"} {
		f.Add(s)
	}
	rec := &tlog.Record{Key: []byte("k"), Value: nil, Offset: 7, Headers: []tlog.Header{{Key: "h"}, {Key: "g", Value: []byte("v")}}}
	f.Fuzz(func(t *testing.T, format string) {
		tf, err := parseFormat(format)
		if err != nil {
			if !strings.Contains(err.Error(), "format ") {
				t.Fatalf("parseFormat(%q): error %q does not name the format", format, err)
			}
			return
		}
		out := tf.appendRecord(nil, rec)
		if !strings.ContainsAny(format, `%\`) && string(out) != format {
			t.Fatalf("format %q renders %q", format, out)
		}
	})
}

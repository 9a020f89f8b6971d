package log

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
)

// Index files, one pair per segment, as Kafka lays them out:
//
//	NNN.index      entries of (relative offset uint32, byte position uint32)
//	NNN.timeindex  entries of (max timestamp so far int64, relative offset uint32)
//
// Both are sparse (an entry every indexIntervalBytes of log) and both can be
// rebuilt from the segment, which is the source of truth: they are checked on
// open and rebuilt when missing or inconsistent.
const (
	indexEntrySize     = 8
	timeIndexEntrySize = 12
	indexIntervalBytes = 4096
)

type offsetEntry struct {
	rel uint32 // offset - segment base
	pos uint32 // byte position of the batch holding the offset
}

type timeEntry struct {
	ts  int64  // largest timestamp at or before rel
	rel uint32 // last offset of the batch that raised the max
}

// lookupOffset returns the position of the last indexed batch whose offset is
// at or below rel; 0 when there is none.
func lookupOffset(idx []offsetEntry, rel uint32) int64 {
	i := sort.Search(len(idx), func(i int) bool { return idx[i].rel > rel })
	if i == 0 {
		return 0
	}
	return int64(idx[i-1].pos)
}

// lookupEntry returns the last index entry at or below rel; ok is false when
// there is none.
func lookupEntry(idx []offsetEntry, rel uint32) (e offsetEntry, ok bool) {
	i := sort.Search(len(idx), func(i int) bool { return idx[i].rel > rel })
	if i == 0 {
		return offsetEntry{}, false
	}
	return idx[i-1], true
}

// lookupTimeEntry returns the last time index entry whose max timestamp is
// below ts: every record up to its offset is older than ts. ok is false when
// there is none.
func lookupTimeEntry(tidx []timeEntry, ts int64) (e timeEntry, ok bool) {
	i := sort.Search(len(tidx), func(i int) bool { return tidx[i].ts >= ts })
	if i == 0 {
		return timeEntry{}, false
	}
	return tidx[i-1], true
}

func encodeOffsetEntry(e offsetEntry) []byte {
	var b [indexEntrySize]byte
	binary.BigEndian.PutUint32(b[0:], e.rel)
	binary.BigEndian.PutUint32(b[4:], e.pos)
	return b[:]
}

func encodeTimeEntry(e timeEntry) []byte {
	var b [timeIndexEntrySize]byte
	binary.BigEndian.PutUint64(b[0:], uint64(e.ts))
	binary.BigEndian.PutUint32(b[8:], e.rel)
	return b[:]
}

// readOffsetIndex loads and checks an offset index against its segment's
// size. Entries must rise strictly in offset and position and point inside
// the segment; anything else means the file is stale or damaged.
func readOffsetIndex(path string, segSize int64) ([]offsetEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data)%indexEntrySize != 0 {
		return nil, fmt.Errorf("index %s: size %d is not a multiple of %d", path, len(data), indexEntrySize)
	}
	out := make([]offsetEntry, 0, len(data)/indexEntrySize)
	for i := 0; i < len(data); i += indexEntrySize {
		e := offsetEntry{rel: binary.BigEndian.Uint32(data[i:]), pos: binary.BigEndian.Uint32(data[i+4:])}
		if n := len(out); n > 0 && (e.rel <= out[n-1].rel || e.pos <= out[n-1].pos) {
			return nil, fmt.Errorf("index %s: entry %d does not rise", path, n)
		}
		if int64(e.pos) >= segSize {
			return nil, fmt.Errorf("index %s: entry %d points past the segment end", path, len(out))
		}
		out = append(out, e)
	}
	return out, nil
}

func readTimeIndex(path string) ([]timeEntry, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data)%timeIndexEntrySize != 0 {
		return nil, fmt.Errorf("time index %s: size %d is not a multiple of %d", path, len(data), timeIndexEntrySize)
	}
	out := make([]timeEntry, 0, len(data)/timeIndexEntrySize)
	for i := 0; i < len(data); i += timeIndexEntrySize {
		e := timeEntry{ts: int64(binary.BigEndian.Uint64(data[i:])), rel: binary.BigEndian.Uint32(data[i+8:])}
		if n := len(out); n > 0 && (e.ts <= out[n-1].ts || e.rel <= out[n-1].rel) {
			return nil, fmt.Errorf("time index %s: entry %d does not rise", path, n)
		}
		out = append(out, e)
	}
	return out, nil
}

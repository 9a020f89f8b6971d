package log

import "sync"

// defaultTailCacheBytes bounds the batches the tail cache keeps, over all
// partitions of a log.
const defaultTailCacheBytes = 64 << 20

// tailCache keeps the newest batches the log encoded and appended, byte for
// byte as written to their segment, so that a reader close behind the
// writers (a sink task keeping up with its source) gets them without a read
// from the file: no system call, no copy into a fresh buffer, no garbage.
//
// Only batches the log built itself are kept (Append, Produce): nobody
// writes to them after the append, so readers may share them. Raw batches
// (AppendRawAsync) belong to their caller again after the append and are
// never kept. A kept batch is what the file holds at its position: readers
// check it (CRC, neighbours, bounds) exactly as one read from the file.
//
// The oldest batches leave first once the cache holds more than its limit.
// Entries name their segment object, so a segment replaced by compaction or
// deleted by retention is never confused with its successor; its entries
// simply age out.
type tailCache struct {
	limit int

	mu      sync.Mutex // guards the fields below
	size    int
	entries map[cacheKey][]byte
	fifo    []cacheKey // insertion order; fifo[head:] are live
	head    int
}

type cacheKey struct {
	s   *segment
	pos int64
}

// newTailCache returns a cache of up to limit bytes; nil (no cache) when
// limit is not positive.
func newTailCache(limit int) *tailCache {
	if limit <= 0 {
		return nil
	}
	return &tailCache{limit: limit, entries: map[cacheKey][]byte{}}
}

// put keeps b, the batch written to s at pos. b must never change again.
func (c *tailCache) put(s *segment, pos int64, b []byte) {
	if c == nil || len(b) > c.limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := cacheKey{s, pos}
	if old, ok := c.entries[k]; ok {
		c.size -= len(old)
	} else {
		c.fifo = append(c.fifo, k)
	}
	c.entries[k] = b
	c.size += len(b)
	for c.size > c.limit && c.head < len(c.fifo) {
		old := c.fifo[c.head]
		c.fifo[c.head] = cacheKey{}
		c.head++
		if ob, ok := c.entries[old]; ok {
			c.size -= len(ob)
			delete(c.entries, old)
		}
	}
	if c.head > 1024 && c.head*2 > len(c.fifo) {
		n := copy(c.fifo, c.fifo[c.head:])
		clear(c.fifo[n:])
		c.fifo, c.head = c.fifo[:n], 0
	}
}

// get returns the batch kept for s at pos, or nil.
func (c *tailCache) get(s *segment, pos int64) []byte {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entries[cacheKey{s, pos}]
}

package connect

// Blocks hands out the bytes of encoded records from large shared blocks,
// so that a batch of records costs a few allocations instead of two per
// record (see DebeziumJSON.RecordIn). A record's bytes are never written
// again once handed out: each record keeps its block alive, and a block
// is dropped by the Blocks when full. The zero value is ready to use; a
// Blocks belongs to one goroutine.
type Blocks struct {
	buf  []byte
	last int // the size of the last record
}

// blockSize is the size of the blocks Blocks allocates; larger records get
// a block of their own size.
const blockSize = 64 << 10

// reserve returns a buffer with room for e (encoded with schemas or not).
// While the block has room for a few records like the last one, it does
// not estimate e's size; near the end of a block it does.
func (blk *Blocks) reserve(e *ChangeEvent, schemas bool) []byte {
	if room := cap(blk.buf) - len(blk.buf); room < 4*blk.last+1024 {
		if n := encodedSize(e, schemas); room < n {
			blk.buf = make([]byte, 0, max(blockSize, n))
		}
	}
	return blk.buf
}

// RecordIn encodes e as a record for topic, as Record does (the same
// bytes), into blk's blocks.
func (c DebeziumJSON) RecordIn(blk *Blocks, topic string, e *ChangeEvent) (Record, error) {
	buf := blk.reserve(e, c.Schemas)
	key, value, out, err := c.AppendRecord(buf, e)
	if err != nil {
		return Record{}, err
	}
	blk.last = len(out) - len(buf)
	if cap(out) != cap(buf) {
		// The estimate was short and append moved the record to a
		// larger array of its own: leave that one to the record.
		out = nil
	}
	blk.buf = out
	return Record{Topic: topic, Key: key, Value: value}, nil
}

package connect

// Blocks hands out the bytes of encoded records from large shared blocks,
// so that a batch of records costs a few allocations instead of two per
// record (see DebeziumJSON.RecordIn). A record's bytes are never written
// again once handed out: each record keeps its block alive, and a block
// is dropped by the Blocks when full. The zero value is ready to use; a
// Blocks belongs to one goroutine.
type Blocks struct {
	buf  []byte
	last int         // the size of the last record
	src  sourceCache // the opening of the last record's source block
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
	key, value, out, err := c.appendRecord(buf, e, &blk.src)
	if err != nil {
		blk.src.valid = false
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

// sourceCache is the opening of the last source block a Blocks wrote
// without a schema: its common members (version to ts_ns), which are the
// same for the events of a connector's transaction, and often of many
// transactions (ts_ms and the like have whole seconds in MySQL's binlog).
// appendSource copies them from here when they have not changed, and
// encodes the connector's own members (positions, ids) as ever.
//
// enc aliases the block of the record that holds it, which is never
// written again (see Blocks); RecordIn drops the cache when encoding
// fails, as the failed record's bytes are written over then.
type sourceCache struct {
	valid bool
	src   SourceInfo // the common fields enc was encoded from (no Extra)
	enc   []byte
}

// same reports whether src's common fields are the cached ones.
func (sc *sourceCache) same(src *SourceInfo) bool {
	p := &sc.src
	return src.TsMs == p.TsMs && src.TsUs == p.TsUs && src.TsNs == p.TsNs &&
		src.Version == p.Version && src.Connector == p.Connector && src.Name == p.Name &&
		src.Snapshot == p.Snapshot && src.DB == p.DB && src.Sequence == p.Sequence
}

// keep makes src's common fields, encoded as enc, the cached opening.
func (sc *sourceCache) keep(src *SourceInfo, enc []byte) {
	sc.src = SourceInfo{Version: src.Version, Connector: src.Connector, Name: src.Name, TsMs: src.TsMs,
		Snapshot: src.Snapshot, DB: src.DB, Sequence: src.Sequence, TsUs: src.TsUs, TsNs: src.TsNs}
	sc.enc = enc
	sc.valid = true
}

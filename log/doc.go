// Package log is Tributary's built-in partition log, on Kafka's model: topics
// split into partitions, each an ordered sequence of records addressed by
// offset; keyed partitioning with Kafka's murmur2; retention by time and size;
// compacted topics; consumer groups with committed offsets; idempotent
// producers. Sources append to it, sinks read from it.
//
// # Durability
//
// An append returns only after its records are fsync'ed (fdatasync) to the
// partition's active segment. One syncer goroutine per partition performs
// the fsyncs; every append written before an fsync starts is covered by it
// (group commit), so many appenders in flight share one fsync. Options
// FlushInterval trades this for interval flushing. Readers see only durable
// offsets, so nothing a reader saw can vanish in a crash.
//
// A failed write or fsync of data makes the partition read-only until the
// log is reopened: the state of the file is then unknown. A roll to a new
// segment that fails for want of file descriptors or disk space is not such
// a failure: the append gets a *RollError, the partition stays as it was
// and takes the appends that fit its active segment, and an append that
// needs a new segment tries the roll again after a backoff (100 ms,
// doubling with each failure in a row up to 10 s); until then such appends
// fail at once, without touching the disk. A roll due only by age
// (segment.ms) fails no append: the batch goes into the active segment and
// the roll is tried again after the backoff, so that segment outlives
// segment.ms (and its records retention.ms, and compaction, which never
// cleans the active segment) by as long as rolls fail. A run of failed
// rolls is logged once, at Warn, with the time of the next try.
//
// # On disk
//
//	<dir>/.lock                      flock'ed by the one process using the dir
//	<dir>/meta.json                  topics, partition counts, config overrides,
//	                                 producer-id allocation (atomic rewrite)
//	<dir>/<topic>-<p>/               one directory per partition
//	    <base>.log                   record batches, base = first offset, 20 digits
//	    <base>.index                 sparse offset index
//	    <base>.timeindex             sparse time index
//	    producer.snapshot            idempotent producer state at an offset (JSON)
//	    cleaner-offset-checkpoint    how far compaction has cleaned
//	    log-start-offset-checkpoint  the log start offset DeleteRecords set
//	                                 (logstart.go; version, offset; atomic
//	                                 rewrite before DeleteRecords returns)
//
// A .log file is a sequence of Kafka record batches, magic 2, byte for byte
// as Kafka stores them, encoded and decoded with franz-go's kmsg:
//
//	 0  base offset        int64   set by the log at append
//	 8  batch length       int32   bytes after this field
//	12  leader epoch       int32   -1
//	16  magic              int8    2
//	17  crc                uint32  CRC-32C of bytes 21..end
//	21  attributes         int16   bits 0-2 codec, 3 timestamp type,
//	                               4 transactional, 5 control
//	23  last offset delta  int32
//	27  first timestamp    int64   ms
//	35  max timestamp      int64   ms
//	43  producer id        int64   -1 unless idempotent
//	51  producer epoch     int16
//	53  base sequence      int32
//	57  record count       int32
//	61  records            varint-framed records, maybe compressed
//
// An .index entry is (offset - base uint32, byte position uint32), big
// endian, one per ~4 KiB of log; a .timeindex entry is (max timestamp so far
// int64, offset - base uint32). Indexes are hints: the segment is the truth.
//
// # Recovery
//
// Segments other than the newest are sealed (data and indexes fsync'ed) when
// the log rolls to a new one, so only the newest can have a torn end. On
// open, every batch of the newest segment is CRC-checked: a batch cut short
// or damaged at the end is truncated (logged with file, position and bytes,
// and counted in Metrics), and its indexes are rebuilt. Damage followed by
// sound batches, or in an older segment, is corruption: it is left in place
// and a read that reaches it returns a *CorruptionError naming the file and
// position. Indexes that are missing or do not check out are rebuilt.
//
// A crash during a roll can leave the new segment half made: its .log,
// .index and .timeindex created empty, some of them or none (the roll
// fsyncs the directory once all three exist, then writes the producer
// snapshot at the new base). Open removes these leftovers, fsyncs the
// directory and logs a warning: index files without their .log, and an
// empty newest .log whose base the producer snapshot is not at, when the
// segment before it holds gapless sound batches up to or past its base;
// the segment before it then becomes the active segment again. An
// empty newest .log that stays (its roll completed, or its base lies past a
// gap that compaction left, and holds the log's end offset) has its
// directory fsync'ed; a newest .log with any bytes in it is data and goes
// through the tail check.
package log

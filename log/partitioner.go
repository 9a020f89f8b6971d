package log

// murmur2 is Kafka's hash for keyed partitioning (Utils.murmur2 in the Java
// client), so a key lands on the partition any Kafka client picks.
func murmur2(data []byte) int32 {
	const (
		seed = uint32(0x9747b28c)
		m    = uint32(0x5bd1e995)
		r    = 24
	)
	length := len(data)
	h := seed ^ uint32(length)
	n := length / 4
	for i := 0; i < n; i++ {
		k := uint32(data[i*4]) | uint32(data[i*4+1])<<8 | uint32(data[i*4+2])<<16 | uint32(data[i*4+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	rest := data[n*4:]
	switch len(rest) {
	case 3:
		h ^= uint32(rest[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(rest[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(rest[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// KeyPartition returns the partition Kafka's default partitioner picks for a
// non-nil key: (murmur2(key) & 0x7fffffff) % partitions.
func KeyPartition(key []byte, partitions int) int32 {
	return int32((murmur2(key) & 0x7fffffff) % int32(partitions))
}

package generator

import (
	"encoding/binary"
	"slices"
)

// rng is SplitMix64 (Steele, Lea and Flood, 2014), written out here rather
// than taken from math/rand so that the events of a seed stay the same
// across Go releases.
type rng struct{ state uint64 }

// gamma is SplitMix64's increment, 2^64 divided by the golden ratio.
const gamma = 0x9e3779b97f4a7c15

// newRNG returns the stream of the event with the given seq: every (seed,
// seq) pair starts at its own, well-mixed state, so events neither depend on
// each other nor on which were generated before.
func newRNG(seed int64, seq uint64) rng {
	return rng{state: mix(mix(uint64(seed)) ^ seq)}
}

func (r *rng) next() uint64 {
	r.state += gamma
	return mix(r.state)
}

// mix is SplitMix64's finalizer, a bijection on uint64.
func mix(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// intn returns a number in [0, n), n > 0. The modulo bias is below 2^-50
// for the small n used here.
func (r *rng) intn(n uint64) uint64 { return r.next() % n }

// padAlphabet has 64 characters that need no escaping in JSON.
const padAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// padPairs maps 12 random bits to two padAlphabet characters, the low six
// bits first, as little-endian uint16: appendText then makes two
// characters per lookup, the same characters as one per lookup would.
var padPairs = func() (t [4096]uint16) {
	for v := range t {
		t[v] = uint16(padAlphabet[v&63]) | uint16(padAlphabet[v>>6&63])<<8
	}
	return t
}()

// appendText appends n pseudo-random characters of padAlphabet: random, so
// that padded events compress as poorly as real ones. Each draw gives ten
// characters, six bits each from the lowest up.
func (r *rng) appendText(b []byte, n int) []byte {
	if n <= 0 {
		return b
	}
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	out := b[start:]
	st := r.state // a local: the loop then keeps it in a register
	for len(out) >= 40 {
		// Four draws per turn: their multiplications and lookups overlap.
		st += gamma
		x := mix(st)
		st += gamma
		y := mix(st)
		st += gamma
		z := mix(st)
		st += gamma
		w := mix(st)
		pair := func(v uint64, k uint) uint64 { return uint64(padPairs[v>>(12*k)&4095]) }
		o := (*[40]byte)(out)
		binary.LittleEndian.PutUint64(o[:8], pair(x, 0)|pair(x, 1)<<16|pair(x, 2)<<32|pair(x, 3)<<48)
		binary.LittleEndian.PutUint64(o[8:16], pair(x, 4)|pair(y, 0)<<16|pair(y, 1)<<32|pair(y, 2)<<48)
		binary.LittleEndian.PutUint64(o[16:24], pair(y, 3)|pair(y, 4)<<16|pair(z, 0)<<32|pair(z, 1)<<48)
		binary.LittleEndian.PutUint64(o[24:32], pair(z, 2)|pair(z, 3)<<16|pair(z, 4)<<32|pair(w, 0)<<48)
		binary.LittleEndian.PutUint64(o[32:], pair(w, 1)|pair(w, 2)<<16|pair(w, 3)<<32|pair(w, 4)<<48)
		out = out[40:]
	}
	for len(out) >= 10 {
		st += gamma
		x := mix(st)
		o := (*[10]byte)(out)
		binary.LittleEndian.PutUint64(o[:8], uint64(padPairs[x&4095])|
			uint64(padPairs[x>>12&4095])<<16|
			uint64(padPairs[x>>24&4095])<<32|
			uint64(padPairs[x>>36&4095])<<48)
		binary.LittleEndian.PutUint16(o[8:], padPairs[x>>48&4095])
		out = out[10:]
	}
	r.state = st
	if len(out) > 0 {
		x := r.next()
		for i := range out {
			out[i] = padAlphabet[x&63]
			x >>= 6
		}
	}
	return b
}

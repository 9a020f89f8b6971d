package kafka

import (
	"math/bits"
	"sync"
)

// Request frames of Produce requests are reused: a megabyte-sized frame
// per request is most of what the listener allocates (and the runtime
// zeroes) on the produce path. Log.AppendRawAsync gives a batch back to its
// caller when it returns, and kmsg copies the strings it decodes, so once a
// Produce request is appended nothing refers to its frame. Frames of other
// requests are left to the garbage collector: their decoded fields
// (assignments, SASL tokens) may alias them.

const (
	minPooledFrame = 64 << 10 // smaller frames are cheap to allocate
	maxPooledFrame = 16 << 20 // bigger ones are rare; not kept
)

// framePools holds free frames by size class: class c has capacity 1<<c.
var framePools [bits.UintSize]sync.Pool

// getFrame returns a frame of n bytes, its content undefined.
func getFrame(n int) []byte {
	if n < minPooledFrame || n > maxPooledFrame {
		return make([]byte, n)
	}
	c := bits.Len(uint(n - 1))
	if p, ok := framePools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putFrame gives back a frame getFrame returned; nothing may use it after.
func putFrame(b []byte) {
	c := cap(b)
	if c < minPooledFrame || c > maxPooledFrame || c&(c-1) != 0 {
		return
	}
	b = b[:0]
	framePools[bits.Len(uint(c-1))].Put(&b)
}

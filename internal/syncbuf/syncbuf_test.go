package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

// TestBuffer_ConcurrentWriters checks that the writes of several
// goroutines, read meanwhile, all end up whole in the buffer (run with
// -race).
func TestBuffer_ConcurrentWriters(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				if n, err := b.Write([]byte("line\n")); n != 5 || err != nil {
					t.Errorf("Write = %d, %v", n, err)
				}
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.String(), "line\n"); got != 400 || len(b.String()) != 2000 {
		t.Errorf("buffer holds %d lines in %d bytes, want 400 in 2000", got, len(b.String()))
	}
	b.Reset()
	if b.String() != "" {
		t.Errorf("after Reset: %q", b.String())
	}
}

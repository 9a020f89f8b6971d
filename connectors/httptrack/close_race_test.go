package httptrack

import (
	"context"
	"sync"
	"testing"
	"time"
)

// TestClose_WokenRequestTakingItsWave checks that a request woken just
// before Close, which takes its wave again after Close woke every waiting
// request, still answers 503 and ends. It used to wait forever on a wave
// nobody would close: a handler goroutine leaked past Close (found by
// goleak in CI).
func TestClose_WokenRequestTakingItsWave(t *testing.T) {
	h := start(t, map[string]string{"ack.timeout": "1m"}, nil)
	h.cancel() // stop the worker but keep the server
	<-h.done
	var once sync.Once
	closed := make(chan error, 1)
	testHookBeforeWave = func(s *Source) {
		once.Do(func() {
			s.mu.Lock()
			before := s.waves[len(s.waves)-1].ch
			s.mu.Unlock()
			go func() { closed <- s.Close(context.Background()) }()
			// Return once Close has woken every wave: the request then
			// takes a fresh one.
			for {
				s.mu.Lock()
				woken := s.waves[len(s.waves)-1].ch != before
				s.mu.Unlock()
				if woken {
					return
				}
				time.Sleep(time.Millisecond)
			}
		})
	}
	t.Cleanup(func() { testHookBeforeWave = nil })

	// Nobody reads the source any more: the request waits until
	// wakeWaiters' ticker wakes it, then takes its wave again.
	a := h.post("/v1/track", `{"userId":"u","event":"E"}`, auth)
	wantStatus(t, a, 503)
	if _, _, code, _ := a.errorAt(0); code != "stopping" {
		t.Errorf("code %q, want stopping", code)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
}

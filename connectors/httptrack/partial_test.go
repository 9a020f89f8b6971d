package httptrack

import (
	"context"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestDurablePart: a request whose records are durable is answered on
// DurablePart while one read before it still waits (its partition is
// not fsync'ed yet), which is answered on the Durable that follows; with
// dedup off DurablePart answers nothing (requests wait for Ack).
func TestDurablePart(t *testing.T) {
	for _, tt := range []struct {
		name   string
		values map[string]string
		early  bool
	}{
		{name: "dedup", values: map[string]string{"ack.timeout": "5s"}, early: true},
		{name: "dedup off", values: map[string]string{"ack.timeout": "5s", "dedup.window": "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := open(t, tt.values, nil)
			ctx := t.Context()
			first, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
			h.src.Read(first) // opens the source to requests
			cancel()

			answers := make(chan answer, 2)
			post := func(user string) {
				go func() { answers <- h.post("/v1/track", `{"userId":"`+user+`","event":"E"}`, auth) }()
			}
			post("a")
			waitFor(t, "request a to wait", func() bool { return h.src.waiting.Load() == 1 })
			post("b")
			waitFor(t, "request b to wait", func() bool { return h.src.waiting.Load() == 2 })
			recs, err := h.src.Read(ctx)
			if err != nil || len(recs) != 2 {
				t.Fatalf("read %d records, %v; want 2", len(recs), err)
			}
			if err := h.src.DurablePart(ctx, []connect.Position{recs[1].Position}); err != nil {
				t.Fatal(err)
			}
			if tt.early {
				a := <-answers
				wantStatus(t, a, 200)
				if h.src.waiting.Load() != 1 {
					t.Fatalf("%d requests wait after b was answered, want 1 (a)", h.src.waiting.Load())
				}
			} else {
				select {
				case a := <-answers:
					t.Fatalf("answered %d on DurablePart with dedup off", a.status)
				case <-time.After(50 * time.Millisecond):
				}
			}
			if err := h.src.Durable(ctx, recs[1].Position); err != nil {
				t.Fatal(err)
			}
			if err := h.src.Ack(ctx, recs[1].Position); err != nil {
				t.Fatal(err)
			}
			left := 2
			if tt.early {
				left = 1
			}
			for range left {
				wantStatus(t, <-answers, 200)
			}
			if err := h.src.DurablePart(ctx, []connect.Position{position(99)}); tt.early && err == nil {
				t.Error("DurablePart of a position never given out succeeded")
			}
		})
	}
}

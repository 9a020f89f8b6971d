package httptrack

import (
	"slices"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// TestDurable_AnswersWithDedup checks that with dedup on a request is
// answered 200 on Durable, before its position is stored; that a resend
// of it is then dropped at once; and that after a crash before the
// position store the resend is still dropped once the source recovered the
// log tail, across a further restart too (the journal keeps the recovered
// ids with the stored seq).
func TestDurable_AnswersWithDedup(t *testing.T) {
	values := map[string]string{"state.dir": t.TempDir(), "ack.timeout": "300ms"}
	msg := func(id string) string { return `{"userId":"u","event":"E","messageId":"` + id + `"}` }
	h := start(t, values, nil)
	wantStatus(t, h.post("/v1/track", msg("stored"), auth), 200)
	pos := h.position()
	h.hold.Store(true)
	h.announce.Store(true) // from now on the worker "crashes" after Durable, before the store
	wantStatus(t, h.post("/v1/track", msg("durable"), auth), 200)
	wantStatus(t, h.post("/v1/track", msg("durable"), auth), 200) // its resend: dropped, answered at once
	rep := h.src.Report()
	if g := rep.Gauges["httptrack_unacked_requests"]; g != 0 {
		t.Errorf("httptrack_unacked_requests %v, want 0: every request read is durable", g)
	}
	h.stop()
	h.mu.Lock()
	held := slices.Clone(h.held)
	h.mu.Unlock()
	if got := messageIDs(t, held); got != "durable" {
		t.Fatalf("the log tail holds %s, want durable (once)", got)
	}
	for i := range held {
		held[i].Topic, held[i].Position, held[i].Offset = "web.tracking", nil, int64(i)
	}

	h2 := open(t, values, pos)
	if err := h2.src.RecoverTail(t.Context(), held); err != nil {
		t.Fatal(err)
	}
	h2.run()
	wantStatus(t, h2.post("/v1/track", msg("durable"), auth), 200)
	wantStatus(t, h2.post("/v1/track", msg("new"), auth), 200)
	if got := messageIDs(t, h2.records()); got != "new" {
		t.Fatalf("after the restart the log got %s, want new only: the resend of an answered request was stored again", got)
	}
	pos2 := h2.position()
	h2.stop()
	h3 := start(t, values, pos2)
	for _, id := range []string{"stored", "durable", "new"} {
		wantStatus(t, h3.post("/v1/track", msg(id), auth), 200)
	}
	if n := len(h3.records()); n != 0 {
		t.Errorf("%d records after the second restart, want 0", n)
	}
}

// TestDurable_DedupOffWaitsForAck checks that with dedup off Durable does
// not answer: nothing could drop a resend, so a 200 waits for Ack.
func TestDurable_DedupOffWaitsForAck(t *testing.T) {
	h := start(t, map[string]string{"dedup.window": "0", "ack.timeout": "300ms"}, nil)
	h.hold.Store(true)
	h.announce.Store(true)
	a := h.post("/v1/track", `{"userId":"u","event":"E","messageId":"m"}`, auth)
	wantStatus(t, a, 503)
	if _, _, code, _ := a.errorAt(0); code != "not_durable" {
		t.Errorf("code %q, want not_durable", code)
	}
	h.hold.Store(false)
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"m2"}`, auth), 200)
}

func TestDurable_Contract(t *testing.T) {
	h := open(t, nil, connect.Position(`{"seq":7}`))
	if err := h.src.Durable(t.Context(), connect.Position(`{"seq":8}`)); err == nil {
		t.Error("durable of a position never given out succeeded")
	}
	if err := h.src.Durable(t.Context(), connect.Position(`{"nope":1}`)); err == nil {
		t.Error("durable of a malformed position succeeded")
	}
	if err := h.src.Durable(t.Context(), connect.Position(`{"seq":3}`)); err != nil {
		t.Errorf("durable of a position before the stored one: %v", err)
	}
}

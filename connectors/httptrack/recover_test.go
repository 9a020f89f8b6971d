package httptrack

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// crashTail runs a source on dir, has one request become durable (its
// position stored), then "crashes" the worker between its append and its
// position store for the requests in tail: their records are in the log,
// their clients got 503. It returns the stored position and the records
// after it, as the worker's RecoverTail would hand them over (Topic set:
// the pipeline's topic for the source's own records).
func crashTail(t *testing.T, values map[string]string, tail []post) (connect.Position, []connect.Record) {
	t.Helper()
	h := start(t, values, nil)
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"durable"}`, auth1), 200)
	pos := h.position()
	h.hold.Store(true)
	for _, p := range tail {
		wantStatus(t, h.post(p.path, p.body, map[string]string{"auth": p.key}), 503)
	}
	h.stop()
	h.mu.Lock()
	held := slices.Clone(h.held)
	h.mu.Unlock()
	for i := range held {
		if held[i].Topic == "" {
			held[i].Topic = "web.tracking"
		}
		held[i].Position = nil
		held[i].Offset = int64(i)
	}
	return pos, held
}

type post struct{ key, path, body string }

func (p post) resend(h *harness) answer {
	h.t.Helper()
	return h.post(p.path, p.body, map[string]string{"auth": p.key})
}

func messageIDs(t *testing.T, recs []connect.Record) string {
	t.Helper()
	var ids []string
	for _, r := range recs {
		ids = append(ids, value(t, r)["messageId"].(string))
	}
	return strings.Join(ids, ",")
}

// TestRecoverTail checks that the resend of a request whose records
// reached the log, but whose position was never stored (a crash between
// the worker's append and its position store), is dropped once the source
// recovered the log tail, across a further restart too; and that without
// the recovery it would be stored twice.
func TestRecoverTail(t *testing.T) {
	values := map[string]string{"write.keys": "k1, k2:mobile, k3:mobile", "ack.timeout": "300ms"}
	tail := []post{
		{"k1", "/v1/track", `{"userId":"u","event":"E","messageId":"t1"}`},
		{"k1", "/v1/batch", `{"batch":[{"type":"track","userId":"u","event":"E","messageId":"t2"},{"type":"identify","anonymousId":"a","messageId":"t3"}]}`},
		{"k2", "/v1/track", `{"userId":"u","event":"E","messageId":"t4"}`},
	}

	t.Run("without recovery the resend is stored twice", func(t *testing.T) {
		values := withValue(values, "state.dir", t.TempDir())
		pos, held := crashTail(t, values, tail)
		if got := messageIDs(t, held); got != "t1,t2,t3,t4" {
			t.Fatalf("the tail holds %s, want t1,t2,t3,t4", got)
		}
		h := start(t, values, pos)
		for _, p := range tail {
			wantStatus(t, p.resend(h), 200)
		}
		if got := messageIDs(t, h.records()); got != "t1,t2,t3,t4" {
			t.Errorf("records after the resends %s, want t1,t2,t3,t4 (stored again: the gap RecoverTail closes)", got)
		}
	})

	t.Run("recovered", func(t *testing.T) {
		values := withValue(values, "state.dir", t.TempDir())
		pos, held := crashTail(t, values, tail)
		// Records of another writer on the same topics are skipped.
		held = append(held,
			connect.Record{Topic: "web.tracking", Value: []byte("not json")},
			connect.Record{Topic: "mobile", Value: []byte(`{"other":"writer"}`)},
			connect.Record{Topic: "web.tracking", Value: nil})

		h := open(t, values, pos)
		if got, want := h.src.TailTopics(), []string{"", "mobile"}; !slices.Equal(got, want) {
			t.Errorf("TailTopics %q, want %q", got, want)
		}
		// A resend that arrives before the first Read waits for it, so it
		// cannot slip in before the recovery.
		var wg sync.WaitGroup
		early := make(chan answer, 1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			early <- tail[0].resend(h)
		}()
		if err := h.src.RecoverTail(t.Context(), held[:2]); err != nil {
			t.Fatal(err)
		}
		if err := h.src.RecoverTail(t.Context(), held[2:]); err != nil {
			t.Fatal(err)
		}
		h.run()
		wg.Wait()
		wantStatus(t, <-early, 200)
		for _, p := range tail {
			wantStatus(t, p.resend(h), 200)
		}
		// k3 shares k2's topic: the recovered id is remembered for both.
		wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"t4"}`, map[string]string{"auth": "k3"}), 200)
		// k1's topic is not mobile's: the same id from k1 is new.
		wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"t4"}`, map[string]string{"auth": "k1"}), 200)
		wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"new"}`, auth1), 200)
		if got := messageIDs(t, h.records()); got != "t4,new" {
			t.Errorf("records after the resends %s, want t4,new (k1's t4, then new)", got)
		}
		if got := h.src.Report().Gauges["httptrack_recovered_ids"]; got != 4 {
			t.Errorf("httptrack_recovered_ids %v, want 4", got)
		}

		// The journal keeps the recovered ids: after another restart
		// (the tail is now below the stored position: no recovery), the
		// resends are still dropped.
		pos = h.position()
		h.stop()
		h2 := start(t, values, pos)
		for _, p := range tail {
			wantStatus(t, p.resend(h2), 200)
		}
		if n := len(h2.records()); n != 0 {
			t.Errorf("%d records after the second restart (%s), want 0", n, messageIDs(t, h2.records()))
		}
	})

	t.Run("a second crash before any new position", func(t *testing.T) {
		// The worker recovers the same tail again: nothing doubles.
		values := withValue(values, "state.dir", t.TempDir())
		pos, held := crashTail(t, values, tail)
		for range 2 {
			h := open(t, values, pos)
			if err := h.src.RecoverTail(t.Context(), held); err != nil {
				t.Fatal(err)
			}
			h.run()
			wantStatus(t, tail[1].resend(h), 200)
			if n := len(h.records()); n != 0 {
				t.Errorf("%d records, want 0", n)
			}
			h.stop()
		}
	})

	t.Run("outside the window", func(t *testing.T) {
		values := withValue(values, "dedup.window", "1h")
		pos, held := crashTail(t, values, tail[:1])
		old := strings.Replace(string(held[0].Value), `"receivedAt":"20`, `"receivedAt":"19`, 1)
		held[0].Value = []byte(old)
		h := open(t, values, pos)
		if err := h.src.RecoverTail(t.Context(), held); err != nil {
			t.Fatal(err)
		}
		h.run()
		wantStatus(t, tail[0].resend(h), 200)
		if got := messageIDs(t, h.records()); got != "t1" {
			t.Errorf("records %q, want t1: an id received before the window is not remembered", got)
		}
	})

	t.Run("dedup off", func(t *testing.T) {
		values := withValue(values, "dedup.window", "0")
		pos, held := crashTail(t, values, tail[:1])
		h := open(t, values, pos)
		if err := h.src.RecoverTail(t.Context(), held); err != nil {
			t.Fatal(err)
		}
		h.run()
		wantStatus(t, tail[0].resend(h), 200)
		if got := messageIDs(t, h.records()); got != "t1" {
			t.Errorf("records %q, want t1", got)
		}
	})
}

var auth1 = map[string]string{"auth": "k1"}

func withValue(values map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for k2, v2 := range values {
		if k2 != k {
			out[k2] = v2
		}
	}
	return out
}

// TestTailTopics checks the topics for the write-key routes.
func TestTailTopics(t *testing.T) {
	for _, c := range []struct {
		keys string
		want []string
	}{
		{"k", []string{""}},
		{"k:b, j:a, i:b", []string{"a", "b"}},
		{"k:b, j", []string{"", "b"}},
	} {
		h := open(t, map[string]string{"write.keys": c.keys}, nil)
		if got := h.src.TailTopics(); !slices.Equal(got, c.want) {
			t.Errorf("write.keys %s: TailTopics %q, want %q", c.keys, got, c.want)
		}
		h.stop()
	}
}

// TestNotReading checks that a request that comes before the worker's
// first Read (while it may still be recovering the log tail) is answered
// 503 with Retry-After when no Read comes within ack.timeout.
func TestNotReading(t *testing.T) {
	h := open(t, map[string]string{"ack.timeout": "100ms"}, nil)
	a := h.post("/v1/track", `{"userId":"u","event":"E","messageId":"m"}`, auth)
	wantStatus(t, a, 503)
	if _, _, code, _ := a.errorAt(0); code != "starting" || a.header.Get("Retry-After") == "" {
		t.Errorf("answer %s %v, want code starting and Retry-After", a.raw, a.header)
	}
	h.run()
	wantStatus(t, h.post("/v1/track", `{"userId":"u","event":"E","messageId":"m"}`, auth), 200)
	if got := messageIDs(t, h.records()); got != "m" {
		t.Errorf("records %q, want m", got)
	}
}

package webhook

import (
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

// Record 1 of key "a" is retried until max.attempts (the default 10; 2
// here) and fails, not permanently; record 2 of the same key is then sent
// in the same Write, before record 1 ever reached the receiver. Write
// reports BadRecordAt(0): with the default errors.tolerance none the task
// fails and restarts from the committed offset, so the receiver sees
// a2, then a1, then a2 again: per-key log order ("Records of one key are
// delivered in log order", doc.go) is broken, and a receiver that applies
// the latest event per key briefly holds the stale a1 after a2.
func TestReviewSinks_LaterRecordOfKeySentAfterEarlierGaveUp(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var e event
		json.Unmarshal(body, &e)
		if e.Seq == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the receiver cannot take a1 right now
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "max.attempts": "2"}))
	err := s.Write(t.Context(), events([]string{"a"}, 2))
	var bad *connect.BadRecordError
	if !asBad(err, &bad) || bad.Index != 0 {
		t.Fatalf("Write = %v, want BadRecordAt(0)", err)
	}
	if got := rc.requests(); len(got) != 0 {
		t.Errorf("the receiver got %s although a1, before it in the log, was never delivered", got[0].body)
	}
}

func asBad(err error, bad **connect.BadRecordError) bool {
	return err != nil && errors.As(err, bad)
}

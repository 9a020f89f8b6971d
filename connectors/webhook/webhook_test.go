package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// verifyStandardWebhook checks a request's signature as the Standard
// Webhooks specification says, written apart from the sink's code: the
// key is the base64 after whsec_, the signed content id.timestamp.body,
// the header a space-separated list of v1,<base64 HMAC-SHA256>.
func verifyStandardWebhook(secret string, h http.Header, body []byte) error {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return err
	}
	id, ts, sigs := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sigs == "" {
		return fmt.Errorf("missing headers: id %q timestamp %q signature %q", id, ts, sigs)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return err
	}
	if d := time.Since(time.Unix(sec, 0)); d > 5*time.Minute || d < -5*time.Minute {
		return fmt.Errorf("timestamp %s is off by %s", ts, d)
	}
	mac := hmac.New(sha256.New, key)
	fmt.Fprintf(mac, "%s.%s.%s", id, ts, body)
	want := mac.Sum(nil)
	for _, s := range strings.Split(sigs, " ") {
		version, b64, _ := strings.Cut(s, ",")
		got, err := base64.StdEncoding.DecodeString(b64)
		if version == "v1" && err == nil && hmac.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("no signature in %q matches", sigs)
}

// The test vector of CONVENTIONS.md section 6 (from the Standard Webhooks
// reference libraries).
func TestSignature_StandardWebhooksVector(t *testing.T) {
	key, err := signingKey("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	got := signature([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Errorf("signature = %q, want %q", got, want)
	}
	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", strconv.FormatInt(time.Now().Unix(), 10))
	h.Set("webhook-signature", signature([][]byte{key}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Now().Unix(), []byte("x")))
	if err := verifyStandardWebhook("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", h, []byte("x")); err != nil {
		t.Errorf("the test's verifier rejects the sink's signature: %v", err)
	}
}

func TestSigning_VerifiesAtReceiverOnEveryAttempt(t *testing.T) {
	const secret, rotated = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_c2Vjb25kIGtleSBmb3Igcm90YXRpb24="
	var attempts atomic.Int32
	var mu sync.Mutex
	var ids []string
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		for _, sec := range []string{secret, rotated} {
			if err := verifyStandardWebhook(sec, r.Header, body); err != nil {
				t.Errorf("secret %s: %v", sec[:10], err)
			}
		}
		mu.Lock()
		ids = append(ids, r.Header.Get("webhook-id")+"|"+r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if attempts.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the retry must carry the same id
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/hook", "signing.secret": secret + " " + rotated}))
	recs := events([]string{"a"}, 1)
	recs[0].Partition, recs[0].Offset = 2, 41
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	want := []string{"msg_crm.contacts_2_41|msg_crm.contacts_2_41", "msg_crm.contacts_2_41|msg_crm.contacts_2_41"}
	if !slices.Equal(ids, want) {
		t.Errorf("webhook-id|Idempotency-Key of the attempts = %q, want %q", ids, want)
	}
	got := rc.requests()
	if len(got) != 1 || string(got[0].body) != string(recs[0].Value) {
		t.Fatalf("received %+v, want the value once", got)
	}
}

// TestDeliveryID_IsWhereTheRecordWasRead: behind a sink-side route that
// merges topics, two records can come with the same topic, partition and
// offset; their delivery ids (webhook-id, Idempotency-Key) name where each
// was read, so that a receiver deduplicating by them keeps both.
func TestDeliveryID_IsWhereTheRecordWasRead(t *testing.T) {
	var mu sync.Mutex
	var ids []string
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		ids = append(ids, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/hook"}))
	recs := events([]string{"a", "b"}, 1)
	for i, shard := range []string{"shop1.orders", "shop2.orders"} {
		recs[i].Topic, recs[i].Partition, recs[i].Offset = "shop.orders", 0, 7 // as the route left them
		recs[i].OriginalTopic, recs[i].OriginalPartition, recs[i].OriginalOffset = shard, 0, 7
	}
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	if want := []string{"msg_shop1.orders_0_7", "msg_shop2.orders_0_7"}; !slices.Equal(ids, want) {
		t.Fatalf("delivery ids %q, want %q", ids, want)
	}
}

func TestTemplates_URLMethodHeadersBody(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{
		"url":    rc.srv.URL + `/contacts/{{ .Value.after.id }}?src={{ .Topic | urlquery }}&email={{ get .Value "after.email" | default "none" | lower }}`,
		"method": `{{ if eq .Value.op "d" }}DELETE{{ else }}put{{ end }}`,
		"headers": "Authorization: Bearer static-token-123\n" +
			"X-Source: {{ .Topic }}/{{ .Partition }}/{{ .Offset }}\n" +
			"X-Trace: {{ index .Headers \"trace\" }}",
		"body": `{"id":{{ json .Value.after.id }},"name":{{ json (upper .Value.after.name) }},"city":{{ json (default "unknown" .Value.after.city) }},"key":{{ json .Key }},"null":"{{ .Value.after.city }}"}`,
	}))
	recs := []connect.Record{
		{Topic: "pg.public.contacts", Partition: 1, Offset: 7, Key: []byte(`{"id":12345678901234567890}`),
			Value:   []byte(`{"op":"u","after":{"id":12345678901234567890,"name":"Ada","email":"ADA@X.ORG","city":null}}`),
			Headers: []connect.Header{{Key: "trace", Value: []byte("t-1")}}},
		{Topic: "pg.public.contacts", Partition: 1, Offset: 8, Key: []byte(`{"id":2}`),
			Value:   []byte(`{"op":"d","after":{"id":2,"name":"bob","city":"Paris"}}`),
			Headers: []connect.Header{{Key: "trace", Value: []byte("t-2")}}},
	}
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	got := rc.requests()
	slices.SortFunc(got, func(a, b received) int { return strings.Compare(a.path, b.path) })
	if len(got) != 2 {
		t.Fatalf("received %d requests, want 2", len(got))
	}
	want := []struct{ method, path, source, trace, body string }{
		{"PUT", "/contacts/12345678901234567890?src=pg.public.contacts&email=ada@x.org", "pg.public.contacts/1/7", "t-1",
			`{"id":12345678901234567890,"name":"ADA","city":"unknown","key":{"id":12345678901234567890},"null":""}`},
		{"DELETE", "/contacts/2?src=pg.public.contacts&email=none", "pg.public.contacts/1/8", "t-2",
			`{"id":2,"name":"BOB","city":"Paris","key":{"id":2},"null":"Paris"}`},
	}
	for i, w := range want {
		g := got[i]
		if g.method != w.method || g.path != w.path || string(g.body) != w.body ||
			g.header.Get("X-Source") != w.source || g.header.Get("X-Trace") != w.trace ||
			g.header.Get("Authorization") != "Bearer static-token-123" || g.header.Get("Content-Type") != "application/json" {
			t.Errorf("request %d:\n got %s %s %q %q %s\nwant %s %s %q %q %s", i, g.method, g.path, g.header.Get("X-Source"), g.header.Get("X-Trace"), g.body,
				w.method, w.path, w.source, w.trace, w.body)
		}
	}
}

func TestDefaultBody_ValueAsJSON(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "concurrency": "1", "tombstones": "send"}))
	recs := []connect.Record{
		{Topic: "t", Offset: 0, Value: []byte(`{"a": 1}`)},
		{Topic: "t", Offset: 1, Value: []byte("plain \"text\" <b>")},
		{Topic: "t", Offset: 2, Value: nil},
	}
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	var bodies []string
	for _, r := range rc.requests() {
		bodies = append(bodies, string(r.body))
	}
	slices.Sort(bodies)
	want := []string{`"plain \"text\" <b>"`, `null`, `{"a": 1}`}
	if !slices.Equal(bodies, want) {
		t.Errorf("bodies = %q, want %q", bodies, want)
	}
}

func TestTombstones_SkippedByDefault(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	if err := s.Write(t.Context(), []connect.Record{{Topic: "t", Key: []byte("k")}}); err != nil {
		t.Fatal(err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("%d requests for a tombstone, want none", n)
	}
}

func TestTemplate_MissingField_DeadLettersTheRecord(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/c/{{ .Value.id }}"}))
	recs := []connect.Record{
		{Topic: "t", Offset: 0, Key: []byte("a"), Value: []byte(`{"id":1}`)},
		{Topic: "t", Offset: 1, Key: []byte("b"), Value: []byte(`{"name":"no id"}`)},
		{Topic: "t", Offset: 2, Key: []byte("c"), Value: []byte(`{"id":3}`)},
	}
	dead := writeLikeWorker(t, s, recs, nil)
	if len(dead) != 1 || !strings.Contains(dead[1], `render url`) || !strings.Contains(dead[1], `"id"`) {
		t.Errorf("dead letters = %v, want offset 1 with a render url error naming id", dead)
	}
	if n := len(rc.requests()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

func TestBatch_ArraysOfUpToBatchSize_OnePerKey(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{
		"url": rc.srv.URL + "/batch", "batch.size": "4", "concurrency": "2",
		"body":       `{"id":{{ json .Value.key }},"seq":{{ .Value.seq }},"ref":"{{ .ID }}"}`,
		"batch.body": `{"inputs":{{ json .Items }},"n":{{ len .Records }},"id":"{{ .ID }}"}`,
	}))
	recs := events(keys(5), 3) // 15 records, 5 keys
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{} // key → last seq
	total := 0
	ids := map[string]bool{}
	for _, r := range rc.requests() {
		var b struct {
			Inputs []struct {
				ID  string `json:"id"`
				Seq int    `json:"seq"`
				Ref string `json:"ref"`
			} `json:"inputs"`
			N  int    `json:"n"`
			ID string `json:"id"`
		}
		if err := json.Unmarshal(r.body, &b); err != nil {
			t.Fatalf("batch body %s: %v", r.body, err)
		}
		if len(b.Inputs) == 0 || len(b.Inputs) > 4 || b.N != len(b.Inputs) {
			t.Errorf("batch of %d items (n %d), want 1 to 4", len(b.Inputs), b.N)
		}
		if r.header.Get("Idempotency-Key") != b.ID || !strings.HasPrefix(b.ID, "msg_b") || ids[b.ID] {
			t.Errorf("batch id %q, Idempotency-Key %q: want equal, msg_b…, unique", b.ID, r.header.Get("Idempotency-Key"))
		}
		ids[b.ID] = true
		inBatch := map[string]bool{}
		for _, in := range b.Inputs {
			if inBatch[in.ID] {
				t.Errorf("key %s twice in one batch", in.ID)
			}
			inBatch[in.ID] = true
			if in.Seq != seen[in.ID]+1 {
				t.Errorf("key %s: seq %d after %d", in.ID, in.Seq, seen[in.ID])
			}
			seen[in.ID] = in.Seq
			total++
		}
	}
	if total != len(recs) {
		t.Errorf("%d records delivered, want %d", total, len(recs))
	}
}

func TestBatch_DefaultBodyIsArray_SplitByTarget(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/{{ .Value.kind }}", "batch.size": "10"}))
	recs := []connect.Record{
		{Topic: "t", Offset: 0, Value: []byte(`{"kind":"a","n":1}`)},
		{Topic: "t", Offset: 1, Value: []byte(`{"kind":"b","n":2}`)},
		{Topic: "t", Offset: 2, Value: []byte(`{"kind":"a","n":3}`)},
	}
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range rc.requests() {
		got[r.path] = string(r.body)
	}
	want := map[string]string{"/a": `[{"kind":"a","n":1},{"kind":"a","n":3}]`, "/b": `[{"kind":"b","n":2}]`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestRetry_HonoursRetryAfter(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		times = append(times, time.Now())
		n := len(times)
		mu.Unlock()
		switch n {
		case 1:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
		case 2:
			w.WriteHeader(http.StatusBadGateway)
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); err != nil {
		t.Fatal(err)
	}
	if len(times) != 3 || len(rc.requests()) != 1 {
		t.Fatalf("%d attempts, %d delivered; want 3 and 1", len(times), len(rc.requests()))
	}
	if gap := times[1].Sub(times[0]); gap < 990*time.Millisecond {
		t.Errorf("retried %s after a 429 with Retry-After: 1, want at least 1s", gap)
	}
	if gap := times[2].Sub(times[1]); gap > 500*time.Millisecond {
		t.Errorf("retried %s after a 502, want the short backoff", gap)
	}
	if got := s.Report().Gauges["webhook_retries"]; got != 2 {
		t.Errorf("webhook_retries = %v, want 2", got)
	}
}

func TestRetryAfter_Parse(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Fri, 02 Jan 2026 03:04:15 GMT": 10 * time.Second,
		"Fri, 02 Jan 2026 03:04:00 GMT": 0,
		"99999999":                      24 * time.Hour,
	} {
		if got := retryAfter(v, now); got != want {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, want)
		}
	}
}

func TestPermanent4xx_DeadLettersOnlyThatRecord(t *testing.T) {
	var mu sync.Mutex
	delivered := map[int64]int{}
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var e event
		json.Unmarshal(body, &e)
		if e.Key == "k2" && e.Seq == 1 {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"status":"error","message":"Property values were not valid: email"}`)
			return
		}
		off, _ := strconv.ParseInt(strings.TrimPrefix(r.Header.Get("Idempotency-Key"), "msg_crm.contacts_0_"), 10, 64)
		mu.Lock()
		delivered[off]++
		mu.Unlock()
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "concurrency": "4"}))
	recs := events(keys(4), 3) // k2 seq 1 is offset 2
	dead := writeLikeWorker(t, s, recs, func(r connect.Record) bool {
		mu.Lock()
		defer mu.Unlock()
		return delivered[r.Offset] > 0
	})
	if len(dead) != 1 || !strings.Contains(dead[2], "400 Bad Request") || !strings.Contains(dead[2], "Property values were not valid") {
		t.Errorf("dead letters = %v, want offset 2 with the status and the body", dead)
	}
	for _, r := range recs {
		if n := delivered[r.Offset]; (n != 1) != (r.Offset == 2) {
			t.Errorf("offset %d delivered %d times", r.Offset, n)
		}
	}
}

func TestGiveUp_AfterMaxAttempts(t *testing.T) {
	var attempts atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		attempts.Add(1)
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, "database is down")
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "max.attempts": "3"}))
	err := s.Write(t.Context(), events([]string{"a"}, 1))
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "gave up after 3 attempts") || !strings.Contains(err.Error(), "500 Internal Server Error: database is down") {
		t.Errorf("Write = %v, want a bad record naming 3 attempts and the last answer", err)
	}
	if attempts.Load() != 3 {
		t.Errorf("%d attempts, want 3", attempts.Load())
	}
}

func TestGiveUp_AfterMaxElapsed(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "max.attempts": "0", "max.elapsed": "150ms", "backoff.initial": "10ms", "backoff.max": "40ms"}))
	start := time.Now()
	err := s.Write(t.Context(), events([]string{"a"}, 1))
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "max.elapsed") || !strings.Contains(err.Error(), "503") {
		t.Errorf("Write = %v, want a bad record naming max.elapsed and 503", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("gave up after %s, want about 150ms", d)
	}
}

func TestTimeout_RetriedThenDelivered(t *testing.T) {
	var attempts atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if attempts.Add(1) == 1 || r.URL.Path == "/slow" {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
			w.WriteHeader(http.StatusServiceUnavailable) // too late: the sink gave up on it
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "timeout": "100ms"}))
	start := time.Now()
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Write took %s, want about the 100ms timeout", d)
	}
	if attempts.Load() != 2 || len(rc.requests()) != 1 {
		t.Errorf("%d attempts, %d delivered; want 2 and 1", attempts.Load(), len(rc.requests()))
	}

	s2 := open(t, fast(map[string]string{"url": rc.srv.URL + "/slow", "timeout": "50ms", "max.attempts": "2"}))
	err := s2.Write(t.Context(), events([]string{"a"}, 1))
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "no answer within 50ms (timeout)") {
		t.Errorf("Write = %v, want a bad record naming the timeout", err)
	}
}

func TestConnectionReset_Retried(t *testing.T) {
	var attempts atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if attempts.Add(1) <= 2 {
			w.(*statusRecorder).reset()
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); err != nil {
		t.Fatal(err)
	}
	if attempts.Load() != 3 || len(rc.requests()) != 1 {
		t.Errorf("%d attempts, %d delivered; want 3 and 1", attempts.Load(), len(rc.requests()))
	}
}

func TestGone_FailsTheTask(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) { w.WriteHeader(http.StatusGone) })
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	err := s.Write(t.Context(), events(keys(3), 2))
	if err == nil || connect.IsBadRecord(err) || connect.IsRetryable(err) || !strings.Contains(err.Error(), "410 Gone") {
		t.Errorf("Write = %v, want a plain error naming 410 Gone", err)
	}
}

// TestRetryStatuses_ListedGoneIsRetried: a status listed in retry.statuses
// is retried even when the built-in rule fails the task for it (410).
func TestRetryStatuses_ListedGoneIsRetried(t *testing.T) {
	var attempts atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if attempts.Add(1) <= 2 {
			w.WriteHeader(http.StatusGone)
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "retry.statuses": "410"}))
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); err != nil {
		t.Fatalf("Write = %v, want nil: 410 is in retry.statuses, and the third attempt is answered 200", err)
	}
	if attempts.Load() != 3 || len(rc.requests()) != 1 {
		t.Errorf("%d attempts, %d delivered; want 3 and 1", attempts.Load(), len(rc.requests()))
	}
}

// TestRedirect_RelativeLocationOfASecretURLIsMasked: the URL of a Slack
// style webhook is a secret as a whole (a ${VAR}); a redirect whose
// Location is relative (a trailing slash) or on another scheme holds its
// secret path, which the error must not show.
func TestRedirect_RelativeLocationOfASecretURLIsMasked(t *testing.T) {
	const secretPath = "/services/T0001/B0002/XyZsEcReT123"
	for name, location := range map[string]func(base string) string{
		"relative":     func(string) string { return secretPath + "/" },
		"other scheme": func(base string) string { return "https" + strings.TrimPrefix(base, "http") + secretPath },
		"query only":   func(string) string { return "?v=2" },
	} {
		t.Run(name, func(t *testing.T) {
			var base string
			rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
				w.Header().Set("Location", location(base))
				w.WriteHeader(http.StatusPermanentRedirect)
			})
			base = rc.srv.URL
			secretURL := rc.srv.URL + secretPath
			t.Setenv("TRIBUTARY_TEST_HOOK_URL", secretURL)
			s := open(t, fast(map[string]string{"url": secretURL}))
			err := s.Write(t.Context(), events([]string{"a"}, 1))
			if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "308") {
				t.Fatalf("Write = %v, want a bad record naming the redirect", err)
			}
			if strings.Contains(err.Error(), "XyZsEcReT123") {
				t.Errorf("the error shows the secret URL's path: %v", err)
			}
			if !strings.Contains(err.Error(), "point url at "+connect.Masked) && !strings.Contains(err.Error(), "point url at https://") {
				t.Errorf("the error does not say where the redirect points: %v", err)
			}
		})
	}
}

func TestRedirect_NotFollowed(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if r.URL.Path == "/old" {
			http.Redirect(w, r, "/new", http.StatusMovedPermanently)
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/old"}))
	err := s.Write(t.Context(), events([]string{"a"}, 1))
	if !connect.IsBadRecord(err) || !strings.Contains(err.Error(), "301") || !strings.Contains(err.Error(), "point url at "+rc.srv.URL+"/new") {
		t.Errorf("Write = %v, want a bad record naming the redirect", err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Errorf("the redirect was followed (%d requests delivered)", n)
	}
}

func TestRateLimit_Holds(t *testing.T) {
	var mu sync.Mutex
	var times []time.Time
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		times = append(times, time.Now())
		mu.Unlock()
	})
	const rate, n = 40, 30
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "rate.limit": strconv.Itoa(rate), "concurrency": "8"}))
	start := time.Now()
	if err := s.Write(t.Context(), events(keys(n), 1)); err != nil {
		t.Fatal(err)
	}
	if d, min := time.Since(start), time.Duration(n-1)*time.Second/rate; d < min {
		t.Errorf("%d requests in %s, want at least %s at %d/s", n, d, min, rate)
	}
	// No window of half a second holds more than rate/2+1 requests, give or
	// take the two the scheduling of a loaded machine may bunch up between
	// the sink and the server.
	for i := range times {
		in := 0
		for _, u := range times[i:] {
			if u.Sub(times[i]) < 500*time.Millisecond {
				in++
			}
		}
		if in > rate/2+3 {
			t.Fatalf("%d requests within 500ms from request %d, want at most %d", in, i, rate/2+3)
		}
	}
}

// TestPerKeyOrder_UnderConcurrency has a receiver that misbehaves at random
// (500s, resets, slow answers past the timeout, a few 429s) and checks at
// acceptance that every key's records arrive in log order, while different
// keys interleave with several requests in flight.
func TestPerKeyOrder_UnderConcurrency(t *testing.T) {
	var (
		mu            sync.Mutex
		next          = map[string]int{} // key → last seq accepted
		inFlight, top int
		counter       int
		accepted      int
	)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var e event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("body %s: %v", body, err)
		}
		mu.Lock()
		inFlight++
		top = max(top, inFlight)
		counter++
		c := counter
		mu.Unlock()
		defer func() {
			mu.Lock()
			inFlight--
			mu.Unlock()
		}()
		time.Sleep(time.Duration(c%3) * time.Millisecond)
		switch {
		case c%7 == 0:
			w.WriteHeader(http.StatusInternalServerError)
			return
		case c%11 == 0:
			w.(*statusRecorder).reset()
			return
		case c%29 == 0:
			// Past the timeout; counted out of flight at once, since the
			// server notices the client gone only some time after it left.
			mu.Lock()
			inFlight--
			mu.Unlock()
			time.Sleep(300 * time.Millisecond)
			mu.Lock()
			inFlight++
			mu.Unlock()
			return
		case c == 50:
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if e.Seq <= next[e.Key] {
			// A redelivery of what was accepted (an answer lost to the
			// timeout): allowed, at least once.
			return
		}
		if e.Seq != next[e.Key]+1 {
			t.Errorf("key %s: seq %d accepted after %d", e.Key, e.Seq, next[e.Key])
		}
		next[e.Key] = e.Seq
		accepted++
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "concurrency": "6", "timeout": "150ms"}))
	recs := events(keys(12), 15)
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if accepted != len(recs) {
		t.Errorf("%d records accepted, want %d", accepted, len(recs))
	}
	if top < 2 || top > 6 {
		t.Errorf("at most %d requests were in flight, want 2 to 6", top)
	}
}

func TestMasking_SecretsNeverInErrors(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	const apiKey = "key-0123456789abcdef"
	t.Setenv("CRM_API_KEY", apiKey)
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials %s for %s", r.Header.Get("Authorization"), r.URL.RawQuery)
	})
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	values := fast(map[string]string{
		"url":            rc.srv.URL + "/hook?hapikey=" + apiKey, // as ${CRM_API_KEY} arrives
		"headers":        "Authorization: Bearer " + token,
		"signing.secret": secret,
	})
	s := open(t, values)
	err := s.Write(t.Context(), events([]string{"a"}, 1))
	if err == nil {
		t.Fatal("Write succeeded against a 401")
	}
	for _, secret := range []string{token, apiKey, secret, strings.TrimPrefix(secret, "whsec_")} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("error shows a secret: %v", err)
		}
	}
	if !strings.Contains(err.Error(), "hapikey="+connect.Masked) || !strings.Contains(err.Error(), "Bearer "+connect.Masked) {
		t.Errorf("error = %v, want the secrets masked", err)
	}
	cfg := connect.Config{Values: values, Spec: spec()}
	if strings.Contains(fmt.Sprint(cfg), secret) {
		t.Errorf("the config prints the signing secret: %v", cfg)
	}

	// A secret in a connection error (the URL of the request).
	s2 := open(t, fast(map[string]string{"url": "http://127.0.0.1:1/hook?hapikey=" + apiKey, "max.attempts": "1"}))
	err = s2.Write(t.Context(), events([]string{"a"}, 1))
	if err == nil || strings.Contains(err.Error(), apiKey) {
		t.Errorf("Write = %v, want an error without the key", err)
	}
}

func TestSkipsRecordsDeliveredBeforeABadOne(t *testing.T) {
	// Three keys; the first record of key b fails, the others go through
	// but b's second, held back behind it: the Write that follows
	// BadRecordAt sends that one only, nothing twice.
	var count atomic.Int32
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		count.Add(1)
		var e event
		json.Unmarshal(body, &e)
		if e.Key == "b" && e.Seq == 1 {
			w.WriteHeader(http.StatusUnprocessableEntity)
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	recs := events([]string{"a", "b", "c"}, 2)
	err := s.Write(t.Context(), recs)
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 1 {
		t.Fatalf("Write = %v, want BadRecordAt(1)", err)
	}
	sent := count.Load()
	if sent != 5 {
		t.Fatalf("%d requests, want 5 (every record tried once, but b's second, held back)", sent)
	}
	if err := s.Write(t.Context(), recs[2:]); err != nil {
		t.Fatalf("second Write = %v", err)
	}
	if count.Load() != sent+1 {
		t.Errorf("the second Write sent %d requests, want 1 (b's second)", count.Load()-sent)
	}
	sent = count.Load()
	// A new batch is sent in full.
	more := events([]string{"a"}, 1)
	more[0].Offset = 100
	if err := s.Write(t.Context(), more); err != nil || count.Load() != sent+1 {
		t.Errorf("Write of a new batch = %v, %d requests; want nil, 1", err, count.Load()-sent)
	}
}

func TestWrite_ContextCanceled(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	s := open(t, fast(map[string]string{"url": rc.srv.URL}))
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if err := s.Write(ctx, events(keys(3), 2)); !errors.Is(err, ctx.Err()) || ctx.Err() == nil {
		t.Errorf("Write = %v, want the context's error", err)
	}
}

func TestOpen_ConfigErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		values map[string]string
		want   string
	}{
		"no url":        {map[string]string{}, "url"},
		"bad scheme":    {map[string]string{"url": "ftp://x"}, "not an http or https URL"},
		"bad template":  {map[string]string{"url": "http://x/{{ .Value"}, "url: template"},
		"bad header":    {map[string]string{"url": "http://x", "headers": "no colon here"}, "not a header line"},
		"bad secret":    {map[string]string{"url": "http://x", "signing.secret": "whsec_!!!"}, "not a Standard Webhooks secret"},
		"bad method":    {map[string]string{"url": "http://x", "method": "PO ST"}, "not an HTTP method"},
		"bad status":    {map[string]string{"url": "http://x", "retry.statuses": "403,42"}, `"42" is not an HTTP status`},
		"zero batch":    {map[string]string{"url": "http://x", "batch.size": "0"}, "batch.size"},
		"missing ca":    {map[string]string{"url": "https://x", "tls.ca": "/nonexistent/ca.pem"}, "tls.ca"},
		"bad tombstone": {map[string]string{"url": "http://x", "tombstones": "drop"}, "tombstones"},
	} {
		t.Run(name, func(t *testing.T) {
			s := &Sink{}
			err := s.Open(t.Context(), connect.Config{Values: spec().WithDefaults(tc.values), Spec: spec()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Open = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	hs, err := parseHeaders("Authorization: Bearer x\n  # a comment\nAccept: a, b,X-Other: {{ .Topic }}\n\n")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, h := range hs {
		v := h.value.static
		if h.value.t != nil {
			v = "<template>"
		}
		got = append(got, h.name+"="+v)
	}
	want := []string{"Authorization=Bearer x", "Accept=a, b", "X-Other=<template>"}
	if !slices.Equal(got, want) {
		t.Errorf("parseHeaders = %q, want %q", got, want)
	}
}

// TestChaos_EveryRecordDeliveredOrDeadLettered writes like the worker to a
// receiver that answers 500s, resets connections and rejects some records
// for good: each record ends delivered or dead-lettered with its reason,
// the rejected ones hold back the later records of their key only until
// they are dead-lettered, and per-key order holds for the rest.
func TestChaos_EveryRecordDeliveredOrDeadLettered(t *testing.T) {
	var (
		mu       sync.Mutex
		last     = map[string]int{}
		accepted = map[int]int{} // seq·100+key number → times
		counter  int
	)
	rejected := func(e event) bool { return (e.Seq*7+len(e.Key))%9 == 0 }
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var e event
		json.Unmarshal(body, &e)
		mu.Lock()
		counter++
		c := counter
		mu.Unlock()
		switch {
		case rejected(e):
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":"seq %d of %s is invalid"}`, e.Seq, e.Key)
			return
		case c%5 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case c%13 == 0:
			w.(*statusRecorder).reset()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if e.Seq <= last[e.Key] {
			t.Errorf("key %s: seq %d after %d", e.Key, e.Seq, last[e.Key])
		}
		last[e.Key] = e.Seq
		n, _ := strconv.Atoi(strings.TrimPrefix(e.Key, "k"))
		accepted[e.Seq*100+n]++
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "concurrency": "5"}))
	recs := events(keys(15), 8)
	dead := writeLikeWorker(t, s, recs, func(r connect.Record) bool {
		var e event
		json.Unmarshal(r.Value, &e)
		n, _ := strconv.Atoi(strings.TrimPrefix(e.Key, "k"))
		mu.Lock()
		defer mu.Unlock()
		return accepted[e.Seq*100+n] > 0
	})
	for _, r := range recs {
		var e event
		json.Unmarshal(r.Value, &e)
		n, _ := strconv.Atoi(strings.TrimPrefix(e.Key, "k"))
		reason, isDead := dead[r.Offset]
		switch {
		case rejected(e) && (!isDead || !strings.Contains(reason, "400 Bad Request") || !strings.Contains(reason, "is invalid")):
			t.Errorf("%s seq %d: dead letter %q, want the 400 and its body", e.Key, e.Seq, reason)
		case !rejected(e) && (isDead || accepted[e.Seq*100+n] != 1):
			t.Errorf("%s seq %d: dead %v (%s), accepted %d times; want delivered once", e.Key, e.Seq, isDead, reason, accepted[e.Seq*100+n])
		}
	}
}

// TestPerKeyOrder_FailedRecordHoldsBackItsKey: a record that gives up
// after its retries (not permanently) leaves the later records of its key
// unsent in that Write, while other keys go on; once the worker has
// dead-lettered it and writes the rest, they are sent, and what was
// delivered is not sent again. Sending a2 before a1 was dealt with would
// break per-key log order: with the default errors.tolerance none the task
// restarts and the receiver sees a2, a1, a2.
func TestPerKeyOrder_FailedRecordHoldsBackItsKey(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		var e event
		json.Unmarshal(body, &e)
		if e.Key == "a" && e.Seq == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // the receiver cannot take a1 right now
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "max.attempts": "2"}))
	recs := events([]string{"a", "b"}, 2) // a1 b1 a2 b2
	err := s.Write(t.Context(), recs)
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 0 {
		t.Fatalf("Write = %v, want BadRecordAt(0)", err)
	}
	sent := func() []string {
		var out []string
		for _, r := range rc.requests() {
			var e event
			json.Unmarshal(r.body, &e)
			out = append(out, fmt.Sprintf("%s%d", e.Key, e.Seq))
		}
		slices.Sort(out)
		return out
	}
	if got, want := sent(), []string{"b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("the receiver got %v, want %v: a2 must wait while a1, before it in the log, is not delivered", got, want)
	}
	// The worker dead-letters a1 and writes the rest.
	if err := s.Write(t.Context(), recs[1:]); err != nil {
		t.Fatalf("Write of the rest = %v", err)
	}
	if got, want := sent(), []string{"a2", "b1", "b2"}; !slices.Equal(got, want) {
		t.Errorf("after a1 was dead-lettered the receiver got %v, want %v", got, want)
	}
}

// TestPerKeyOrder_TemplateFailureHoldsBackItsKey: a record whose template
// fails holds back the later records of its key too.
func TestPerKeyOrder_TemplateFailureHoldsBackItsKey(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "body": `{{.Value.name}}`}))
	recs := []connect.Record{
		{Topic: "t", Offset: 0, Key: []byte("a"), Value: []byte(`{"id":1}`)}, // no name: the template fails
		{Topic: "t", Offset: 1, Key: []byte("a"), Value: []byte(`{"name":"x"}`)},
	}
	err := s.Write(t.Context(), recs)
	var bad *connect.BadRecordError
	if !errors.As(err, &bad) || bad.Index != 0 {
		t.Fatalf("Write = %v, want BadRecordAt(0)", err)
	}
	if got := rc.requests(); len(got) != 0 {
		t.Fatalf("the receiver got %s before the failed record of its key was dead-lettered", got[0].body)
	}
	if err := s.Write(t.Context(), recs[1:]); err != nil {
		t.Fatalf("Write of the rest = %v", err)
	}
	if got := rc.requests(); len(got) != 1 || string(got[0].body) != "x" {
		t.Errorf("requests after the dead letter: %d, want the second record's", len(got))
	}
}

func TestBatch_RejectedBatchFailsAllItsRecords(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		if strings.Contains(string(body), `"k1"`) {
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprint(w, "one input is invalid")
		}
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "batch.size": "2", "concurrency": "1"}))
	recs := events(keys(4), 1) // k0 k1 in the first batch, k2 k3 in the second
	dead := writeLikeWorker(t, s, recs, nil)
	if len(dead) != 2 || !strings.Contains(dead[0], "422") || !strings.Contains(dead[1], "one input is invalid") {
		t.Errorf("dead letters %v, want offsets 0 and 1 with the 422", dead)
	}
	if got := rc.requests(); len(got) != 1 || !strings.Contains(string(got[0].body), `"k3"`) {
		t.Errorf("delivered %d requests, want the second batch", len(got))
	}
}

// TestHostHeader_Sent: a Host line in headers (a receiver behind a load
// balancer reached by address, a virtual host) is the request's Host, as
// curl -H 'Host: …' sends it; net/http would otherwise drop it silently.
func TestHostHeader_Sent(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
	})
	for _, headers := range []string{"Host: crm.internal.example", "Host: {{ .Topic }}.internal.example"} {
		hosts = nil
		s := open(t, fast(map[string]string{"url": rc.srv.URL, "headers": headers}))
		recs := events([]string{"a"}, 1)
		recs[0].Topic = "crm"
		if err := s.Write(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got := slices.Clone(hosts)
		mu.Unlock()
		if len(got) != 1 || got[0] != "crm.internal.example" {
			t.Errorf("headers %q: the receiver saw Host %q, want crm.internal.example", headers, got)
		}
	}
}

// TestTemplate_FieldOfNull_SaysSo: a field of a null value (.Value.after of
// a Debezium delete) fails the record with an error that says the value is
// null and how to read the field, not text/template's "can't evaluate
// field id in type interface {}".
func TestTemplate_FieldOfNull_SaysSo(t *testing.T) {
	rc := newReceiver(t, nil)
	s := open(t, fast(map[string]string{"url": rc.srv.URL + "/customers/{{ .Value.after.id }}"}))
	recs := []connect.Record{{Topic: "cdc.public.customers", Key: []byte(`{"id":1}`), Value: []byte(`{"before":{"id":1},"after":null,"op":"d"}`)}}
	dead := writeLikeWorker(t, s, recs, nil)
	msg := dead[0]
	for _, want := range []string{"render url", "<.Value.after.id>: a field of a null value", `{{ get .Value "after.id" }}`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "interface {}") {
		t.Errorf("error %q speaks of Go types", msg)
	}
}

// TestTrimTemplateError_FieldOfNull covers every form of text/template's
// message about a field of a null value.
func TestTrimTemplateError_FieldOfNull(t *testing.T) {
	for in, want := range map[string]string{
		`template: url:1:2: executing "url" at <.Value.after.id>: can't evaluate field id in type interface {}`: `url:1:2: executing "url" at <.Value.after.id>: a field of a null value; read fields that may be null with get, which gives null: {{ get .Value "after.id" }}`,
		`template: x:1:2: executing "x" at <.Key.a.b>: nil pointer evaluating *webhook.null.b`:                  `x:1:2: executing "x" at <.Key.a.b>: a field of a null value; read fields that may be null with get, which gives null: {{ get .Key "a.b" }}`,
		`template: x:1:2: executing "x" at <.Value.after>: can't evaluate field id in type *webhook.null`:       `x:1:2: executing "x" at <.Value.after>: a field of a null value; read fields that may be null with get, which gives null`,
		`template: x:1:2: executing "x" at <.Value.id>: map has no entry for key "id"`:                          `x:1:2: executing "x" at <.Value.id>: map has no entry for key "id"`,
	} {
		if got := trimTemplateError(errors.New(in)).Error(); got != want {
			t.Errorf("trimTemplateError(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}

// TestUnauthorized_FailsTheTask: a 401 to a sink whose credentials are the
// same for every request (static headers) fails the task, like a 410:
// nothing would get through, and dead-lettering every record until the
// token is fixed would empty the stream into the dead-letter topic. With a
// templated header (credentials per record), it fails only its record.
func TestUnauthorized_FailsTheTask(t *testing.T) {
	rc := newReceiver(t, func(w http.ResponseWriter, r *http.Request, body []byte) {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `[{"errorCode":"INVALID_SESSION_ID","message":"Session expired or invalid"}]`)
	})
	s := open(t, fast(map[string]string{"url": rc.srv.URL, "headers": "Authorization: Bearer expired-token-123"}))
	err := s.Write(t.Context(), events(keys(3), 2))
	if err == nil || connect.IsBadRecord(err) || !strings.Contains(err.Error(), "401 Unauthorized") ||
		!strings.Contains(err.Error(), "INVALID_SESSION_ID") || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("Write = %v, want a plain error naming the 401 and the credentials", err)
	}
	if strings.Contains(err.Error(), "expired-token-123") {
		t.Errorf("the error shows the token: %v", err)
	}
	s = open(t, fast(map[string]string{"url": rc.srv.URL, "headers": "Authorization: Bearer {{ .Value.key }}"}))
	if err := s.Write(t.Context(), events([]string{"a"}, 1)); !connect.IsBadRecord(err) {
		t.Errorf("Write with a templated Authorization = %v, want a bad record", err)
	}
}

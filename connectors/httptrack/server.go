package httptrack

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// paths maps each tracking path to the message type it implies; "" is a
// batch.
var paths = map[string]string{
	"/v1/track": "track", "/v1/identify": "identify", "/v1/page": "page",
	"/v1/screen": "screen", "/v1/group": "group", "/v1/alias": "alias",
	"/v1/batch": "", "/v1/import": "",
	"/v1/t": "track", "/v1/i": "identify", "/v1/p": "page",
	"/v1/s": "screen", "/v1/g": "group", "/v1/a": "alias", "/v1/b": "",
}

// Rejection reasons, as metrics and logs name them.
const (
	reasonAuth         = "unauthorized"
	reasonInvalid      = "invalid"
	reasonTooLarge     = "too_large"
	reasonRateLimited  = "rate_limited"
	reasonBackpressure = "backpressure"
	reasonTimeout      = "ack_timeout"
	reasonStopping     = "stopping"
)

// ServeHTTP answers the tracking API, /health and /metrics.
func (s *Source) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	path := r.URL.Path
	typ, isTracking := paths[path]
	if !isTracking {
		switch {
		case path == "/health" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			s.serveHealth(w)
		case path == "/metrics" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			s.metrics.write(w)
		default:
			writeError(w, http.StatusNotFound, problem{Index: -1, Code: "not_found", Message: fmt.Sprintf("no endpoint %s: use /v1/track, /v1/identify, /v1/page, /v1/screen, /v1/group, /v1/alias or /v1/batch", clipString(path))})
		}
		return
	}
	if !s.cors(w, r) {
		return
	}
	if r.Method == http.MethodOptions {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, problem{Index: -1, Code: "method_not_allowed", Message: r.Method + " " + path + ": use POST"})
		return
	}
	code, label := s.track(w, r, typ, start)
	s.metrics.request(label, code, time.Since(start))
}

// track handles one POST to a tracking path and returns the status it
// answered with and the key label for metrics.
func (s *Source) track(w http.ResponseWriter, r *http.Request, typ string, received time.Time) (int, string) {
	// A key in the Authorization header is checked before the body is read.
	var key writeKey
	var buf [96]byte
	basicKey, hasBasic, otherScheme := basicUser(r, buf[:0])
	if hasBasic {
		k, ok := s.set.keys[string(basicKey)] // no allocation for a map key
		if !ok {
			return s.reject(w, http.StatusUnauthorized, "", reasonAuth, problem{Index: -1, Field: "writeKey", Code: "invalid_write_key", Message: "the write key in the Authorization header is not valid"})
		}
		key = k
	}

	limit := s.set.lim.maxBatchBytes
	if typ != "" {
		limit = s.set.lim.maxMessageBytes
	}
	body, p := readBody(r, limit)
	// Nothing keeps a subslice of the body past the records built below
	// (enrich copies what it keeps), so its buffer goes back to the pool.
	defer func() { putBody(body) }()
	if p != nil {
		status, reason := http.StatusBadRequest, reasonInvalid
		if p.Code == "request_too_large" || p.Code == "message_too_large" {
			reason = reasonTooLarge
		}
		return s.reject(w, status, key.label, reason, *p)
	}
	d, p := decodeRequest(body, typ, s.set.lim)
	if d != nil {
		defer d.release() // released early below once the records are built
	}
	if !hasBasic {
		// Without the header, the key is in the body; look for it even in
		// a body that failed to decode, so that a request without any key
		// is told so first.
		wk := ""
		if d != nil {
			wk = d.env.writeKey
		} else {
			wk = writeKeyOf(body)
		}
		k, ok := s.set.keys[wk]
		if !ok || wk == "" {
			msg := "no write key: send it as the user of HTTP Basic auth (empty password) or as \"writeKey\" in the body"
			if otherScheme {
				msg = "no write key: the Authorization header is not HTTP Basic; send the key as the user of HTTP Basic auth (empty password) or as \"writeKey\" in the body"
			}
			if wk != "" {
				msg = "the writeKey in the body is not valid"
			}
			return s.reject(w, http.StatusUnauthorized, "", reasonAuth, problem{Index: -1, Field: "writeKey", Code: "invalid_write_key", Message: msg})
		}
		key = k
	}
	if p != nil {
		reason := reasonInvalid
		if p.Code == "request_too_large" || p.Code == "message_too_large" || p.Code == "too_many_events" {
			reason = reasonTooLarge
		}
		return s.reject(w, http.StatusBadRequest, key.label, reason, *p)
	}
	if len(d.msgs) == 0 {
		s.metrics.rejected(key.label, reasonInvalid, len(d.problems))
		return s.answerProblems(w, key.label, d, 0)
	}
	if wait, ok := s.limiter.take(key.key, len(d.msgs), received); !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retrySeconds(wait)))
		return s.reject(w, http.StatusTooManyRequests, key.label, reasonRateLimited, problem{Index: -1, Code: "rate_limited", Message: fmt.Sprintf("write key is over its limit of %g events/s: retry after %s", s.set.rateLimit, wait.Round(time.Millisecond))})
	}

	// Enrich and build the records; hash the messageIds for dedup here,
	// outside the source's lock.
	ip := s.clientIP(r)
	recs := make([]connect.Record, 0, len(d.msgs))
	var hashes []msgHash // per record; the zero hash for a generated id
	if s.dedup != nil {
		hashes = make([]msgHash, 0, len(d.msgs))
	}
	var bytes int64
	// The values take about the body's size plus what enrichment adds.
	st := newStamps(received, len(body)+len(d.msgs)*(200+len(ip)))
	for _, m := range d.msgs {
		e := enrichStamped(m, st, ip, newMessageID)
		rec := connect.Record{Key: []byte(e.key), Value: e.value, Timestamp: e.timestamp, Topic: key.topic}
		recs = append(recs, rec)
		if hashes != nil {
			var h msgHash
			if !e.generated {
				h = hashID(key.key, e.messageID)
			}
			hashes = append(hashes, h)
		}
		bytes += int64(len(e.value) + len(e.key))
	}
	d.release()

	select {
	case <-s.ready:
	default: // the worker has not read yet: it may still be recovering the log tail
		if code, p := s.awaitReady(); p != nil {
			w.Header().Set("Retry-After", "1")
			reason := reasonTimeout
			if p.Code == "stopping" {
				reason = reasonStopping
			}
			return s.reject(w, code, key.label, reason, *p)
		}
	}
	wait, wave, accepted, ok := s.enqueue(recs, hashes, bytes, received)
	if !ok {
		w.Header().Set("Retry-After", "1")
		return s.reject(w, http.StatusServiceUnavailable, key.label, reasonBackpressure, problem{Index: -1, Code: "backpressure", Message: "too many events are waiting to be written to the log: retry later"})
	}
	s.metrics.events(key.label, accepted, len(recs)-accepted)
	if wait > 0 {
		if code, p := s.awaitDurable(wait, wave); p != nil {
			w.Header().Set("Retry-After", "1")
			reason := reasonTimeout
			if p.Code == "stopping" {
				reason = reasonStopping
			}
			return s.reject(w, code, key.label, reason, *p)
		}
	}
	if len(d.problems) > 0 {
		s.metrics.rejected(key.label, reasonInvalid, len(d.problems))
		return s.answerProblems(w, key.label, d, len(recs))
	}
	w.Header()["Content-Type"] = jsonContentType
	io.WriteString(w, `{"success":true}`)
	return http.StatusOK, key.label
}

// enqueue drops the messages seen within the dedup window, queues the rest
// as one request for Read and returns the seq the answer must wait for (0:
// none) with the wave to wait on for it, how many messages were new and
// whether the queue had room. A duplicate of a message whose request is not yet
// durable makes this request wait for that one too: answering 200 before
// would acknowledge an event that may still be lost.
//
// hashes holds the hash of each record's messageId, the zero hash for an
// id the server generated (never a duplicate); nil when dedup is off.
func (s *Source) enqueue(recs []connect.Record, hashes []msgHash, bytes int64, received time.Time) (wait uint64, wave <-chan struct{}, accepted int, ok bool) {
	now := received.UnixMilli()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queuedBytes+bytes > s.set.maxPending && s.queuedBytes > 0 {
		return 0, nil, 0, false
	}
	seq := s.nextSeq
	if s.dedup != nil {
		// A new id is remembered at once, so that a repeat of it later in
		// the request is dropped like any duplicate. keep and keepHashes
		// reuse the arrays of recs and hashes: they never get ahead of
		// the index being read.
		keep, keepHashes := recs[:0], hashes[:0]
		for i, rec := range recs {
			h := hashes[i]
			if h == (msgHash{}) {
				keep = append(keep, rec)
				continue
			}
			if old, dup := s.dedup.lookup(h, now); dup {
				if old.seq > s.answeredLocked() {
					wait = max(wait, old.seq)
				}
				continue
			}
			// Evicted only after the loop, so that a repeat within the
			// request is found even when dedup.max.ids is smaller.
			s.dedup.put(h, seen{seq: seq, at: now})
			keepHashes = append(keepHashes, h)
			keep = append(keep, rec)
		}
		s.dedup.evict(now)
		recs, hashes = keep, keepHashes
	}
	if len(recs) == 0 {
		if wait == 0 {
			return 0, nil, 0, true
		}
		return wait, s.waveLocked(wait), 0, true
	}
	s.nextSeq++
	recs[len(recs)-1].Position = position(seq)
	if s.journal != nil && len(hashes) > 0 {
		s.jbuf = appendJournalEntry(s.jbuf, seq, now, hashes)
	}
	s.queue = append(s.queue, &request{seq: seq, recs: recs, bytes: bytes})
	s.queuedBytes += bytes
	s.queuedRecs += len(recs)
	// Read needs waking when the queue was empty, or is full while Read
	// gathers; in between it waits for durability (see Read).
	if len(s.queue) == 1 || s.queuedRecs >= s.set.readBatch {
		select {
		case s.readable <- struct{}{}:
		default:
		}
	}
	wait = max(wait, seq)
	return wait, s.waveLocked(wait), len(recs), true
}

// awaitDurable waits until the request with seq may be answered 200 (see
// answeredLocked), or answers 503 once it has waited ack.timeout (checked
// whenever its wave is closed: by the Durable that answers it, by the
// ticker of wakeWaiters, and by Close) and when the source is stopping.
// It waits on its wave alone, not on a timer of its own and on closing
// too: every request waits here, and a select over three channels, two
// of them shared by all the waiting requests, cost it about as much as
// its decoding. Woken without being answered, it fetches its wave again.
func (s *Source) awaitDurable(seq uint64, wave <-chan struct{}) (int, *problem) {
	s.waiting.Add(1)
	defer s.waiting.Add(-1)
	var since time.Time
	for {
		if s.answered.Load() >= seq {
			return http.StatusOK, nil
		}
		select {
		case <-s.closing:
			return http.StatusServiceUnavailable, &problem{Index: -1, Code: "stopping", Message: "the source is stopping: retry later"}
		default:
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) >= s.set.ackTimeout {
			return http.StatusServiceUnavailable, &problem{Index: -1, Code: "not_durable", Message: fmt.Sprintf("the events were not written to the log within %s: retry later", s.set.ackTimeout)}
		}
		if wave == nil {
			if testHookBeforeWave != nil {
				testHookBeforeWave(s)
			}
			s.mu.Lock()
			// Close closes closing before it wakes every wave under mu:
			// a wave taken after that wake would never be closed.
			select {
			case <-s.closing:
				s.mu.Unlock()
				continue
			default:
			}
			wave = s.waveLocked(seq)
			s.mu.Unlock()
		}
		<-wave
		wave = nil
	}
}

// testHookBeforeWave, when set by a test, runs in awaitDurable before a
// woken request takes its wave again.
var testHookBeforeWave func(*Source)

// wakeWaiters wakes every waiting request every ack.timeout/8 (at least every
// maxWakeInterval, at most every minWakeInterval) while requests wait, so
// that a request whose records do not become durable notices its timeout
// within about an eighth of ack.timeout after it. It returns once closing
// is closed.
func (s *Source) wakeWaiters() {
	defer close(s.wakerDone)
	t := time.NewTicker(min(max(s.set.ackTimeout/8, minWakeInterval), maxWakeInterval))
	defer t.Stop()
	for {
		select {
		case <-s.closing:
			return
		case <-t.C:
			if s.waiting.Load() > 0 {
				s.mu.Lock()
				s.wakeAllLocked()
				s.mu.Unlock()
			}
		}
	}
}

// The bounds of wakeWaiters' interval.
const (
	minWakeInterval = time.Millisecond
	maxWakeInterval = time.Second
)

// wave is a channel that requests wait on until every request up to upTo
// is answered (see Source.waves).
type wave struct {
	upTo uint64
	ch   chan struct{}
}

// maxSeq is the upTo of the open wave.
const maxSeq = ^uint64(0)

// waveLocked returns the channel to wait on for seq: that of the first
// wave that covers it.
func (s *Source) waveLocked(seq uint64) <-chan struct{} {
	for i := range s.waves {
		if s.waves[i].upTo >= seq {
			return s.waves[i].ch
		}
	}
	panic("httptrack: no open wave") // the last wave covers every seq
}

// sealLocked closes the open wave to requests after seq, the last one a
// Read takes, and opens the next.
func (s *Source) sealLocked(seq uint64) {
	s.waves[len(s.waves)-1].upTo = seq
	s.waves = append(s.waves, wave{upTo: maxSeq, ch: make(chan struct{})})
}

// wakeAnsweredLocked wakes the requests of the waves every request of
// which is answered.
func (s *Source) wakeAnsweredLocked() {
	s.wakeDue = false
	a := s.answered.Load()
	n := 0
	for n < len(s.waves)-1 && s.waves[n].upTo <= a {
		close(s.waves[n].ch)
		n++
	}
	if n > 0 {
		s.waves = append(s.waves[:0], s.waves[n:]...)
	}
}

// wakeAllLocked wakes every request waiting in awaitDurable, to check
// again (their timeouts, a stop).
func (s *Source) wakeAllLocked() {
	s.wakeAnsweredLocked()
	for i := range s.waves {
		close(s.waves[i].ch)
		s.waves[i].ch = make(chan struct{})
	}
}

// answerProblems answers 400 listing the rejected messages; accepted says
// how many others were accepted (and are durable).
func (s *Source) answerProblems(w http.ResponseWriter, label string, d *decoded, accepted int) (int, string) {
	body := struct {
		Success  bool      `json:"success"`
		Code     string    `json:"code"`
		Message  string    `json:"message"`
		Accepted int       `json:"accepted"`
		Rejected int       `json:"rejected"`
		Errors   []problem `json:"errors"`
	}{
		Code:     d.problems[0].Code,
		Message:  d.problems[0].Message,
		Accepted: accepted,
		Rejected: len(d.problems),
		Errors:   d.problems,
	}
	if len(d.problems) > 1 {
		body.Message = fmt.Sprintf("%s (and %d more rejected messages)", body.Message, len(d.problems)-1)
	}
	writeJSON(w, http.StatusBadRequest, body)
	return http.StatusBadRequest, label
}

// reject answers an error and counts it.
func (s *Source) reject(w http.ResponseWriter, status int, label, reason string, p problem) (int, string) {
	s.metrics.rejected(label, reason, 0)
	writeError(w, status, p)
	return status, label
}

func (s *Source) serveHealth(w http.ResponseWriter) {
	select {
	case <-s.closing:
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "stopping", "message": "the source is stopping"})
	default:
		writeJSON(w, http.StatusOK, map[string]string{"status": "healthy", "message": "accepting events"})
	}
}

// cors sets the CORS headers for an allowed origin. It answers a preflight
// from an origin that is not allowed with 403 and returns false.
func (s *Source) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	allowed := s.set.corsAny || s.set.corsOrigins[strings.TrimRight(origin, "/")]
	if !allowed {
		if r.Method != http.MethodOptions && sameOrigin(origin, r.Host) {
			return true // a page served by this host: not cross-origin
		}
		// Refused, preflight or not: browsers send analytics.js's
		// text/plain POSTs without a preflight, so hiding the answer
		// (no CORS headers) would still let any site write events.
		writeError(w, http.StatusForbidden, problem{Index: -1, Code: "origin_not_allowed", Message: "origin " + clipString(origin) + " is not in cors.origins"})
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Origin", origin)
	if r.Method == http.MethodOptions {
		h.Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
			h.Set("Access-Control-Allow-Headers", req)
		} else {
			h.Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Content-Encoding")
		}
		h.Set("Access-Control-Max-Age", "86400")
	}
	return true
}

// sameOrigin reports whether an Origin header names the host the request
// was sent to (a page this server served itself).
func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, host)
}

// clientIP returns the address of the client: the last entry of the
// trusted proxy header (the one the proxy itself added), else the peer.
func (s *Source) clientIP(r *http.Request) string {
	if s.set.proxyHeader != "" {
		if v := r.Header.Values(s.set.proxyHeader); len(v) > 0 {
			last := v[len(v)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := strings.TrimSpace(last); ip != "" {
				if host, _, err := net.SplitHostPort(ip); err == nil {
					ip = host
				}
				if net.ParseIP(strings.Trim(ip, "[]")) != nil {
					return strings.Trim(ip, "[]")
				}
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// basicUser returns the user of an HTTP Basic Authorization header, which
// is where SDKs put the write key, decoded into buf's free capacity when
// it fits, and whether there was a Basic header (a malformed one has no
// valid key). An Authorization header of another scheme (a proxy's token,
// an OAuth bearer token) holds no write key of ours: other reports it,
// and the key is then looked for in the body, as without a header.
func basicUser(r *http.Request, buf []byte) (user []byte, basic, other bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return nil, false, false
	}
	const prefix = "Basic "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return nil, false, true
	}
	enc := strings.TrimSpace(h[len(prefix):])
	raw, err := base64.StdEncoding.AppendDecode(buf, []byte(enc))
	if err != nil {
		return nil, true, false
	}
	user, _, _ = bytes.Cut(raw, []byte(":"))
	return user, true, false
}

// bodyPool holds request body buffers; buffers over maxPooledBody are
// left to the garbage collector.
var bodyPool = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

const maxPooledBody = 1 << 20

func getBody() []byte { return (*bodyPool.Get().(*[]byte))[:0] }

// putBody returns a body from readBody to the pool; b must not be used
// afterwards.
func putBody(b []byte) {
	if b == nil || cap(b) > maxPooledBody {
		return
	}
	b = b[:0]
	bodyPool.Put(&b)
}

// readBody reads the request body into a pooled buffer, gunzipping it
// when it says so, and refuses more than limit bytes either way (a gzip
// bomb included).
func readBody(r *http.Request, limit int) ([]byte, *problem) {
	tooLarge := func() *problem {
		return requestProblem("request_too_large", "request body is more than the %d bytes allowed", limit)
	}
	if r.ContentLength > int64(limit) {
		return nil, tooLarge()
	}
	var src io.Reader = r.Body
	sizeHint := int(r.ContentLength)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(io.LimitReader(r.Body, int64(limit)+1))
		if err != nil {
			return nil, requestProblem("invalid_gzip", "body says Content-Encoding gzip but is not gzip: %v", err)
		}
		defer zr.Close()
		src, sizeHint = zr, 4*sizeHint
	default:
		return nil, requestProblem("unsupported_encoding", "Content-Encoding %q is not supported: send gzip or no encoding", clipString(enc))
	}
	body, err := readAll(getBody(), src, limit+1, sizeHint)
	if err != nil {
		putBody(body)
		if errors.Is(err, gzip.ErrChecksum) || errors.Is(err, gzip.ErrHeader) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, requestProblem("invalid_gzip", "gzip body is corrupt or cut short: %v", err)
		}
		return nil, requestProblem("unreadable_body", "read request body: %v", err)
	}
	if len(body) > limit {
		putBody(body)
		return nil, tooLarge()
	}
	return body, nil
}

// readAll appends what r holds, at most limit bytes, to b, which it first
// grows to hint+1 bytes (the size the client announced; the extra byte
// lets the final read see EOF without growing the buffer).
func readAll(b []byte, r io.Reader, limit, hint int) ([]byte, error) {
	if hint > 0 {
		b = slices.Grow(b, min(hint, limit)+1)
	}
	for len(b) < limit {
		if len(b) == cap(b) {
			b = slices.Grow(b, min(limit-len(b), max(cap(b), 512)))
		}
		n, err := r.Read(b[len(b):min(cap(b), limit)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// writeKeyOf digs the writeKey out of a body that did not decode as a
// whole, when it is at least a JSON object.
func writeKeyOf(body []byte) string {
	var top struct {
		WriteKey string `json:"writeKey"`
	}
	if json.Unmarshal(body, &top) != nil {
		return ""
	}
	return top.WriteKey
}

func writeError(w http.ResponseWriter, status int, p problem) {
	writeJSON(w, status, struct {
		Success bool      `json:"success"`
		Code    string    `json:"code"`
		Message string    `json:"message"`
		Errors  []problem `json:"errors,omitempty"`
	}{Code: p.Code, Message: p.Message, Errors: []problem{p}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"success":false,"message":"internal error"}`)
		status = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// jsonContentType is the Content-Type header of a 200, shared by every
// answer (net/http only reads it).
var jsonContentType = []string{"application/json"}

// retrySeconds rounds a wait up to whole seconds for Retry-After, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

func clipString(s string) string { return clip(json.RawMessage(s)) }

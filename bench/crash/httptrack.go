package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
)

const (
	trackTopic      = "track"
	trackPartitions = 3
	trackKey        = "soak-key"
	trackClients    = 8
)

// httpTrack posts Segment API requests with unique messageIds from
// concurrent clients. A request that got no 200 (a kill cut it, or 503) is
// retried, across restarts, as the SDKs do; a request answered 200 is now
// and then sent again, as an SDK does when the answer is lost. Invariant
// (a): every messageId answered 200 is in the topic exactly once, and no
// messageId is there twice.
type httpTrack struct {
	s      *soak
	listen string

	mu      sync.Mutex
	acked   map[string]int // messageId → round it was first answered 200
	clients []*trackClient

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// what the checks have read of the topic so far
	next  [trackPartitions]int64
	count map[string]int // messageId → copies in the topic
	where map[string]string
	stats struct{ ok, retried, resent, failed int }
}

type trackClient struct {
	id      int
	rng     *rand.Rand
	n       int
	pending []*trackReq // not answered 200 yet, oldest first
}

type trackReq struct {
	path  string
	body  []byte
	ids   []string
	tries int
}

func newHTTPTrack(s *soak) scenario {
	port, err := freePort()
	if err != nil {
		port = 18088
	}
	h := &httpTrack{s: s, listen: fmt.Sprintf("127.0.0.1:%d", port), acked: map[string]int{},
		count: map[string]int{}, where: map[string]string{}}
	for i := range trackClients {
		seed := s.seed + uint64(i)*7919
		h.clients = append(h.clients, &trackClient{id: i, rng: rand.New(rand.NewPCG(seed, seed+1))})
	}
	return h
}

func (h *httpTrack) pipeline() string {
	dedup := ""
	if h.s.o.noDedup {
		dedup = "      dedup.window: 0s\n"
	}
	return fmt.Sprintf(`version: 1
name: soak-httptrack
log: {backend: embedded, dir: %s}
topics:
  - {name: %s, partitions: %d, config: {segment.bytes: 1048576}}
sources:
  - name: track
    connector: httptrack
    topic: %s
    config:
      listen: %q
      write.keys: %s
      state.dir: %s/httptrack
      ack.timeout: 3s
`, h.s.dataDir, trackTopic, trackPartitions, trackTopic, h.listen, trackKey, h.s.dir) + dedup
}

func (h *httpTrack) startLoad(ctx context.Context, round int) {
	ctx, h.cancel = context.WithCancel(ctx)
	tr := &http.Transport{MaxIdleConnsPerHost: trackClients}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for _, c := range h.clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.runClient(ctx, hc, c, round, false)
		}()
	}
}

func (h *httpTrack) stopLoad() {
	h.cancel()
	h.wg.Wait()
}

func (h *httpTrack) between(context.Context, int) {}

// finish lets the clients retry until nothing is pending (new requests
// stop), for up to 60 s.
func (h *httpTrack) finish(ctx context.Context) {
	h.cancel()
	h.wg.Wait()
	ctx, h.cancel = context.WithTimeout(ctx, 60*time.Second)
	hc := &http.Client{Timeout: 10 * time.Second}
	for _, c := range h.clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.runClient(ctx, hc, c, 0, true)
		}()
	}
	h.wg.Wait()
	left := 0
	for _, c := range h.clients {
		left += len(c.pending)
	}
	if left > 0 {
		h.s.violate(0, "(a) %d requests still not answered 200 after 60 s of retries on a clean worker", left)
	}
}

// runClient sends requests until ctx is done; with drain it only retries
// the pending ones and returns when none is left.
func (h *httpTrack) runClient(ctx context.Context, hc *http.Client, c *trackClient, round int, drain bool) {
	for ctx.Err() == nil {
		var r *trackReq
		switch {
		case len(c.pending) > 0 && (drain || c.rng.Float64() < 0.8):
			r = c.pending[0]
			c.pending = c.pending[1:]
			r.tries++
		case drain:
			return
		default:
			r = c.newReq(h.s.seed)
		}
		status, err := post(ctx, hc, h.listen, r)
		switch {
		case err == nil && status == http.StatusOK:
			h.mu.Lock()
			for _, id := range r.ids {
				if _, ok := h.acked[id]; !ok {
					h.acked[id] = round
				}
			}
			h.stats.ok++
			if r.tries > 0 {
				h.stats.retried++
			}
			h.mu.Unlock()
			if c.rng.Float64() < 0.05 {
				// The answer "got lost": send it again at once.
				r.tries++
				if st, err := post(ctx, hc, h.listen, r); err == nil && st != http.StatusOK && st < 500 {
					h.s.violate(round, "(a) a resend of an answered request got %d: %s", st, r.body)
				}
				h.mu.Lock()
				h.stats.resent++
				h.mu.Unlock()
			}
		case err == nil && status < 500 && status != http.StatusTooManyRequests:
			h.s.violate(round, "(a) %s answered %d (never retried by SDKs, so the events are lost): %.200s", r.path, status, r.body)
		default:
			h.mu.Lock()
			h.stats.failed++
			h.mu.Unlock()
			c.pending = append(c.pending, r)
			select {
			case <-ctx.Done():
			case <-time.After(time.Duration(20+c.rng.IntN(80)) * time.Millisecond):
			}
		}
	}
}

func (c *trackClient) newReq(seed uint64) *trackReq {
	nEvents := 1
	path := "/v1/track"
	if c.rng.Float64() < 0.5 {
		path = "/v1/batch"
		nEvents = 1 + c.rng.IntN(40)
	}
	var msgs []map[string]any
	var ids []string
	for range nEvents {
		c.n++
		id := fmt.Sprintf("s%d-c%d-%d", seed%1_000_000, c.id, c.n)
		ids = append(ids, id)
		msgs = append(msgs, map[string]any{
			"type": "track", "messageId": id, "userId": fmt.Sprintf("user-%d", c.rng.IntN(500)),
			"event":      "Soak Tested",
			"properties": map[string]any{"client": c.id, "n": c.n, "pad": strings.Repeat("x", c.rng.IntN(300))},
		})
	}
	var body []byte
	if path == "/v1/track" {
		body, _ = json.Marshal(msgs[0])
	} else {
		body, _ = json.Marshal(map[string]any{"batch": msgs})
	}
	return &trackReq{path: path, body: body, ids: ids}
}

func post(ctx context.Context, hc *http.Client, addr string, r *trackReq) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+r.path, bytes.NewReader(r.body))
	if err != nil {
		return 0, err
	}
	req.SetBasicAuth(trackKey, "")
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// check reads what the topic gained since the last check and compares
// it with every messageId answered 200 so far.
func (h *httpTrack) check(ctx context.Context, round int) int {
	if !h.s.hasTopic(ctx, trackTopic) {
		h.mu.Lock()
		n := len(h.acked)
		h.mu.Unlock()
		if n > 0 {
			h.s.violate(round, "(a) %d events answered 200 but the topic %s does not exist", n, trackTopic)
		}
		return 0
	}
	for p := range trackPartitions {
		err := h.s.consume(ctx, trackTopic, p, h.next[p], func(off int64, v []byte) {
			h.next[p] = off + 1
			var m struct {
				MessageID string `json:"messageId"`
			}
			if err := json.Unmarshal(v, &m); err != nil || m.MessageID == "" {
				h.s.violate(round, "(a) %s [%d] offset %d is not a message with a messageId: %.200s", trackTopic, p, off, v)
				return
			}
			h.count[m.MessageID]++
			at := fmt.Sprintf("%d@%d", p, off)
			if h.count[m.MessageID] == 2 {
				h.s.violate(round, "(a) messageId %s is in the topic twice: at partition@offset %s and %s", m.MessageID, h.where[m.MessageID], at)
			}
			h.where[m.MessageID] = at
		})
		if err != nil {
			h.s.violate(round, "(c) read %s [%d] from offset %d: %v", trackTopic, p, h.next[p], err)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var missing []string
	for id := range h.acked {
		if h.count[id] == 0 {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		var ex []string
		for _, id := range missing[:min(10, len(missing))] {
			ex = append(ex, fmt.Sprintf("%s (answered 200 in round %d)", id, h.acked[id]))
		}
		h.s.violate(round, "(a) %d events answered 200 are not in the topic, e.g. %s", len(missing), strings.Join(ex, ", "))
		for _, id := range missing {
			h.count[id] = -1 << 30 // report each lost id once
		}
	}
	pending := 0
	for _, c := range h.clients {
		pending += len(c.pending)
	}
	fmt.Printf("    httptrack: %d ids answered 200, %d in the topic, %d requests pending retry; requests ok %d (after retry %d), resent %d, failed %d\n",
		len(h.acked), len(h.count), pending, h.stats.ok, h.stats.retried, h.stats.resent, h.stats.failed)
	return len(h.acked)
}

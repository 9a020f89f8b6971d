package httptrack

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSDK_AnalyticsNode sends events with the real @segment/analytics-node
// SDK from npm: track, identify and page, then a batch of 1,000 tracks. The
// first request is made durable only after ack.timeout, so the SDK gets a
// 503 and retries it; every event must still arrive exactly once, with its
// fields intact.
func TestSDK_AnalyticsNode(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the npm SDK test")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("SKIPPING THE REAL-SDK TEST: npm is not installed (install Node.js 18+ with npm to run it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPING THE REAL-SDK TEST: node is not installed")
	}
	dir := t.TempDir()
	for _, name := range []string{"package.json", "send.mjs"} {
		b, err := os.ReadFile(filepath.Join("testdata", "node", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--loglevel=error", "@segment/analytics-node@3.1.0")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		for _, offline := range []string{"ENOTFOUND", "EAI_AGAIN", "ECONNREFUSED", "ETIMEDOUT", "ENETUNREACH", "network"} {
			if strings.Contains(string(out), offline) {
				t.Skipf("SKIPPING THE REAL-SDK TEST: npm cannot reach the registry: %v\n%s", err, out)
			}
		}
		t.Fatalf("npm install @segment/analytics-node@3.1.0: %v\n%s", err, out)
	}

	h := start(t, map[string]string{"ack.timeout": "300ms"}, nil)
	h.ackDelay = 800 * time.Millisecond
	h.slowAcks.Store(1)
	const batch = 1000
	run := exec.CommandContext(ctx, node, "send.mjs")
	run.Dir = dir
	run.Env = append(os.Environ(), "HOST="+h.url, "WRITE_KEY="+testKey, "BATCH=1000")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("node send.mjs: %v\n%s", err, out)
	}
	var res struct{ Delivered, Failed int }
	if err := json.Unmarshal(out[strings.LastIndexByte(strings.TrimSpace(string(out)), '\n')+1:], &res); err != nil || res.Delivered != 3+batch {
		t.Fatalf("SDK says: %s (want %d delivered)", out, 3+batch)
	}

	recs := h.records()
	if len(recs) != 3+batch {
		t.Fatalf("%d records, want %d (each event exactly once)", len(recs), 3+batch)
	}
	ids := map[string]bool{}
	for _, r := range recs {
		v := value(t, r)
		id := v["messageId"].(string)
		if ids[id] {
			t.Errorf("messageId %s arrived twice", id)
		}
		ids[id] = true
		lib, _ := v["context"].(map[string]any)["library"].(map[string]any)
		if lib["name"] != "@segment/analytics-node" || lib["version"] != "3.1.0" {
			t.Errorf("context.library %v, want the SDK's", lib)
		}
		if v["sentAt"] == nil || v["receivedAt"] == nil || v["context"].(map[string]any)["ip"] != "127.0.0.1" {
			t.Errorf("not enriched: %s", r.Value)
		}
	}

	// The three single calls are sent concurrently: find them by type.
	byType := map[string]int{}
	for i, r := range recs[:3] {
		byType[value(t, r)["type"].(string)] = i
	}
	if len(byType) != 3 {
		t.Fatalf("the first three records are not a track, an identify and a page")
	}
	it, ii, ip := byType["track"], byType["identify"], byType["page"]
	track := value(t, recs[it])
	props := track["properties"].(map[string]any)
	if track["type"] != "track" || track["event"] != "Order Completed" || track["userId"] != "user-1" ||
		props["revenue"] != 42.5 || props["currency"] != "EUR" || props["items"].([]any)[0].(map[string]any)["sku"] != "a-1" ||
		track["originalTimestamp"] != "2026-01-02T03:04:05.678Z" || string(recs[it].Key) != "user-1" {
		t.Errorf("track: %s", recs[it].Value)
	}
	ident := value(t, recs[ii])
	if ident["type"] != "identify" || ident["traits"].(map[string]any)["plan"] != "pro" {
		t.Errorf("identify: %s", recs[ii].Value)
	}
	page := value(t, recs[ip])
	if page["type"] != "page" || page["name"] != "Pricing" || page["category"] != "Docs" || string(recs[ip].Key) != "anon-7" {
		t.Errorf("page: %s", recs[ip].Value)
	}
	seen := make([]bool, batch)
	for _, r := range recs[3:] {
		v := value(t, r)
		i := int(v["properties"].(map[string]any)["i"].(float64))
		if v["event"] != "Batch Event" || seen[i] {
			t.Fatalf("batch event %d: %s", i, r.Value)
		}
		seen[i] = true
	}
	// The first requests were answered 503 and retried, their events
	// dropped as duplicates the second time: the metrics show it.
	m := h.do("GET", "/metrics", nil, nil)
	if !strings.Contains(m.raw, `reason="ack_timeout"`) || !strings.Contains(m.raw, `tributary_httptrack_duplicates_total{key="1"} `) ||
		strings.Contains(m.raw, `tributary_httptrack_duplicates_total{key="1"} 0`) {
		t.Errorf("want ack timeouts and duplicates in the metrics:\n%s", m.raw)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatal("timed out")
	}
}

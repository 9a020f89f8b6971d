//go:build unix

package crmwebhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	_ "github.com/tributary-io/tributary/connectors/generator"
	_ "github.com/tributary-io/tributary/connectors/webhook"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/exampletest"
	tlog "github.com/tributary-io/tributary/log"
)

// The crash test re-executes its own test binary as a worker process.
const (
	crashDirEnv  = "TRIBUTARY_WEBHOOK_CRASH_DIR"
	crashURLEnv  = "TRIBUTARY_WEBHOOK_CRASH_URL"
	crashSeedEnv = "TRIBUTARY_WEBHOOK_CRASH_SEED"
	crashEvents  = 3000
	crashTopic   = "web.tracking"
)

// crashSpecs is the pipeline: generator → web.tracking (3 partitions) →
// webhook sink to url, retrying without limit.
func crashSpecs(url string) []engine.ConnectorSpec {
	return []engine.ConnectorSpec{
		{
			Pipeline: "crash", Name: "events", Kind: connect.KindSource, Connector: "generator", Topic: crashTopic,
			Config: map[string]string{"rate": "3000", "seed": "7", "users": "40", "batch.size": "100", "max.events": strconv.Itoa(crashEvents)},
		},
		{
			Pipeline: "crash", Name: "crm", Kind: connect.KindSink, Connector: "webhook", Topics: []string{crashTopic},
			Config: map[string]string{"url": url, "concurrency": "8", "max.attempts": "0", "max.elapsed": "0",
				"backoff.initial": "2ms", "backoff.max": "20ms", "timeout": "2s"},
		},
	}
}

// crashReceiver accepts generator events, answering 500 to one in ten at
// random, and checks per user (the record key) that no event is accepted
// for the first time after a later one of the same user.
type crashReceiver struct {
	t   *testing.T
	rng *rand.Rand

	mu       sync.Mutex
	seen     map[uint64]int    // seq → times accepted
	last     map[string]uint64 // user → highest seq accepted
	accepted int
}

func (rc *crashReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var e struct {
		Seq    uint64 `json:"seq"`
		UserID string `json:"user_id"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Seq == 0 {
		rc.t.Errorf("not a generator event: %.80q", body)
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.rng.IntN(10) == 0 {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	if rc.seen[e.Seq] == 0 && e.Seq < rc.last[e.UserID] {
		rc.t.Errorf("user %s: seq %d arrived for the first time after seq %d", e.UserID, e.Seq, rc.last[e.UserID])
	}
	rc.seen[e.Seq]++
	rc.accepted++
	rc.last[e.UserID] = max(rc.last[e.UserID], e.Seq)
}

// missing returns the first seq not yet accepted, how many are not, and
// how many requests were accepted in all.
func (rc *crashReceiver) missing() (first uint64, n, accepted int) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	accepted = rc.accepted
	for seq := uint64(crashEvents); seq >= 1; seq-- {
		if rc.seen[seq] == 0 {
			first, n = seq, n+1
		}
	}
	return first, n, accepted
}

// TestWebhook_SIGKILL_DeliversEveryEvent kills a worker process running
// generator → log → webhook sink with SIGKILL at random moments while it
// delivers to a receiver that fails one request in ten, restarts it on the
// same data each time, and lets a last run in process catch up: every
// event must have reached the receiver at least once, and no event of a
// user may arrive for the first time after a later one of that user.
func TestWebhook_SIGKILL_DeliversEveryEvent(t *testing.T) {
	if dir := os.Getenv(crashDirEnv); dir != "" {
		runCrashChild(dir, os.Getenv(crashURLEnv)) // never returns
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv(crashSeedEnv); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	rc := &crashReceiver{t: t, rng: rand.New(rand.NewPCG(seed, 2)), seen: map[uint64]int{}, last: map[string]uint64{}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	dir := t.TempDir()

	for run := 1; run <= 3; run++ {
		delay := 200*time.Millisecond + time.Duration(rng.IntN(600))*time.Millisecond
		killCrashChild(t, dir, srv.URL, delay)
		first, n, accepted := rc.missing()
		t.Logf("run %d: SIGKILL %v after start: %d accepted so far, %d of %d events not yet (first %d)", run, delay, accepted, n, crashEvents, first)
	}

	// The last run, in process: it resumes from the committed offsets, and
	// whatever the kills left undelivered must now arrive.
	ctx := t.Context()
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: dir, NumPartitions: 3, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	b := engine.NewEmbedded(l, logger)
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := w.Shutdown(sctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}()
	for _, spec := range crashSpecs(srv.URL) {
		if err := w.Start(ctx, spec, ""); err != nil {
			t.Fatal(err)
		}
	}
	exampletest.WaitFor(t, 45*time.Second, "every event reaches the receiver", func() error {
		if first, n, _ := rc.missing(); n > 0 {
			return fmt.Errorf("%d of %d events never did, the first seq %d", n, crashEvents, first)
		}
		return nil
	})
	rc.mu.Lock()
	t.Logf("all %d events delivered; %d accepted in all (%d redeliveries)", crashEvents, rc.accepted, rc.accepted-crashEvents)
	rc.mu.Unlock()
}

// runCrashChild is the child process: it runs the pipeline until it is
// killed, or until its stdin closes (the parent test is gone).
func runCrashChild(dir, url string) {
	ctx := context.Background()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "crash child:", err)
		os.Exit(3)
	}
	l, err := tlog.Open(tlog.Options{Dir: dir, NumPartitions: 3, Logger: logger})
	if err != nil {
		fail(err)
	}
	b := engine.NewEmbedded(l, logger)
	if err := b.EnsureTopic(ctx, crashTopic, 3, nil); err != nil {
		fail(err)
	}
	w, err := engine.NewWorker(ctx, engine.Options{Backend: b, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		fail(err)
	}
	for _, spec := range crashSpecs(url) {
		if err := w.Start(ctx, spec, ""); err != nil {
			fail(err)
		}
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	os.Exit(2)
}

// killCrashChild starts a child, kills it with SIGKILL delay after it has
// started its connectors, and reaps it.
func killCrashChild(t *testing.T, dir, url string, delay time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWebhook_SIGKILL_DeliversEveryEvent$")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir, crashURLEnv+"="+url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		buf := make([]byte, 64)
		n, _ := io.ReadAtLeast(stdout, buf, len("ready"))
		ready <- strings.HasPrefix(string(buf[:n]), "ready")
		io.Copy(io.Discard, stdout)
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child did not start:\n%s", stderr.String())
		}
	case <-time.After(time.Minute):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not start within a minute")
	}
	time.Sleep(delay)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	cmd.Wait()
}

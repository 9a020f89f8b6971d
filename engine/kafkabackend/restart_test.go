package kafkabackend

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/rest"
)

// The restart tests run workers sharing a kafka backend and restart
// through the REST API of one of them: a restart request is written to
// engine.TargetsTopic and every worker applies it once to its own tasks.

// restAPI serves a worker's REST API for the test.
func restAPI(t *testing.T, wt *workerUnderTest) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(rest.New(wt.w, nil, "test", quiet()))
	t.Cleanup(srv.Close)
	return srv
}

// post sends a POST without a body and returns the answer's code and body.
func post(t *testing.T, srv *httptest.Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Post(srv.URL+path, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// restartAnswer is the 202 body of POST …/restart?includeTasks=…
type restartAnswer struct {
	Name      string `json:"name"`
	Connector struct {
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"connector"`
	Tasks []struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	} `json:"tasks"`
}

func decodeRestart(t *testing.T, body string) restartAnswer {
	t.Helper()
	var a restartAnswer
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatalf("restart answer %s: %v", body, err)
	}
	return a
}

func (wt *workerUnderTest) counts() (opens, sourceOpens int) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.opens, wt.sourceOpens
}

func (wt *workerUnderTest) set(fn func(wt *workerUnderTest)) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	fn(wt)
}

// openerSpec is a sink of openerSink that the workers run as one group.
var openerSpec = engine.ConnectorSpec{Pipeline: "p", Name: "dst", Kind: connect.KindSink, Connector: "opener", Topics: []string{"in"}}

// A sink runs in two workers; its task fails for good in w2. A restart
// with onlyFailed through w1 restarts w2's task and leaves w1's running; a
// restart of task 0 through w1 restarts both. A worker that starts (or
// restarts) after those requests restarts nothing.
func TestRestart_ClusterWideThroughAnyWorker(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		produceValues(t, w1.b, "in", "1", "2", "3")
		w2.set(func(wt *workerUnderTest) { wt.failOpen = true })
		for _, w := range []*workerUnderTest{w1, w2} {
			if err := w.w.Start(ctx, openerSpec, ""); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "dst RUNNING in w1 and FAILED in w2", 15*time.Second, func() bool {
			s1, _ := taskState(t, w1, "dst")
			s2, trace := taskState(t, w2, "dst")
			return s1 == engine.StateRunning && s2 == engine.StateFailed && strings.Contains(trace, "receiver is gone")
		})
		w2.set(func(wt *workerUnderTest) { wt.failOpen = false })
		api := restAPI(t, w1)

		// onlyFailed without includeTasks: the connector never fails, so
		// nothing restarts anywhere.
		code, body := post(t, api, "/connectors/dst/restart?onlyFailed=true")
		if code != http.StatusAccepted || strings.Contains(body, "RESTARTING") {
			t.Fatalf("restart?onlyFailed=true = %d %s, want 202 and nothing RESTARTING", code, body)
		}

		code, body = post(t, api, "/connectors/dst/restart?includeTasks=true&onlyFailed=true")
		if code != http.StatusAccepted {
			t.Fatalf("restart = %d %s, want 202", code, body)
		}
		// w1 answers for its own task, which is RUNNING: not restarted.
		a := decodeRestart(t, body)
		if a.Connector.State != "RUNNING" || len(a.Tasks) != 1 || a.Tasks[0].State != "RUNNING" || a.Tasks[0].WorkerID != "w1" {
			t.Fatalf("restart answer %s, want the connector and w1's task RUNNING", body)
		}
		waitFor(t, "w2's failed task restarted and RUNNING", 15*time.Second, func() bool {
			s, _ := taskState(t, w2, "dst")
			opens, _ := w2.counts()
			return s == engine.StateRunning && opens == 2
		})
		if opens, _ := w1.counts(); opens != 1 {
			t.Fatalf("w1's running task was opened %d times, want once: onlyFailed restarted it", opens)
		}
		if s, _ := taskState(t, w1, "dst"); s != engine.StateRunning {
			t.Fatalf("w1's task is %s, want RUNNING", s)
		}

		// A task restart restarts the task in every worker.
		if code, body := post(t, api, "/connectors/dst/tasks/0/restart"); code != http.StatusNoContent {
			t.Fatalf("task restart = %d %s, want 204", code, body)
		}
		waitFor(t, "both tasks restarted and RUNNING", 15*time.Second, func() bool {
			o1, _ := w1.counts()
			o2, _ := w2.counts()
			s1, _ := taskState(t, w1, "dst")
			s2, _ := taskState(t, w2, "dst")
			return o1 == 2 && o2 == 3 && s1 == engine.StateRunning && s2 == engine.StateRunning
		})

		// A restart of everything through w2: w2 answers RESTARTING for
		// the connector and its task, and w1 restarts too.
		code, body = post(t, restAPI(t, w2), "/connectors/dst/restart?includeTasks=true&onlyFailed=false")
		if a := decodeRestart(t, body); code != http.StatusAccepted || a.Connector.State != "RESTARTING" || len(a.Tasks) != 1 || a.Tasks[0].State != "RESTARTING" {
			t.Fatalf("restart = %d %s, want 202 with the connector and w2's task RESTARTING", code, body)
		}
		waitFor(t, "both tasks restarted again", 15*time.Second, func() bool {
			o1, _ := w1.counts()
			o2, _ := w2.counts()
			return o1 == 3 && o2 == 4
		})

		// w2 restarts, and a worker w3 joins: neither applies the restart
		// requests already in the topic.
		if err := w2.w.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		w2 = newWorker(t, c.backend(t), "w2")
		w3 := newWorker(t, c.backend(t), "w3")
		for _, w := range []*workerUnderTest{w2, w3} {
			if err := w.w.Start(ctx, openerSpec, ""); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, "dst RUNNING in the new workers", 15*time.Second, func() bool {
			s2, _ := taskState(t, w2, "dst")
			s3, _ := taskState(t, w3, "dst")
			return s2 == engine.StateRunning && s3 == engine.StateRunning
		})
		// A pause through w1, seen by the new workers, is written after
		// the restart requests: once they show it, they have read past
		// them. Pausing keeps the task (no new Open).
		if err := w1.w.PauseContext(ctx, "dst"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the pause reaching the new workers", 10*time.Second, func() bool {
			return connectorState(t, w2, "dst") == engine.StatePaused && connectorState(t, w3, "dst") == engine.StatePaused
		})
		for _, w := range []*workerUnderTest{w2, w3} {
			if opens, _ := w.counts(); opens != 1 {
				t.Fatalf("a worker started after the restart requests opened its task %d times, want once: it replayed a request", opens)
			}
		}
		if opens, _ := w1.counts(); opens != 3 {
			t.Fatalf("w1 opened its task %d times, want 3 (nothing restarted it since)", opens)
		}
	})
}

// A source's task fails for good in the worker holding its lease, which
// leaves the lease to the other worker. A restart with onlyFailed through
// that worker, now running the task, restarts the failed one (it stands by
// again) and leaves the running task alone.
func TestRestart_FailedSourceOnAnotherWorker(t *testing.T) {
	forEachCluster(t, func(t *testing.T, c *cluster) {
		ctx := t.Context()
		w1 := newWorker(t, c.backend(t), "w1")
		w2 := newWorker(t, c.backend(t), "w2")
		for _, w := range []*workerUnderTest{w1, w2} {
			if err := w.w.Start(ctx, leaseSpec(1_000_000, 5), ""); err != nil {
				t.Fatal(err)
			}
		}
		broken, other := activeOf(t, w1, w2)
		waitFor(t, "the holder acked some records", 15*time.Second, func() bool { return broken.lastAcked() >= 20 })
		broken.set(func(wt *workerUnderTest) { wt.failRead = true })
		waitFor(t, "the holder's task FAILED and the other worker running it", 15*time.Second, func() bool {
			sb, _ := taskState(t, broken, "src")
			so, _ := taskState(t, other, "src")
			return sb == engine.StateFailed && so == engine.StateRunning
		})
		broken.set(func(wt *workerUnderTest) { wt.failRead = false })
		_, brokenOpens := broken.counts()
		_, otherOpens := other.counts()

		code, body := post(t, restAPI(t, other), "/connectors/src/restart?includeTasks=true&onlyFailed=true")
		if a := decodeRestart(t, body); code != http.StatusAccepted || len(a.Tasks) != 1 || a.Tasks[0].State != "RUNNING" {
			t.Fatalf("restart = %d %s, want 202 with the asked worker's running task left RUNNING", code, body)
		}
		waitFor(t, "the failed task restarted, standing by", 15*time.Second, func() bool {
			s, trace := taskState(t, broken, "src")
			return s == engine.StateUnassigned && strings.HasPrefix(trace, "standby:")
		})
		if s, _ := taskState(t, other, "src"); s != engine.StateRunning {
			t.Fatalf("the running task is %s after an onlyFailed restart, want RUNNING", s)
		}
		if _, n := other.counts(); n != otherOpens {
			t.Fatalf("the running source was opened again (%d, was %d): onlyFailed restarted it", n, otherOpens)
		}
		if _, n := broken.counts(); n != brokenOpens {
			t.Fatalf("the restarted standby opened the source (%d, was %d) while the other worker holds the lease", n, brokenOpens)
		}
	})
}

// Restart requests are records of the targets topic with a key of their
// own per connector, so that compaction keeps the connector's target state
// beside the newest request; each request has its own id.
func TestRestart_RecordShapeAndCompaction(t *testing.T) {
	c := startKfake(t)
	ctx := t.Context()
	// Small segments, so that compaction has closed segments to clean
	// (Kafka never cleans the active one); the worker keeps the topic.
	b := c.backend(t)
	if err := b.EnsureTopic(ctx, engine.TargetsTopic, 1, map[string]string{"cleanup.policy": "compact",
		"segment.bytes": "100", "min.cleanable.dirty.ratio": "0"}); err != nil {
		t.Fatal(err)
	}
	w1 := newWorker(t, b, "w1")
	produceValues(t, w1.b, "in", "1")
	if err := w1.w.Start(ctx, openerSpec, ""); err != nil {
		t.Fatal(err)
	}
	if err := w1.w.PauseContext(ctx, "dst"); err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixMilli()
	for _, onlyFailed := range []bool{false, true, false} {
		if _, err := w1.w.RestartConnector(ctx, "dst", true, onlyFailed); err != nil {
			t.Fatal(err)
		}
	}
	type restartValue struct {
		ID           string `json:"id"`
		IncludeTasks bool   `json:"include_tasks"`
		OnlyFailed   bool   `json:"only_failed"`
		WorkerID     string `json:"worker_id"`
		TsMs         int64  `json:"ts_ms"`
	}
	read := func() (targets []string, restarts []restartValue) {
		t.Helper()
		err := w1.b.ReadAll(ctx, engine.TargetsTopic, func(r connect.Record) error {
			switch string(r.Key) {
			case `["dst",{"pipeline":"p"}]`:
				targets = append(targets, string(r.Value))
			case `["dst",{"pipeline":"p","restart":true}]`:
				var v restartValue
				if err := json.Unmarshal(r.Value, &v); err != nil {
					t.Fatalf("restart value %s: %v", r.Value, err)
				}
				restarts = append(restarts, v)
			default:
				t.Fatalf("unexpected key %s in %s", r.Key, engine.TargetsTopic)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return targets, restarts
	}
	targets, restarts := read()
	if len(targets) != 1 || !strings.Contains(targets[0], `"state":"PAUSED"`) || len(restarts) != 3 {
		t.Fatalf("targets %v, restarts %+v; want the PAUSED record and three restart requests", targets, restarts)
	}
	for i, v := range restarts {
		if v.ID == "" || !v.IncludeTasks || v.OnlyFailed != (i == 1) || v.WorkerID != "w1" || v.TsMs < before {
			t.Fatalf("restart request %d = %+v", i, v)
		}
	}
	if restarts[0].ID == restarts[1].ID || restarts[1].ID == restarts[2].ID || restarts[0].ID == restarts[2].ID {
		t.Fatalf("restart requests share an id: %+v", restarts)
	}
	first, last := restarts[0], restarts[2]
	// kfake, as Kafka, never cleans the last batch (the active segment):
	// the second request may stay beside the newest.
	c.compact(ctx)
	targets, restarts = read()
	if len(targets) != 1 || !strings.Contains(targets[0], `"state":"PAUSED"`) || len(restarts) == 0 || len(restarts) == 3 ||
		restarts[0] == first || restarts[len(restarts)-1] != last {
		t.Fatalf("after compaction: targets %v, restarts %+v; want the PAUSED record kept and the first request cleaned", targets, restarts)
	}
	// A worker started now loads the connector PAUSED: the restart
	// records changed nothing of its target state.
	w2 := newWorker(t, c.backend(t), "w2")
	if err := w2.w.Start(ctx, openerSpec, ""); err != nil {
		t.Fatal(err)
	}
	if s := connectorState(t, w2, "dst"); s != engine.StatePaused {
		t.Fatalf("a worker started after the restarts shows dst %s, want PAUSED", s)
	}
}

package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/tributary-io/tributary/connect"
)

// Restart requests: on a TargetSharer backend a restart made through any
// worker is a record of TargetsTopic that every worker applies once to its
// own task of the connector, as Kafka Connect's workers apply the
// restart-connector-<name> records of their config topic (KIP-745).
//
// The key is the connector's target key with "restart":true in its
// partition, ["<connector>",{"pipeline":"p","restart":true}]: a key of its
// own, so that compaction keeps a connector's target state beside its
// newest restart request. The value is {"id":…,"include_tasks":…,
// "only_failed":…,"worker_id":…,"ts_ms":…}; the id, unique per request,
// lets a worker apply a request once, whichever way it reaches it. A
// request asks for a restart at the time it is written: a worker that
// starts loads the requests already in the topic as seen and applies none
// of them (Kafka Connect's workers skip those they read before they have
// caught up too), and no worker ever writes a tombstone for them.

// restartKeyPartition is the second element of a restart request's key.
type restartKeyPartition struct {
	Pipeline string `json:"pipeline"`
	Restart  bool   `json:"restart"`
}

// restartValue is the value of a restart request in TargetsTopic.
type restartValue struct {
	ID           string `json:"id"`
	IncludeTasks bool   `json:"include_tasks"`
	OnlyFailed   bool   `json:"only_failed"`
	WorkerID     string `json:"worker_id"`
	TsMs         int64  `json:"ts_ms"`
}

func restartKey(id targetID) []byte {
	b, _ := json.Marshal([]any{id.connector, restartKeyPartition{Pipeline: id.pipeline, Restart: true}})
	return b
}

// seenRestarts is how many restart request ids a worker remembers: enough
// for every request a follower could read twice (its read starting over
// after the topic was created again), at a few bytes each.
const seenRestarts = 4096

// requestIDs remembers the ids of the newest seenRestarts restart requests
// a worker has seen. The zero value is empty.
type requestIDs struct {
	ids  map[string]struct{}
	ring []string // the ids in the order they came, ring[next] the oldest once full
	next int
}

// add records id and reports whether it is new.
func (s *requestIDs) add(id string) bool {
	if _, ok := s.ids[id]; ok {
		return false
	}
	if s.ids == nil {
		s.ids = map[string]struct{}{}
	}
	if len(s.ring) < seenRestarts {
		s.ring = append(s.ring, id)
	} else {
		delete(s.ids, s.ring[s.next])
		s.ring[s.next] = id
		s.next = (s.next + 1) % seenRestarts
	}
	s.ids[id] = struct{}{}
	return true
}

// RestartConnector restarts a connector as Kafka Connect's POST
// /connectors/{name}/restart does (KIP-745), and reports whether this
// worker restarted its task. A connector here is its one task: restarting
// the connector restarts the task, and the connector itself never fails
// (its task does). So the task restarts unless onlyFailed is set and it is
// not FAILED or includeTasks is not set; a STOPPED connector is not
// restarted.
//
// On a TargetSharer backend the restart is written to TargetsTopic first
// (nothing restarts when the write fails), then applied here, and every
// other worker that loads the connector applies it to its own task, with
// the same rule against its own task's state: a task FAILED in another
// worker restarts with onlyFailed through this one. Elsewhere it acts on
// this worker only.
func (w *Worker) RestartConnector(ctx context.Context, name string, includeTasks, onlyFailed bool) (restarted bool, err error) {
	r, err := w.runner(name)
	if err != nil {
		return false, err
	}
	if _, shared := w.sharer(); !shared {
		return r.restartIf(includeTasks, onlyFailed), nil
	}
	if onlyFailed && !includeTasks {
		return false, nil // only a failed connector, and none ever is: nothing to ask of the others
	}
	id := targetID{r.spec.Pipeline, r.spec.Name}
	req := restartValue{ID: uuid.NewString(), IncludeTasks: includeTasks, OnlyFailed: onlyFailed, WorkerID: w.opts.WorkerID, TsMs: time.Now().UnixMilli()}
	val, err := json.Marshal(req)
	if err != nil {
		return false, fmt.Errorf("encode restart request of connector %s: %w", name, err)
	}
	// Seen before it is written: the follower may read it back before
	// Produce returns, and it is applied here, once.
	w.mu.Lock()
	w.restartsSeen.add(req.ID)
	w.mu.Unlock()
	recs := []connect.Record{{Topic: TargetsTopic, Key: restartKey(id), Value: val}}
	if err := w.opts.Backend.Produce(ctx, recs); err != nil {
		return false, fmt.Errorf("record the restart of connector %s in %s for every worker: %w (this worker restarted nothing; check the cluster and retry)", name, TargetsTopic, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if r.deleting.Load() {
		return false, nil
	}
	return r.restartIf(includeTasks, onlyFailed), nil
}

// applyRestartRecord applies a restart request of TargetsTopic, read by
// the follower (live) or while the worker loads the topic (not live: it is
// only remembered as seen, never applied). A request applies once, to the
// worker's connector of its pipeline and name, if there is one.
func (w *Worker) applyRestartRecord(r connect.Record, id targetID, live bool) {
	var v restartValue
	if r.Value == nil || json.Unmarshal(r.Value, &v) != nil || v.ID == "" {
		w.logger.Warn("skipping a record that is no restart request", "topic", TargetsTopic, "offset", r.Offset, "key", string(r.Key))
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.restartsSeen.add(v.ID) || !live {
		return
	}
	rn, ok := w.connectors[id.connector]
	if !ok || rn.spec.Pipeline != id.pipeline || rn.deleting.Load() {
		return
	}
	if rn.restartIf(v.IncludeTasks, v.OnlyFailed) {
		w.logger.Info("connector task restarted through another worker", "pipeline", id.pipeline, "connector", id.connector,
			"include_tasks", v.IncludeTasks, "only_failed", v.OnlyFailed, "by_worker", v.WorkerID, "at", time.UnixMilli(v.TsMs).UTC())
	}
}

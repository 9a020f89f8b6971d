package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TargetsTopic is the internal compacted topic (one partition) in which the
// workers sharing a TargetSharer backend keep the target state of the
// connectors they load, as Kafka Connect's distributed workers keep theirs
// in the config topic (its target-state-<connector> records). A pause,
// resume or stop made through any worker is written here and applied by
// every worker; a worker that starts reads the topic before it starts any
// connector, so that a connector stopped cluster-wide stays stopped. The
// topic also carries the restart requests made through any worker, with
// keys of their own (see restart.go): every worker applies a request once,
// and a worker that starts later applies none of those already written.
//
// Keys are shaped as the offsets topic's, ["<connector>",{"pipeline":…}];
// values are JSON, {"state":"PAUSED","worker_id":"w1","ts_ms":…}: the
// target state and the worker and time of the change. A tombstone forgets
// a connector's target (the workers leave their connectors as they are).
const TargetsTopic = "_tributary.targets"

// targetID names a connector cluster-wide: its pipeline and its name.
type targetID struct{ pipeline, connector string }

// targetValue is the value of a TargetsTopic record.
type targetValue struct {
	State    State  `json:"state"`
	WorkerID string `json:"worker_id"`
	TsMs     int64  `json:"ts_ms"`
}

// clusterTarget is the newest target state this worker knows of a
// connector (empty after a tombstone), and its offset in TargetsTopic: a
// record at or below it is older and changes nothing.
type clusterTarget struct {
	state  State
	offset int64
}

// targetFollowBackoff bounds the wait before following TargetsTopic again
// after a read failed.
var targetFollowBackoff = backoff{initial: 500 * time.Millisecond, max: 30 * time.Second}

func targetKey(id targetID) []byte {
	return offsetKey(id.pipeline, id.connector)
}

// decodeKey reads the key of a TargetsTopic record: the connector it is
// about, and whether it is a restart request's; ok is false for a key of
// neither shape.
func decodeKey(r connect.Record) (id targetID, restart, ok bool) {
	var key []json.RawMessage
	if err := json.Unmarshal(r.Key, &key); err != nil || len(key) != 2 {
		return id, false, false
	}
	var part restartKeyPartition
	if json.Unmarshal(key[0], &id.connector) != nil || json.Unmarshal(key[1], &part) != nil {
		return id, false, false
	}
	id.pipeline = part.Pipeline
	return id, part.Restart, true
}

// decodeTarget reads a TargetsTopic record; ok is false for a record that
// is not a target state (it is skipped). A tombstone has an empty state.
func decodeTarget(r connect.Record) (id targetID, v targetValue, ok bool) {
	id, restart, ok := decodeKey(r)
	if !ok || restart {
		return id, v, false
	}
	if r.Value == nil {
		return id, v, true
	}
	if err := json.Unmarshal(r.Value, &v); err != nil {
		return id, v, false
	}
	switch v.State {
	case StateRunning, StatePaused, StateStopped:
		return id, v, true
	}
	return id, v, false
}

// sharer returns the backend as a TargetSharer, when it is one.
func (w *Worker) sharer() (TargetSharer, bool) {
	ts, ok := w.opts.Backend.(TargetSharer)
	return ts, ok
}

// openTargets, on a TargetSharer backend, creates TargetsTopic if needed,
// loads the target states it holds, and starts following it. It runs in
// NewWorker, before any connector starts.
func (w *Worker) openTargets(ctx context.Context) error {
	ts, ok := w.sharer()
	if !ok {
		return nil
	}
	b := w.opts.Backend
	if err := b.EnsureTopic(ctx, TargetsTopic, 1, map[string]string{"cleanup.policy": "compact"}); err != nil {
		return fmt.Errorf("create %s: %w (create it with one partition and cleanup.policy=compact, or allow the worker to create topics)", TargetsTopic, err)
	}
	bounds, err := internalTopicBounds(ctx, b, TargetsTopic, targetsOnePartition)
	if err != nil {
		return fmt.Errorf("load the connectors' target states: %w", err)
	}
	if err := checkCompacted(ctx, b, w.logger, TargetsTopic,
		"the connectors' target states (a pause or stop made through any worker)", "a paused or stopped connector runs again when a worker starts", "config.storage.topic"); err != nil {
		return err
	}
	end := bounds.End
	w.targets = map[targetID]clusterTarget{}
	err = b.ReadAll(ctx, TargetsTopic, func(r connect.Record) error {
		if r.Partition == 0 && r.Offset < end {
			w.applySharedRecord(r, false) // the follower starts at end
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("load the connectors' target states from %s: %w", TargetsTopic, err)
	}
	fctx, cancel := context.WithCancel(context.Background())
	w.stopFollow, w.followDone = cancel, make(chan struct{})
	go w.followTargets(fctx, ts, end)
	return nil
}

// followTargets applies the target states other workers write to
// TargetsTopic, from offset from on, until ctx ends (Shutdown). A failed
// read is logged and retried with backoff from the next offset not yet
// applied.
func (w *Worker) followTargets(ctx context.Context, ts TargetSharer, from int64) {
	defer close(w.followDone)
	bo := targetFollowBackoff
	for {
		err := ts.FollowTopic(ctx, TargetsTopic, from, func(recs []connect.Record) error {
			for _, r := range recs {
				w.applySharedRecord(r, true)
				from = r.Offset + 1
			}
			bo.reset()
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = errors.New("the read ended")
		}
		wait := bo.next()
		w.logger.Error("follow the connectors' target states; retrying (pauses, resumes and stops made through other workers wait until then)",
			"topic", TargetsTopic, "offset", from, "error", err, "retry_in", wait.Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return
		case <-timerC(wait):
		}
	}
}

// applySharedRecord applies a record of TargetsTopic: a target state, or
// a restart request (only when live, read by the follower: one read while
// the worker loads the topic was made before it started).
func (w *Worker) applySharedRecord(r connect.Record, live bool) {
	if id, restart, ok := decodeKey(r); ok && restart {
		w.applyRestartRecord(r, id, live)
		return
	}
	w.applyTargetRecord(r)
}

// applyTargetRecord applies a target state record of TargetsTopic.
func (w *Worker) applyTargetRecord(r connect.Record) {
	id, v, ok := decodeTarget(r)
	if !ok {
		w.logger.Warn("skipping a record that is no target state", "topic", TargetsTopic, "offset", r.Offset, "key", string(r.Key))
		return
	}
	w.mu.Lock()
	changed := w.applyTargetLocked(id, v.State, r.Offset)
	w.mu.Unlock()
	if changed && v.State != "" && v.WorkerID != w.opts.WorkerID {
		w.logger.Info("connector target state set through another worker", "pipeline", id.pipeline, "connector", id.connector,
			"state", v.State, "by_worker", v.WorkerID, "at", time.UnixMilli(v.TsMs).UTC())
	}
}

// applyTargetLocked records the target state of TargetsTopic's record at
// offset, unless the worker knows a newer one, and sets it as the target of
// the worker's connector of that pipeline and name, if there is one. It
// reports whether the record was newer. The follower and the worker's own
// writes both go through it, so the target a connector ends with is that of
// the newest record, whichever order they arrive in. w.mu is held.
func (w *Worker) applyTargetLocked(id targetID, s State, offset int64) bool {
	if cur, ok := w.targets[id]; ok && cur.offset >= offset {
		return false
	}
	w.targets[id] = clusterTarget{state: s, offset: offset}
	if s == "" {
		return true
	}
	if r, ok := w.connectors[id.connector]; ok && r.spec.Pipeline == id.pipeline && !r.deleting.Load() {
		r.setTarget(s)
	}
	return true
}

// recordedTargetLocked returns the target state TargetsTopic holds for a
// connector, "" when none. w.mu is held.
func (w *Worker) recordedTargetLocked(pipeline, connector string) State {
	return w.targets[targetID{pipeline, connector}].state
}

// changeTarget sets a connector's target state: on a TargetSharer backend
// for every worker that loads the connector (written to TargetsTopic
// first, then applied here; nothing changes when the write fails), else in
// this worker only.
func (w *Worker) changeTarget(ctx context.Context, r *runner, s State) error {
	if _, ok := w.sharer(); !ok {
		r.setTarget(s)
		return nil
	}
	id := targetID{r.spec.Pipeline, r.spec.Name}
	val, err := json.Marshal(targetValue{State: s, WorkerID: w.opts.WorkerID, TsMs: time.Now().UnixMilli()})
	if err != nil {
		return fmt.Errorf("encode target state of connector %s: %w", r.spec.Name, err)
	}
	recs := []connect.Record{{Topic: TargetsTopic, Key: targetKey(id), Value: val}}
	if err := w.opts.Backend.Produce(ctx, recs); err != nil {
		return fmt.Errorf("record target state %s of connector %s in %s for every worker: %w (nothing changed; check the cluster and retry)", s, r.spec.Name, TargetsTopic, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.applyTargetLocked(id, s, recs[0].Offset)
	return nil
}

// stopFollowing ends the follower of TargetsTopic, if there is one, and
// waits for it.
func (w *Worker) stopFollowing() {
	if w.stopFollow == nil {
		return
	}
	w.stopFollow()
	<-w.followDone
}

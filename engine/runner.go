package engine

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// runner owns one connector: a supervisor goroutine that runs its task,
// pauses and stops it on request, and restarts it with backoff when it
// fails. Every connector runs one task today (tasks.max = 1).
type runner struct {
	w      *Worker
	spec   ConnectorSpec
	conn   connect.Connector
	logger *slog.Logger
	m      *connectorMetrics

	// deleting is set when the worker removes the connector: target
	// states read from TargetsTopic no longer reach it.
	deleting atomic.Bool

	// dlqSkipped is set once a sink's topics regex matched its own
	// dead-letter topic and the warning was logged.
	dlqSkipped atomic.Bool

	// badRecords counts the records a sink task dead-lettered or skipped
	// (badRecord); only the task's goroutine touches it.
	badRecords int

	stopSupervisor context.CancelFunc // hard stop, on shutdown
	supervisorDone chan struct{}

	// mu guards the fields below.
	mu          sync.Mutex
	target      State // RUNNING, PAUSED or STOPPED: what the user asked for
	taskState   State
	trace       string
	taskRunning bool
	restartReq  bool
	softCancel  context.CancelFunc // ends the running task after its batch
	changed     chan struct{}      // closed and replaced on every change
	instance    any                // the running connector instance (a Source or Sink), nil when none
}

// setReporter records the running connector instance (nil clears it): the
// status asks it for its report when it is a connect.Reporter, signals go
// to it when it is a connect.Snapshotter.
func (r *runner) setReporter(inst any) {
	r.mu.Lock()
	r.instance = inst
	r.mu.Unlock()
}

// report asks the running instance for its report, outside the lock.
func (r *runner) report() *connect.Report {
	r.mu.Lock()
	rep, _ := r.instance.(connect.Reporter)
	r.mu.Unlock()
	if rep == nil {
		return nil
	}
	rp := rep.Report()
	if rp.Phase == "" && len(rp.Progress) == 0 && len(rp.Warnings) == 0 && len(rp.Gauges) == 0 {
		return nil
	}
	return &rp
}

func newRunner(w *Worker, spec ConnectorSpec, conn connect.Connector) *runner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &runner{
		w: w, spec: spec, conn: conn,
		m:              w.metrics.forConnector(spec.Name),
		stopSupervisor: cancel, supervisorDone: make(chan struct{}),
		target: StateStopped, taskState: StateUnassigned, changed: make(chan struct{}),
	}
	r.logger = slog.New(maskingHandler{w.logger.Handler(), r.maskText}).With("connector", spec.Name, "pipeline", spec.Pipeline)
	r.m.setStatus(r.target, r.taskState)
	go r.supervise(ctx)
	return r
}

func (r *runner) notifyLocked() {
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *runner) setTarget(s State) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.target == s {
		return
	}
	r.target = s
	if s == StateStopped && r.softCancel != nil {
		r.softCancel()
	}
	r.m.setStatus(s, r.taskState)
	r.notifyLocked()
}

func (r *runner) targetState() State {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.target
}

func (r *runner) running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taskRunning
}

// restartIf restarts the task as a restart request with these flags asks
// (KIP-745: a connector here is its one task, and never fails itself), and
// reports whether it did: not when the connector is STOPPED, nor with
// onlyFailed unless includeTasks is set and the task is FAILED. The check
// and the restart happen under one lock, so a task that recovers meanwhile
// is left be.
func (r *runner) restartIf(includeTasks, onlyFailed bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.target == StateStopped || onlyFailed && (!includeTasks || r.taskState != StateFailed) {
		return false
	}
	r.restartReq = true
	r.taskState = StateRestarting
	r.m.setStatus(r.target, StateRestarting)
	if r.softCancel != nil {
		r.softCancel()
	}
	r.notifyLocked()
	return true
}

// setTaskState sets the task's state and trace; setting the ones it has
// changes nothing (and wakes nobody).
func (r *runner) setTaskState(s State, trace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	trace = r.maskText(trace)
	if r.taskState == s && r.trace == trace {
		return
	}
	r.taskState, r.trace = s, trace
	r.m.setStatus(r.target, s)
	r.notifyLocked()
}

// waitStopped waits until the task has ended after a stop request. It
// fails when the target changes from STOPPED meanwhile (a resume through
// another worker, on a TargetSharer backend).
func (r *runner) waitStopped(ctx context.Context) error {
	for {
		r.mu.Lock()
		target, running := r.target, r.taskRunning
		ch := r.changed
		r.mu.Unlock()
		if target != StateStopped {
			return fmt.Errorf("stop connector %s: its target state became %s before its task stopped (changed through another worker?); stop it again", r.spec.Name, target)
		}
		if !running {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("stop connector %s: %w", r.spec.Name, ctx.Err())
		}
	}
}

// shutdown ends the supervisor; a task still running is cancelled hard.
func (r *runner) shutdown() {
	r.stopSupervisor()
	<-r.supervisorDone
}

func (r *runner) supervise(ctx context.Context) {
	defer close(r.supervisorDone)
	bo := backoff{initial: r.w.opts.RestartBackoffInitial, max: r.w.opts.RestartBackoffMax}
	for {
		r.mu.Lock()
		target, ch := r.target, r.changed
		r.restartReq = false
		r.mu.Unlock()
		if target == StateStopped {
			r.setTaskState(StateStopped, "")
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return
			}
		}
		soft, cancel := context.WithCancel(ctx)
		r.mu.Lock()
		if r.target == StateStopped {
			// Stopped since it was read: a Stop that found no task
			// running has returned, and no cancel would reach this one.
			r.mu.Unlock()
			cancel()
			continue
		}
		r.softCancel, r.taskRunning = cancel, true
		r.mu.Unlock()
		started := time.Now()
		err := r.runTask(ctx, soft)
		cancel()
		r.mu.Lock()
		r.softCancel, r.taskRunning = nil, false
		restartReq := r.restartReq
		r.notifyLocked()
		r.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if err == nil || restartReq {
			bo.reset()
			continue
		}
		if r.targetState() == StateStopped {
			// It failed on its way out: there is nothing to restart.
			r.logger.Error("task failed while stopping", "error", err)
			bo.reset()
			continue
		}
		trace := err.Error()
		r.w.metrics.taskFailures.WithLabelValues(r.spec.Name).Inc()
		if connect.IsPermanent(err) {
			r.logger.Error("task failed with an error that retrying cannot cure; it stays FAILED until the connector is restarted or resumed", "error", err)
			r.setTaskState(StateFailed, trace)
			if !r.waitForUser(ctx) {
				return
			}
			bo.reset()
			if r.targetState() != StateStopped {
				r.setTaskState(StateRestarting, trace)
			}
			continue
		}
		if time.Since(started) >= bo.max {
			// It ran well for a while: a new failure, not one more of a
			// series, so it restarts after the shortest wait again.
			bo.reset()
		}
		wait := bo.next()
		r.logger.Error("task failed; restarting with backoff", "error", err, "failures_in_a_row", bo.attempt, "retry_in", wait.Round(time.Millisecond))
		r.setTaskState(StateFailed, trace)
		r.mu.Lock()
		ch = r.changed
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-ch: // a restart, stop or pause request cuts the wait short
		case <-timerC(wait):
		}
		if r.targetState() != StateStopped {
			r.setTaskState(StateRestarting, trace)
		}
	}
}

// waitForUser waits, after a task failed with a permanent error, until the
// user acts: a restart request or a resume (the target turning RUNNING
// from PAUSED or STOPPED) runs the task again; a stop stops it. A pause
// alone leaves the task FAILED. It returns false on shutdown.
func (r *runner) waitForUser(ctx context.Context) bool {
	prev := r.targetState()
	for {
		r.mu.Lock()
		target, restart, ch := r.target, r.restartReq, r.changed
		r.mu.Unlock()
		if restart || target == StateStopped || (target == StateRunning && prev != StateRunning) {
			return true
		}
		prev = target
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// waitWhilePaused blocks while the connector is paused. It returns false
// when the task should end (stop, restart or shutdown).
func (r *runner) waitWhilePaused(soft context.Context) bool {
	for {
		r.mu.Lock()
		target, ch := r.target, r.changed
		r.mu.Unlock()
		if soft.Err() != nil {
			return false
		}
		if target != StatePaused {
			if r.taskStateIs(StatePaused) {
				r.setTaskState(StateRunning, "")
			}
			return true
		}
		if !r.taskStateIs(StatePaused) {
			r.setTaskState(StatePaused, "")
		}
		select {
		case <-ch:
		case <-soft.Done():
			return false
		}
	}
}

func (r *runner) taskStateIs(s State) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.taskState == s
}

func (r *runner) runTask(hard, soft context.Context) error {
	cfg := connect.Config{
		Pipeline: r.spec.Pipeline, Connector: r.spec.Name, Task: 0,
		Values: r.conn.Spec.WithDefaults(r.spec.Config), Spec: r.conn.Spec,
	}
	chain, err := r.transforms()
	if err != nil {
		return err
	}
	switch r.spec.Kind {
	case connect.KindSource:
		if l, ok := r.w.opts.Backend.(SourceLeaser); ok {
			return r.runLeasedSource(hard, soft, cfg, chain, l)
		}
		cfg.Position = r.w.offsets.Get(r.spec.Pipeline, r.spec.Name)
		return r.runSource(hard, soft, cfg, chain)
	case connect.KindSink:
		return r.runSink(hard, soft, cfg, chain)
	}
	return fmt.Errorf("connector %s: unknown kind %q", r.spec.Name, r.spec.Kind)
}

// chain is a connector's transforms in order.
type chain []namedTransform

type namedTransform struct {
	name string
	t    Transformer
}

func (r *runner) transforms() (chain, error) {
	var c chain
	for i, ts := range r.spec.Transforms {
		if r.w.opts.Transforms == nil {
			return nil, connect.Permanent(fmt.Errorf("connector %s: transforms are not available in this worker", r.spec.Name))
		}
		t, err := r.w.opts.Transforms(ts.Type, ts.Config)
		if err != nil {
			// A transform's config does not change until the connector's
			// does, which replaces the runner: retrying cannot cure it.
			return nil, connect.Permanent(fmt.Errorf("connector %s: transform %d (%s): %w", r.spec.Name, i+1, ts.Type, err))
		}
		c = append(c, namedTransform{name: ts.Type, t: t})
	}
	return c, nil
}

// appendApplied appends to dst what the chain makes of rec; without
// transforms that is rec itself, with no allocation.
func (c chain) appendApplied(dst []connect.Record, rec connect.Record) ([]connect.Record, error) {
	if len(c) == 0 {
		return append(dst, rec), nil
	}
	got, err := c.apply(rec)
	if err != nil {
		return dst, err
	}
	return append(dst, got...), nil
}

// apply runs a record through the chain.
func (c chain) apply(rec connect.Record) ([]connect.Record, error) {
	recs := []connect.Record{rec}
	for _, nt := range c {
		var next []connect.Record
		for _, r := range recs {
			out, err := nt.t.Apply(r)
			if err != nil {
				if strings.HasPrefix(err.Error(), nt.name+":") {
					return nil, err // it already names itself
				}
				return nil, fmt.Errorf("transform %s: %w", nt.name, err)
			}
			next = append(next, out...)
		}
		recs = next
		if len(recs) == 0 {
			break
		}
	}
	return recs, nil
}

func (r *runner) info() ConnectorInfo {
	cfg := maskValues(r.spec.Config, r.spec.Secrets, r.conn.Spec)
	out := map[string]string{"connector.class": r.spec.Connector, "name": r.spec.Name}
	maps.Copy(out, cfg)
	switch r.spec.Kind {
	case connect.KindSource:
		out["topic"] = r.spec.Topic
	case connect.KindSink:
		out["topics"] = strings.Join(r.spec.Topics, ",")
		out["group"] = r.spec.Group
		if r.spec.Errors.Tolerance != "" {
			out["errors.tolerance"] = r.spec.Errors.Tolerance
		}
		if r.spec.Errors.DeadLetterTopic != "" {
			out["errors.deadletterqueue.topic.name"] = r.spec.Errors.DeadLetterTopic
		}
	}
	info := ConnectorInfo{Name: r.spec.Name, Type: r.spec.Kind, Config: out}
	if r.targetState() != StateStopped {
		info.Tasks = []int{0}
	}
	return info
}

func maskValues(cfg map[string]string, secrets []string, spec connect.Spec) map[string]string {
	out := spec.Mask(cfg)
	for _, k := range secrets {
		if _, ok := out[k]; ok {
			out[k] = connect.Masked
		}
	}
	return out
}

func (r *runner) status() ConnectorStatus {
	report := r.report()
	topicWarnings := r.w.pipelineTopicWarnings(r.spec.Pipeline)
	r.mu.Lock()
	defer r.mu.Unlock()
	st := ConnectorStatus{Name: r.spec.Name, Type: r.spec.Kind, WorkerID: r.w.opts.WorkerID}
	switch r.target {
	case StateStopped:
		st.State = StateStopped
		st.Tasks = []TaskStatus{}
		return st
	case StatePaused:
		st.State = StatePaused
	default:
		st.State = StateRunning
	}
	ts := TaskStatus{ID: 0, State: r.taskState, WorkerID: r.w.opts.WorkerID}
	if r.taskState == StateFailed || r.taskState == StateRestarting || r.taskState == StateUnassigned {
		ts.Trace = r.trace // UNASSIGNED: a standby names the source's lease and its holder
	}
	if ts.State == StateStopped {
		ts.State = StateUnassigned
	}
	if ts.State == StateRunning || ts.State == StatePaused {
		ts.Report = report
	}
	if len(topicWarnings) > 0 {
		// The pipeline's topics differ from its declaration: shown
		// whatever the task's state, beside the connector's own warnings.
		rp := connect.Report{}
		if ts.Report != nil {
			rp = *ts.Report
		}
		rp.Warnings = slices.Concat(rp.Warnings, topicWarnings)
		ts.Report = &rp
	}
	st.Tasks = []TaskStatus{ts}
	return st
}

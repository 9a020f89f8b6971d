package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/pipelines"
)

// Errors the REST API maps to status codes.
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflict")
	ErrBadRequest = errors.New("bad request")
)

// Transformer changes records on their way: 0 records out drops the record.
// engine/transform implements it.
type Transformer interface {
	Apply(r connect.Record) ([]connect.Record, error)
}

// TransformFactory makes a transform of a type from its config.
type TransformFactory func(typ string, cfg map[string]string) (Transformer, error)

// Options configure a Worker.
type Options struct {
	Backend    Backend
	Connectors *connect.Registry
	Transforms TransformFactory
	Logger     *slog.Logger
	// WorkerID names this worker in statuses (Kafka Connect uses host:port).
	WorkerID string
	Metrics  *Metrics
	// RestartBackoff bounds the backoff between restarts of a failed task
	// (defaults 500 ms and 30 s): it doubles with each failure in a row, and
	// starts again from the initial wait when the task ran for at least the
	// max before it failed. A task failed by a connect.Permanent error is
	// not restarted until the user restarts or resumes it.
	RestartBackoffInitial, RestartBackoffMax time.Duration
}

// Worker runs connectors as tasks. It is safe for concurrent use.
type Worker struct {
	opts    Options
	logger  *slog.Logger
	offsets *OffsetStore
	metrics *Metrics

	mu         sync.Mutex // guards connectors, closed, targets and restartsSeen
	connectors map[string]*runner
	closed     bool
	// targets holds the newest target state recorded in TargetsTopic per
	// connector, on a TargetSharer backend (nil otherwise).
	targets map[targetID]clusterTarget
	// restartsSeen holds the ids of the restart requests of TargetsTopic
	// the worker has applied or skipped, on a TargetSharer backend.
	restartsSeen requestIDs

	// stopFollow ends the goroutine following TargetsTopic, which closes
	// followDone; both nil without a TargetSharer backend. Set in
	// NewWorker, read by Shutdown.
	stopFollow context.CancelFunc
	followDone chan struct{}

	// topicMu guards topicWarnings; it is taken alone, never with another
	// lock held.
	topicMu       sync.Mutex
	topicWarnings map[string][]string // per pipeline: declared topics that differ from the log's
}

// NewWorker opens the offsets store and returns a worker with no
// connectors. On a TargetSharer backend it also loads the connectors'
// target states from TargetsTopic and starts following it (until
// Shutdown).
func NewWorker(ctx context.Context, opts Options) (*Worker, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Connectors == nil {
		opts.Connectors = connect.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	if opts.WorkerID == "" {
		opts.WorkerID = "tributary"
	}
	if opts.RestartBackoffInitial <= 0 {
		opts.RestartBackoffInitial = 500 * time.Millisecond
	}
	if opts.RestartBackoffMax <= 0 {
		opts.RestartBackoffMax = 30 * time.Second
	}
	offsets, err := openOffsetStore(ctx, opts.Backend, opts.Logger)
	if err != nil {
		return nil, err
	}
	w := &Worker{opts: opts, logger: opts.Logger, offsets: offsets, metrics: opts.Metrics, connectors: map[string]*runner{}, topicWarnings: map[string][]string{}}
	if err := opts.Metrics.Registry.Register(reportCollector{w}); err != nil {
		return nil, fmt.Errorf("register connector report metrics: %w", err)
	}
	if err := w.openTargets(ctx); err != nil {
		opts.Metrics.Registry.Unregister(reportCollector{w})
		return nil, err
	}
	return w, nil
}

// Metrics returns the worker's metrics.
func (w *Worker) Metrics() *Metrics { return w.metrics }

// Backend returns the log backend.
func (w *Worker) Backend() Backend { return w.opts.Backend }

// Registry returns the connector registry.
func (w *Worker) Registry() *connect.Registry { return w.opts.Connectors }

// ID returns the worker id.
func (w *Worker) ID() string { return w.opts.WorkerID }

// Start adds a connector and starts it in state initial (RUNNING, PAUSED or
// STOPPED; empty means RUNNING).
//
// On a TargetSharer backend, a connector whose target state TargetsTopic
// holds (set through any worker) starts in that state when initial is
// RUNNING or empty, so that a connector paused or stopped cluster-wide
// stays so in a worker that starts or restarts; an initial PAUSED or
// STOPPED (Kafka Connect's initial_state) is a change of the target state
// like a pause or stop, and is written to TargetsTopic for every worker.
func (w *Worker) Start(ctx context.Context, spec ConnectorSpec, initial State) error {
	return w.start(ctx, spec, initial, false)
}

// Create adds a connector created anew (over the REST API: POST
// /connectors, or a PUT …/config of a name the worker has not) and starts
// it in state initial (empty means RUNNING). Unlike Start it takes no
// target state TargetsTopic holds for its pipeline and name, which the
// connector of that name deleted before may have left there (Delete keeps
// it for the other workers): as in Kafka Connect, which drops a deleted
// connector's target state, a connector created again starts RUNNING
// unless initial says otherwise. On a TargetSharer backend initial is
// written to TargetsTopic when it differs from the recorded state, so it
// is the connector's state in every worker from then on.
func (w *Worker) Create(ctx context.Context, spec ConnectorSpec, initial State) error {
	return w.start(ctx, spec, initial, true)
}

// start is Start, or Create when anew.
func (w *Worker) start(ctx context.Context, spec ConnectorSpec, initial State, anew bool) error {
	if initial == "" {
		initial = StateRunning
	}
	if initial != StateRunning && initial != StatePaused && initial != StateStopped {
		return fmt.Errorf("%w: initial state %q: use RUNNING, PAUSED or STOPPED", ErrBadRequest, initial)
	}
	spec, err := topicToConfig(spec, w.opts.Connectors)
	if err != nil {
		return err
	}
	c, err := w.lookup(spec)
	if err != nil {
		return err
	}
	if spec.Kind == connect.KindSink && spec.Group == "" {
		spec.Group = spec.Name
	}
	r, publish, err := w.add(spec, c, initial, anew)
	if err != nil || !publish {
		return err
	}
	if err := w.changeTarget(ctx, r, initial); err != nil {
		// The connector is in its initial state here: only the other
		// workers do not know it.
		w.logger.Warn("connector started in its initial state in this worker only", "connector", spec.Name, "state", initial, "error", err,
			"fix", "set the state again through the REST API (PUT /connectors/"+spec.Name+"/pause, /resume or /stop)")
	}
	return nil
}

// RESTPipeline is the pipeline of the connectors created over the REST
// API that take up no earlier connector's offsets (see ResumedPipeline).
const RESTPipeline = "rest"

// ResumedPipeline returns the pipeline that a source connector created
// anew under name (over the REST API) is keyed by, in the offsets topic
// and wherever else a connector's pipeline and name key its state (its
// lease, its target state, a connector's own files): the pipeline of the
// newest record of that name in OffsetsTopic. So, as in Kafka Connect,
// whose offsets are keyed by the connector's name, a source deleted and
// created again with the same name resumes from the position it stored,
// whether a pipeline file or the REST API created it first, and starts
// over when its offsets were reset (DELETE …/offsets) before. It is
// RESTPipeline when the topic holds nothing of that name, or when the
// source of that pipeline and name runs in another worker (one holds its
// lease), so that two live connectors never share a position.
func (w *Worker) ResumedPipeline(ctx context.Context, name string) (string, error) {
	store := w.offsets
	leaser, shared := w.opts.Backend.(SourceLeaser)
	if shared {
		// Another worker may have stored positions this one has not seen.
		fresh, err := readOffsetStore(ctx, w.opts.Backend)
		if err != nil {
			return "", fmt.Errorf("find the stored offsets of source %s: %w", name, err)
		}
		store = fresh
	}
	pipeline, ok := store.Newest(name)
	if !ok || pipeline == RESTPipeline {
		return RESTPipeline, nil
	}
	if shared {
		members, err := leaser.LeaseMembers(ctx, pipeline, name)
		if err != nil {
			return "", fmt.Errorf("find out whether source %s of pipeline %s runs in another worker: %w", name, pipeline, err)
		}
		if len(members) > 0 {
			w.logger.Warn("source created with the name of a source that runs in another worker: it does not take that one's offsets; it runs under pipeline "+RESTPipeline+", from the position stored there if one is, else from the start; delete that one there first to take them up",
				"connector", name, "pipeline", pipeline, "workers", strings.Join(members, ", "),
				"stored_under_"+RESTPipeline, store.Get(RESTPipeline, name) != nil)
			return RESTPipeline, nil
		}
	}
	return pipeline, nil
}

// ResumedSinkPipeline returns the pipeline that a sink connector created
// anew under name (over the REST API), consuming as group, is keyed by:
// the pipeline of the sink of that name that ran last consuming as that
// group (OffsetStore.NewestSink). The new sink resumes from that group's
// committed offsets; with that pipeline it also keeps the earlier sink's
// identity, its pipeline and name, which a sink may write into what it
// delivers: the Iceberg sink's snapshot summaries hold the offsets its
// tables hold under it, and it skips the records at or below them, so a
// sink deleted and created again with the same name writes nothing twice
// that the group had not committed. It is RESTPipeline when no sink of
// that name ran with that group. Two live sinks never share an identity
// without sharing their group: in a worker, names and groups are unique;
// across workers on a shared backend, sinks of one group split its
// partitions as the tasks of one sink do (a pipeline file's sink loaded
// by several workers), and sharing its identity keeps a partition that
// moves between them from being written twice.
func (w *Worker) ResumedSinkPipeline(ctx context.Context, name, group string) (string, error) {
	store := w.offsets
	if _, shared := w.opts.Backend.(SourceLeaser); shared {
		// Another worker may have run sinks this one has not seen.
		fresh, err := readOffsetStore(ctx, w.opts.Backend)
		if err != nil {
			return "", fmt.Errorf("find the pipeline of the sink %s that ran last: %w", name, err)
		}
		store = fresh
	}
	if pipeline, ok := store.NewestSink(name, group); ok {
		return pipeline, nil
	}
	return RESTPipeline, nil
}

// add registers a connector's runner and starts it in state initial, or,
// unless it is created anew, in the target state TargetsTopic holds for
// it when initial is RUNNING. publish reports whether initial differs from
// that recorded state (for one not created anew: initial PAUSED or
// STOPPED), so that start writes it there for the other workers.
func (w *Worker) add(spec ConnectorSpec, c connect.Connector, initial State, anew bool) (r *runner, publish bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, false, errors.New("worker is shutting down")
	}
	if _, ok := w.connectors[spec.Name]; ok {
		return nil, false, fmt.Errorf("%w: Connector %s already exists", ErrConflict, spec.Name)
	}
	if err := w.checkClaimsLocked(spec, c); err != nil {
		return nil, false, err
	}
	recorded := w.recordedTargetLocked(spec.Pipeline, spec.Name)
	_, shared := w.sharer()
	if anew {
		// Nothing recorded is as good as RUNNING: no need to write it.
		publish = shared && recorded != initial && (recorded != "" || initial != StateRunning)
	} else {
		publish = shared && initial != StateRunning && recorded != initial
	}
	if !anew && recorded != "" && initial == StateRunning {
		initial = recorded
		if recorded != StateRunning {
			w.logger.Info("connector starts "+string(recorded)+": its state was set through a worker's REST API and is kept in "+TargetsTopic+" for every worker; resume it with PUT /connectors/"+spec.Name+"/resume",
				"pipeline", spec.Pipeline, "connector", spec.Name)
		}
	}
	r = newRunner(w, spec, c)
	w.connectors[spec.Name] = r
	r.setTarget(initial)
	return r, publish, nil
}

// topicToConfig hands a source's topic to a connector that names its
// records' topics itself (the CDC sources' "topic" template, one topic per
// table): the pipeline's `topic: cdc.{schema}.{table}` is that template, so
// the connector must see it, or its records would go to the connector's
// default topics while the pipeline, its sinks and validate expect the
// source's. A connector without a "topic" parameter gets its records routed
// by the task instead. The two places may not disagree.
func topicToConfig(spec ConnectorSpec, reg *connect.Registry) (ConnectorSpec, error) {
	if spec.Kind != connect.KindSource || reg == nil {
		return spec, nil
	}
	c, err := reg.Lookup(spec.Kind, spec.Connector)
	if _, has := c.Spec.Param("topic"); err != nil || !has {
		return spec, nil // lookup reports an unknown connector
	}
	own, set := spec.Config["topic"]
	switch {
	case spec.Topic == "" && set:
		spec.Topic = own
	case spec.Topic == "" || own == spec.Topic:
	case set:
		return spec, fmt.Errorf("%w: source %s: topic %q and config.topic %q disagree; set the topic once, with the source's topic key",
			ErrBadRequest, spec.Name, spec.Topic, own)
	default:
		spec.Config = maps.Clone(spec.Config)
		if spec.Config == nil {
			spec.Config = map[string]string{}
		}
		spec.Config["topic"] = spec.Topic
	}
	return spec, nil
}

// lookup checks a spec against the registry: connector known, config valid.
func (w *Worker) lookup(spec ConnectorSpec) (connect.Connector, error) {
	if spec.Name == "" {
		return connect.Connector{}, fmt.Errorf("%w: connector has no name", ErrBadRequest)
	}
	c, err := w.opts.Connectors.Lookup(spec.Kind, spec.Connector)
	if err != nil {
		return c, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	cfg := connect.Config{Values: spec.Config, Spec: c.Spec}
	if err := cfg.Validate(); err != nil {
		return c, fmt.Errorf("%w: connector %s: %v", ErrBadRequest, spec.Name, err)
	}
	switch spec.Kind {
	case connect.KindSource:
		// No topic is allowed: the connector then sets each record's
		// topic itself (a record without one fails the task).
	case connect.KindSink:
		if spec.TopicsRegex != "" {
			if _, err := regexp.Compile(spec.TopicsRegex); err != nil {
				return c, fmt.Errorf("%w: sink %s: topics regex %q: %v", ErrBadRequest, spec.Name, spec.TopicsRegex, err)
			}
		} else if len(spec.Topics) == 0 {
			return c, fmt.Errorf("%w: sink %s reads no topics", ErrBadRequest, spec.Name)
		}
	}
	return c, nil
}

// ConfigError is a connector config that breaks the rules a pipeline
// file's sources and sinks follow (package pipelines): a bad request, with
// each problem at its key.
type ConfigError struct {
	Connector string
	Problems  []pipelines.Problem
}

func (e *ConfigError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.String()
	}
	return fmt.Sprintf("connector %s: %s", e.Connector, strings.Join(msgs, "; "))
}

// Is makes a ConfigError an ErrBadRequest.
func (e *ConfigError) Is(target error) bool { return target == ErrBadRequest }

// claimsOf returns what a connector holds alone: a sink's consumer group,
// and the values of its connector's exclusive parameters (the file a sink
// appends to).
func claimsOf(spec ConnectorSpec, c connect.Connector) []pipelines.Claim {
	if spec.Kind == connect.KindSink {
		return pipelines.SinkClaims(pipelines.Sink{Name: spec.Name, Connector: spec.Connector, Group: spec.Group, Config: spec.Config}, &c.Spec)
	}
	return pipelines.SourceClaims(pipelines.Source{Name: spec.Name, Connector: spec.Connector, Config: spec.Config}, &c.Spec)
}

// checkClaimsLocked refuses a spec that claims what another connector of
// the worker holds: two sinks committing to one group skip each other's
// records, two file sinks on one path tear each other's lines. w.mu is
// held.
func (w *Worker) checkClaimsLocked(spec ConnectorSpec, c connect.Connector) error {
	var held []pipelines.Claim
	for name, r := range w.connectors {
		if name != spec.Name {
			held = append(held, claimsOf(r.spec, r.conn)...)
		}
	}
	if ps := pipelines.CheckClaims(claimsOf(spec, c), held); len(ps) > 0 {
		return &ConfigError{Connector: spec.Name, Problems: ps}
	}
	return nil
}

func (w *Worker) runner(name string) (*runner, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.connectors[name]
	if !ok {
		return nil, fmt.Errorf("%w: Connector %s not found", ErrNotFound, name)
	}
	return r, nil
}

// Connectors returns the connector names, sorted.
func (w *Worker) Connectors() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Sorted(maps.Keys(w.connectors))
}

// Info returns a connector's configuration, secrets masked.
func (w *Worker) Info(name string) (ConnectorInfo, error) {
	r, err := w.runner(name)
	if err != nil {
		return ConnectorInfo{}, err
	}
	return r.info(), nil
}

// Spec returns a connector's spec (secrets in clear: never show it).
func (w *Worker) Spec(name string) (ConnectorSpec, error) {
	r, err := w.runner(name)
	if err != nil {
		return ConnectorSpec{}, err
	}
	return r.spec, nil
}

// Status returns a connector's status.
func (w *Worker) Status(name string) (ConnectorStatus, error) {
	r, err := w.runner(name)
	if err != nil {
		return ConnectorStatus{}, err
	}
	return r.status(), nil
}

// Pause pauses a connector: its task stops delivering after the current
// batch and keeps its resources. It is PauseContext without a deadline.
func (w *Worker) Pause(name string) error {
	return w.PauseContext(context.Background(), name)
}

// PauseContext pauses a connector: its task stops delivering after the
// current batch and keeps its resources. On a TargetSharer backend the
// pause is written to TargetsTopic and so reaches every worker that loads
// the connector (the one running a source's task among them).
func (w *Worker) PauseContext(ctx context.Context, name string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	return w.changeTarget(ctx, r, StatePaused)
}

// Resume resumes a paused or stopped connector. It is ResumeContext
// without a deadline.
func (w *Worker) Resume(name string) error {
	return w.ResumeContext(context.Background(), name)
}

// ResumeContext resumes a paused or stopped connector; on a TargetSharer
// backend in every worker that loads it, as PauseContext.
func (w *Worker) ResumeContext(ctx context.Context, name string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	return w.changeTarget(ctx, r, StateRunning)
}

// Stop stops a connector's task and waits until it has committed and
// closed in this worker. On a TargetSharer backend the stop is written to
// TargetsTopic and every worker that loads the connector stops it too;
// Stop does not wait for them (a source's lease group empties once they
// have).
func (w *Worker) Stop(ctx context.Context, name string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	if err := w.changeTarget(ctx, r, StateStopped); err != nil {
		return err
	}
	return r.waitStopped(ctx)
}

// Restart restarts a connector's task, or with onlyFailed only a FAILED
// one: RestartConnector with includeTasks. On a TargetSharer backend every
// worker that loads the connector restarts its own task (each checks its
// own for onlyFailed); a source's task runs in the worker holding its
// lease, and a restart of the holder's task may move the lease, as any
// stop of it does.
func (w *Worker) Restart(ctx context.Context, name string, onlyFailed bool) error {
	_, err := w.RestartConnector(ctx, name, true, onlyFailed)
	return err
}

// Delete stops and removes a connector in this worker. Its stored offsets
// stay, and so does a target state recorded in TargetsTopic, unlike in
// Kafka Connect, where a DELETE removes the connector from every worker
// and drops its target state: here the other workers may still load the
// connector (a pipeline file's), and one stopped cluster-wide must stay
// stopped in them, also when they restart. A connector of that pipeline
// and name started again from a pipeline file starts in that state; one
// created again over the REST API (Create) starts RUNNING or in its
// initial state, as in Kafka Connect.
func (w *Worker) Delete(ctx context.Context, name string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	w.mu.Lock()
	r.deleting.Store(true) // under w.mu: no target state read from TargetsTopic reaches it after this
	w.mu.Unlock()
	r.setTarget(StateStopped)
	err = r.waitStopped(ctx)
	r.shutdown()
	w.mu.Lock()
	delete(w.connectors, name)
	w.mu.Unlock()
	return err
}

// Replace swaps a connector's spec (PUT config): it stops the connector,
// and starts it again with the new spec in the state it had. A connector
// the worker does not have is created anew (Create), RUNNING.
func (w *Worker) Replace(ctx context.Context, spec ConnectorSpec) (created bool, err error) {
	r, err := w.runner(spec.Name)
	if errors.Is(err, ErrNotFound) {
		return true, w.Create(ctx, spec, StateRunning)
	}
	if err != nil {
		return false, err
	}
	c, err := w.lookup(spec)
	if err != nil {
		return false, err
	}
	w.mu.Lock()
	err = w.checkClaimsLocked(spec, c)
	w.mu.Unlock()
	if err != nil {
		return false, err
	}
	target := r.targetState()
	if err := w.Delete(ctx, spec.Name); err != nil {
		return false, err
	}
	return false, w.Start(ctx, spec, target)
}

// OffsetEntry is one partition's offset as the REST API shows it.
type OffsetEntry struct {
	Partition map[string]any `json:"partition"`
	Offset    any            `json:"offset"`
}

// Offsets returns a connector's offsets: the stored source position, or
// the sink group's committed offsets.
func (w *Worker) Offsets(ctx context.Context, name string) ([]OffsetEntry, error) {
	r, err := w.runner(name)
	if err != nil {
		return nil, err
	}
	return r.offsets(ctx)
}

// AlterOffsets changes a stopped connector's offsets (PATCH); a nil offset
// resets its partition.
func (w *Worker) AlterOffsets(ctx context.Context, name string, entries []OffsetEntry) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	if r.targetState() != StateStopped {
		return fmt.Errorf("%w: Connectors must be in the STOPPED state before their offsets can be modified. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", ErrBadRequest, name)
	}
	return r.alterOffsets(ctx, entries)
}

// ResetOffsets deletes a stopped connector's offsets (DELETE).
func (w *Worker) ResetOffsets(ctx context.Context, name string) error {
	r, err := w.runner(name)
	if err != nil {
		return err
	}
	if r.targetState() != StateStopped {
		return fmt.Errorf("%w: Connectors must be in the STOPPED state before their offsets can be reset. This can be done for the specified connector by issuing a 'PUT' request to the '/connectors/%s/stop' endpoint", ErrBadRequest, name)
	}
	return r.resetOffsets(ctx)
}

// Shutdown drains every connector (finish the batch in flight, commit,
// close) until ctx ends, then stops what is left hard. It stops following
// TargetsTopic first, and writes nothing there: the other workers keep
// their connectors' states.
func (w *Worker) Shutdown(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	rs := slices.Collect(maps.Values(w.connectors))
	w.mu.Unlock()
	// No target change read from TargetsTopic starts a task again: the
	// stops below are this worker's own, not written there.
	w.stopFollowing()
	sort.Slice(rs, func(i, j int) bool { return rs[i].spec.Name < rs[j].spec.Name })
	for _, r := range rs {
		r.setTarget(StateStopped)
	}
	var errs []error
	for _, r := range rs {
		if err := r.waitStopped(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range rs {
		r.shutdown()
	}
	return errors.Join(errs...)
}

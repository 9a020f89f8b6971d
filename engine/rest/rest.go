// Package rest serves the worker's REST API, shaped like Kafka Connect's
// (CONVENTIONS.md §1), plus the topic, group and record endpoints the CLI
// uses in --server mode, and Prometheus /metrics.
package rest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	tlog "github.com/tributary-io/tributary/log"
)

// DefaultAddr is where the API listens unless told otherwise.
const DefaultAddr = "127.0.0.1:8083"

// Server is the REST API of one worker.
type Server struct {
	worker  *engine.Worker
	log     *tlog.Log // the embedded log, for topic/group/record endpoints; may be nil
	logger  *slog.Logger
	version string
	commit  string // set by SetCommit before serving
	// transforms knows which transform settings are secrets, to mask them.
	transforms *transform.Registry
	mux        *http.ServeMux
	starting   atomic.Bool // set by SetStarting: GET /health answers 503
}

// New returns the API of a worker. l is the embedded log (nil with other
// backends: the log endpoints then answer 404).
func New(w *engine.Worker, l *tlog.Log, version string, logger *slog.Logger) *Server {
	if logger == nil {
		logger = slog.Default()
	}
	s := &Server{worker: w, log: l, logger: logger, version: version, transforms: transform.Builtin(), mux: http.NewServeMux()}
	s.routes()
	return s
}

// SetCommit sets the commit GET / reports. Call it before serving.
func (s *Server) SetCommit(commit string) { s.commit = commit }

// SetStarting says whether the worker is still starting its pipelines:
// meanwhile GET /health answers 503 "starting", as Kafka Connect's does
// (KIP-1017), so that a probe waits for the pipelines, not just the port.
func (s *Server) SetStarting(starting bool) { s.starting.Store(starting) }

// ServeHTTP implements http.Handler. Unknown paths and methods a path does
// not take get Kafka Connect's JSON error body, not the mux's plain text.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r) // sets the request's path values
		return
	}
	// No route: the mux's handler answers 404, 405 with Allow, or a
	// redirect (a cleaned path); keep its code and headers, replace a
	// plain-text error body.
	rec := &statusRecorder{header: http.Header{}}
	h.ServeHTTP(rec, r)
	switch rec.code {
	case http.StatusNotFound:
		writeJSON(w, rec.code, apiError{ErrorCode: rec.code, Message: fmt.Sprintf("Unknown endpoint %s %s", r.Method, r.URL.Path)})
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", rec.header.Get("Allow"))
		writeJSON(w, rec.code, apiError{ErrorCode: rec.code, Message: fmt.Sprintf("HTTP method %s is not supported by %s (allowed: %s)", r.Method, r.URL.Path, rec.header.Get("Allow"))})
	default:
		maps.Copy(w.Header(), rec.header)
		w.WriteHeader(rec.code)
		_, _ = w.Write(rec.body.Bytes())
	}
}

// statusRecorder captures what the mux's own fallback handlers write.
type statusRecorder struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func (r *statusRecorder) Header() http.Header { return r.header }
func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	return r.body.Write(b)
}
func (r *statusRecorder) WriteHeader(code int) {
	if r.code == 0 {
		r.code = code
	}
}

func (s *Server) routes() {
	m := s.mux
	m.HandleFunc("GET /{$}", s.root)
	m.HandleFunc("GET /health", s.health)
	m.HandleFunc("GET /connectors", s.listConnectors)
	m.HandleFunc("POST /connectors", s.createConnector)
	m.HandleFunc("GET /connectors/{name}", s.getConnector)
	m.HandleFunc("DELETE /connectors/{name}", s.deleteConnector)
	m.HandleFunc("GET /connectors/{name}/config", s.getConfig)
	m.HandleFunc("PUT /connectors/{name}/config", s.putConfig)
	m.HandleFunc("PATCH /connectors/{name}/config", s.patchConfig)
	m.HandleFunc("GET /connectors/{name}/status", s.getStatus)
	m.HandleFunc("GET /connectors/{name}/tasks", s.getTasks)
	m.HandleFunc("GET /connectors/{name}/tasks/{id}/status", s.getTaskStatus)
	m.HandleFunc("POST /connectors/{name}/tasks/{id}/restart", s.restartTask)
	m.HandleFunc("PUT /connectors/{name}/pause", s.pause)
	m.HandleFunc("PUT /connectors/{name}/resume", s.resume)
	m.HandleFunc("PUT /connectors/{name}/stop", s.stop)
	m.HandleFunc("POST /connectors/{name}/restart", s.restart)
	m.HandleFunc("GET /connectors/{name}/offsets", s.getOffsets)
	m.HandleFunc("PATCH /connectors/{name}/offsets", s.patchOffsets)
	m.HandleFunc("DELETE /connectors/{name}/offsets", s.deleteOffsets)
	m.HandleFunc("POST /connectors/{name}/signals", s.signal)
	m.HandleFunc("GET /connector-plugins", s.plugins)
	m.HandleFunc("PUT /connector-plugins/{type}/config/validate", s.validate)
	m.HandleFunc("GET /topics", s.listTopics)
	m.HandleFunc("POST /topics", s.createTopic)
	m.HandleFunc("GET /topics/{topic}", s.describeTopic)
	m.HandleFunc("DELETE /topics/{topic}", s.deleteTopic)
	m.HandleFunc("GET /topics/{topic}/partitions/{p}/records", s.readRecords)
	m.HandleFunc("POST /topics/{topic}/records", s.produceRecords)
	m.HandleFunc("PATCH /topics/{topic}", s.alterTopic)
	m.HandleFunc("GET /topics/{topic}/partitions/{p}/offsets", s.partitionOffsets)
	m.HandleFunc("POST /topics/{topic}/partitions/{p}/delete-records", s.deleteRecords)
	m.HandleFunc("GET /groups", s.listGroups)
	m.HandleFunc("GET /groups/{group}", s.describeGroup)
	m.HandleFunc("DELETE /groups/{group}", s.deleteGroup)
	m.HandleFunc("POST /groups/{group}/offsets", s.commitGroup)
	m.HandleFunc("POST /groups/{group}/reset", s.resetGroup)
	reg := prometheus.Gatherers{s.worker.Metrics().Registry}
	lr := prometheus.NewRegistry()
	if s.log != nil {
		lr.MustRegister(newLogCollector(s.log))
	} else {
		// Another backend (a Kafka cluster): the sinks' groups' lag at
		// least, read from it at each scrape.
		lr.MustRegister(newSinkLagCollector(s.worker, s.logger))
	}
	reg = append(reg, lr)
	m.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
}

// apiError is Kafka Connect's error body.
type apiError struct {
	ErrorCode int    `json:"error_code"`
	Message   string `json:"message"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		_ = json.NewEncoder(w).Encode(v)
	}
}

func (s *Server) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	msg := err.Error()
	switch {
	case errors.Is(err, engine.ErrNotFound), errors.Is(err, tlog.ErrUnknownTopic), errors.Is(err, tlog.ErrUnknownGroup), errors.Is(err, tlog.ErrUnknownPartition):
		code = http.StatusNotFound
	case errors.Is(err, engine.ErrConflict), errors.Is(err, tlog.ErrTopicExists), errors.Is(err, tlog.ErrGroupNotEmpty):
		code = http.StatusConflict
	case errors.Is(err, engine.ErrBadRequest), errors.Is(err, tlog.ErrInvalidConfig), errors.Is(err, tlog.ErrInvalidTopicName), errors.Is(err, tlog.ErrInternalTopic),
		errors.Is(err, tlog.ErrInvalidPartitions), errors.Is(err, tlog.ErrOffsetOutOfRange), errors.Is(err, tlog.ErrPolicyViolation):
		code = http.StatusBadRequest
	}
	for _, prefix := range []string{engine.ErrNotFound.Error() + ": ", engine.ErrConflict.Error() + ": ", engine.ErrBadRequest.Error() + ": "} {
		msg = strings.TrimPrefix(msg, prefix)
	}
	if ce := (*engine.ConfigError)(nil); errors.As(err, &ce) {
		msg = configErrorMessage(ce)
	}
	switch {
	case code != http.StatusInternalServerError:
	case errors.Is(err, context.Canceled):
		// The client went away (a consumer that ends, Ctrl-C): nobody
		// reads the answer, and nothing is wrong with the worker.
		s.logger.Debug("rest request ended: the client went away", "error", err)
	default:
		s.logger.Error("rest request failed", "error", err)
	}
	writeJSON(w, code, apiError{ErrorCode: code, Message: msg})
}

func (s *Server) root(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]string{"version": s.version, "commit": s.commit, "kafka_cluster_id": s.clusterID()})
}

func (s *Server) clusterID() string {
	if s.log != nil {
		return s.log.ClusterID()
	}
	if c, ok := s.worker.Backend().(interface{ ClusterID() string }); ok {
		return c.ClusterID() // a Kafka cluster's, as its brokers give it
	}
	return ""
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.starting.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "starting", "message": "Worker is still starting up."})
		return
	}
	writeJSON(w, 200, map[string]string{"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."})
}

type taskID struct {
	Connector string `json:"connector"`
	Task      int    `json:"task"`
}

type connectorInfo struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []taskID          `json:"tasks"`
	Type   connect.Kind      `json:"type"`
}

func toInfo(i engine.ConnectorInfo) connectorInfo {
	out := connectorInfo{Name: i.Name, Config: i.Config, Tasks: []taskID{}, Type: i.Type}
	for _, t := range i.Tasks {
		out.Tasks = append(out.Tasks, taskID{Connector: i.Name, Task: t})
	}
	return out
}

type stateInfo struct {
	State    engine.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Trace    string       `json:"trace,omitempty"`
}

type taskState struct {
	ID       int          `json:"id"`
	State    engine.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Trace    string       `json:"trace,omitempty"`
	// Report is ours, not Kafka Connect's: a connector's progress and
	// warnings (e.g. a snapshot's rows per table), when it reports any.
	Report *connect.Report `json:"report,omitempty"`
}

type statusBody struct {
	Name      string       `json:"name"`
	Connector stateInfo    `json:"connector"`
	Tasks     []taskState  `json:"tasks"`
	Type      connect.Kind `json:"type"`
}

func toStatus(st engine.ConnectorStatus) statusBody {
	out := statusBody{Name: st.Name, Connector: stateInfo{State: st.State, WorkerID: st.WorkerID, Trace: st.Trace}, Tasks: []taskState{}, Type: st.Type}
	for _, t := range st.Tasks {
		out.Tasks = append(out.Tasks, taskState{ID: t.ID, State: t.State, WorkerID: t.WorkerID, Trace: t.Trace, Report: t.Report})
	}
	return out
}

func (s *Server) listConnectors(w http.ResponseWriter, r *http.Request) {
	names := s.worker.Connectors()
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		writeJSON(w, 200, append([]string{}, names...)) // [] when there are none, not null
		return
	}
	out := map[string]map[string]any{}
	for _, n := range names {
		e := map[string]any{}
		for _, x := range expand {
			switch x {
			case "status":
				if st, err := s.worker.Status(n); err == nil {
					e["status"] = toStatus(st)
				}
			case "info":
				if in, err := s.connectorConfig(n); err == nil {
					e["info"] = toInfo(in)
				}
			}
		}
		out[n] = e
	}
	writeJSON(w, 200, out)
}

type createRequest struct {
	Name         string     `json:"name"`
	Config       configJSON `json:"config"`
	InitialState string     `json:"initial_state"`
}

// createConnector is Kafka Connect's POST /connectors: the name is
// trimmed, a config "name" must be the same, and initial_state is read
// case-insensitively.
func (s *Server) createConnector(w http.ResponseWriter, r *http.Request) {
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if req.Name == "" {
		req.Name = req.Config[keyName]
	}
	req.Name = strings.TrimSpace(req.Name)
	if req.Name == "." || req.Name == ".." {
		// No URL reaches it: /connectors/. and /connectors/.. are cleaned
		// to other paths.
		s.fail(w, fmt.Errorf("%w: connector name %q cannot be used in a URL (/connectors/%s is another path); give another name", engine.ErrBadRequest, req.Name, req.Name))
		return
	}
	if err := checkConfigName(req.Name, req.Config, `the request's "name"`); err != nil {
		s.fail(w, err)
		return
	}
	spec, err := s.specFromConfig(req.Name, req.Config)
	if err != nil {
		s.fail(w, err)
		return
	}
	if spec, err = s.resumeOffsets(r.Context(), spec); err != nil {
		s.fail(w, err)
		return
	}
	if err := s.worker.Create(r.Context(), spec, engine.State(strings.ToUpper(req.InitialState))); err != nil {
		s.fail(w, err)
		return
	}
	info, _ := s.connectorConfig(req.Name)
	w.Header().Set("Location", "/connectors/"+req.Name)
	writeJSON(w, http.StatusCreated, toInfo(info))
}

// resumeOffsets keys a source created anew over REST as the source of
// that name that stored offsets last (engine.Worker.ResumedPipeline), so
// that it resumes from them as in Kafka Connect: one created by a pipeline
// file, deleted, and created again over REST included. A sink resumes
// from its group's offsets (its group is its name, or its group key); it
// is keyed as the sink of that name and group that ran last
// (engine.Worker.ResumedSinkPipeline), so that it keeps that one's
// identity, which the Iceberg sink dedupes its tables' records by.
func (s *Server) resumeOffsets(ctx context.Context, spec engine.ConnectorSpec) (engine.ConnectorSpec, error) {
	if spec.Kind == connect.KindSink {
		group := spec.Group
		if group == "" {
			group = spec.Name
		}
		p, err := s.worker.ResumedSinkPipeline(ctx, spec.Name, group)
		if err != nil {
			return spec, err
		}
		spec.Pipeline = p
		return spec, nil
	}
	p, err := s.worker.ResumedPipeline(ctx, spec.Name)
	if err != nil {
		return spec, err
	}
	spec.Pipeline = p
	return spec, nil
}

func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", engine.ErrBadRequest, err)
	}
	return nil
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *Server) getConnector(w http.ResponseWriter, r *http.Request) {
	info, err := s.connectorConfig(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, toInfo(info))
}

func (s *Server) deleteConnector(w http.ResponseWriter, r *http.Request) {
	if err := s.worker.Delete(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) {
	info, err := s.connectorConfig(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, info.Config)
}

func (s *Server) putConfig(w http.ResponseWriter, r *http.Request) {
	var cfg configJSON
	if err := decodeBody(r, &cfg); err != nil {
		s.fail(w, err)
		return
	}
	name := r.PathValue("name")
	if err := checkConfigName(name, cfg, ""); err != nil {
		s.fail(w, err)
		return
	}
	s.keepMasked(name, cfg)
	spec, err := s.specFromConfig(name, cfg)
	if err != nil {
		s.fail(w, err)
		return
	}
	if old, err := s.worker.Spec(name); err == nil {
		spec.Pipeline, spec.Secrets = old.Pipeline, old.Secrets
		keepTransformSecrets(old.Transforms, spec.Transforms)
	} else if spec, err = s.resumeOffsets(r.Context(), spec); err != nil {
		s.fail(w, err)
		return
	}
	created, err := s.worker.Replace(r.Context(), spec)
	if err != nil {
		s.fail(w, err)
		return
	}
	info, _ := s.connectorConfig(name)
	code := http.StatusOK
	if created {
		code = http.StatusCreated
	}
	writeJSON(w, code, toInfo(info))
}

// patchConfig merges a partial config into the connector's (Kafka Connect
// 3.9's PATCH): a null value removes a key. Setting "transforms" drops the
// settings of the transforms it no longer lists.
func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) {
	var patch configPatchJSON
	if err := decodeBody(r, &patch); err != nil {
		s.fail(w, err)
		return
	}
	name := r.PathValue("name")
	old, err := s.worker.Spec(name)
	if err != nil {
		s.fail(w, err)
		return
	}
	info, err := s.connectorConfigClear(name, true) // secrets in clear, not masked
	if err != nil {
		s.fail(w, err)
		return
	}
	cfg := info.Config
	shown, err := s.connectorConfig(name) // as GET shows it, secrets masked
	if err != nil {
		s.fail(w, err)
		return
	}
	if v, ok := patch[keyTransforms]; ok {
		keep := map[string]bool{}
		if v != nil {
			for _, a := range connect.SplitList(*v) {
				keep[a] = true
			}
		}
		for k := range cfg {
			rest, ok := strings.CutPrefix(k, keyTransforms+".")
			if alias, _, _ := strings.Cut(rest, "."); ok && !keep[alias] {
				delete(cfg, k)
			}
		}
	}
	if _, ok := patch[keyRetryTimeout]; ok {
		if _, also := patch[keyRetries]; !also {
			// The timeout stands for errors.retries (see readConfig): the
			// count shown so far must not win over it.
			delete(cfg, keyRetries)
		}
	}
	for k, v := range patch {
		switch {
		case v == nil:
			delete(cfg, k)
		case *v == connect.Masked || *v == shown.Config[k] && *v != cfg[k]:
			// a masked value sent back (as GET shows it) keeps the secret
		default:
			cfg[k] = *v
		}
	}
	spec, err := s.specFromConfig(name, cfg)
	if err != nil {
		s.fail(w, err)
		return
	}
	spec.Pipeline, spec.Secrets = old.Pipeline, old.Secrets
	keepTransformSecrets(old.Transforms, spec.Transforms)
	if _, err := s.worker.Replace(r.Context(), spec); err != nil {
		s.fail(w, err)
		return
	}
	info, _ = s.connectorConfig(name)
	writeJSON(w, http.StatusOK, toInfo(info))
}

func (s *Server) getStatus(w http.ResponseWriter, r *http.Request) {
	st, err := s.worker.Status(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, toStatus(st))
}

func (s *Server) getTasks(w http.ResponseWriter, r *http.Request) {
	info, err := s.connectorConfig(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	type task struct {
		ID     taskID            `json:"id"`
		Config map[string]string `json:"config"`
	}
	out := []task{}
	for _, t := range info.Tasks {
		out = append(out, task{ID: taskID{Connector: info.Name, Task: t}, Config: info.Config})
	}
	writeJSON(w, 200, out)
}

func (s *Server) taskParam(w http.ResponseWriter, r *http.Request) (engine.ConnectorStatus, int, bool) {
	st, err := s.worker.Status(r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return st, 0, false
	}
	id, err := strconv.Atoi(r.PathValue("id"))
	if err != nil || id < 0 || id >= len(st.Tasks) {
		s.fail(w, fmt.Errorf("%w: Task %s-%s not found", engine.ErrNotFound, st.Name, r.PathValue("id")))
		return st, 0, false
	}
	return st, id, true
}

func (s *Server) getTaskStatus(w http.ResponseWriter, r *http.Request) {
	st, id, ok := s.taskParam(w, r)
	if !ok {
		return
	}
	t := st.Tasks[id]
	writeJSON(w, 200, taskState{ID: t.ID, State: t.State, WorkerID: t.WorkerID, Trace: t.Trace, Report: t.Report})
}

func (s *Server) restartTask(w http.ResponseWriter, r *http.Request) {
	st, _, ok := s.taskParam(w, r)
	if !ok {
		return
	}
	if _, err := s.worker.RestartConnector(r.Context(), st.Name, true, false); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) pause(w http.ResponseWriter, r *http.Request) {
	if err := s.worker.PauseContext(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) resume(w http.ResponseWriter, r *http.Request) {
	if err := s.worker.ResumeContext(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

func (s *Server) stop(w http.ResponseWriter, r *http.Request) {
	if err := s.worker.Stop(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// restart is Kafka Connect's POST …/restart (KIP-745). Without
// includeTasks and onlyFailed it restarts the connector (204). Otherwise
// it restarts the connector unless onlyFailed is set and the connector has
// not failed, and, with includeTasks, each task unless onlyFailed is set
// and the task has not failed; the 202 answer is the status before the
// restart with RESTARTING for every instance it restarts. A connector here
// is its one task: restarting either restarts the task, and the connector
// itself never fails (its task does), so onlyFailed never restarts it.
//
// On a backend that shares target states (kafka) the restart reaches
// every worker that loads the connector, each applying it to its own task
// (Worker.RestartConnector). The answer is this worker's status, as GET
// …/status is: its task shows RESTARTING when this worker restarted it.
func (s *Server) restart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	includeTasks, onlyFailed := q.Get("includeTasks") == "true", q.Get("onlyFailed") == "true"
	if !includeTasks && !onlyFailed {
		if _, err := s.worker.RestartConnector(r.Context(), name, false, false); err != nil {
			s.fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	st, err := s.worker.Status(name)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := toStatus(st)
	// The worker checks the task's state again as it restarts it, so a
	// task that has recovered meanwhile is left be, and the answer says
	// what it did.
	restarted, err := s.worker.RestartConnector(r.Context(), name, includeTasks, onlyFailed)
	if err != nil {
		s.fail(w, err)
		return
	}
	// A stopped connector has no task to restart, and the workers leave it
	// stopped: nothing is RESTARTING.
	if st.State != engine.StateStopped && !onlyFailed {
		out.Connector.State = engine.StateRestarting
	}
	if restarted && includeTasks {
		for i := range out.Tasks {
			out.Tasks[i].State, out.Tasks[i].Report = engine.StateRestarting, nil
		}
	}
	writeJSON(w, http.StatusAccepted, out)
}

func (s *Server) getOffsets(w http.ResponseWriter, r *http.Request) {
	offs, err := s.worker.Offsets(r.Context(), r.PathValue("name"))
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"offsets": offs})
}

func (s *Server) patchOffsets(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Offsets []engine.OffsetEntry `json:"offsets"`
	}
	if err := decodeBody(r, &body); err != nil {
		s.fail(w, err)
		return
	}
	if len(body.Offsets) == 0 {
		// Kafka Connect's message: altering nothing is a mistake, not a
		// success.
		s.fail(w, fmt.Errorf(`%w: Partitions / offsets need to be provided for an alter offsets request; `+
			`give {"offsets":[{"partition":{…},"offset":{…}}]} (GET /connectors/%s/offsets shows them), or DELETE the offsets to reset them all`,
			engine.ErrBadRequest, r.PathValue("name")))
		return
	}
	notes, err := s.worker.AlterOffsetsWithNotes(r.Context(), r.PathValue("name"), body.Offsets)
	if err != nil {
		s.fail(w, err)
		return
	}
	// Kafka Connect's message, with what the offsets will do where they
	// are accepted but not applied as written (below the log start).
	msg := "The offsets for this connector have been altered successfully"
	if len(notes) > 0 {
		msg += ". Note: " + strings.Join(notes, "; ")
	}
	writeJSON(w, 200, map[string]string{"message": msg})
}

func (s *Server) deleteOffsets(w http.ResponseWriter, r *http.Request) {
	if err := s.worker.ResetOffsets(r.Context(), r.PathValue("name")); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, map[string]string{"message": "The offsets for this connector have been reset successfully"})
}

// SignalJSON is a Debezium-style signal:
// {"type":"execute-snapshot","data":{"data-collections":["public.orders"],"type":"incremental"}}.
type SignalJSON struct {
	Type string `json:"type"`
	Data struct {
		DataCollections []string `json:"data-collections"`
		Type            string   `json:"type"`
	} `json:"data"`
}

func (s *Server) signal(w http.ResponseWriter, r *http.Request) {
	var sig SignalJSON
	if err := decodeBody(r, &sig); err != nil {
		s.fail(w, err)
		return
	}
	if t := sig.Data.Type; t != "" && t != "incremental" {
		s.fail(w, fmt.Errorf("%w: snapshot type %q: only incremental snapshots run while streaming", engine.ErrBadRequest, t))
		return
	}
	if err := s.worker.Signal(r.Context(), r.PathValue("name"), sig.Type, sig.Data.DataCollections); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"message": "signal " + sig.Type + " accepted"})
}

func (s *Server) plugins(w http.ResponseWriter, r *http.Request) {
	type plugin struct {
		Class   string       `json:"class"`
		Type    connect.Kind `json:"type"`
		Version string       `json:"version"`
	}
	out := []plugin{}
	for _, c := range s.worker.Registry().List() {
		out = append(out, plugin{Class: c.Name, Type: c.Kind, Version: c.Version})
	}
	writeJSON(w, 200, out)
}

type configDefinition struct {
	Name          string   `json:"name"`
	Type          string   `json:"type"`
	Required      bool     `json:"required"`
	DefaultValue  *string  `json:"default_value"`
	Importance    string   `json:"importance"`
	Documentation string   `json:"documentation"`
	Group         *string  `json:"group"`
	WidthOrder    int      `json:"order"`
	Dependents    []string `json:"dependents"`
}

type configValue struct {
	Name              string   `json:"name"`
	Value             *string  `json:"value"`
	RecommendedValues []string `json:"recommended_values"`
	Errors            []string `json:"errors"`
	Visible           bool     `json:"visible"`
}

type configInfo struct {
	Definition configDefinition `json:"definition"`
	Value      configValue      `json:"value"`
}

// validate answers Kafka Connect's config validation: the worker's keys
// (groups Common, Transforms and Error Handling) and the connector's own
// (a group named after it), each with its value and its problems, found as
// POST /connectors finds them; keys nobody defines come last, with their
// problem.
func (s *Server) validate(w http.ResponseWriter, r *http.Request) {
	var cfg configJSON
	if err := decodeBody(r, &cfg); err != nil {
		s.fail(w, err)
		return
	}
	typ := r.PathValue("type")
	if c, ok := cfg[keyClass]; ok && c != typ {
		s.fail(w, fmt.Errorf("%w: Included connector type %s does not match request type %s", engine.ErrBadRequest, c, typ))
		return
	}
	cfg = maps.Clone(cfg)
	if cfg == nil {
		cfg = map[string]string{}
	}
	given := maps.Clone(cfg)
	cfg[keyClass] = typ
	_, conn, problems, err := s.readConfig(cfg[keyName], cfg, false)
	if err != nil {
		s.fail(w, err)
		return
	}
	// Values echo masked as everywhere else: secret parameters whole, and
	// the credentials the connector's Redact finds inside others (a URL's
	// password, a header's token).
	given = conn.Spec.Mask(given)
	errs := map[string][]string{}
	for _, p := range problems {
		k := p.key
		if k == "" {
			k = keyClass // a problem of the config as a whole
		}
		errs[k] = append(errs[k], p.msg)
	}
	listed := map[string]bool{}
	configs := []configInfo{}
	groups := []string{}
	add := func(def configDefinition, enum []string, secret bool) {
		if def.Group != nil && !slices.Contains(groups, *def.Group) {
			groups = append(groups, *def.Group)
		}
		val := configValue{Name: def.Name, RecommendedValues: append([]string{}, enum...), Errors: append([]string{}, errs[def.Name]...), Visible: true}
		if v, ok := given[def.Name]; ok {
			if secret {
				v = connect.Masked
			}
			val.Value = &v
		}
		listed[def.Name] = true
		configs = append(configs, configInfo{Definition: def, Value: val})
	}
	order := map[string]int{}
	for _, k := range commonKeys {
		if k.kind != "" && k.kind != conn.Kind {
			continue
		}
		order[k.group]++
		def := configDefinition{Name: k.name, Type: k.typ, Required: k.required, Importance: "MEDIUM", Documentation: k.doc,
			Group: &k.group, WidthOrder: order[k.group], Dependents: []string{}}
		if k.required {
			def.Importance = "HIGH"
		}
		if k.def != "" {
			d := k.def
			def.DefaultValue = &d
		}
		add(def, k.enum, false)
	}
	own := conn.Name
	for i, p := range conn.Spec.Params {
		def := configDefinition{Name: p.Name, Type: strings.ToUpper(string(p.Type)), Required: p.Required, Importance: "MEDIUM",
			Documentation: p.Description, Group: &own, WidthOrder: i + 1, Dependents: []string{}}
		if p.Required {
			def.Importance = "HIGH"
		}
		if p.Default != "" {
			d := p.Default
			def.DefaultValue = &d
		}
		add(def, p.Enum, p.IsSecret())
	}
	for _, p := range problems {
		if p.key == "" || listed[p.key] {
			continue
		}
		v := given[p.key]
		listed[p.key] = true
		configs = append(configs, configInfo{
			Definition: configDefinition{Name: p.key, Type: "STRING", Importance: "LOW", Documentation: "unknown parameter", Dependents: []string{}},
			Value:      configValue{Name: p.key, Value: &v, RecommendedValues: []string{}, Errors: append([]string{}, errs[p.key]...), Visible: true},
		})
	}
	writeJSON(w, 200, map[string]any{"name": conn.Name, "error_count": len(problems), "groups": groups, "configs": configs})
}

// Log endpoints (embedded backend only).

// NoLogEndpoints is the message of the log endpoints of a worker that runs
// another backend (the kafka backend): the CLI recognises it.
const NoLogEndpoints = "this worker runs the kafka backend: topic, record and group commands through --server need a worker on the embedded backend; use Kafka's own tools against the brokers instead, e.g. kcat -b BROKERS -L"

func (s *Server) needLog(w http.ResponseWriter) bool {
	if s.log == nil {
		writeJSON(w, 404, apiError{ErrorCode: 404, Message: NoLogEndpoints})
		return false
	}
	return true
}

// Topic states in GET /topics?expand=status.
const (
	TopicOpen = "OPEN"
	// TopicNotOpened: the topic has more partitions than the worker's
	// limit, so the log left it closed at open (see tlog.TopicNotOpenedError).
	TopicNotOpened = "NOT_OPENED"
)

// TopicStatusJSON is a topic's status in GET /topics?expand=status and
// GET /topics/{t}.
type TopicStatusJSON struct {
	State string `json:"state"`
	// Partitions, Limit and Message are set for a topic not opened: its
	// partition count, the worker's limit, and what its lookups answer.
	Partitions int    `json:"partitions,omitempty"`
	Limit      int    `json:"limit,omitempty"`
	Message    string `json:"message,omitempty"`
}

// TopicListEntry is a topic in GET /topics?expand=status, shaped as Kafka
// Connect's GET /connectors?expand=status.
type TopicListEntry struct {
	Status TopicStatusJSON `json:"status"`
}

// listTopics answers the names of the open topics, or with ?expand=status
// every topic of the log by name with its status, the topics the log left
// closed at open (over the partition limit) included.
func (s *Server) listTopics(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	if !slices.Contains(r.URL.Query()["expand"], "status") {
		writeJSON(w, 200, s.log.ListTopics())
		return
	}
	out := map[string]TopicListEntry{}
	for _, n := range s.log.ListTopics() {
		out[n] = TopicListEntry{Status: TopicStatusJSON{State: TopicOpen}}
	}
	for _, no := range s.log.NotOpenedTopics() {
		out[no.Topic] = TopicListEntry{Status: *notOpenedStatus(&no)}
	}
	writeJSON(w, 200, out)
}

// TopicRequest creates a topic.
type TopicRequest struct {
	Name       string            `json:"name"`
	Partitions int               `json:"partitions"`
	Config     map[string]string `json:"config"`
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	var req TopicRequest
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	if err := s.log.CreateTopic(req.Name, req.Partitions, req.Config); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, map[string]string{"name": req.Name})
}

// PartitionJSON describes one partition. Its offsets and size are null
// when unknown: the partitions of a topic the log left closed are not read.
type PartitionJSON struct {
	Partition      int32  `json:"partition"`
	LogStartOffset *int64 `json:"log_start_offset"`
	LogEndOffset   *int64 `json:"log_end_offset"`
	Size           *int64 `json:"size"`
}

// TopicJSON describes a topic. Status is its state, as GET
// /topics?expand=status gives it: a topic the log left closed (over the
// partition limit) is described from what the log stored for it, its id,
// configs and partition count, with its partitions' offsets unknown.
type TopicJSON struct {
	Name       string            `json:"name"`
	ID         string            `json:"id"`
	Partitions []PartitionJSON   `json:"partitions"`
	Overrides  map[string]string `json:"overrides"`
	Config     map[string]string `json:"config"`
	// Status is nil in the answers of workers older than it.
	Status *TopicStatusJSON `json:"status,omitempty"`
}

func (s *Server) describeTopic(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	name := r.PathValue("topic")
	d, err := s.log.DescribeTopic(name)
	var notOpened *tlog.TopicNotOpenedError
	if errors.As(err, &notOpened) {
		s.describeNotOpenedTopic(w, notOpened)
		return
	}
	if err != nil {
		s.fail(w, err)
		return
	}
	out := TopicJSON{Name: d.Name, ID: d.ID, Overrides: d.Overrides, Config: d.Config, Partitions: []PartitionJSON{}, Status: &TopicStatusJSON{State: TopicOpen}}
	for _, p := range d.Partitions {
		out.Partitions = append(out.Partitions, PartitionJSON{Partition: p.Partition, LogStartOffset: &p.LogStartOffset, LogEndOffset: &p.LogEndOffset, Size: &p.Size})
	}
	writeJSON(w, 200, out)
}

// describeNotOpenedTopic answers GET /topics/{t} for a topic the log left
// closed: its stored id and configs, its partitions without offsets, and
// why it is closed.
func (s *Server) describeNotOpenedTopic(w http.ResponseWriter, no *tlog.TopicNotOpenedError) {
	d, err := s.log.DescribeTopicConfig(no.Topic)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := TopicJSON{Name: d.Name, ID: d.ID, Overrides: d.Overrides, Config: d.Config, Partitions: make([]PartitionJSON, no.Partitions), Status: notOpenedStatus(no)}
	for p := range out.Partitions {
		out.Partitions[p].Partition = int32(p)
	}
	writeJSON(w, 200, out)
}

// notOpenedStatus is the status of a topic the log left closed.
func notOpenedStatus(no *tlog.TopicNotOpenedError) *TopicStatusJSON {
	return &TopicStatusJSON{State: TopicNotOpened, Partitions: no.Partitions, Limit: no.Limit, Message: no.Error()}
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	if err := s.log.DeleteTopic(r.PathValue("topic")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// RecordJSON is a record on the wire of the record endpoints. Key, value
// and header values are strings (null for null) in the request's encoding
// (see RecordEncoding); headers keep their order.
type RecordJSON struct {
	Partition int32        `json:"partition"`
	Offset    int64        `json:"offset"`
	Timestamp int64        `json:"timestamp"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []HeaderJSON `json:"headers,omitempty"`
}

// ReadJSON is the answer of a record read.
type ReadJSON struct {
	Records        []RecordJSON `json:"records"`
	NextOffset     int64        `json:"next_offset"`
	HighWatermark  int64        `json:"high_watermark"`
	LogStartOffset int64        `json:"log_start_offset"`
	// Encoding is the encoding of the records' bytes: text or base64.
	Encoding RecordEncoding `json:"encoding"`
}

// Encodings of keys, values and header values in the record endpoints,
// chosen with the query parameter encoding.
const (
	// EncodingText, the default, carries bytes as JSON strings: readable
	// with curl, but bytes that are not UTF-8 read as U+FFFD.
	EncodingText = "text"
	// EncodingBase64 carries bytes exactly, in standard base64 with
	// padding (RFC 4648 section 4). Header names stay text.
	EncodingBase64 = "base64"
)

// RecordEncoding is how the record endpoints carry a record's bytes.
type RecordEncoding string

// parseEncoding reads the query parameter encoding: text when absent, a
// 400 when it names no encoding.
func parseEncoding(q map[string][]string) (RecordEncoding, error) {
	v := EncodingText
	if vs := q["encoding"]; len(vs) > 0 {
		v = vs[0]
	}
	switch v {
	case EncodingText, EncodingBase64:
		return RecordEncoding(v), nil
	}
	return "", fmt.Errorf("%w: query parameter encoding=%q: want %s (the default: keys, values and header values as JSON strings, bytes that are not UTF-8 read as U+FFFD) or %s (their bytes exactly, in standard base64)", engine.ErrBadRequest, v, EncodingText, EncodingBase64)
}

// Encode returns b as a string of the encoding, nil for nil.
func (e RecordEncoding) Encode(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	if e == EncodingBase64 {
		s = base64.StdEncoding.EncodeToString(b)
	}
	return &s
}

// Decode returns the bytes of a string of the encoding, nil for nil.
func (e RecordEncoding) Decode(s *string) ([]byte, error) {
	if s == nil {
		return nil, nil
	}
	if e != EncodingBase64 {
		return []byte(*s), nil
	}
	b, err := base64.StdEncoding.DecodeString(*s)
	if err != nil {
		return nil, fmt.Errorf("not standard base64 (A-Z a-z 0-9 + / with = padding): %v", err)
	}
	if b == nil {
		b = []byte{} // "" is empty, not null
	}
	return b, nil
}

// EncodeHeader returns h with its value in the encoding.
func (e RecordEncoding) EncodeHeader(h tlog.Header) HeaderJSON {
	k := h.Key
	return HeaderJSON{&k, e.Encode(h.Value)}
}

// DecodeHeader returns the log's header of h, its value in the encoding: a
// null name reads as "", a null value stays nil.
func (e RecordEncoding) DecodeHeader(h HeaderJSON) (tlog.Header, error) {
	var out tlog.Header
	if h[0] != nil {
		out.Key = *h[0]
	}
	v, err := e.Decode(h[1])
	if err != nil {
		return tlog.Header{}, fmt.Errorf("value of header %q: %w", out.Key, err)
	}
	out.Value = v
	return out, nil
}

func (s *Server) readRecords(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	q := r.URL.Query()
	p, err := pathPartition(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	enc, err := parseEncoding(q)
	if err != nil {
		s.fail(w, err)
		return
	}
	offset, err := queryInt(q, "offset", 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	maxBytes, err := queryInt(q, "max_bytes", 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	waitMs, err := queryInt(q, "max_wait_ms", 0)
	if err != nil {
		s.fail(w, err)
		return
	}
	res, err := s.log.Read(r.Context(), r.PathValue("topic"), p, offset, tlog.ReadOptions{MaxBytes: int(min(maxBytes, 64<<20)), MaxWait: time.Duration(min(waitMs, 30000)) * time.Millisecond})
	if err != nil {
		s.fail(w, err)
		return
	}
	out := ReadJSON{Encoding: enc, Records: []RecordJSON{}, NextOffset: res.NextOffset, HighWatermark: res.HighWatermark, LogStartOffset: res.LogStartOffset}
	for _, rec := range res.Records {
		rj := RecordJSON{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(), Key: enc.Encode(rec.Key), Value: enc.Encode(rec.Value)}
		for _, h := range rec.Headers {
			rj.Headers = append(rj.Headers, enc.EncodeHeader(h))
		}
		out.Records = append(out.Records, rj)
	}
	writeJSON(w, 200, out)
}

// pathPartition reads the partition number of a path: a 400 when it is not
// a number or beyond int32 (it must not wrap around to another partition).
func pathPartition(r *http.Request) (int32, error) {
	v := r.PathValue("p")
	p, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%w: partition %q is not a partition number: want an integer from 0 to %d", engine.ErrBadRequest, v, math.MaxInt32)
	}
	return int32(p), nil
}

// queryInt parses an optional non-negative integer query parameter: def
// when absent, a 400 when it is not a number or negative (a typo must not
// read from somewhere else than asked).
func queryInt(q map[string][]string, name string, def int64) (int64, error) {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return def, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: query parameter %s=%q: want a non-negative integer", engine.ErrBadRequest, name, v[0])
	}
	return n, nil
}

// ProduceJSON is the body of a produce request.
type ProduceJSON struct {
	Records []ProduceRecordJSON `json:"records"`
}

// ProducedJSON is the answer of a produce request: how many records were
// appended, and the encoding their bytes were read in.
type ProducedJSON struct {
	Acknowledged int            `json:"acknowledged"`
	Encoding     RecordEncoding `json:"encoding"`
}

// ProduceRecordJSON is a record to produce: an optional partition (-1 or
// absent: the partitioner picks), and key, value and header values in the
// request's encoding (see RecordEncoding), null for null.
type ProduceRecordJSON struct {
	Partition *int32       `json:"partition"`
	Key       *string      `json:"key"`
	Value     *string      `json:"value"`
	Headers   []HeaderJSON `json:"headers"`
}

// decodeRecord returns the log's record of rec, its bytes in e.
func (e RecordEncoding) decodeRecord(rec ProduceRecordJSON) (tlog.Record, error) {
	var lr tlog.Record
	var err error
	if lr.Key, err = e.Decode(rec.Key); err != nil {
		return tlog.Record{}, fmt.Errorf("key: %w", err)
	}
	if lr.Value, err = e.Decode(rec.Value); err != nil {
		return tlog.Record{}, fmt.Errorf("value: %w", err)
	}
	for _, h := range rec.Headers {
		hh, err := e.DecodeHeader(h)
		if err != nil {
			return tlog.Record{}, err
		}
		lr.Headers = append(lr.Headers, hh)
	}
	return lr, nil
}

func (s *Server) produceRecords(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	enc, err := parseEncoding(r.URL.Query())
	if err != nil {
		s.fail(w, err)
		return
	}
	var body ProduceJSON
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<20))
	if err := dec.Decode(&body); err != nil {
		s.fail(w, fmt.Errorf("%w: request body: %v", engine.ErrBadRequest, err))
		return
	}
	topic := r.PathValue("topic")
	var keyed []tlog.Record
	byPart := map[int32][]tlog.Record{}
	for i, rec := range body.Records {
		lr, err := enc.decodeRecord(rec)
		if err != nil {
			// Nothing of the request is produced: the client can fix the
			// record and send the whole request again.
			s.fail(w, fmt.Errorf("%w: records[%d]: %v; with encoding=%s send keys, values and header values in base64, or drop the parameter to send them as text", engine.ErrBadRequest, i, err, enc))
			return
		}
		if rec.Partition != nil && *rec.Partition >= 0 {
			byPart[*rec.Partition] = append(byPart[*rec.Partition], lr)
		} else {
			keyed = append(keyed, lr)
		}
	}
	n := 0
	if len(keyed) > 0 {
		if err := s.log.Produce(r.Context(), topic, keyed); err != nil {
			s.fail(w, err)
			return
		}
		n += len(keyed)
	}
	for p, recs := range byPart {
		if _, err := s.log.Append(r.Context(), topic, p, recs); err != nil {
			s.fail(w, err)
			return
		}
		n += len(recs)
	}
	writeJSON(w, 200, ProducedJSON{Acknowledged: n, Encoding: enc})
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	writeJSON(w, 200, s.log.Groups().List())
}

// AlterTopicJSON grows a topic or changes its configs.
type AlterTopicJSON struct {
	Partitions   int               `json:"partitions,omitempty"`
	Config       map[string]string `json:"config,omitempty"`
	DeleteConfig []string          `json:"delete_config,omitempty"`
}

func (s *Server) alterTopic(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	var req AlterTopicJSON
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	topic := r.PathValue("topic")
	if req.Partitions > 0 {
		if err := s.log.CreatePartitions(topic, req.Partitions); err != nil {
			s.fail(w, err)
			return
		}
	}
	if len(req.Config) > 0 || len(req.DeleteConfig) > 0 {
		if err := s.log.AlterTopicConfig(topic, req.Config, req.DeleteConfig); err != nil {
			s.fail(w, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// OffsetsJSON answers a partition offsets query.
type OffsetsJSON struct {
	LogStartOffset int64 `json:"log_start_offset"`
	LogEndOffset   int64 `json:"log_end_offset"`
	// With ?timestamp=MS: the first offset at or after it, and whether
	// one exists.
	Offset *int64 `json:"offset,omitempty"`
	Found  bool   `json:"found,omitempty"`
}

func (s *Server) partitionOffsets(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	p, err := pathPartition(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	topic := r.PathValue("topic")
	start, end, err := s.log.Offsets(topic, p)
	if err != nil {
		s.fail(w, err)
		return
	}
	out := OffsetsJSON{LogStartOffset: start, LogEndOffset: end}
	if ts := r.URL.Query().Get("timestamp"); ts != "" {
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil {
			s.fail(w, fmt.Errorf("%w: timestamp %q is not milliseconds", engine.ErrBadRequest, ts))
			return
		}
		off, found, err := s.log.OffsetForTime(topic, p, time.UnixMilli(ms))
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Offset, out.Found = &off, found
	}
	writeJSON(w, 200, out)
}

// DeleteRecordsJSON asks to delete a partition's records below Offset (-1:
// the high watermark), as kafka-delete-records.sh; the answer carries the
// partition's log start offset after it.
type DeleteRecordsJSON struct {
	Offset       int64  `json:"offset"`
	LowWatermark *int64 `json:"low_watermark,omitempty"`
}

func (s *Server) deleteRecords(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	p, err := pathPartition(r)
	if err != nil {
		s.fail(w, err)
		return
	}
	var req DeleteRecordsJSON
	if err := decodeBody(r, &req); err != nil {
		s.fail(w, err)
		return
	}
	low, err := s.log.DeleteRecords(r.PathValue("topic"), p, req.Offset)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, 200, DeleteRecordsJSON{Offset: req.Offset, LowWatermark: &low})
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	if err := s.checkIdle(r.PathValue("group"), "delete"); err != nil {
		s.fail(w, err)
		return
	}
	if err := s.log.Groups().Delete(r.Context(), r.PathValue("group")); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// CommitJSON commits offsets of a group.
type CommitJSON struct {
	Offsets []GroupPartitionJSON `json:"offsets"`
}

func (s *Server) commitGroup(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	var req CommitJSON
	// Strict: an unknown field (say "offset" for "current_offset") would
	// otherwise commit offset 0.
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, fmt.Errorf("%w: request body: %v", engine.ErrBadRequest, err))
		return
	}
	if err := s.checkIdle(r.PathValue("group"), "commit offsets of"); err != nil {
		s.fail(w, err)
		return
	}
	var cs []tlog.OffsetCommit
	for _, o := range req.Offsets {
		// The log accepts commits for topics that do not exist, as Kafka's
		// coordinator does; an admin request naming one is a mistake.
		if o.CurrentOffset < 0 {
			s.fail(w, fmt.Errorf("%w: %s-%d: current_offset %d: offsets start at 0", engine.ErrBadRequest, o.Topic, o.Partition, o.CurrentOffset))
			return
		}
		n, err := s.log.Partitions(o.Topic)
		if err != nil {
			s.fail(w, fmt.Errorf("commit offsets of group %s: %w", r.PathValue("group"), err))
			return
		}
		if err := tlog.CheckPartition(o.Topic, o.Partition, n); err != nil {
			s.fail(w, fmt.Errorf("commit offsets of group %s: %w", r.PathValue("group"), err))
			return
		}
		cs = append(cs, tlog.OffsetCommit{Topic: o.Topic, Partition: o.Partition, Offset: o.CurrentOffset})
	}
	if err := s.log.Groups().Commit(r.Context(), r.PathValue("group"), cs); err != nil {
		s.fail(w, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ResetJSON asks for an offset reset plan, applied when Execute is set.
type ResetJSON struct {
	Spec    tlog.ResetSpec   `json:"spec"`
	Plan    []tlog.ResetPlan `json:"plan,omitempty"` // apply this plan as it is
	Execute bool             `json:"execute"`
}

// resetBodyHelp describes the body of POST /groups/{g}/reset for the
// answers to one that is wrong.
const resetBodyHelp = `the body is {"spec":{"Mode":"to-earliest|to-latest|to-offset|to-datetime|by-duration|shift-by|to-current",` +
	`"Offset":N,"Time":"2026-01-01T00:00:00Z","Duration":NANOSECONDS,"Shift":±N,"AllTopics":true or "Topics":[{"Topic":"t","Partitions":[0,1]}]},"execute":false}` +
	` (the modes of kafka-consumer-groups.sh --reset-offsets: Offset goes with to-offset, Time with to-datetime, Duration with by-duration, Shift with shift-by;` +
	` "execute":true applies the plan, else it is a dry run)`

func (s *Server) resetGroup(w http.ResponseWriter, r *http.Request) {
	if !s.needLog(w) {
		return
	}
	var req ResetJSON
	// Strict: a mode outside "spec" would otherwise read as no mode.
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.fail(w, fmt.Errorf("%w: request body: %v; %s", engine.ErrBadRequest, err, resetBodyHelp))
		return
	}
	group := r.PathValue("group")
	plan := req.Plan
	if plan == nil {
		var err error
		if plan, err = s.log.Groups().PlanReset(group, req.Spec); err != nil {
			if errors.Is(err, tlog.ErrInvalidReset) {
				err = fmt.Errorf("%w; %s", err, resetBodyHelp)
			}
			s.fail(w, fmt.Errorf("%w: %v", engine.ErrBadRequest, err))
			return
		}
	}
	if req.Execute {
		if err := s.checkIdle(group, "reset offsets of"); err != nil {
			s.fail(w, err)
			return
		}
		if err := s.log.Groups().ApplyReset(r.Context(), group, plan); err != nil {
			s.fail(w, err)
			return
		}
	}
	writeJSON(w, 200, map[string]any{"plan": plan, "executed": req.Execute})
}

// HeaderJSON is a record header in the record endpoints: [name, value],
// the value null for a null header value (kcat's -J does the same).
type HeaderJSON [2]*string

// Header is the log's header of text h: a null name reads as "", a null
// value stays nil.
func (h HeaderJSON) Header() tlog.Header {
	out, _ := RecordEncoding(EncodingText).DecodeHeader(h) // text never fails
	return out
}

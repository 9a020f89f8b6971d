package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// reportTimeout bounds a Report call: a status must not wait on a plugin.
const reportTimeout = 500 * time.Millisecond

// instance is the host side of one connector instance: its plugin process,
// started by Open and stopped by Close.
type instance struct {
	p *Plugin
	// proc is nil until Open succeeds and after Close. It is atomic for
	// Report, which the worker calls from a goroutine of its own.
	proc atomic.Pointer[process]
	// tailTopics is a connect.TailRecoverer source's TailTopics, which the
	// plugin sends with its answer to Open; set before Open returns.
	tailTopics []string
}

// open starts the plugin process, checks that it is still the connector
// that was discovered, and opens the connector in it.
func (in *instance) open(ctx context.Context, cfg connect.Config) error {
	if in.proc.Load() != nil {
		return fmt.Errorf("plugin %s: open called twice", in.p.Name)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	h := in.p.host
	proc, err := h.start(in.p.Path, in.p.Name, in.p.pin)
	if err != nil {
		return err
	}
	d, err := h.describe(ctx, proc)
	if err == nil && (d.Name != in.p.Name || connect.Kind(d.Kind) != in.p.Kind) {
		err = fmt.Errorf("plugin %s now provides the %s connector %q, not the %s connector %q it did when the worker started: restart the worker to load plugins again",
			in.p.Path, d.Kind, d.Name, in.p.Kind, in.p.Name)
	}
	if err == nil {
		// The instance was made (NewSource) with the interfaces the plugin
		// announced when it was inspected; the worker calls them, so the
		// process must still have them.
		durable, recovers := sourceExtras(proc, d)
		if (in.p.durable && !durable) || (in.p.recovers && !recovers) {
			err = fmt.Errorf("plugin %s no longer implements connect.DurableNotifier and connect.TailRecoverer as it did when the worker started (now %t and %t, protocol version %d): restart the worker to load plugins again",
				in.p.Path, durable, recovers, proc.version)
		}
	}
	if err == nil {
		req := &pluginpb.OpenRequest{Kind: string(in.p.Kind), Config: toPBConfig(cfg), TailTopics: in.p.recovers}
		err = proc.call(ctx, "open", h.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
			resp, err := proc.rpc.Open(ctx, req)
			if err != nil {
				return nil, err
			}
			in.tailTopics = resp.TailTopics
			return resp.Error, nil
		})
	}
	if err != nil {
		proc.end(proc.failure() == nil)
		return err
	}
	in.proc.Store(proc)
	in.p.host.logger.Debug("plugin started", "plugin", in.p.Name, "path", filepath.Base(in.p.Path), "pid", proc.pid,
		"pipeline", cfg.Pipeline, "connector", cfg.Connector, "task", cfg.Task)
	return nil
}

// notOpen is the error of a call before Open or after Close.
func (in *instance) notOpen(op string) error {
	return fmt.Errorf("plugin %s: %s on an instance that is not open", in.p.Name, op)
}

// close closes the connector in its process and stops the process, even
// when ctx is done.
func (in *instance) close(ctx context.Context) error {
	proc := in.proc.Swap(nil)
	if proc == nil {
		return nil
	}
	if proc.failure() != nil {
		return nil // the process is gone already; the failed call reported why
	}
	err := proc.call(context.WithoutCancel(ctx), "close", in.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Close(ctx, &pluginpb.CloseRequest{})
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
	proc.end(proc.failure() == nil)
	return err
}

func (in *instance) report() connect.Report {
	proc := in.proc.Load()
	if proc == nil || proc.failure() != nil {
		return connect.Report{}
	}
	var rep connect.Report
	ctx, cancel := context.WithTimeout(context.Background(), reportTimeout)
	defer cancel()
	resp, err := proc.rpc.Report(ctx, &pluginpb.ReportRequest{})
	if err == nil && len(resp.ReportJson) > 0 {
		err = json.Unmarshal(resp.ReportJson, &rep)
	}
	if err != nil {
		// Not a failure of the task: a failed call fails it, if the
		// plugin is gone.
		return connect.Report{Warnings: []string{fmt.Sprintf("plugin %s did not report its progress: %v", in.p.Name, err)}}
	}
	return rep
}

// source is a connect.Source running in a plugin process.
type source struct{ instance }

// The optional interfaces of a source, each implemented by a type that
// newSource embeds only when the plugin's source implements it: the worker
// finds them by type assertion.
type (
	// sourceReporter is a connect.Reporter.
	sourceReporter struct{ s *source }
	// sourceDurable is a connect.DurableNotifier (protocol 2).
	sourceDurable struct{ s *source }
	// sourceRecoverer is a connect.TailRecoverer (protocol 2).
	sourceRecoverer struct{ s *source }
)

func (x sourceReporter) Report() connect.Report { return x.s.report() }

func (x sourceDurable) Durable(ctx context.Context, pos connect.Position) error {
	return x.s.durable(ctx, pos)
}

func (x sourceRecoverer) TailTopics() []string { return x.s.tailTopics }

func (x sourceRecoverer) RecoverTail(ctx context.Context, records []connect.Record) error {
	return x.s.recoverTail(ctx, records)
}

var (
	_ connect.Source          = (*source)(nil)
	_ connect.Reporter        = sourceReporter{}
	_ connect.DurableNotifier = sourceDurable{}
	_ connect.TailRecoverer   = sourceRecoverer{}
)

// newSource returns a source that implements connect.Reporter,
// connect.DurableNotifier and connect.TailRecoverer exactly when the
// plugin's source does.
func newSource(p *Plugin) connect.Source {
	s := &source{instance{p: p}}
	r, d, t := sourceReporter{s}, sourceDurable{s}, sourceRecoverer{s}
	switch {
	case p.reporter && p.durable && p.recovers:
		return struct {
			*source
			sourceReporter
			sourceDurable
			sourceRecoverer
		}{s, r, d, t}
	case p.reporter && p.durable:
		return struct {
			*source
			sourceReporter
			sourceDurable
		}{s, r, d}
	case p.reporter && p.recovers:
		return struct {
			*source
			sourceReporter
			sourceRecoverer
		}{s, r, t}
	case p.durable && p.recovers:
		return struct {
			*source
			sourceDurable
			sourceRecoverer
		}{s, d, t}
	case p.reporter:
		return struct {
			*source
			sourceReporter
		}{s, r}
	case p.durable:
		return struct {
			*source
			sourceDurable
		}{s, d}
	case p.recovers:
		return struct {
			*source
			sourceRecoverer
		}{s, t}
	}
	return s
}

func (s *source) Open(ctx context.Context, cfg connect.Config) error { return s.open(ctx, cfg) }

// Read asks the plugin for the next batch. The plugin answers within
// ReadWait, with an empty batch when its source had nothing, so the call's
// deadline is ReadWait plus CallTimeout.
func (s *source) Read(ctx context.Context) ([]connect.Record, error) {
	proc := s.proc.Load()
	if proc == nil {
		return nil, s.notOpen("read")
	}
	opts := s.p.host.opts
	wait := opts.ReadWait
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		wait = max(time.Until(dl), time.Millisecond)
	}
	var recs []connect.Record
	err := proc.call(ctx, "read", opts.ReadWait+opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Read(ctx, &pluginpb.ReadRequest{WaitNs: int64(wait)})
		if err != nil {
			return nil, err
		}
		recs = fromPBRecords(resp.Records)
		return resp.Error, nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

func (s *source) Ack(ctx context.Context, pos connect.Position) error {
	proc := s.proc.Load()
	if proc == nil {
		return s.notOpen("ack")
	}
	req := &pluginpb.AckRequest{Position: pos}
	return proc.call(ctx, "ack", s.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Ack(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
}

// durable forwards connect.DurableNotifier's Durable. Its error keeps its
// class: a Retryable one is covered by the next call, as the worker
// expects; a failed call (the process died or hangs) fails the task.
func (s *source) durable(ctx context.Context, pos connect.Position) error {
	proc := s.proc.Load()
	if proc == nil {
		return s.notOpen("durable")
	}
	req := &pluginpb.DurableRequest{Position: pos}
	return proc.call(ctx, "durable", s.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Durable(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
}

// recoverTail forwards connect.TailRecoverer's RecoverTail: the records
// cross as a sink's do, with their Topic, Partition and Offset.
func (s *source) recoverTail(ctx context.Context, records []connect.Record) error {
	proc := s.proc.Load()
	if proc == nil {
		return s.notOpen("recover tail")
	}
	req := &pluginpb.RecoverTailRequest{Records: toPBRecords(records)}
	return proc.call(ctx, "recover tail", s.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.RecoverTail(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
}

func (s *source) Close(ctx context.Context) error { return s.close(ctx) }

// sink is a connect.Sink running in a plugin process.
type sink struct {
	instance
	writes atomic.Uint64 // the stop_id of the last Write (protocol 3)
}

// The sink variants for plugins whose sink is a connect.Flusher, a
// connect.Reporter, or both: the worker finds these by type assertion.
type (
	flushingSink          struct{ *sink }
	reportingSink         struct{ *sink }
	flushingReportingSink struct{ *sink }
)

func (s flushingSink) Flush(ctx context.Context) error          { return s.flush(ctx) }
func (s reportingSink) Report() connect.Report                  { return s.report() }
func (s flushingReportingSink) Flush(ctx context.Context) error { return s.flush(ctx) }
func (s flushingReportingSink) Report() connect.Report          { return s.report() }

var (
	_ connect.Sink     = (*sink)(nil)
	_ connect.Flusher  = flushingSink{}
	_ connect.Reporter = reportingSink{}
	_ connect.Flusher  = flushingReportingSink{}
	_ connect.Reporter = flushingReportingSink{}
)

func newSink(p *Plugin) connect.Sink {
	s := &sink{instance: instance{p: p}}
	switch {
	case p.flusher && p.reporter:
		return flushingReportingSink{s}
	case p.flusher:
		return flushingSink{s}
	case p.reporter:
		return reportingSink{s}
	}
	return s
}

func (s *sink) Open(ctx context.Context, cfg connect.Config) error { return s.open(ctx, cfg) }

// Write sends the batch to the plugin, which returns once its sink did.
// When the worker asks the task to stop while the plugin writes (the stop
// of connect.WithStop in ctx ends), a plugin of protocol version 3 hears
// of it with a Stop call, so that its sink's connect.Stopping context ends
// as it would in process; with an older one, the stop waits for the Write.
func (s *sink) Write(ctx context.Context, records []connect.Record) error {
	proc := s.proc.Load()
	if proc == nil {
		return s.notOpen("write")
	}
	req := &pluginpb.WriteRequest{Records: toPBRecords(records)}
	if proc.version >= protocolRedactStop {
		req.StopId = s.writes.Add(1)
		release := s.forwardStop(ctx, proc, req.StopId)
		defer release()
	}
	return proc.call(ctx, "write", s.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Write(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
}

// forwardStop calls Stop(id) on the plugin if the stop that ctx carries
// (connect.WithStop) ends before release is called. release returns once
// no Stop call is in flight: the goroutine that makes it belongs to the
// Write. A failed Stop is not the Write's failure: a plugin that is gone
// or hangs fails the Write itself.
func (s *sink) forwardStop(ctx context.Context, proc *process, id uint64) (release func()) {
	sctx, cancel := connect.Stopping(ctx)
	called := make(chan struct{})
	unregister := context.AfterFunc(sctx, func() {
		defer close(called)
		if !connect.IsStopping(context.Cause(sctx)) {
			return // ctx ended: the Write's call ends with it
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.p.host.opts.CallTimeout)
		defer cancel()
		if _, err := proc.rpc.Stop(cctx, &pluginpb.StopRequest{StopId: id}); err != nil {
			s.p.host.logger.Debug("a stop did not reach the plugin's Write", "plugin", s.p.Name, "pid", proc.pid, "error", err.Error())
		}
	})
	return func() {
		if !unregister() {
			<-called
		}
		cancel()
	}
}

func (s *sink) flush(ctx context.Context) error {
	proc := s.proc.Load()
	if proc == nil {
		return s.notOpen("flush")
	}
	return proc.call(ctx, "flush", s.p.host.opts.CallTimeout, func(ctx context.Context) (*pluginpb.Error, error) {
		resp, err := proc.rpc.Flush(ctx, &pluginpb.FlushRequest{})
		if err != nil {
			return nil, err
		}
		return resp.Error, nil
	})
}

func (s *sink) Close(ctx context.Context) error { return s.close(ctx) }

package plugins

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/plugins/internal/pluginpb"
)

// Serve runs a plugin: it serves connector c, a source or a sink written
// against the connect interfaces exactly as a built-in one is, to the
// Tributary worker that started this process. A plugin's main calls it and
// nothing else:
//
//	func main() { plugins.Serve(counter.Connector()) }
//
// Serve returns when the worker stops the plugin. Run by hand, outside a
// worker, the program prints what it is and exits with status 1; given an
// invalid connector (no name, no factory of its kind), it says so and exits
// with status 1 too. Serve makes a JSON log handler on the process's
// standard error the slog default, so that slog (and log) lines reach the
// worker's log with their level; anything else written to os.Stdout or
// os.Stderr reaches it as plain lines (os.Stderr's in order with the slog
// lines, to the last one before the process exits; os.Stdout's over a
// stream of their own, which an abrupt exit may cut short). The process
// exits when the worker that started it is gone.
func Serve(c connect.Connector) {
	if code := serve(c, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

func serve(c connect.Connector, stderr *os.File) int {
	if err := connect.NewRegistry().Register(c); err != nil {
		fmt.Fprintf(stderr, "tributary plugin: %v\n", err)
		return 1
	}
	if os.Getenv(MagicCookieKey) != MagicCookieValue {
		fmt.Fprintf(stderr, "This is a Tributary plugin: the %s connector %q, version %s, plugin protocol %d.\n"+
			"It is not run by hand: put it in a plugin directory (plugins.dirs in a pipeline file, or\n"+
			"--plugins-dir) and Tributary starts it. `tributary plugins inspect %s` shows its settings.\n",
			c.Kind, c.Name, c.Version, ProtocolVersion, c.Name)
		return 1
	}
	slog.SetDefault(slog.New(newPluginLogHandler(stderr)))
	watchParent()
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig:  handshake(ProtocolVersion),
		VersionedPlugins: versionedPlugins(&grpcPlugin{server: newServer(c)}, ProtocolVersion),
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			r := &stderrRestorer{stderr: stderr}
			return grpc.NewServer(append(opts, grpc.MaxRecvMsgSize(maxMessage), grpc.MaxSendMsgSize(maxMessage),
				grpc.ChainUnaryInterceptor(r.unary), grpc.ChainStreamInterceptor(r.stream))...)
		},
		Logger: hclog.New(&hclog.LoggerOptions{Name: c.Name, Output: stderr, JSONFormat: true, Level: hclog.Info}),
	})
	return 0
}

// watchParent exits the process once the worker that started it is gone
// (killed, say, with SIGKILL, which gave it no chance to stop its
// plugins): an orphaned source would otherwise read on for no one. The
// goroutine lives as long as the process.
func watchParent() {
	ppid := os.Getppid()
	go func() {
		for {
			time.Sleep(time.Second)
			if os.Getppid() != ppid {
				os.Exit(1)
			}
		}
	}()
}

// stderrRestorer points os.Stderr back at the process's standard error
// before the first call is served. goplugin.Serve points it at a pipe
// that a goroutine of the plugin streams to the host over gRPC, so what a
// plugin prints right before its process ends (the reason, then os.Exit)
// died with the process, and "it wrote nothing to stderr" was all the
// host could say; its lines also arrived out of order with the slog lines
// and panic traces, which go to the standard error directly. The host
// reads the standard error itself, to the last byte after an exit.
//
// goplugin.Serve sets os.Stderr before it starts serving, and calls reach
// the interceptors only after that; the connector's code runs in calls,
// after the Once.
type stderrRestorer struct {
	stderr *os.File
	once   sync.Once
}

func (r *stderrRestorer) restore() { r.once.Do(func() { os.Stderr = r.stderr }) }

func (r *stderrRestorer) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	r.restore()
	return h(ctx, req)
}

func (r *stderrRestorer) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	r.restore()
	return h(srv, ss)
}

// newPluginLogHandler returns a slog handler writing JSON lines in hclog's
// shape ("@level", "@message", "@timestamp"), which the host reads back
// with their level and attributes.
func newPluginLogHandler(w io.Writer) slog.Handler {
	return slog.NewJSONHandler(w, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) > 0 {
				return a
			}
			switch a.Key {
			case slog.TimeKey:
				a.Key = "@timestamp"
			case slog.LevelKey:
				a.Key = "@level"
				a.Value = slog.StringValue(strings.ToLower(a.Value.String()))
			case slog.MessageKey:
				a.Key = "@message"
			}
			return a
		},
	})
}

// server serves the one connector instance of a plugin process.
type server struct {
	pluginpb.UnimplementedConnectorServer
	conn     connect.Connector
	describe *pluginpb.DescribeResponse

	// ctx is the instance's lifetime: Open's context once Open has
	// returned, and Read's. Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	reads  sync.WaitGroup // the goroutine running a source's Read

	mu     sync.Mutex // guards opened, closed, src and sink
	opened bool
	closed bool
	src    connect.Source
	sink   connect.Sink

	// readSem is held by the one Read call that owns pending.
	readSem chan struct{}
	// pending delivers the result of the source's Read in progress; nil
	// when none is.
	pending chan readResult

	stops stops // the stops of a sink's Writes (protocol 3)
}

// stops pairs a sink's Writes with the host's Stop calls, which may come
// before the Write they stop has started (the two calls travel apart).
// The host writes one batch at a time, with increasing stop ids.
type stops struct {
	mu      sync.Mutex // guards the fields below
	writing uint64     // the stop id of the Write in progress; 0 none
	stop    context.CancelFunc
	early   uint64 // the id of the last Stop that found no Write of its id
}

// begin returns the stop of Write id, ended already if its Stop came
// first, and a func to call when the Write returns.
func (st *stops) begin(id uint64) (context.Context, func()) {
	stop, cancel := context.WithCancel(context.Background())
	st.mu.Lock()
	st.writing, st.stop = id, cancel
	if st.early == id {
		cancel()
	}
	st.mu.Unlock()
	return stop, func() {
		st.mu.Lock()
		if st.writing == id {
			st.writing, st.stop = 0, nil
		}
		st.mu.Unlock()
		cancel()
	}
}

// request ends the stop of Write id, now or when it begins; a Stop of a
// Write that has returned already changes nothing.
func (st *stops) request(id uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.writing == id && st.stop != nil {
		st.stop()
		return
	}
	st.early = id
}

type readResult struct {
	recs []connect.Record
	err  error
}

func newServer(c connect.Connector) *server {
	d := &pluginpb.DescribeResponse{
		Name: c.Name, Kind: string(c.Kind), Version: c.Version, Description: c.Description,
		Params: toPBParams(c.Spec), Protocol: ProtocolVersion,
	}
	var probe any
	if c.Kind == connect.KindSource {
		probe = c.NewSource()
	} else {
		probe = c.NewSink()
	}
	_, d.Flusher = probe.(connect.Flusher)
	_, d.Reporter = probe.(connect.Reporter)
	_, d.DurableNotifier = probe.(connect.DurableNotifier)
	_, d.TailRecoverer = probe.(connect.TailRecoverer)
	d.Redactor = c.Spec.Redact != nil
	ctx, cancel := context.WithCancel(context.Background())
	return &server{conn: c, describe: d, ctx: ctx, cancel: cancel, readSem: make(chan struct{}, 1)}
}

func (s *server) Describe(context.Context, *pluginpb.DescribeRequest) (*pluginpb.DescribeResponse, error) {
	return s.describe, nil
}

func (s *server) Open(ctx context.Context, req *pluginpb.OpenRequest) (*pluginpb.OpenResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened {
		return nil, status.Error(codes.FailedPrecondition, "the connector instance is already open: a plugin process serves one")
	}
	if req.Kind != string(s.conn.Kind) {
		return nil, status.Errorf(codes.InvalidArgument, "the host opens a %s, but this plugin serves the %s connector %q", req.Kind, s.conn.Kind, s.conn.Name)
	}
	s.opened = true
	// Open's context must outlive the call, as a built-in connector's
	// does (a connector may tie what it starts in Open to it), yet end
	// when the host gives up on the call.
	octx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	cfg := fromPBConfig(req.Config, s.conn.Spec)
	resp := &pluginpb.OpenResponse{}
	if s.conn.Kind == connect.KindSource {
		src := s.conn.NewSource()
		err := src.Open(octx, cfg)
		if err == nil {
			s.src = src
			// The worker asks a TailRecoverer for its topics once, after a
			// successful Open and before anything else: the answer rides
			// on Open's, when the host asks (a host of version 1 never
			// does, nor calls RecoverTail).
			if tr, ok := src.(connect.TailRecoverer); ok && req.TailTopics {
				resp.TailTopics = tr.TailTopics()
			}
		}
		resp.Error = toPBError(err)
	} else {
		sink := s.conn.NewSink()
		err := sink.Open(octx, cfg)
		if err == nil {
			s.sink = sink
		}
		resp.Error = toPBError(err)
	}
	return resp, nil
}

// instance returns the open source or sink, or a gRPC error.
func (s *server) instance() (connect.Source, connect.Sink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, status.Error(codes.FailedPrecondition, "the connector instance is closed")
	case s.src == nil && s.sink == nil:
		return nil, nil, status.Error(codes.FailedPrecondition, "the connector instance is not open")
	}
	return s.src, s.sink, nil
}

// Read answers with the result of the source's Read, or with an empty
// batch when none came within the host's wait. The source's Read is not
// cancelled then: it runs on under the instance's context, and the next
// Read call picks up its result. So a source is never interrupted between
// records but by Close, exactly as when it is built in, while the host
// hears from the plugin at least every wait.
func (s *server) Read(ctx context.Context, req *pluginpb.ReadRequest) (*pluginpb.ReadResponse, error) {
	src, _, err := s.instance()
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, status.Error(codes.FailedPrecondition, "read from a sink")
	}
	select {
	case s.readSem <- struct{}{}:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-s.readSem }()
	if s.pending == nil {
		ch := make(chan readResult, 1)
		s.pending = ch
		s.reads.Add(1)
		go func() {
			defer s.reads.Done()
			recs, err := src.Read(s.ctx)
			ch <- readResult{recs, err}
		}()
	}
	wait := time.Duration(req.WaitNs)
	if wait <= 0 {
		wait = time.Second
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case r := <-s.pending:
		s.pending = nil
		return &pluginpb.ReadResponse{Records: toPBRecords(r.recs), Error: toPBError(r.err)}, nil
	case <-timer.C:
		return &pluginpb.ReadResponse{}, nil
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
}

func (s *server) Ack(ctx context.Context, req *pluginpb.AckRequest) (*pluginpb.AckResponse, error) {
	src, _, err := s.instance()
	if err != nil {
		return nil, err
	}
	if src == nil {
		return nil, status.Error(codes.FailedPrecondition, "ack to a sink")
	}
	var pos connect.Position
	if req.Position != nil {
		pos = connect.Position(req.Position)
	}
	return &pluginpb.AckResponse{Error: toPBError(src.Ack(ctx, pos))}, nil
}

// Durable forwards a connect.DurableNotifier call. The host makes it from
// the goroutine that acks, so it is never concurrent with Ack or itself;
// it may run while the source's Read does, as in the built-in worker.
func (s *server) Durable(ctx context.Context, req *pluginpb.DurableRequest) (*pluginpb.DurableResponse, error) {
	src, _, err := s.instance()
	if err != nil {
		return nil, err
	}
	dn, ok := src.(connect.DurableNotifier)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "durable: the %s connector %q is not a source that implements connect.DurableNotifier", s.conn.Kind, s.conn.Name)
	}
	var pos connect.Position
	if req.Position != nil {
		pos = connect.Position(req.Position)
	}
	return &pluginpb.DurableResponse{Error: toPBError(dn.Durable(ctx, pos))}, nil
}

// RecoverTail forwards a connect.TailRecoverer call: the host makes it
// after Open and before the first Read.
func (s *server) RecoverTail(ctx context.Context, req *pluginpb.RecoverTailRequest) (*pluginpb.RecoverTailResponse, error) {
	src, _, err := s.instance()
	if err != nil {
		return nil, err
	}
	tr, ok := src.(connect.TailRecoverer)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "recover tail: the %s connector %q is not a source that implements connect.TailRecoverer", s.conn.Kind, s.conn.Name)
	}
	return &pluginpb.RecoverTailResponse{Error: toPBError(tr.RecoverTail(ctx, fromPBRecords(req.Records)))}, nil
}

// Write runs the sink's Write under the call's context. A host of
// protocol version 3 sends a stop id with it: the context then carries a
// stop (connect.WithStop) that the host's Stop of that id ends, so that a
// sink that retries under connect.Stopping stops retrying, as in process.
func (s *server) Write(ctx context.Context, req *pluginpb.WriteRequest) (*pluginpb.WriteResponse, error) {
	_, sink, err := s.instance()
	if err != nil {
		return nil, err
	}
	if sink == nil {
		return nil, status.Error(codes.FailedPrecondition, "write to a source")
	}
	if req.StopId != 0 {
		stop, done := s.stops.begin(req.StopId)
		defer done()
		ctx = connect.WithStop(ctx, stop)
	}
	return &pluginpb.WriteResponse{Error: toPBError(sink.Write(ctx, fromPBRecords(req.Records)))}, nil
}

// Stop ends the stop of the Write whose request carried the same id, now
// or when it begins.
func (s *server) Stop(_ context.Context, req *pluginpb.StopRequest) (*pluginpb.StopResponse, error) {
	if s.conn.Kind != connect.KindSink {
		return nil, status.Error(codes.FailedPrecondition, "stop of a source's Write")
	}
	s.stops.request(req.StopId)
	return &pluginpb.StopResponse{}, nil
}

// Redact applies the spec's connect.Spec.Redact; it needs no open
// instance, as a built-in connector's spec needs none.
func (s *server) Redact(_ context.Context, req *pluginpb.RedactRequest) (*pluginpb.RedactResponse, error) {
	if s.conn.Spec.Redact == nil {
		return nil, status.Errorf(codes.FailedPrecondition, "redact: the %s connector %q has no connect.Spec.Redact", s.conn.Kind, s.conn.Name)
	}
	return &pluginpb.RedactResponse{Value: s.conn.Spec.Redact(req.Name, req.Value)}, nil
}

func (s *server) Flush(ctx context.Context, _ *pluginpb.FlushRequest) (*pluginpb.FlushResponse, error) {
	_, sink, err := s.instance()
	if err != nil {
		return nil, err
	}
	f, ok := sink.(connect.Flusher)
	if !ok {
		return &pluginpb.FlushResponse{}, nil
	}
	return &pluginpb.FlushResponse{Error: toPBError(f.Flush(ctx))}, nil
}

func (s *server) Report(context.Context, *pluginpb.ReportRequest) (*pluginpb.ReportResponse, error) {
	src, sink, err := s.instance()
	if err != nil {
		return nil, err
	}
	var r connect.Reporter
	if src != nil {
		r, _ = src.(connect.Reporter)
	} else {
		r, _ = sink.(connect.Reporter)
	}
	if r == nil {
		return &pluginpb.ReportResponse{}, nil
	}
	b, err := json.Marshal(r.Report())
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode report: %v", err)
	}
	return &pluginpb.ReportResponse{ReportJson: b}, nil
}

// Close stops a source's Read (cancelling the instance's context), waits
// for it, and closes the instance.
func (s *server) Close(ctx context.Context, _ *pluginpb.CloseRequest) (*pluginpb.CloseResponse, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return &pluginpb.CloseResponse{}, nil
	}
	s.closed = true
	src, sink := s.src, s.sink
	s.mu.Unlock()
	s.cancel()
	done := make(chan struct{})
	go func() {
		s.reads.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, status.Error(codes.DeadlineExceeded, "the source's Read did not return after its context was cancelled")
	}
	var err error
	switch {
	case src != nil:
		err = src.Close(ctx)
	case sink != nil:
		err = sink.Close(ctx)
	}
	return &pluginpb.CloseResponse{Error: toPBError(err)}, nil
}

package kafka

import (
	"bufio"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	tlog "github.com/tributary-io/tributary/log"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Options configure a Server. The zero value serves plaintext without
// authentication.
type Options struct {
	// AdvertisedAddr is the host:port clients are told to connect to in
	// Metadata and FindCoordinator answers. Default: the local address of
	// the connection the request came on, which is right unless clients
	// reach the listener through a proxy or NAT.
	AdvertisedAddr string
	// TLS, when set, makes the listener speak TLS (Kafka's SSL listener).
	TLS *tls.Config
	// SASLPlain, when set, requires SASL/PLAIN authentication before any
	// request but ApiVersions: it is called with the user name and password
	// and returns whether they are valid.
	SASLPlain func(user, password string) bool
	// SASLScram, when set, offers SASL/SCRAM-SHA-256 and SCRAM-SHA-512 (and
	// requires SASL as SASLPlain does): it returns the stored credential of
	// a user for a mechanism (ScramSHA256 or ScramSHA512; make them with
	// NewScramCredential), or false for an unknown user.
	SASLScram func(mechanism, user string) (ScramCredential, bool)
	// DisableAutoCreate answers Metadata requests for unknown topics with
	// UNKNOWN_TOPIC_OR_PARTITION even when the client allows auto-creation.
	// (Produce requests follow the log's own auto-create setting.)
	DisableAutoCreate bool
	// MaxRequestBytes bounds one request frame (Kafka's
	// socket.request.max.bytes). Default 100 MiB. Only Produce requests
	// may use all of it: the others are bounded at maxOtherRequestBytes
	// (8 MiB), as decoding one allocates several times its size.
	MaxRequestBytes int
	// InitialRebalanceDelay is Kafka's group.initial.rebalance.delay.ms: how
	// long the first rebalance of an empty group waits for more members.
	// Default 3 s; negative means none.
	InitialRebalanceDelay time.Duration
	// GroupMinSessionTimeout is Kafka's group.min.session.timeout.ms: joins
	// asking for a shorter session timeout are refused. Default 6 s.
	GroupMinSessionTimeout time.Duration
	// ConnectionsMaxIdle is Kafka's connections.max.idle.ms: a connection
	// that sends no request for this long is closed (clients reconnect when
	// they need to), so that silent or vanished clients, and ones that stop
	// halfway through a request or a TLS handshake, do not hold a
	// connection for ever. Default 10 min; negative means never.
	ConnectionsMaxIdle time.Duration
	// Logger receives connection and group events. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// saslMaxReceiveSize bounds the frames of a connection that has not
// authenticated yet when SASL is required, as Kafka's
// sasl.server.max.receive.size (default 512 KiB) does.
const saslMaxReceiveSize = 512 << 10

// maxOtherRequestBytes bounds the frames of requests other than Produce.
// Decoding a request allocates up to ~32 times its size (kmsg allocates
// the entries an array declares before it reads them, each bigger in
// memory than its smallest encoding), and only Produce requests carry
// bulk data. 8 MiB is the largest record of __consumer_offsets, so no
// group or commit request a client may legitimately send is refused.
const maxOtherRequestBytes = 8 << 20

// nodeID is the one broker's id in Metadata and FindCoordinator answers.
const nodeID = 0

// Server is a Kafka listener over a log. Close stops it.
type Server struct {
	log    *tlog.Log
	opts   Options
	logger *slog.Logger
	ln     net.Listener
	groups *coordinator
	// unguardDelete unregisters groups.guardDelete from the log's groups
	// (Groups.GuardDelete): Close calls it.
	unguardDelete func()
	// scramKey makes up the salts of unknown SCRAM users, the same for a
	// user on every attempt (so that they look like known ones).
	scramKey []byte
	// aheadServed counts Fetch partitions answered from a read ahead;
	// aheadBytes is what all connections' reads ahead may hold.
	aheadServed, aheadBytes atomic.Int64
	// notOpenedWarned spaces out the warnings about clients asking for a
	// topic the log left closed (see warnIfNotOpened).
	notOpenedWarned warnLimiter

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
}

// Listen starts a Kafka listener on addr (host:port; port 0 picks a free
// one) serving l. The caller closes the server before the log.
func Listen(ctx context.Context, addr string, l *tlog.Log, opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.ConnectionsMaxIdle == 0 {
		opts.ConnectionsMaxIdle = 10 * time.Minute
	}
	if opts.MaxRequestBytes <= 0 {
		opts.MaxRequestBytes = 100 << 20
	}
	if opts.InitialRebalanceDelay == 0 {
		opts.InitialRebalanceDelay = 3 * time.Second
	} else if opts.InitialRebalanceDelay < 0 {
		opts.InitialRebalanceDelay = 0
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kafka listener on %s: %w (is another broker running there? set log.kafka.listen to another address)", addr, err)
	}
	if opts.TLS != nil {
		ln = tls.NewListener(ln, opts.TLS)
	}
	sctx, cancel := context.WithCancel(context.Background())
	s := &Server{log: l, opts: opts, logger: opts.Logger, ln: ln, cancel: cancel, conns: map[net.Conn]struct{}{}, scramKey: make([]byte, 32)}
	if _, err := rand.Read(s.scramKey); err != nil {
		cancel()
		ln.Close()
		return nil, fmt.Errorf("kafka listener: random key: %w", err)
	}
	s.groups = newCoordinator(s)
	// Deletions through the log (tributary groups delete) forget the
	// coordinator's group too, as DeleteGroups does.
	s.unguardDelete = l.Groups().GuardDelete(s.groups.guardDelete)
	s.wg.Add(2)
	go s.acceptLoop(sctx)
	go func() { defer s.wg.Done(); s.groups.reapLoop(sctx) }()
	s.logger.Info("kafka listener started", "addr", ln.Addr().String(), "tls", opts.TLS != nil, "sasl", s.mechanisms())
	return s, nil
}

// Addr returns the address the listener is bound to.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops accepting, closes every connection (requests in flight are
// abandoned; a client retries them) and waits for every goroutine.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	err := s.ln.Close()
	s.wg.Wait()
	s.unguardDelete()
	s.groups.unpublishAll()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

func (s *Server) acceptLoop(ctx context.Context) {
	defer s.wg.Done()
	var delay time.Duration
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures (out of file descriptors): back off as
			// net/http does.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.logger.Warn("kafka listener accept", "error", err, "retry_in", delay)
			select {
			case <-time.After(delay):
			case <-ctx.Done():
				return
			}
			continue
		}
		delay = 0
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go s.serveConn(ctx, c)
	}
}

// conn is one client connection. Kafka answers the requests of one
// connection in order; so does this server. Requests are handled one at a
// time in order, but the connection does not wait for a Produce request's
// fsync before it reads the next request: the answer waits in a queue
// (replies) that a writer goroutine answers in request order, so that the
// produce requests a client pipelines (up to 5 with idempotence) are
// appended back to back and share fsyncs.
type conn struct {
	s       *Server
	c       net.Conn
	host    string
	authed  bool // SASL done (or not required)
	saslMec string
	scram   *scramServer // the SCRAM exchange under way
	ahead   *readAhead   // Fetch read-ahead; nil: none
	// rawAuthNext: a v0 SaslHandshake was answered, so the next frame is
	// a bare SASL token.
	rawAuthNext bool

	// idleMu guards pending, the requests read but not yet answered: the
	// idle timer (Options.ConnectionsMaxIdle) runs only while it is 0, a
	// client waiting for a long-poll Fetch or a JoinGroup not being idle.
	idleMu  sync.Mutex
	pending int
}

// armIdle sets the read deadline of the connection: idle from now when no
// request is waiting for its answer, none while one is.
func (cc *conn) armIdle() {
	idle := cc.s.opts.ConnectionsMaxIdle
	if idle <= 0 {
		return
	}
	var deadline time.Time
	if cc.pending == 0 {
		deadline = time.Now().Add(idle)
	}
	_ = cc.c.SetReadDeadline(deadline)
}

// requestQueued counts a request whose answer is on its way to the writer.
func (cc *conn) requestQueued() {
	cc.idleMu.Lock()
	cc.pending++
	cc.idleMu.Unlock()
}

// requestAnswered counts an answer written (or dropped), and starts the idle
// timer when it was the last one due.
func (cc *conn) requestAnswered() {
	cc.idleMu.Lock()
	cc.pending--
	cc.armIdle()
	cc.idleMu.Unlock()
}

// maxPendingReplies bounds the answers a connection owes at once: reading
// stops while this many wait (for their fsync, or for the client to read).
const maxPendingReplies = 16

// reply is the answer to one request: out when it is ready, or finish,
// which the connection's writer runs in request order (a Produce request's
// wait for durability, then its encoding). Both nil, or finish returning
// nil: no answer (acks=0).
type reply struct {
	out    []byte
	bufs   net.Buffers // instead of out: written with writev (Fetch answers)
	finish func() []byte
	// release, when set, runs once the answer is written (or dropped):
	// it gives back the log's read buffers that bufs refers to.
	release func()
}

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	host, _, _ := net.SplitHostPort(c.RemoteAddr().String())
	cc := &conn{s: s, c: c, host: host, authed: !s.saslRequired(), ahead: newReadAhead(ctx)}
	defer cc.ahead.close(s)
	replies := make(chan reply, maxPendingReplies)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		cc.writeReplies(replies)
	}()
	defer func() {
		close(replies)
		<-writerDone
	}()
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		limit := s.opts.MaxRequestBytes
		if !cc.authed {
			// Before authentication, Kafka's sasl.server.max.receive.size:
			// a client without credentials cannot make the server hold
			// 100 MiB frames.
			limit = min(limit, saslMaxReceiveSize)
		}
		// The next request, whole, must come within the idle time, unless
		// one read before still waits for its answer.
		cc.idleMu.Lock()
		cc.armIdle()
		cc.idleMu.Unlock()
		frame, err := readFrame(r, limit)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && ctx.Err() == nil {
				s.logger.Debug("kafka connection closed", "remote", c.RemoteAddr().String(), "error", err)
			}
			return
		}
		produce := !cc.rawAuthNext && len(frame) >= 2 && frame[0] == 0 && frame[1] == 0 // api key 0
		rep, err := cc.handleFrame(ctx, frame)
		if produce {
			// Appended when handleFrame returns, and the answer does not
			// refer to the frame (frame_pool.go).
			putFrame(frame)
		}
		if err != nil {
			s.logger.Debug("kafka connection dropped", "remote", c.RemoteAddr().String(), "error", err)
			return
		}
		if rep.out == nil && rep.bufs == nil && rep.finish == nil { // acks=0 produce: no answer
			continue
		}
		cc.requestQueued()
		replies <- rep // the writer drains until replies is closed
	}
}

// writeReplies answers the requests of a connection in order until replies
// is closed. A failed write closes the connection (so that the reader
// stops) and drops the answers still due; answers are flushed whenever no
// further one is ready.
func (cc *conn) writeReplies(replies <-chan reply) {
	w := bufio.NewWriterSize(cc.c, 64<<10)
	failed := false
	for rep := range replies {
		func() {
			defer cc.requestAnswered()
			if rep.release != nil {
				defer rep.release() // bufs is not used after this round
			}
			out := rep.out
			if rep.finish != nil {
				var ok bool
				if out, ok = cc.finish(rep.finish); !ok {
					failed = true
					cc.c.Close()
				}
			}
			if failed || (out == nil && rep.bufs == nil) {
				return
			}
			var err error
			if rep.bufs != nil {
				// Big record sets go to the socket from where the log read
				// them: what is buffered first, then one writev.
				if err = w.Flush(); err == nil {
					_, err = rep.bufs.WriteTo(cc.c)
				}
			} else {
				_, err = w.Write(out)
			}
			if err != nil {
				failed = true
				cc.c.Close()
				return
			}
			if len(replies) == 0 {
				if err := w.Flush(); err != nil {
					failed = true
					cc.c.Close()
				}
			}
		}()
	}
	if !failed {
		_ = w.Flush()
	}
}

// finish runs a deferred answer, with the panic guard of handleFrame.
func (cc *conn) finish(f func() []byte) (out []byte, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			cc.s.logger.Error("kafka response panicked; closing the connection", "remote", cc.c.RemoteAddr().String(), "panic", r)
			out, ok = nil, false
		}
	}()
	return f(), true
}

// readFrame reads one size-prefixed request.
func readFrame(r *bufio.Reader, maxBytes int) ([]byte, error) {
	var sz [4]byte
	if _, err := io.ReadFull(r, sz[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(sz[:]))
	if n < 0 || int(n) > maxBytes {
		return nil, fmt.Errorf("request of %d bytes exceeds the limit of %d", n, maxBytes)
	}
	// The frame grows as its bytes arrive, doubling from frameGrowStart:
	// a client that announces 100 MiB and sends less costs about what it
	// sent, not what it announced.
	frame := getFrame(min(int(n), frameGrowStart))
	if _, err := io.ReadFull(r, frame); err != nil {
		putFrame(frame)
		return nil, err
	}
	for len(frame) < int(n) {
		have := len(frame)
		next := getFrame(min(2*have, int(n)))
		copy(next, frame)
		putFrame(frame)
		frame = next
		if _, err := io.ReadFull(r, frame[have:]); err != nil {
			putFrame(frame)
			return nil, fmt.Errorf("request of %d bytes cut short after %d: %w", n, have, io.ErrUnexpectedEOF)
		}
	}
	return frame, nil
}

// frameGrowStart is how much of a frame is allocated before its bytes
// arrive.
const frameGrowStart = 1 << 20

// requestHeader is the part of a request before its body.
type requestHeader struct {
	key, version int16
	corr         int32
	clientID     string
}

var errMalformed = errors.New("malformed request")

// parseHeader reads a request header (v1, or v2 with tagged fields when the
// request is flexible) and returns the body.
func parseHeader(frame []byte) (requestHeader, []byte, error) {
	var h requestHeader
	if len(frame) < 10 {
		return h, nil, fmt.Errorf("%w: frame of %d bytes is shorter than a request header", errMalformed, len(frame))
	}
	h.key = int16(binary.BigEndian.Uint16(frame))
	h.version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.corr = int32(binary.BigEndian.Uint32(frame[4:]))
	n := int16(binary.BigEndian.Uint16(frame[8:]))
	rest := frame[10:]
	if n > 0 {
		if int(n) > len(rest) {
			return h, nil, fmt.Errorf("%w: client id of %d bytes runs past the frame", errMalformed, n)
		}
		h.clientID, rest = string(rest[:n]), rest[n:]
	} else if n < -1 {
		return h, nil, fmt.Errorf("%w: client id length %d", errMalformed, n)
	}
	return h, rest, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, sz := binary.Uvarint(b)
	if sz <= 0 {
		return nil, fmt.Errorf("%w: bad tag count", errMalformed)
	}
	b = b[sz:]
	for i := uint64(0); i < n; i++ {
		_, sz := binary.Uvarint(b)
		if sz <= 0 {
			return nil, fmt.Errorf("%w: bad tag", errMalformed)
		}
		b = b[sz:]
		l, sz := binary.Uvarint(b)
		if sz <= 0 || l > uint64(len(b)-sz) {
			return nil, fmt.Errorf("%w: bad tag length", errMalformed)
		}
		b = b[sz+int(l):]
	}
	return b, nil
}

// handleFrame decodes one request, handles it and returns its framed
// response, or the function that completes it (see reply). An error closes the connection: Kafka
// does the same for frames it cannot parse.
func (cc *conn) handleFrame(ctx context.Context, frame []byte) (rep reply, err error) {
	if cc.rawAuthNext {
		out, err := cc.rawAuth(frame)
		return reply{out: out}, err
	}
	defer func() {
		// Requests are untrusted input; a bug in decoding or handling one
		// must cost its connection, never the process.
		if r := recover(); r != nil {
			cc.s.logger.Error("kafka request handler panicked; closing the connection", "remote", cc.c.RemoteAddr().String(), "panic", r)
			rep, err = reply{}, fmt.Errorf("%w: panic: %v", errMalformed, r)
		}
	}()
	return cc.handle(ctx, frame)
}

// handle is handleFrame without the panic guard (the fuzz target calls it
// directly, so that a panic is found rather than hidden).
func (cc *conn) handle(ctx context.Context, frame []byte) (reply, error) {
	h, body, err := parseHeader(frame)
	if err != nil {
		return reply{}, err
	}
	if h.key == 18 { // ApiVersions: answered whatever the version, in v0 when too new
		out, err := cc.apiVersions(h, body)
		return reply{out: out}, err
	}
	if !cc.authed && h.key != 17 && h.key != 36 {
		return reply{}, fmt.Errorf("%s before SASL authentication", kmsg.NameForKey(h.key))
	}
	req := kmsg.RequestForKey(h.key)
	if req == nil {
		return reply{}, fmt.Errorf("%w: unknown api key %d", errMalformed, h.key)
	}
	v, ok := supported(h.key, cc.s.saslRequired())
	if !ok || h.version < v.min || h.version > v.max {
		return reply{out: cc.unsupported(h, req)}, nil
	}
	if h.key != 0 && len(frame) > maxOtherRequestBytes {
		return reply{}, fmt.Errorf("%s request of %d bytes exceeds the limit of %d for requests other than Produce", kmsg.NameForKey(h.key), len(frame), maxOtherRequestBytes)
	}
	req.SetVersion(h.version)
	if req.IsFlexible() {
		if body, err = skipTags(body); err != nil {
			return reply{}, err
		}
	}
	if h.key == 0 {
		// kmsg allocates every topic and partition entry a Produce
		// request declares before it reads them: check their number
		// against the bytes first.
		if err := checkProduceShape(body, req.IsFlexible()); err != nil {
			return reply{}, err
		}
	}
	if err := req.ReadFrom(body); err != nil {
		return reply{}, fmt.Errorf("%w: %s v%d: %v", errMalformed, kmsg.NameForKey(h.key), h.version, err)
	}
	if pr, ok := req.(*kmsg.ProduceRequest); ok {
		// Appended now, answered once durable (by the connection's writer).
		finish := cc.s.produce(ctx, pr)
		return reply{finish: func() []byte {
			resp := finish()
			if pr.Acks == 0 {
				return nil
			}
			resp.SetVersion(h.version)
			return frameResponse(h.corr, resp)
		}}, nil
	}
	resp, err := cc.dispatch(ctx, h, req)
	if err != nil || resp == nil {
		return reply{}, err
	}
	resp.SetVersion(h.version)
	if fr, ok := resp.(*kmsg.FetchResponse); ok {
		bufs := fetchFrame(h.corr, fr)
		release := cc.ahead.takeHeld()
		if len(bufs) == 1 { // small: buffered like any other answer (a copy)
			if release != nil {
				release()
			}
			return reply{out: bufs[0]}, nil
		}
		return reply{bufs: bufs, release: release}, nil
	}
	return reply{out: frameResponse(h.corr, resp)}, nil
}

// frameResponse encodes a response with its size and header. Flexible
// responses have a tagged-field section after the correlation id, except
// ApiVersions, whose header is always v0.
func frameResponse(corr int32, resp kmsg.Response) []byte {
	buf := make([]byte, 8, 256)
	binary.BigEndian.PutUint32(buf[4:], uint32(corr))
	if resp.IsFlexible() && resp.Key() != 18 {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// dispatch runs the handler of one decoded request.
func (cc *conn) dispatch(ctx context.Context, h requestHeader, req kmsg.Request) (kmsg.Response, error) {
	s := cc.s
	switch r := req.(type) {
	case *kmsg.FetchRequest:
		return s.fetch(ctx, r, cc.ahead), nil
	case *kmsg.ListOffsetsRequest:
		return s.listOffsets(ctx, r), nil
	case *kmsg.MetadataRequest:
		return s.metadata(cc, r), nil
	case *kmsg.OffsetCommitRequest:
		return s.groups.offsetCommit(ctx, r), nil
	case *kmsg.OffsetFetchRequest:
		return s.groups.offsetFetch(r), nil
	case *kmsg.FindCoordinatorRequest:
		return s.findCoordinator(cc, r), nil
	case *kmsg.JoinGroupRequest:
		return s.groups.joinGroup(ctx, cc, h.clientID, r), nil
	case *kmsg.HeartbeatRequest:
		return s.groups.heartbeat(r), nil
	case *kmsg.LeaveGroupRequest:
		return s.groups.leaveGroup(r), nil
	case *kmsg.SyncGroupRequest:
		return s.groups.syncGroup(ctx, r), nil
	case *kmsg.DescribeGroupsRequest:
		return s.groups.describeGroups(r), nil
	case *kmsg.ListGroupsRequest:
		return s.groups.listGroups(r), nil
	case *kmsg.SASLHandshakeRequest:
		return cc.saslHandshake(r), nil
	case *kmsg.SASLAuthenticateRequest:
		return cc.saslAuthenticate(r)
	case *kmsg.CreateTopicsRequest:
		return s.createTopics(r), nil
	case *kmsg.DeleteTopicsRequest:
		return s.deleteTopics(r), nil
	case *kmsg.DeleteRecordsRequest:
		return s.deleteRecords(r), nil
	case *kmsg.InitProducerIDRequest:
		return s.initProducerID(r), nil
	case *kmsg.DescribeConfigsRequest:
		return s.describeConfigs(r), nil
	case *kmsg.AlterConfigsRequest:
		return s.alterConfigs(r), nil
	case *kmsg.IncrementalAlterConfigsRequest:
		return s.incrementalAlterConfigs(r), nil
	case *kmsg.CreatePartitionsRequest:
		return s.createPartitions(r), nil
	case *kmsg.DeleteGroupsRequest:
		return s.groups.deleteGroups(ctx, r), nil
	case *kmsg.OffsetDeleteRequest:
		return s.groups.offsetDelete(ctx, r), nil
	}
	return cc.unsupportedResponse(h, req), nil
}

// advertised returns the host and port to tell clients.
func (s *Server) advertised(cc *conn) (string, int32) {
	addr := s.opts.AdvertisedAddr
	if addr == "" && cc != nil {
		addr = cc.c.LocalAddr().String()
	}
	if addr == "" {
		addr = s.ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 9092
	}
	p, _ := strconv.Atoi(port)
	return host, int32(p)
}

package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// A connection can die without a sign (a vanished server host, a NAT or
// firewall that dropped the flow, a network partition: no FIN, no RST),
// and a query waiting for its answer then waits until the kernel gives up
// retransmitting (about 15 minutes, and forever when nothing is in flight)
// while the task shows RUNNING. The replication stream notices through its
// keepalive requests (streamer.alive); every other connection the source
// opens (catalogue, snapshot workers, incremental-snapshot chunks) is
// bounded here, in two layers, both derived from wal.receiver.timeout:
//
//   - TCP keepalives and TCP_USER_TIMEOUT (Linux), which make the kernel
//     fail the socket when the peer stops acknowledging: keepalive probes
//     while nothing is in flight, the user timeout while sent data stays
//     unacknowledged. A server busy with a long query still acknowledges
//     them, so slow queries are not cut. The libpq keywords keepalives,
//     keepalives_idle, keepalives_interval, keepalives_count and
//     tcp_user_timeout in the DSN win over the derived values (pgx does
//     not know them and would send them to the server as settings).
//   - A read watch (watchedConn): keepalives only test the first hop, and
//     a TCP proxy or pooler in between (a cloud SQL proxy, HAProxy) answers
//     them while its side to the server is cut. So when a read has waited
//     wal.receiver.timeout for its first byte, the source opens a new
//     connection to the server with the same settings and asks it for
//     SELECT 1; an answer means the server is reachable and only slow (the
//     read goes on, checked again after another timeout); none within the
//     timeout means the connection is dead, and it is closed with
//     errDeadConn.
//
// The replication connection gets the read watch too, but only for the
// commands before its stream (CREATE_REPLICATION_SLOT, which waits for
// the transactions running to end, SHOW wal_sender_timeout and
// START_REPLICATION): once the stream runs, its keepalive requests watch
// it (with a timeout raised to the server's wal_sender_timeout), and
// stopWatching turns the watch off.

// netOptions are the TCP settings of a connection.
type netOptions struct {
	keepalive   bool
	idle        time.Duration // 0: Go's default; -1: the system's
	interval    time.Duration // 0: Go's default; -1: the system's
	count       int           // 0: Go's default; -1: the system's
	userTimeout time.Duration // 0: the system's default
	deadAfter   time.Duration // wal.receiver.timeout: the read watch; 0: none
}

// netOptionsFor returns the TCP settings for wal.receiver.timeout
// deadAfter, overridden by libpq's TCP keywords in params (the runtime
// parameters of a parsed DSN, where pgx leaves keywords it does not know:
// keepalives, keepalives_idle, keepalives_interval, keepalives_count,
// tcp_user_timeout), which it deletes from params.
//
// The keepalive probes start after a sixth of deadAfter of silence and
// come every twelfth, ten of them: about deadAfter in all (10 s, 5 s and
// 10 for the default 60 s), and TCP_USER_TIMEOUT is deadAfter.
func netOptionsFor(deadAfter time.Duration, params map[string]string) (netOptions, error) {
	o := netOptions{keepalive: true, deadAfter: deadAfter}
	if deadAfter > 0 {
		o.idle = max(deadAfter/6, time.Second)
		o.interval = max(deadAfter/12, time.Second)
		o.count = 10
		o.userTimeout = deadAfter
	}
	var errs []error
	num := func(key string) (int, bool) {
		v, ok := params[key]
		if !ok {
			return 0, false
		}
		delete(params, key)
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: give a whole number, 0 or more", key, v))
			return 0, false
		}
		return n, true
	}
	if n, ok := num("keepalives"); ok {
		o.keepalive = n != 0
	}
	// 0 is the system's default, as in libpq: a negative value leaves the
	// socket option alone.
	if n, ok := num("keepalives_idle"); ok {
		o.idle = orSystem(time.Duration(n) * time.Second)
	}
	if n, ok := num("keepalives_interval"); ok {
		o.interval = orSystem(time.Duration(n) * time.Second)
	}
	if n, ok := num("keepalives_count"); ok {
		o.count = int(orSystem(time.Duration(n)))
	}
	if n, ok := num("tcp_user_timeout"); ok {
		o.userTimeout = time.Duration(n) * time.Millisecond // 0: the system's default, as libpq
	}
	return o, errors.Join(errs...)
}

// orSystem returns v, or -1 (leave the system's default) for 0.
func orSystem(v time.Duration) time.Duration {
	if v == 0 {
		return -1
	}
	return v
}

// dialer returns a dialer with the options (and the connect timeout of
// the DSN, as pgx's own).
func (o netOptions) dialer(connectTimeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: connectTimeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable: o.keepalive, Idle: o.idle, Interval: o.interval, Count: o.count,
	}}
	if !o.keepalive {
		d.KeepAlive = -1
	}
	if o.userTimeout > 0 {
		d.Control = userTimeoutControl(o.userTimeout)
	}
	return d
}

// configureNet applies the source's TCP settings to cfg, a parsed DSN;
// with watch, every connection it dials also gets the read watch, whose
// probes use cfg's settings without it.
func configureNet(cfg *pgconn.Config, deadAfter time.Duration, watch bool, log *slog.Logger) error {
	o, err := netOptionsFor(deadAfter, cfg.RuntimeParams)
	if err != nil {
		return err
	}
	dial := o.dialer(cfg.ConnectTimeout).DialContext
	cfg.DialFunc = dial
	if !watch || o.deadAfter <= 0 {
		return nil
	}
	probeCfg := cfg.Copy()
	// The probe of a replication connection asks over an ordinary one: no
	// walsender (max_wal_senders) taken for it.
	delete(probeCfg.RuntimeParams, "replication")
	probe := func(ctx context.Context) error {
		conn, err := pgconn.ConnectConfig(ctx, probeCfg)
		if err != nil {
			return err
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			conn.Close(cctx)
		}()
		_, err = conn.Exec(ctx, "SELECT 1").ReadAll()
		return err
	}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newWatchedConn(c, o.deadAfter, probe, log), nil
	}
	return nil
}

// watchedConn is a connection whose reads are watched: see the comment at
// the top of the file.
type watchedConn struct {
	net.Conn
	after time.Duration                   // how long a read waits before the probe
	probe func(ctx context.Context) error // asks the server through a new connection
	log   *slog.Logger

	ctx    context.Context // ends the probes when the connection closes
	cancel context.CancelFunc
	probes sync.WaitGroup // the running probe; Close waits for it
	off    atomic.Bool    // the watch is off (stopWatching): reads go straight through

	mu      sync.Mutex
	timer   *time.Timer // runs check after a read has waited after
	reading bool        // a read waits
	since   time.Time   // when it started
	probing bool
	closed  bool
	dead    error // why the connection was taken for dead
}

func newWatchedConn(c net.Conn, after time.Duration, probe func(context.Context) error, log *slog.Logger) *watchedConn {
	w := &watchedConn{Conn: c, after: after, probe: probe, log: log}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.timer = time.AfterFunc(time.Hour, w.check)
	w.timer.Stop()
	return w
}

func (w *watchedConn) Read(b []byte) (int, error) {
	if w.off.Load() {
		return w.Conn.Read(b)
	}
	w.mu.Lock()
	if w.dead != nil {
		w.mu.Unlock()
		return 0, w.dead
	}
	w.reading, w.since = true, time.Now()
	w.timer.Reset(w.after)
	w.mu.Unlock()
	n, err := w.Conn.Read(b)
	w.mu.Lock()
	w.reading = false
	w.timer.Stop()
	if err != nil && w.dead != nil {
		err = w.dead
	}
	w.mu.Unlock()
	return n, err
}

// check runs when a read has waited w.after: it probes the server, and
// takes the connection for dead (closing it, which ends the read) when
// the server does not answer either while the read still waits.
func (w *watchedConn) check() {
	w.mu.Lock()
	if !w.reading || w.probing || w.closed || w.dead != nil || w.off.Load() {
		w.mu.Unlock()
		return
	}
	since := w.since
	w.probing = true
	w.probes.Add(1)
	w.mu.Unlock()
	defer w.probes.Done()

	ctx, cancel := context.WithTimeout(w.ctx, w.after)
	err := w.probe(ctx)
	cancel()

	w.mu.Lock()
	defer w.mu.Unlock()
	w.probing = false
	if w.closed {
		return
	}
	var pgErr *pgconn.PgError
	if err == nil || errors.As(err, &pgErr) {
		// The server answered: it is reachable, the read only slow.
		if w.log != nil {
			w.log.Debug("postgres: a query waits long for its answer; the server answers a new connection, so it waits on", "waited", time.Since(since).Round(time.Millisecond))
		}
		if w.reading {
			w.timer.Reset(w.after)
		}
		return
	}
	if !w.reading || w.since != since || w.off.Load() {
		return // bytes came meanwhile, or the watch is off
	}
	waited := time.Since(since).Round(time.Millisecond)
	w.dead = fmt.Errorf("%w: no answer for %s, and a new connection to the server got no answer within wal.receiver.timeout (%s) either (%v): "+
		"the server host vanished, or a firewall, NAT or network partition dropped the connection? "+
		"Check the network to the server; the task restarts and resumes. If the server is only slow to answer, raise wal.receiver.timeout",
		errDeadConn, waited, w.after, probeErr(err))
	if w.log != nil {
		w.log.Warn("postgres: a database connection is dead; the task restarts", "waited", waited, "wal.receiver.timeout", w.after, "probe_err", err)
	}
	w.Conn.Close() // ends the read
}

// probeErr shortens the probe's error for the message.
func probeErr(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer to the probe"
	}
	return "the probe: " + err.Error()
}

// watchOf returns the watch of conn (a connection pgconn made with
// configureNet's dialer, maybe wrapped in TLS), or nil when it has none
// (wal.receiver.timeout 0).
func watchOf(conn net.Conn) *watchedConn {
	if t, ok := conn.(interface{ NetConn() net.Conn }); ok {
		conn = t.NetConn()
	}
	w, _ := conn.(*watchedConn)
	return w
}

// deadErr returns why the watch took conn for dead, or err when it did
// not. pgconn's simple protocol (Exec, which the replication commands
// use) loses the read's error once the connection is closed, and says
// only "conn closed".
func deadErr(conn net.Conn, err error) error {
	if w := watchOf(conn); w != nil && err != nil {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.dead != nil {
			return w.dead
		}
	}
	return err
}

// stopWatching turns the read watch of conn (a connection pgconn made
// with configureNet's dialer, maybe wrapped in TLS) off, for good: its
// owner watches it itself from now on. A read that waits goes on waiting
// unwatched.
func stopWatching(conn net.Conn) {
	w := watchOf(conn)
	if w == nil {
		return
	}
	w.mu.Lock()
	w.off.Store(true)
	w.timer.Stop()
	w.mu.Unlock()
}

// Close closes the connection and waits for a running probe.
func (w *watchedConn) Close() error {
	w.mu.Lock()
	w.closed = true
	w.timer.Stop()
	w.mu.Unlock()
	w.cancel()
	w.probes.Wait()
	return w.Conn.Close()
}

package mysql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Dead connections. A network cut that sends nothing back (a vanished
// host, a firewall or NAT that dropped the flow, a partition) leaves a
// connection waiting for an answer that never comes: the kernel gives up
// only after ~15 minutes of retransmissions, and not at all while it has
// nothing to send. Two things bound the wait to about
// connection.dead.timeout without cutting a slow query of a live server:
//
//   - TCP keepalives and TCP_USER_TIMEOUT (Linux) on every connection:
//     the peer's kernel answers them while the server works, so only a
//     peer that is gone makes the kernel fail the connection.
//   - A read that has waited connection.dead.timeout has the server
//     checked on a new connection (login and ping): keepalives only test
//     the path to the next TCP endpoint, which behind a TCP proxy
//     (ProxySQL, HAProxy, a cloud SQL proxy, a port forward) is the proxy.
//     When the check gets no answer within the timeout either, the read
//     fails; otherwise the read waits on.
//
// The binlog connection has the server's heartbeats instead of checks
// (deadlineConn in stream.go).

// dialer returns the dialer of the connections to the server: keepalive
// probes from timeout/2 of silence, and TCP_USER_TIMEOUT, so that an
// unanswering peer fails the connection after about timeout.
func dialer(timeout time.Duration) *net.Dialer {
	return &net.Dialer{
		Timeout: 10 * time.Second,
		KeepAliveConfig: net.KeepAliveConfig{
			Enable:   true,
			Idle:     max(timeout/2, time.Second),
			Interval: max(timeout/6, time.Second),
			Count:    3,
		},
		Control: func(network, _ string, c syscall.RawConn) error {
			if network != "tcp" && network != "tcp4" && network != "tcp6" {
				return nil
			}
			return setUserTimeout(c, timeout)
		},
	}
}

// deadNetwork is the error of a connection taken for dead.
type deadNetwork struct {
	addr    string
	timeout time.Duration
	check   error // why the check on a new connection failed
}

func (e *deadNetwork) Error() string {
	return fmt.Sprintf("no answer from the server at %s for %s, nor on a new connection (%v): the network to the server is down or the host vanished "+
		"(a firewall or NAT dropped the connection?); the task restarts. Check the network to the server; if the server is only slow to answer, raise connection.dead.timeout",
		e.addr, e.timeout, e.check)
}

// Timeout and Temporary make it a net.Error, as the read timeout it
// replaces.
func (e *deadNetwork) Timeout() bool   { return true }
func (e *deadNetwork) Temporary() bool { return true }

// watchdog checks the server on a new connection for the connections of
// one pool, and remembers the first connection it took for dead.
type watchdog struct {
	cfg     *mysql.Config // the pool's, with a plain dial function
	timeout time.Duration

	mu  sync.Mutex // guards the last check; held while checking
	at  time.Time  // when the last check started
	err error      // its result

	dead atomic.Pointer[deadNetwork] // the first connection taken for dead
}

// newWatchdog returns the watchdog of a pool connecting with cfg, and
// sets cfg's dial function to one that makes watched connections.
func newWatchdog(cfg *mysql.Config, timeout time.Duration) *watchdog {
	d := dialer(timeout)
	w := &watchdog{cfg: cfg.Clone(), timeout: timeout}
	w.cfg.DialFunc = d.DialContext
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, w: w}, nil
	}
	return w
}

// check reports whether the server answers a new connection within the
// timeout; a refusal (too many connections, say) is an answer. A check started after since answers for every connection
// silent since then, so that the connections waiting together (the
// snapshot's workers) check once.
func (w *watchdog) check(since time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.at.After(since) {
		return w.err
	}
	w.at = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	w.err = func() error {
		conn, err := mysql.NewConnector(w.cfg)
		if err != nil {
			return err
		}
		c, err := conn.Connect(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		return c.(driver.Pinger).Ping(ctx)
	}()
	var me *mysql.MySQLError
	switch {
	case errors.As(w.err, &me):
		// The server answered, if only to refuse (too many connections):
		// it is there.
		w.err = nil
	case w.err != nil && ctx.Err() != nil:
		w.err = fmt.Errorf("no answer within %s", w.timeout)
	}
	return w.err
}

// explain adds to err, the error a task ends with, that the network is
// the likely cause when a connection of the pool was taken for dead.
func (w *watchdog) explain(err error) error {
	if w == nil || err == nil {
		return err
	}
	if d := w.dead.Load(); d != nil && !errors.As(err, new(*deadNetwork)) {
		return fmt.Errorf("%w (%w)", err, d)
	}
	return err
}

// watchedConn is a connection of the pool. A read that has waited the
// timeout has the server checked (watchdog.check) and waits on if it
// answers; else it fails with deadNetwork. The read deadline is moved at
// most twice per timeout, not before every read (see deadlineConn). Once
// its user sets a deadline itself (the DSN's readTimeout), it leaves
// them alone.
type watchedConn struct {
	net.Conn
	w      *watchdog
	moved  time.Time // when the deadline was last moved; reads are serial
	pinned atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	if c.pinned.Load() {
		return c.Conn.Read(b)
	}
	timeout := c.w.timeout
	start := time.Now()
	if start.Sub(c.moved) > timeout/2 {
		c.moved = start
		if err := c.Conn.SetReadDeadline(start.Add(timeout)); err != nil {
			return 0, err
		}
	}
	for {
		n, err := c.Conn.Read(b)
		var ne net.Error
		if n > 0 || err == nil || !errors.As(err, &ne) || !ne.Timeout() || c.pinned.Load() {
			return n, err
		}
		now := time.Now()
		if now.Sub(start) >= timeout {
			if cerr := c.w.check(start); cerr != nil {
				d := &deadNetwork{addr: c.w.cfg.Addr, timeout: timeout, check: cerr}
				c.w.dead.CompareAndSwap(nil, d)
				return 0, d
			}
			start, now = time.Now(), time.Now() // alive: wait another timeout
		}
		c.moved = now
		if err := c.Conn.SetReadDeadline(start.Add(timeout)); err != nil {
			return 0, err
		}
	}
}

func (c *watchedConn) SetReadDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetReadDeadline(t)
}

func (c *watchedConn) SetDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetDeadline(t)
}

// SyscallConn lets the driver check a pooled connection for a close by
// the server before it reuses it. The check reads the socket directly,
// and fails once the read deadline has passed, as it has after a while
// in the pool: so the deadline is cleared first (the next Read sets it).
func (c *watchedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	if !c.pinned.Load() {
		if err := c.Conn.SetReadDeadline(time.Time{}); err != nil {
			return nil, err
		}
		c.moved = time.Time{}
	}
	return sc.SyscallConn()
}

package mysql

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
	"golang.org/x/sync/errgroup"

	"github.com/tributary-io/tributary/connect"
)

// idleWait is the longest the stream loop waits for an event before it
// looks at heartbeats and pending records.
const idleWait = 200 * time.Millisecond

// heldWait is the longest records that a commit held back (the stage was
// busy: see flush) wait when no event follows, as at the end of a burst:
// the stream loop looks at them that often.
const heldWait = 10 * time.Millisecond

// streamer reads the binlog and turns row events into records. It runs on
// the runner goroutine, and handles events on the binlog client's reading
// goroutine (see session).
type streamer struct {
	src *Source
	enc *encoder

	// mu guards the rest of the streamer while a session runs: events
	// are handled on the binlog client's goroutine, idle work on the
	// runner's. Between sessions only the runner touches it.
	mu sync.Mutex

	tables map[uint64]*table // by table id, from the table map events; nil: not captured

	file  string   // the current binlog file
	gtids *gtidSet // executed up to the last commit; nil without GTIDs

	pending []item       // records and changes not yet handed to the stage
	held    bool         // a commit left records in pending (flush)
	stage   *encodeStage // encodes batches on other goroutines
	scratch scratch      // for the small batches flush encodes itself
	// meta decodes table maps with their optional metadata, which the
	// binlog client skips; it follows the format description events.
	meta *replication.BinlogParser
	// The format description in force: whether events end with a
	// checksum, and the post-header lengths.
	fde      *replication.FormatDescriptionEvent
	checksum bool
	// maps holds the last table map of each table id that the connector
	// decodes the rows of itself (rawevents.go); cleared with tables.
	maps     map[uint64]*tableMapEntry
	imgs     []rowImage // scratch for the images of a rows event
	slab     *slab      // newChange's
	slabUsed int        // changes of slab handed out
	free     chan *slab // encoded slabs, cleared, for newChange
	// freeItems holds the item slices of encoded batches, cleared, for
	// flush's next pending: a batch's items are 16 bytes a change, all of
	// it pointers the GC scans.
	freeItems chan []item

	// The incremental snapshot (incremental.go).
	inc        *incState // in progress; nil for none
	chunk      *incChunk // the chunk between its watermarks; nil for none
	incChanged bool      // inc changed and no record carries it yet
	chunkSeq   int

	// XA transactions (xa.go).
	xaOpen  *xaTx       // the XA prepare group being received; nil for none
	xaHeld  []*xaTx     // prepared and undecided, in prepare order
	xaBytes int64       // binlog size of the rows events held
	emitted *replayMark // the start position's emitted mark, until passed; nil for none

	// The transaction being received.
	inTx       bool
	txGTID     string            // "0-1-42" or "uuid:42"; "" without GTIDs
	txMaria    mysql.MariadbGTID // valid when hasMaria
	hasMaria   bool
	txSID      []byte
	txGNO      int64
	txStart    uint32 // where the transaction starts in file
	txServerID uint32
	txTime     time.Time
	txThread   int64
	txQuery    string // the statement of the rows events that follow (include.query)
	txBegun    bool   // the transaction's BEGIN record was emitted
	txOpened   bool   // begun by BEGIN or a MariaDB GTID without FL_STANDALONE: a statement does not end it
	txIDFixed  string // the transaction block's id when not txGTID's (xaEmit)
	txMark     int    // where the transaction's records start in pending
	total      int64
	counts     []txCount

	// The end of the last transaction; its GTIDs are filled in by
	// lastPosition, since the set changes only at commits.
	last position
	// lastRec is the index in pending of the last record of the last
	// transaction that emitted any, -1 when none: flush gives it the
	// position then, so that a batch of small transactions encodes one
	// position, not one per transaction.
	lastRec  int
	nextBeat time.Time
	warned   map[string]bool
	events   int64 // events received, to tell a working connection
}

func newStreamer(s *Source, enc *encoder) *streamer {
	st := &streamer{src: s, enc: enc, tables: map[uint64]*table{}, maps: map[uint64]*tableMapEntry{}, warned: map[string]bool{},
		free: make(chan *slab, freeSlabs), freeItems: make(chan []item, freeBatches)}
	st.file = s.plan.start.File
	if s.plan.gtids != nil {
		st.gtids = s.plan.gtids.clone()
	} else if s.srv.gtidMode {
		st.gtids = newGTIDSet(s.srv.flavor)
	}
	st.last = position{File: s.plan.start.File, Pos: s.plan.start.Pos, ServerID: s.srv.serverID}
	st.lastRec = -1
	st.inc = s.plan.inc.clone()
	st.emitted = s.plan.emitted
	st.meta = replication.NewBinlogParser()
	st.meta.SetFlavor(s.srv.flavor)
	// The forms rowsdec.go decodes too, for the events go-mysql parses.
	st.meta.SetTimestampStringLocation(time.UTC)
	st.meta.SetParseTime(false)
	st.meta.SetUseDecimal(false)
	return st
}

// demoted passes go-mysql's log records on at debug level: the connector
// reports what matters (a lost connection, an error) itself, while
// go-mysql logs every dropped connection, and the failed KILL of an
// already dead one when closing, as errors of its own. The logger is per
// syncer, so the messages carry the source's attributes (logging.go).
type demoted struct{ h slog.Handler }

func (d demoted) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d demoted) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return d.h.Handle(ctx, r)
}

func (d demoted) WithAttrs(attrs []slog.Attr) slog.Handler { return demoted{d.h.WithAttrs(attrs)} }
func (d demoted) WithGroup(name string) slog.Handler       { return demoted{d.h.WithGroup(name)} }

// syncerConfig is the binlog client's configuration.
func (s *Source) syncerConfig(ctx context.Context) (replication.BinlogSyncerConfig, error) {
	host, port, err := hostPort(s.set.dsn)
	if err != nil {
		return replication.BinlogSyncerConfig{}, err
	}
	tlsCfg, err := s.binlogTLS(ctx)
	if err != nil {
		return replication.BinlogSyncerConfig{}, err
	}
	cfg := replication.BinlogSyncerConfig{
		ServerID:                s.set.serverID,
		Flavor:                  s.srv.flavor,
		Host:                    host,
		Port:                    port,
		User:                    s.set.dsn.User,
		Password:                s.set.dsn.Passwd,
		TimestampStringLocation: time.UTC,
		DisableRetrySync:        true,
		Logger:                  slog.New(demoted{s.log.Handler()}).With("component", componentBinlog),
		EventCacheCount:         4096,
		// Events are decoded by the connector (rawevents.go); the GTID
		// set is tracked by the connector too.
		RawModeEnabled: true,
		DiscardGTIDSet: true,
		TLSConfig:      tlsCfg,
	}
	if s.set.includeQuery && s.srv.flavor == flavorMariaDB {
		// MariaDB sends its Annotate_rows events only when asked.
		cfg.DumpCommandFlag |= replication.BINLOG_SEND_ANNOTATE_ROWS_EVENT
	}
	if s.set.heartbeat > 0 {
		cfg.HeartbeatPeriod = s.set.heartbeat
	} else {
		cfg.HeartbeatPeriod = 30 * time.Second
	}
	// The server sends a heartbeat when it has nothing else to send, so a
	// connection silent for several periods is dead (a network partition
	// sends no reset): drop it and reconnect. Three heartbeats fit in
	// connection.dead.timeout. go-mysql's ReadTimeout would do it by moving
	// the read deadline before every packet, which costs a tenth of the
	// streaming CPU; deadlineConn moves it at most twice per timeout. The
	// dialer's keepalives and TCP_USER_TIMEOUT bound the writes
	// (deadconn.go).
	cfg.HeartbeatPeriod = min(cfg.HeartbeatPeriod, s.set.deadTimeout/3)
	dead := s.deadAfter
	if dead == 0 {
		dead = s.set.deadTimeout
	}
	network := "tcp"
	if s.set.dsn.Net == "unix" {
		network = "unix"
	}
	d := dialer(s.set.deadTimeout)
	cfg.Dialer = func(ctx context.Context, _, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &deadlineConn{Conn: c, timeout: dead}, nil
	}
	return cfg, nil
}

// closeWait bounds the connection go-mysql opens when a session ends, to
// kill its binlog dump thread: through a dead network it would hold the
// session's end (and the task's restart) for the whole dead timeout. A
// dump thread left behind ends when the server notices, or when the next
// session registers with the same server id.
const closeWait = 3 * time.Second

// boundedOnClose returns dial, which makes connections bounded by
// closeWait once closing is done.
func boundedOnClose(dial func(ctx context.Context, network, addr string) (net.Conn, error), closing context.Context) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if closing.Err() == nil {
			return dial(ctx, network, addr)
		}
		ctx, cancel := context.WithTimeout(ctx, closeWait)
		defer cancel()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if err := c.SetDeadline(time.Now().Add(closeWait)); err != nil {
			c.Close()
			return nil, err
		}
		return c, nil
	}
}

// deadlineConn fails a read that waits longer than timeout: every read
// starts with at least timeout/2 before the deadline, and the deadline is
// moved only when less than that is left. Once its user sets a read
// deadline itself (go-mysql does when closing), it stops moving it.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	moved   time.Time // when the deadline was last moved; reads are serial
	pinned  atomic.Bool
}

func (c *deadlineConn) Read(b []byte) (int, error) {
	if c.pinned.Load() {
		return c.Conn.Read(b)
	}
	if now := time.Now(); now.Sub(c.moved) > c.timeout/2 {
		c.moved = now
		if err := c.Conn.SetReadDeadline(now.Add(c.timeout)); err != nil {
			return 0, err
		}
	}
	n, err := c.Conn.Read(b)
	var ne net.Error
	if err != nil && errors.As(err, &ne) && ne.Timeout() && !c.pinned.Load() {
		return n, &silentBinlog{timeout: c.timeout}
	}
	return n, err
}

// silentBinlog is the error of a binlog connection that received nothing,
// not even a heartbeat, for its timeout.
type silentBinlog struct{ timeout time.Duration }

func (e *silentBinlog) Error() string {
	return fmt.Sprintf("nothing from the server for %s, not even a heartbeat: the network to the server is down or the host vanished (a firewall or NAT dropped the connection?); "+
		"check the network to the server; if the server is only slow to answer, raise connection.dead.timeout", e.timeout)
}

// Timeout and Temporary make it a net.Error, as the read timeout it
// replaces: a new connection may cure it.
func (e *silentBinlog) Timeout() bool   { return true }
func (e *silentBinlog) Temporary() bool { return true }

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetReadDeadline(t)
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.pinned.Store(true)
	return c.Conn.SetDeadline(t)
}

// run streams until ctx is done or an error that reconnecting cannot
// cure. When the binlog connection drops (a network error, the server
// restarting, the dump thread killed), it drops the records of the
// transaction it was receiving and reconnects with backoff from the end of
// the last whole transaction; it gives up when it has not been able to
// connect (and receive an event) for reconnectFor.
func (st *streamer) run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	st.stage = newEncodeStage(st)
	g.Go(func() error { return st.stage.run(gctx) })
	g.Go(func() error {
		defer st.stage.close()
		return st.loop(gctx)
	})
	return g.Wait()
}

// loop connects and reconnects; see run.
func (st *streamer) loop(ctx context.Context) error {
	s := st.src
	cfg, err := s.syncerConfig(ctx)
	if err != nil {
		return err
	}
	if s.set.heartbeat > 0 {
		st.nextBeat = time.Now().Add(s.set.heartbeat)
	}
	bo := backoff{initial: 100 * time.Millisecond, max: 10 * time.Second}
	var failing time.Time // since when no connection has worked
	for attempt := 0; ; attempt++ {
		before := st.events
		err := st.session(ctx, cfg, attempt > 0)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !connect.IsRetryable(err) {
			return err
		}
		if st.events != before {
			failing = time.Time{}
			bo.reset()
		}
		if failing.IsZero() {
			failing = time.Now()
		}
		if time.Since(failing) > s.reconnectFor {
			// Plain words and what to do first; the client's own text
			// (a dial error, or go-mysql's "readInitialHandshake: …
			// connection was bad") last, for diagnosis. %v: giving up
			// is not retryable, even if err is.
			return fmt.Errorf("could not keep a binlog connection to the server at %s: reconnecting failed for %s; the task restarts from the stored position. "+
				"First check that the server is running and reachable from here (a restart, a failover, a firewall?) and that it accepts connections (max_connections); error: %v",
				net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), s.reconnectFor, err)
		}
		st.abandonTx()
		wait := bo.next()
		s.log.Warn("mysql: binlog connection lost; reconnecting", "err", err, "from", st.from(), "in", wait.Round(time.Millisecond))
		s.setPhase("reconnecting")
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// from describes where the next binlog connection starts.
func (st *streamer) from() string {
	if st.gtids != nil && !st.gtids.isEmpty() {
		return "gtid " + st.gtids.String()
	}
	return coords{st.last.File, st.last.Pos}.String()
}

// session connects to the binlog at the end of the last whole transaction
// and handles events until an error. Errors of the connection that a new
// one may cure are marked connect.Retryable.
func (st *streamer) session(ctx context.Context, cfg replication.BinlogSyncerConfig, again bool) error {
	s := st.src
	// Events are handled on the binlog client's reading goroutine
	// (SynchronousEventHandler): handing each over through its channel
	// cost a quarter of the streaming CPU. This goroutine waits for the
	// client's errors, hands over records held back by a commit every
	// heldWait and runs the idle work every idleWait; st.mu keeps
	// the two apart. sctx ends before Close, which waits for the reading
	// goroutine, so that a handler waiting for Read gives up.
	sctx, cancel := context.WithCancel(ctx)
	h := &eventHandler{st: st, ctx: sctx}
	cfg.SynchronousEventHandler = h
	cfg.Dialer = boundedOnClose(cfg.Dialer, sctx)
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	defer cancel()
	var bs *replication.BinlogStreamer
	var err error
	from := st.from()
	if st.gtids != nil && !st.gtids.isEmpty() {
		set, err := st.gtids.forSync()
		if err != nil {
			return err
		}
		bs, err = syncer.StartSyncGTID(set)
		if err != nil {
			return st.streamErr(err, from)
		}
	} else {
		bs, err = syncer.StartSync(mysql.Position{Name: st.last.File, Pos: st.last.Pos})
		if err != nil {
			return st.streamErr(err, from)
		}
	}
	if again {
		s.log.Info("mysql: streaming again", "from", from, "server_id", s.set.serverID)
	} else {
		s.log.Info("mysql: streaming", "from", from, "server_id", s.set.serverID)
	}
	st.mu.Lock()
	h.connected()
	st.mu.Unlock()
	// One wait context per idle period, not per event: events come
	// thousands a second.
	w := &waiter{}
	defer w.stop()
	wctx := w.next(ctx)
	lastIdle := time.Now()
	for {
		_, err := bs.GetEvent(wctx) // only errors: events go to h
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			continue
		}
		if errors.Is(err, context.DeadlineExceeded) {
			wctx = w.next(ctx)
			st.mu.Lock()
			if now := time.Now(); now.Sub(lastIdle) >= idleWait {
				lastIdle = now
				err = st.idle(sctx)
			} else if st.held {
				err = st.flush(sctx, false)
			} else {
				err = nil
			}
			st.mu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		if herr := h.failed(); herr != nil {
			return herr
		}
		return st.streamErr(err, from)
	}
}

// eventHandler handles the binlog events on the binlog client's reading
// goroutine. An error stops the client; failed returns it as it was.
type eventHandler struct {
	st     *streamer
	ctx    context.Context // the session's; ends before the client is closed
	err    atomic.Pointer[error]
	phased bool // the phase says streaming again; under st.mu
}

// connected reports the phase once the session works: at its first event
// (which can come before StartSync returns), before any record of it is
// handed over. Called under st.mu.
func (h *eventHandler) connected() {
	if !h.phased {
		h.phased = true
		h.st.setIncPhase()
	}
}

func (h *eventHandler) HandleEvent(ev *replication.BinlogEvent) error {
	st := h.st
	st.mu.Lock()
	defer st.mu.Unlock()
	h.connected()
	st.events++
	err := st.handleRaw(h.ctx, ev)
	if err == nil && (st.inc != nil || st.incChanged || len(st.src.signals) > 0) {
		err = st.incremental(h.ctx)
	}
	if err != nil {
		stored := err // only an error escapes, not every event's err
		h.err.Store(&stored)
	}
	return err
}

func (h *eventHandler) failed() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// abandonTx forgets the transaction being received when the connection
// dropped: the records not yet handed to Read are dropped (those already
// handed over come again, at least once), and the next connection starts
// from the end of the last whole transaction.
func (st *streamer) abandonTx() {
	if st.inTx {
		st.pending = st.pending[:st.txMark]
		st.inTx = false
	}
	if x := st.xaOpen; x != nil {
		st.xaBytes -= x.bytes
		st.xaOpen = nil
	}
	st.file = st.last.File
	clear(st.tables)
	clear(st.maps)
}

// backoff is exponential backoff with jitter: waits in [d/2, d], d
// doubling from initial up to max.
type backoff struct {
	initial, max time.Duration
	attempt      int
}

func (b *backoff) next() time.Duration {
	d := b.initial << min(b.attempt, 30)
	if d <= 0 || d > b.max {
		d = b.max
	}
	b.attempt++
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func (b *backoff) reset() { b.attempt = 0 }

// waiter hands out contexts that end heldWait after they are made.
type waiter struct{ cancel context.CancelFunc }

func (w *waiter) next(ctx context.Context) context.Context {
	w.stop()
	wctx, cancel := context.WithTimeout(ctx, heldWait)
	w.cancel = cancel
	return wctx
}

func (w *waiter) stop() {
	if w.cancel != nil {
		w.cancel()
	}
}

// streamErr explains an error of the binlog connection, and marks it
// connect.Retryable when a new connection may cure it (transient).
func (st *streamer) streamErr(err error, from string) error {
	var me *mysql.MyError
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG && strings.Contains(me.Message, "server_id") {
		return fmt.Errorf("read the binlog from %s: %w; another replica uses server.id %d: give this source a unique server.id", from, err, st.src.set.serverID)
	}
	if errors.As(err, &me) && me.Code == mysql.ER_MASTER_FATAL_ERROR_READING_BINLOG {
		return fmt.Errorf("read the binlog from %s: %w; the binlog this position needs was probably purged: start over with a snapshot (delete the source's stored offsets, or set snapshot.mode=when_needed) and keep binlogs longer (binlog_expire_logs_seconds)", from, err)
	}
	if errors.As(err, &me) && (me.Code == mysql.ER_SPECIFIC_ACCESS_DENIED_ERROR || me.Code == mysql.ER_ACCESS_DENIED_ERROR || me.Code == mysql.ER_DBACCESS_DENIED_ERROR) {
		return fmt.Errorf("read the binlog from %s: %w; the user needs REPLICATION SLAVE: GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO …;", from, err)
	}
	err = fmt.Errorf("read the binlog from %s: %w", from, err)
	if transient(err) {
		return connect.Retryable(err)
	}
	return err
}

// transient reports whether a binlog connection error may go away with a
// new connection: the connection broke (network errors, EOF, a killed or
// timed-out connection) or the server is restarting or busy. Errors the
// server reports about the request itself (a purged binlog, a duplicate
// server id, missing privileges) and corrupt events are not.
func transient(err error) bool {
	var me *mysql.MyError
	if errors.As(err, &me) {
		switch me.Code {
		case mysql.ER_SERVER_SHUTDOWN, mysql.ER_NET_READ_INTERRUPTED, mysql.ER_NET_READ_ERROR,
			mysql.ER_NET_WRITE_INTERRUPTED, mysql.ER_NET_ERROR_ON_WRITE, mysql.ER_QUERY_INTERRUPTED,
			mysql.ER_CON_COUNT_ERROR, mysql.ER_TOO_MANY_USER_CONNECTIONS, mysql.ER_ABORTING_CONNECTION,
			mysql.ER_NEW_ABORTING_CONNECTION,
			erConnectionKilled, erServerGone, erServerLost:
			return true
		}
		return false
	}
	if errors.Is(err, replication.ErrChecksumMismatch) {
		return false
	}
	var ne net.Error
	return errors.Is(err, mysql.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.As(err, &ne) ||
		strings.Contains(err.Error(), "connection was bad") || strings.Contains(err.Error(), "sync is been closing")
}

// MySQL and MariaDB error codes go-mysql has no names for.
const (
	erConnectionKilled = 1927 // MariaDB: the connection was killed
	erServerGone       = 2006 // client: the server has gone away
	erServerLost       = 2013 // client: lost connection during a query
)

// idle runs when no event came for a while: hand over what is pending and
// emit a heartbeat when one is due.
func (st *streamer) idle(ctx context.Context) error {
	if err := st.incremental(ctx); err != nil {
		return err
	}
	if err := st.maybeHeartbeat(ctx); err != nil {
		return err
	}
	return st.flush(ctx, false)
}

func (st *streamer) maybeHeartbeat(ctx context.Context) error {
	if st.nextBeat.IsZero() || st.inTx || time.Now().Before(st.nextBeat) {
		return nil
	}
	st.nextBeat = time.Now().Add(st.src.set.heartbeat)
	st.pending = append(st.pending, recordItem(st.enc.heartbeat(time.Now(), st.lastPosition())))
	return st.flush(ctx, false)
}

// flush hands the pending records to Read. Unless forced, at a commit it
// waits while Read still has a batch to take, so that the records of small
// transactions travel together under load. Inside a transaction it hands
// over only whole batches, keeping the last record back: the commit gives
// it the transaction's position.
func (st *streamer) flush(ctx context.Context, atCommit bool) error {
	n := len(st.pending)
	if st.inTx {
		n--
	}
	if n <= 0 {
		return nil
	}
	full := n >= st.src.set.batchSize
	if atCommit && !full && st.stage.busy() {
		st.held = true
		return nil
	}
	st.held = false
	if st.lastRec >= 0 && st.lastRec < n {
		// Outside a transaction st.last is its end; inside one, the
		// end of the last commit (the transaction began after it).
		pos := st.lastPosition()
		if it := &st.pending[st.lastRec]; it.ch != nil {
			it.ch.pos = &pos
		} else {
			it.rec.Position = pos
		}
		st.lastRec = -1
	} else if st.lastRec >= n {
		st.lastRec -= n
	}
	batch := st.pending[:n] // its capacity goes back to freeItems with it
	rest := st.pending[n:]
	// The next batch is likely as large as this one: room for it spares
	// growing pending step by step.
	st.pending = append(st.items(max(len(rest)+n/8, n+n/4, 64)), rest...)
	st.txMark = max(0, st.txMark-n)
	if len(batch) <= smallBatch && st.stage.inflight.Load() == 0 {
		// Nothing in the stage to overtake: encode here, sparing a small
		// batch (a quiet stream's single transaction) two goroutine
		// hand-overs.
		recs, err := st.encodeItems(&st.scratch, batch)
		if err != nil {
			return err
		}
		st.recycle(batch)
		return st.src.push(ctx, recs)
	}
	return st.stage.send(ctx, batch)
}

// freeBatches is how many encoded batches' item slices the streamer keeps
// for reuse: about as many as the stage holds.
const freeBatches = 2 * stageDepth

// items returns an empty item slice with room for n items, an encoded
// batch's when one that large is back.
func (st *streamer) items(n int) []item {
	select {
	case s := <-st.freeItems:
		if cap(s) >= n {
			return s
		}
	default:
	}
	return make([]item, 0, n)
}

// recycle hands the item slice of an encoded batch back to items; nothing
// reads it afterwards. It runs on the encoder goroutines too.
func (st *streamer) recycle(batch []item) {
	batch = batch[:cap(batch)]
	clear(batch) // drops what the items pointed to
	select {
	case st.freeItems <- batch[:0]:
	default:
	}
}

func (st *streamer) handle(ctx context.Context, ev *replication.BinlogEvent) error {
	h := ev.Header
	switch e := ev.Event.(type) {
	case *replication.RotateEvent:
		st.file = string(e.NextLogName)
		if !st.inTx {
			st.last.File, st.last.Pos = st.file, uint32(e.Position)
		}
	case *replication.MariadbGTIDEvent:
		st.mariaGTID(h, e.GTID, e.Flags)
	case *replication.GTIDEvent:
		st.xaUnfinished(h)
		st.begin(h)
		if !bytes.Equal(e.SID, make([]byte, len(e.SID))) && e.GNO > 0 {
			st.txSID, st.txGNO = e.SID, e.GNO
			st.txGTID = fmt.Sprintf("%s:%d", uuidString(e.SID), e.GNO)
		}
		if t := e.ImmediateCommitTime(); !t.IsZero() {
			st.txTime = t
		}
	case *replication.QueryEvent:
		return st.query(ctx, h, e)
	case *replication.FormatDescriptionEvent:
		if _, err := st.meta.Parse(ev.RawData); err != nil {
			return fmt.Errorf("binlog format description at %s:%d: %w", st.file, h.LogPos, err)
		}
		st.fde = e
		st.checksum = e.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32
	case *replication.TableMapEvent:
		t, err := st.resolve(ctx, e, ev.RawData, h)
		if err != nil {
			return err
		}
		st.tables[e.TableID] = t
	case *replication.RowsEvent:
		// Decoded by go-mysql's parser (rawevents.go says when).
		st.src.rowsParsed.Add(1)
		return st.rows(ctx, e, h)
	case *replication.XIDEvent:
		return st.commit(ctx, h)
	case *replication.RowsQueryEvent:
		if st.src.set.includeQuery {
			st.txQuery = string(e.Query)
		}
	case *replication.MariadbAnnotateRowsEvent:
		if st.src.set.includeQuery {
			st.txQuery = string(e.Query)
		}
	case *replication.TransactionPayloadEvent:
		// MySQL's binlog transaction compression: the transaction's events
		// travel inside one payload.
		for _, inner := range e.Events {
			if inner.Header != nil && inner.Header.LogPos == 0 {
				inner.Header.LogPos = h.LogPos
			}
			if err := st.handle(ctx, inner); err != nil {
				return err
			}
		}
	case *replication.GenericEvent:
		if h.EventType == replication.HEARTBEAT_EVENT || h.EventType == replication.HEARTBEAT_LOG_EVENT_V2 {
			return st.idle(ctx)
		}
		if h.EventType == replication.XA_PREPARE_LOG_EVENT {
			return st.xaPrepareEvent(ctx, h, e.Data)
		}
	}
	return nil
}

// mariaFlStandalone flags the GTID event of an event group without a
// terminating COMMIT, Xid or XA event: a DDL statement, ended by itself
// (MariaDB's log_event.h).
const mariaFlStandalone = 0x01

// mariaGTID starts the transaction of a MariaDB GTID event with flags.
func (st *streamer) mariaGTID(h *replication.EventHeader, id mysql.MariadbGTID, flags byte) {
	st.xaUnfinished(h)
	st.begin(h)
	st.txMaria, st.hasMaria = id, true
	st.txGTID = mariaGTIDString(id)
	// Without FL_STANDALONE the event group ends with a COMMIT, Xid or
	// XA event, not at its first statement.
	st.txOpened = flags&mariaFlStandalone == 0
	if flags&mariaFlPreparedXA != 0 {
		st.xaBegin()
	}
}

// query handles a query event: BEGIN, COMMIT, or a statement (DDL).
func (st *streamer) query(ctx context.Context, h *replication.EventHeader, e *replication.QueryEvent) error {
	q := strings.TrimSpace(bytesString(e.Query))
	switch {
	case strings.EqualFold(q, "BEGIN"):
		if !st.inTx {
			st.begin(h)
		}
		st.txOpened = true
		st.txThread = int64(e.SlaveProxyID)
		return nil
	case strings.EqualFold(q, "COMMIT"):
		return st.commit(ctx, h)
	case isXA(q):
		return st.xaQuery(ctx, h, q)
	}
	switch txStatement(q) {
	case txSavepoint:
		// SAVEPOINT, ROLLBACK TO, RELEASE SAVEPOINT: inside the
		// transaction, which goes on; the binlog holds only the rows
		// that stayed.
		return nil
	case txRollback:
		// A transaction that changed non-transactional tables ends with
		// ROLLBACK: those changes stay, like a commit's.
		if !st.inTx {
			st.begin(h)
		}
		return st.commit(ctx, h)
	}
	if !st.inTx {
		st.begin(h) // a statement logged without a GTID event before it
	}
	q = strings.Clone(q)
	if err := st.ddl(ctx, h, string(e.Schema), q); err != nil {
		return err
	}
	if err := st.truncate(ctx, h, string(e.Schema), q, int64(e.SlaveProxyID)); err != nil {
		return err
	}
	if st.txOpened || opensTransaction(q) {
		// A statement inside a transaction (the CREATE of a CREATE TABLE
		// … SELECT, whose rows and commit follow; a statement-format
		// change): the Xid or COMMIT that follows ends the transaction.
		st.txOpened = true
		return nil
	}
	return st.commit(ctx, h) // a DDL statement is a transaction of its own
}

// truncate handles a TRUNCATE [TABLE] statement (the binlog logs it as a
// statement even in ROW format): the rows of an incremental snapshot's
// open chunk of the table are gone, and unless skipped.operations holds t
// the table's topic gets a truncate event as Debezium writes it: op t, a
// null key, no before nor after, outside any transaction block.
func (st *streamer) truncate(ctx context.Context, h *replication.EventHeader, schema, query string, thread int64) error {
	if !isTruncate(query) {
		return nil
	}
	refs := ddlTables(query, schema)
	if len(refs) != 1 {
		return nil
	}
	r := refs[0]
	s := st.src
	if systemDB(r.db) || !matchAny(s.set.tables, r.db, r.name) || st.replayed() {
		return nil
	}
	if c := st.chunk; c != nil && c.open && !c.closing && c.table == r.db+"."+r.name {
		clear(c.recs)
	}
	if s.set.skipped.Skips(connect.OpTruncate) {
		return nil
	}
	// The definition only shapes the event's schema (schemas=true): the
	// schema history's at this point, else the server's, else none (the
	// table is gone since).
	var def *tableDef
	if s.hist != nil {
		def = s.hist.lookup(r.db, r.name, coords{st.file, h.LogPos})
	}
	if def == nil {
		var err error
		if def, err = readTableDef(ctx, s.db, r.db, r.name); err != nil {
			return fmt.Errorf("truncate of %s.%s at %s:%d: %w", r.db, r.name, st.file, h.LogPos, err)
		}
	}
	if def == nil {
		def = &tableDef{DB: r.db, Name: r.name}
	}
	t, err := st.enc.mapper.newTable(&s.set, def)
	if err != nil {
		return fmt.Errorf("truncate of %s.%s at %s:%d: %w", r.db, r.name, st.file, h.LogPos, err)
	}
	si := srcInfo{snapshot: connect.SnapshotFalse, ts: st.txTime, serverID: h.ServerID, gtid: st.txGTID,
		file: st.file, pos: st.txStart, thread: thread}
	if s.set.includeQuery {
		si.query = query
	}
	ev := &connect.ChangeEvent{Op: connect.OpTruncate, Source: st.enc.source(t, &si)}
	ev.SetTime(time.Now())
	rec, err := st.enc.record(t, ev)
	if err != nil {
		return err
	}
	st.pending = append(st.pending, recordItem(rec))
	st.total++ // the commit that follows gives it the position
	return nil
}

// begin starts a transaction at the event with header h.
func (st *streamer) begin(h *replication.EventHeader) {
	st.inTx = true
	st.txGTID, st.hasMaria, st.txSID, st.txGNO, st.txThread, st.txQuery = "", false, nil, 0, 0, ""
	st.txStart = h.LogPos - h.EventSize
	st.txServerID = h.ServerID
	st.txTime = time.Unix(int64(h.Timestamp), 0)
	st.txBegun, st.txIDFixed, st.txOpened = false, "", false
	st.txMark = len(st.pending)
	st.total, st.counts = 0, st.counts[:0]
}

// commit ends the transaction at the event with header h: its GTID joins
// the executed set, and its last record (if any) carries the position.
func (st *streamer) commit(ctx context.Context, h *replication.EventHeader) error {
	if st.gtids != nil {
		switch {
		case st.hasMaria:
			st.gtids.addMaria(st.txMaria)
		case st.txSID != nil:
			if err := st.gtids.addMySQL(st.txSID, st.txGNO); err != nil {
				return err
			}
		}
	}
	chunkRecs := st.emitChunk()
	emitted := st.txBegun || st.total > 0 || chunkRecs > 0
	if st.src.set.txMetadata && st.txBegun {
		st.pending = append(st.pending, recordItem(st.enc.txRecord(st.txID(), st.txTime, true, st.total, st.counts)))
	}
	st.inTx, st.txOpened = false, false
	st.src.committed(st.total, time.Unix(int64(h.Timestamp), 0))
	st.last = position{File: st.file, Pos: h.LogPos, ServerID: h.ServerID, TsSec: int64(h.Timestamp)}
	st.passedMark()
	if !emitted {
		return st.flush(ctx, true)
	}
	st.lastRec = len(st.pending) - 1
	if err := st.maybeHeartbeat(ctx); err != nil {
		return err
	}
	return st.flush(ctx, true)
}

// lastPosition encodes the position at the end of the last transaction.
func (st *streamer) lastPosition() connect.Position {
	p := st.last
	if st.gtids != nil {
		p.GTIDs = st.gtids.String()
	}
	p.Incremental = st.inc.clone()
	st.xaPosition(&p)
	return p.encode()
}

// txID is the transaction block's id: the GTID, or file:pos without one
// (for the changes of an XA transaction, its prepare group's).
func (st *streamer) txID() string {
	if st.txIDFixed != "" {
		return st.txIDFixed
	}
	if st.txGTID != "" {
		return st.txGTID
	}
	return fmt.Sprintf("%s:%d", st.file, st.txStart)
}

// resolve finds the definition of the table of a table map event: from the
// event itself when it carries full metadata, else from the schema
// history at this point of the binlog. It returns nil for tables that are
// not captured.
func (st *streamer) resolve(ctx context.Context, tm *replication.TableMapEvent, raw []byte, h *replication.EventHeader) (*table, error) {
	if t, ok := st.tables[tm.TableID]; ok && (t == nil || (t.def.DB == string(tm.Schema) && t.def.Name == string(tm.Table) && t.def.sameShape(tm) && t.def.sameNulls(tm))) {
		return t, nil
	}
	// The binlog client skips the table maps' optional metadata (column
	// names, charsets, labels, key: a tenth of the streaming CPU when every
	// small transaction repeats its table map); decode it now, for a table
	// met for the first time or changed.
	if !hasFullMetadata(tm) && len(raw) > 0 {
		full, err := st.meta.Parse(raw)
		if err != nil {
			return nil, fmt.Errorf("table map of %s.%s at %s:%d: %w", tm.Schema, tm.Table, st.file, h.LogPos, err)
		}
		if ftm, ok := full.Event.(*replication.TableMapEvent); ok {
			tm = ftm
		}
	}
	db, name := string(tm.Schema), string(tm.Table)
	s := st.src
	signalOnly := false
	if systemDB(db) || !matchAny(s.set.tables, db, name) {
		if s.set.signalTable == "" || db+"."+name != s.set.signalTable {
			return nil, nil
		}
		signalOnly = true // read for its signals, not captured
	}
	at := coords{st.file, st.txStart}
	var def *tableDef
	var err error
	if hasFullMetadata(tm) {
		if def, err = defFromTableMap(tm, s.srv.collations); err != nil {
			return nil, err
		}
		var hd *tableDef
		if s.hist != nil {
			if hd = s.hist.lookup(db, name, at); hd != nil && !hd.sameShape(tm) && !st.warned[db+"."+name] {
				st.warned[db+"."+name] = true
				s.log.Warn("mysql: the schema history disagrees with the binlog's column metadata; using the binlog's", "table", db+"."+name, "at", at.String())
			}
		}
		if err := st.mariaTypes(ctx, def, hd); err != nil {
			return nil, err
		}
	} else {
		if s.hist == nil {
			return nil, fmt.Errorf("table %s.%s at %s: the binlog has no column metadata (set binlog_row_metadata=FULL) and there is no schema history (set state.dir)", db, name, at)
		}
		def = s.hist.lookup(db, name, at)
		if def == nil {
			if def, err = readTableDef(ctx, s.db, db, name); err != nil {
				return nil, err
			}
			if def == nil {
				return nil, fmt.Errorf("table %s.%s at %s: not in the schema history and gone from the server; its rows cannot be decoded without binlog_row_metadata=FULL", db, name, at)
			}
			if err := s.hist.record(at, []*tableDef{def}, nil); err != nil {
				return nil, err
			}
		}
		if !def.sameShape(tm) {
			return nil, fmt.Errorf("table %s.%s at %s: the schema history's definition (%d columns) does not match the binlog's row format (%d columns): it was changed outside the binlog the connector read. Set binlog_row_metadata=FULL, or start over with a snapshot (delete the stored offsets and %s)", db, name, at, len(def.Columns), tm.ColumnCount, s.hist.path)
		}
		def = def.withNulls(tm)
	}
	t, err := st.enc.mapper.newTable(&s.set, def)
	if err != nil {
		return nil, err
	}
	t.signal = s.set.signalTable != "" && def.ref() == s.set.signalTable
	t.signalOnly = signalOnly
	return t, nil
}

// mariaTypes marks the columns of def (from a table map) that are
// MariaDB's UUID, INET4 or INET6, which the binlog shows as BINARY(16) or
// BINARY(4): by the schema history's definition hist when there is one,
// else by the server's information_schema (today's definition: a column
// of the same name and position).
func (st *streamer) mariaTypes(ctx context.Context, def, hist *tableDef) error {
	if st.src.srv.flavor != flavorMariaDB || !slices.ContainsFunc(def.Columns, func(c column) bool {
		return c.Type == mysql.MYSQL_TYPE_STRING && c.Charset == "binary" && (c.Length == 4 || c.Length == 16)
	}) {
		return nil
	}
	info := hist
	if info == nil {
		var err error
		if info, err = readTableDef(ctx, st.src.db, def.DB, def.Name); err != nil {
			return err
		}
		if info == nil {
			return nil // dropped since: BINARY it stays
		}
	}
	for i := range def.Columns {
		c := &def.Columns[i]
		if i < len(info.Columns) && info.Columns[i].MariaType != "" && strings.EqualFold(info.Columns[i].Name, c.Name) &&
			c.Type == mysql.MYSQL_TYPE_STRING && c.Charset == "binary" && c.Length == mariaLength(info.Columns[i].MariaType) {
			c.MariaType = info.Columns[i].MariaType
		}
	}
	return nil
}

// rows turns a rows event into changes for the encoders.
func (st *streamer) rows(ctx context.Context, e *replication.RowsEvent, h *replication.EventHeader) error {
	t := st.tables[e.TableID]
	if t == nil {
		return nil
	}
	if int(e.ColumnCount) != len(e.Table.ColumnType) {
		return fmt.Errorf("rows event of %s at %s:%d: %d columns, the table map %d", t.def.ref(), st.file, h.LogPos, e.ColumnCount, len(e.Table.ColumnType))
	}
	// The columns of the images (of the before images of an update),
	// and of the after images of an update; nil for all.
	bm1, bm2 := e.ColumnBitmap1, e.ColumnBitmap2
	if e.Type() != replication.EnumRowsEventTypeUpdate {
		bm2 = nil
	}
	if i := st.enc.mapper.leftOutColumn(t, e.Table.ColumnType, bm1, bm2); i >= 0 {
		return partialImageError(t, i, coords{st.file, h.LogPos}, st.txGTID)
	}
	if !st.inTx {
		st.begin(h)
	}
	// Emitted before the restart (xa.go); a prepare group is held again,
	// but its signals acted before.
	replay := st.replayed()
	if st.xaOpen != nil {
		if err := st.xaGrow(int64(h.EventSize)+int64(len(e.Rows))*heldChangeSize, h); err != nil {
			return err
		}
	} else if replay {
		return nil
	}
	if t.signal && !replay && e.Type() == replication.EnumRowsEventTypeInsert {
		for _, r := range e.Rows {
			st.signalRow(t, r)
		}
	}
	var kind rowsKind
	switch e.Type() {
	case replication.EnumRowsEventTypeInsert:
		kind = rowsInsert
	case replication.EnumRowsEventTypeUpdate:
		kind = rowsUpdate
	case replication.EnumRowsEventTypeDelete:
		kind = rowsDelete
	default:
		return nil
	}
	if t.signalOnly || st.src.set.skipped.Skips(kind.op()) {
		return nil
	}
	skipDel, skipCre := st.src.set.skipped.Skips(connect.OpDelete), st.src.set.skipped.Skips(connect.OpCreate)
	now := time.Now().UnixNano()
	si := srcInfo{snapshot: connect.SnapshotFalse, ts: st.txTime, serverID: h.ServerID, gtid: st.txGTID,
		file: st.file, pos: st.txStart, thread: st.txThread, query: st.txQuery}
	check := func(vals []any) error {
		if vals != nil && len(vals) != len(t.def.Columns) {
			return fmt.Errorf("table %s: a row has %d values, the table %d columns", t.def.ref(), len(vals), len(t.def.Columns))
		}
		return nil
	}
	step := 1
	if kind == rowsUpdate {
		step = 2
	}
	for i := 0; i+step-1 < len(e.Rows); i += step {
		var before, after []any
		p := &parsedRow{}
		switch kind {
		case rowsInsert:
			after, p.presentAfter = e.Rows[i], bm1
		case rowsDelete:
			before, p.presentBefore = e.Rows[i], bm1
		case rowsUpdate:
			before, after = e.Rows[i], e.Rows[i+1]
			p.presentBefore, p.presentAfter = bm1, bm2
		}
		p.before, p.after = before, after
		if err := check(before); err != nil {
			return err
		}
		if err := check(after); err != nil {
			return err
		}
		keyChange := kind == rowsUpdate && len(t.def.Key) > 0 && !sameKey(t, before, after)
		if keyChange && skipDel && skipCre {
			continue // both events of the key change are skipped
		}
		if st.chunk != nil && st.xaOpen == nil {
			// The keys of the events emitted leave the open chunk (held
			// XA changes when committed: leaveChunk).
			if before != nil && !(keyChange && skipDel) {
				st.streamedChange(t, before)
			}
			if after != nil && !(keyChange && skipCre) {
				st.streamedChange(t, after)
			}
		}
		si.row = i / step
		st.queue(&change{t: t, kind: kind, keyChange: keyChange, parsed: p, si: si, now: now})
	}
	if len(st.pending) > st.src.set.batchSize {
		return st.flush(ctx, false)
	}
	return nil
}

// partialImageError is the error for a rows event of t whose images leave
// out column i, which binlog_row_image=NOBLOB never leaves out (noblob.go):
// MINIMAL (or MariaDB's FULL_NODUP), which a session may set for itself
// even when the server's is FULL. The column's value would come out as
// null (or a placeholder), which it is not.
func partialImageError(t *table, i int, at coords, gtid string) error {
	where := at.String()
	if gtid != "" {
		where += " (GTID " + gtid + ")"
	}
	col := fmt.Sprintf("column %d", i+1)
	if i < len(t.def.Columns) {
		col = fmt.Sprintf("column %s", t.def.Columns[i].Name)
	}
	return connect.Permanent(fmt.Errorf("rows event of %s at %s leaves out %s: the session that wrote it had binlog_row_image MINIMAL (or FULL_NODUP), "+
		"and the connector would emit the column as null; change capture (as Debezium) needs binlog_row_image=FULL (or NOBLOB, which leaves out only BLOB and TEXT columns) in every session: "+
		"find the application or script that runs SET binlog_row_image (or sets it in its connection options) and have it keep FULL, and keep SET GLOBAL binlog_row_image = 'FULL'; "+
		"this event stays in the binlog, so then start over with a new snapshot (delete the stored offsets) or, if its changes do not matter, from a position after it",
		t.def.ref(), where, col))
}

// row maps one row image of t (of as many values as t has columns: rows
// checks) into dst's memory. It runs on the encoder goroutines.
func (st *streamer) row(dst connect.Row, t *table, vals []any) connect.Row {
	row := slices.Grow(dst[:0], len(vals))[:len(vals)]
	m := st.enc.mapper
	for i := range vals {
		c := &t.def.Columns[i]
		row[i].Name = c.Name
		v, err := m.fromBinlog(c, vals[i])
		if err != nil {
			st.src.log.Warn("mysql: value not understood, written as null", "table", t.def.ref(), "column", c.Name, "err", err)
			v = nil
		}
		row[i].Value = v
	}
	return row
}

// change queues one change of the current transaction, deciding its
// place in the transaction. Only the events that skipped.operations lets
// through count (the streamer drops a change whose events are all
// skipped).
func (st *streamer) change(c *change) {
	first, second := st.changeEvents(c)
	if st.src.set.txMetadata {
		if !st.txBegun {
			st.txBegun = true
			st.pending = append(st.pending, recordItem(st.enc.txRecord(st.txID(), st.txTime, false, 0, nil)))
		}
		if first {
			c.tx = st.txOrder(c.t)
		}
		if second {
			c.txNext = st.txOrder(c.t)
		}
	} else {
		if first {
			st.total++
		}
		if second {
			st.total++
		}
	}
	st.pending = append(st.pending, item{ch: c})
}

// changeEvents reports which of a change's events are emitted: the first
// (the change's own event, or a key change's delete) and the second (a key
// change's create; none for other changes).
func (st *streamer) changeEvents(c *change) (first, second bool) {
	if !c.keyChange {
		return true, false
	}
	sk := &st.src.set.skipped
	return !sk.Skips(connect.OpDelete), !sk.Skips(connect.OpCreate)
}

// txOrder counts one more event of t in the current transaction and
// returns its transaction block.
func (st *streamer) txOrder(t *table) *connect.Transaction {
	st.total++
	name := t.def.ref()
	var n int64
	for i := range st.counts {
		if st.counts[i].table == name {
			st.counts[i].n++
			n = st.counts[i].n
		}
	}
	if n == 0 {
		st.counts = append(st.counts, txCount{table: name, n: 1})
		n = 1
	}
	return &connect.Transaction{ID: st.txID(), TotalOrder: st.total, DataCollectionOrder: n}
}

// ddl handles a statement other than BEGIN and COMMIT: a schema change.
// Table ids are reassigned after DDL, so the table cache is dropped; with
// a schema history, the new definitions of the captured tables it names
// are recorded at this point of the binlog.
//
// The definition is the server's now, which is the one the statement made
// only if no later DDL changed the table since: it is checked against the
// columns before plus what the statement does to them (ddlColumns), and a
// mismatch stops the stream rather than decode the rows up to the next
// DDL under the wrong column names.
func (st *streamer) ddl(ctx context.Context, h *replication.EventHeader, schema, query string) error {
	clear(st.tables)
	clear(st.maps)
	s := st.src
	if s.hist == nil {
		return nil
	}
	at := coords{st.file, h.LogPos} // the definitions apply from the next event on
	if s.hist.reached(at) {
		return nil // read again after a restart: recorded then
	}
	refs := ddlTables(query, schema)
	var defs []*tableDef
	var dropped []tableRef
	for _, r := range refs {
		if systemDB(r.db) || !matchAny(s.set.tables, r.db, r.name) {
			continue
		}
		def, err := readTableDef(ctx, s.db, r.db, r.name)
		if err != nil {
			return err
		}
		if def == nil {
			dropped = append(dropped, r)
			continue
		}
		if err := st.checkDDLDef(r, def, query, at); err != nil {
			return err
		}
		defs = append(defs, def)
	}
	if len(defs) == 0 && len(dropped) == 0 {
		return nil
	}
	return s.hist.record(at, defs, dropped)
}

// checkDDLDef checks that def, read from the server for table r when the
// stream met DDL statement query at at, has the columns the statement
// left the table with.
func (st *streamer) checkDDLDef(r tableRef, def *tableDef, query string, at coords) error {
	var prev []string
	if p := st.src.hist.lookup(r.db, r.name, at); p != nil {
		prev = p.columnNames()
	}
	want, ok := ddlColumns(query, r.db, r, prev)
	got := def.columnNames()
	if !ok || slices.Equal(want, got) {
		return nil
	}
	stmt := query
	if len(stmt) > 200 {
		stmt = stmt[:200] + "…"
	}
	return fmt.Errorf("schema history: table %s at %s: the server's columns (%s) are not those %q left (%s): a later DDL changed the table since, and without column metadata in the binlog its rows up to the next DDL would be decoded under the wrong columns. Set binlog_row_metadata=FULL, then start over with a snapshot (delete the stored offsets and %s)",
		r, at, strings.Join(got, ", "), stmt, strings.Join(want, ", "), st.src.hist.path)
}

func uuidString(b []byte) string {
	if len(b) != 16 {
		return fmt.Sprintf("%x", b)
	}
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

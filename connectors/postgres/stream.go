package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/tributary-io/tributary/connect"
)

// Timing of the stream loop.
const (
	receiveWait    = 200 * time.Millisecond // longest wait for a message before looking at acks, heartbeats and pending records
	statusInterval = 10 * time.Second       // standby status updates at least this often (wal_sender_timeout is 60s by default), and at least 4 times per wal_sender_timeout
	statusMinGap   = 20 * time.Millisecond  // and acknowledgements at most this often, unless the server asks
	// streamLinger is how long committed records may wait for more before
	// they are handed to Read: small transactions then travel in batches
	// (a hand-over per transaction costs more than the transaction).
	streamLinger = time.Millisecond
)

// errDeadConn is the error of a connection taken for dead (see alive).
var errDeadConn = errors.New("the connection to the server is dead")

// heartbeatPrefix is the prefix of the logical decoding messages the
// connector writes as heartbeats; the slot name follows it, so that every
// source reacts to its own heartbeats only.
const heartbeatPrefix = "__tributary_heartbeat:"

// streamer reads pgoutput from the slot and turns it into records. It runs
// on the runner goroutine and owns the replication connection meanwhile.
type streamer struct {
	src  *Source
	cat  *catalog
	enc  *encoder
	rels map[uint32]*relation

	pending []connect.Record // records not yet handed to Read
	blk     connect.Blocks   // the bytes of the records, shared in blocks

	// The transaction being received.
	inTx       bool
	xid        uint32
	txLSN      uint64 // the commit LSN, from BEGIN
	commitTime time.Time
	txID       string // "xid:lsn", the transaction block's id
	total      int64  // events of the transaction, for its metadata
	events     int64  // change events of the transaction, for the report
	counts     []txCount
	txStart    int // index in pending of the transaction's first record

	lastCommit uint64 // end LSN of the last transaction received

	sent        pglogrepl.LSN // the last LSN confirmed to the server
	lastStatus  time.Time     // when it was sent
	nextStatus  time.Time
	statusEvery time.Duration // statusInterval, shorter for a short wal_sender_timeout
	nextBeat    time.Time
	nextReport  time.Time

	// A dead connection (wal.receiver.timeout): see alive.
	deadAfter time.Duration // 0: never taken for dead
	heard     bool          // a message came since alive last looked
	lastHeard time.Time     // when one last came (at the latest)
	probed    time.Time     // when a reply was asked for since; zero when none

	// Protocol 2: large transactions streamed while in progress.
	proto     int                  // pgoutput protocol version in use
	inStream  bool                 // between a Stream Start and its Stream Stop
	streamXid uint32               // the transaction of the current stream block
	streams   map[uint32]*txBuffer // streamed transactions not yet committed or aborted
	streamMem int                  // bytes of them held in memory

	// Incremental snapshots.
	inc          *incState // nil when none is in progress
	chunk        *incChunk // the chunk between its watermarks
	chunkSeq     int
	sawWatermark bool // the transaction being received holds a watermark
	incChanged   bool // the incremental snapshot's state changed since a position last carried it

	pendingSince time.Time // when committed records began to wait in pending; zero when none wait

	rowMsg  rowMessage // the row message being processed (parsed in place)
	textBuf []byte     // scratch for a tuple's text
}

func (st *streamer) run(ctx context.Context) error {
	s := st.src
	defer st.dropStreams()
	var version int
	if err := st.cat.conn.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return fmt.Errorf("read the server version: %w", err)
	}
	args := []string{"proto_version '1'"}
	st.proto = 1
	if version >= 140000 {
		// Protocol 2: the server streams a large transaction while it is
		// in progress, instead of spilling it to disk on its side.
		args, st.proto = []string{"proto_version '2'", "streaming 'on'"}, 2
	}
	args = append(args, "publication_names '"+strings.ReplaceAll(s.set.publication, "'", "''")+"'", "messages 'true'")
	// The server ends a stream that has not confirmed anything for
	// wal_sender_timeout. It asks for a reply at half of it, but the
	// runner does not read while it waits for Read or replays a large
	// streamed transaction: it confirms on its own, often enough.
	st.statusEvery = statusInterval
	timeout, err := walSenderTimeout(ctx, s.repl)
	if err != nil {
		return err
	}
	if timeout > 0 {
		st.statusEvery = min(statusInterval, max(timeout/4, 10*time.Millisecond))
	}
	// A walsender decoding a large transaction (one it sends nothing of,
	// say of unpublished tables) reads replies only when half of its
	// wal_sender_timeout has passed since it last did: it may take that
	// long to answer, so a shorter timeout would take a busy server for a
	// dead one, and reconnect to decode the same transaction again.
	st.deadAfter = s.set.deadAfter
	if st.deadAfter > 0 && timeout > st.deadAfter {
		s.log.Info("postgres: wal.receiver.timeout raised to the server's wal_sender_timeout", "wal.receiver.timeout", s.set.deadAfter, "wal_sender_timeout", timeout)
		st.deadAfter = timeout
	}
	s.waitEvery = min(s.waitEvery, st.statusEvery)
	err = pglogrepl.StartReplication(ctx, s.repl, s.set.slot, s.plan.startLSN, pglogrepl.StartReplicationOptions{PluginArgs: args})
	if err != nil {
		if err := deadErr(s.repl.Conn(), err); errors.Is(err, errDeadConn) {
			return fmt.Errorf("start replication from slot %s: %w", s.set.slot, err)
		}
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "55006" {
			return fmt.Errorf("start replication from slot %s: %w; stop the other consumer (is this source running twice?) or end it with SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = '%s';", s.set.slot, err, s.set.slot)
		}
		return fmt.Errorf("start replication from slot %s at %s: %w", s.set.slot, s.plan.startLSN, err)
	}
	// From here the stream watches the connection itself (alive), with
	// its timeout raised to wal_sender_timeout; the read watch that
	// bounded the commands so far would take a partition for dead after
	// twice wal.receiver.timeout, maybe before that, and cost a timer per
	// read.
	stopWatching(s.repl.Conn())
	s.log.Info("postgres: streaming", "slot", s.set.slot, "publication", s.set.publication, "from", s.plan.startLSN, "protocol", st.proto)
	st.sent = s.plan.startLSN
	st.lastCommit = uint64(s.plan.startLSN)
	if inc := s.plan.incremental; inc != nil && len(inc.Tables) > 0 {
		st.inc = inc
		for _, t := range inc.Tables {
			s.rep.snapshotTable(t, 0, 0)
		}
		s.log.Info("postgres: resuming the incremental snapshot", "tables", inc.Tables)
	}
	st.nextStatus = time.Now().Add(st.statusEvery)
	st.lastHeard = time.Now()
	st.setIncPhase()
	if s.set.heartbeat > 0 {
		st.nextBeat = time.Now().Add(s.set.heartbeat)
	}
	// The loop wakes at least every receiveWait to confirm acknowledged
	// positions, write heartbeats and hand over pending records. A read
	// deadline on the connection does that, set only when it has passed:
	// a context per message would cost a watcher per message.
	conn := s.repl.Conn()
	wake := time.Now().Add(receiveWait)
	if err := conn.SetReadDeadline(wake); err != nil {
		return fmt.Errorf("receive from slot %s: %w", s.set.slot, err)
	}
	for {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := st.status(false); err != nil {
			return err
		}
		if err := st.maybeHeartbeat(ctx); err != nil {
			return err
		}
		if now := time.Now(); !now.Before(st.nextReport) {
			st.nextReport = now.Add(s.reportEvery)
			qctx, cancel := st.bounded(ctx)
			s.readRetained(qctx, st.cat.conn)
			s.warnUnpublished(qctx, st.cat.conn)
			cancel()
			if errors.Is(qctx.Err(), context.DeadlineExceeded) {
				return st.deadMeta("read the slot's retained WAL")
			}
		}
		st.takeSignals()
		if err := st.persistIncremental(ctx); err != nil {
			return err
		}
		if st.inc != nil && st.chunk == nil && !st.inc.Paused {
			if err := st.nextChunk(ctx); err != nil {
				return err
			}
		}
		if !st.pendingSince.IsZero() {
			// Committed records wait: hand them over when due, and wake
			// then if no message comes.
			due := st.pendingSince.Add(streamLinger)
			if !time.Now().Before(due) {
				if err := st.flush(ctx, false); err != nil {
					return err
				}
			} else if due.Before(wake) {
				wake = due
				if err := conn.SetReadDeadline(wake); err != nil {
					return fmt.Errorf("receive from slot %s: %w", s.set.slot, err)
				}
			}
		}
		msg, err := s.repl.ReceiveMessage(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if pgconn.Timeout(err) {
				if err := st.alive(); err != nil {
					return err
				}
				if err := st.flush(ctx, false); err != nil {
					return err
				}
				wake = time.Now().Add(receiveWait)
				if err := conn.SetReadDeadline(wake); err != nil {
					return fmt.Errorf("receive from slot %s: %w", s.set.slot, err)
				}
				continue
			}
			return st.lostSlot(ctx, fmt.Errorf("receive from slot %s: %w", s.set.slot, err))
		}
		st.heard = true
		switch msg := msg.(type) {
		case *pgproto3.CopyData:
			if len(msg.Data) == 0 {
				continue
			}
			switch msg.Data[0] {
			case pglogrepl.PrimaryKeepaliveMessageByteID:
				ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(msg.Data[1:])
				if err != nil {
					return fmt.Errorf("parse keepalive: %w", err)
				}
				if ka.ReplyRequested {
					if err := st.status(true); err != nil {
						return err
					}
				}
			case pglogrepl.XLogDataByteID:
				// XLogData: 'w', start LSN, end LSN, send time (8 bytes
				// each), then the pgoutput message.
				if len(msg.Data) < 25 {
					return fmt.Errorf("parse XLogData: %d bytes", len(msg.Data))
				}
				lsn := binary.BigEndian.Uint64(msg.Data[1:])
				if err := st.receive(ctx, lsn, msg.Data[25:]); err != nil {
					return err
				}
			}
		case *pgproto3.ErrorResponse:
			return st.lostSlot(ctx, fmt.Errorf("replication from slot %s: %w", s.set.slot, pgconn.ErrorResponseToPgError(msg)))
		case *pgproto3.CopyDone:
			return fmt.Errorf("replication from slot %s: the server ended the stream", s.set.slot)
		}
	}
}

// alive checks, when a wait for a message timed out, that the replication
// connection still works, as PostgreSQL's walreceiver does with
// wal_receiver_timeout. A silent connection may be idle (the walsender
// sends nothing while there is nothing to send and the status updates keep
// it content) or dead without a sign (a vanished host, a dropped NAT or
// firewall flow, a partition: no FIN, no RST; the kernel gives up on it
// only after ~15 minutes of retransmissions). So after deadAfter/2 without
// a message, alive asks for a reply, which the walsender sends at once; when
// nothing at all has come deadAfter after the last message, and at least
// deadAfter/2 after the request (the runner may have been busy elsewhere:
// an answer would be waiting), the connection is dead: alive closes it and
// returns errDeadConn. The error is not permanent: the worker restarts the
// task, which resumes from the last acknowledged position.
func (st *streamer) alive() error {
	if st.deadAfter <= 0 {
		return nil
	}
	now := time.Now()
	if st.heard {
		st.heard, st.lastHeard, st.probed = false, now, time.Time{}
		return nil
	}
	silent := now.Sub(st.lastHeard)
	if st.probed.IsZero() {
		if silent < st.deadAfter/2 {
			return nil
		}
		st.probed = now
		ack := max(pglogrepl.LSN(st.src.acked.Load()), st.src.plan.startLSN, st.sent)
		err := pglogrepl.SendStandbyStatusUpdate(context.Background(), st.src.repl, pglogrepl.StandbyStatusUpdate{
			WALWritePosition: ack, WALFlushPosition: ack, WALApplyPosition: ack, ReplyRequested: true,
		})
		if err != nil {
			return fmt.Errorf("ask the server for a keepalive on slot %s: %w", st.src.set.slot, err)
		}
		st.sent, st.lastStatus, st.nextStatus = ack, now, now.Add(st.statusEvery)
		return nil
	}
	if silent < st.deadAfter || now.Sub(st.probed) < st.deadAfter/2 {
		return nil
	}
	s := st.src
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	s.repl.Close(ctx) // nothing to wait for: the server is unreachable
	cancel()
	s.log.Warn("postgres: the replication connection is dead; the task restarts", "slot", s.set.slot, "silent_for", silent.Round(time.Millisecond), "wal.receiver.timeout", st.deadAfter)
	return fmt.Errorf("receive from slot %s: %w: nothing came for %s, not even the answer to a keepalive request (the server host vanished, or a firewall, NAT or network partition dropped the connection?); "+
		"the task restarts from the last acknowledged position. If the server is only slow to answer, raise wal.receiver.timeout",
		s.set.slot, errDeadConn, silent.Round(time.Millisecond))
}

// lostSlot returns, for a stream that ended with err, the permanent error
// of a slot that lost WAL, if that is why: PostgreSQL ends the stream of a
// slot past max_slot_wal_keep_size (terminating its walsender) and then
// marks it lost. Otherwise it returns err, which a retry may cure.
func (st *streamer) lostSlot(ctx context.Context, err error) error {
	s := st.src
	for deadline := time.Now().Add(time.Second); ctx.Err() == nil; {
		slot, rerr := readSlot(ctx, st.cat.conn, s.set.slot)
		if rerr != nil || slot == nil {
			return err
		}
		if slot.walStatus != nil && *slot.walStatus == "lost" {
			return errors.Join(checkSlot(&slotInfo{plugin: slot.plugin, database: slot.database, walStatus: slot.walStatus}, s.set.slot, slot.database), err)
		}
		// Being invalidated: the walsender is let go of first.
		pending := slot.active || slot.walStatus != nil && *slot.walStatus == "unreserved"
		if !pending || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// receive processes one pgoutput message: under protocol 2 the stream
// control messages and the changes of streamed transactions, which are
// buffered until their stream commit; everything else as protocol 1.
func (st *streamer) receive(ctx context.Context, lsn uint64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if st.proto < 2 {
		return st.handle(ctx, lsn, data)
	}
	switch pglogrepl.MessageType(data[0]) {
	case pglogrepl.MessageTypeStreamStart:
		m, err := pglogrepl.ParseV2(data, false)
		if err != nil {
			return fmt.Errorf("parse stream start at %s: %w", pglogrepl.LSN(lsn), err)
		}
		st.inStream, st.streamXid = true, m.(*pglogrepl.StreamStartMessageV2).Xid
		if st.streams == nil {
			st.streams = map[uint32]*txBuffer{}
		}
		if st.streams[st.streamXid] == nil {
			st.streams[st.streamXid] = &txBuffer{}
		}
		return nil
	case pglogrepl.MessageTypeStreamStop:
		st.inStream = false
		return nil
	case pglogrepl.MessageTypeStreamAbort:
		m, err := pglogrepl.ParseV2(data, false)
		if err != nil {
			return fmt.Errorf("parse stream abort at %s: %w", pglogrepl.LSN(lsn), err)
		}
		a := m.(*pglogrepl.StreamAbortMessageV2)
		if b := st.streams[a.Xid]; b != nil {
			if a.SubXid == a.Xid || a.SubXid == 0 {
				st.dropStream(a.Xid)
			} else {
				b.abortSub(a.SubXid)
			}
		}
		return nil
	case pglogrepl.MessageTypeStreamCommit:
		m, err := pglogrepl.ParseV2(data, false)
		if err != nil {
			return fmt.Errorf("parse stream commit at %s: %w", pglogrepl.LSN(lsn), err)
		}
		return st.streamCommit(ctx, m.(*pglogrepl.StreamCommitMessageV2))
	}
	if !st.inStream {
		return st.handle(ctx, lsn, data) // outside a stream block, protocol 2 messages read as protocol 1
	}
	if pglogrepl.MessageType(data[0]) == pglogrepl.MessageTypeOrigin {
		// The origin of a transaction replayed by a subscription (or any
		// session with a replication origin) follows the first Stream
		// Start; unlike the changes, it carries no transaction id.
		return nil
	}
	// Inside a stream block every message carries the id of its
	// (sub)transaction after the type byte: buffer it without, so that it
	// replays as a protocol 1 message.
	if len(data) < 5 {
		return fmt.Errorf("pgoutput message %q at %s in a stream is too short", data[0], pglogrepl.LSN(lsn))
	}
	b := st.streams[st.streamXid]
	xid := binary.BigEndian.Uint32(data[1:5])
	msg := make([]byte, 0, len(data)-4)
	msg = append(append(msg, data[0]), data[5:]...)
	spill := st.streamMem+len(msg) > st.src.streamMemory
	if !spill {
		st.streamMem += len(msg)
	}
	return b.add(lsn, xid, msg, spill)
}

// streamCommit replays a streamed transaction as if it had come whole.
func (st *streamer) streamCommit(ctx context.Context, m *pglogrepl.StreamCommitMessageV2) error {
	b := st.streams[m.Xid]
	if b == nil {
		return fmt.Errorf("stream commit of transaction %d, which was never streamed", m.Xid)
	}
	defer st.dropStream(m.Xid)
	st.begin(m.Xid, uint64(m.CommitLSN), m.CommitTime)
	replay := func(lsn uint64, data []byte) error {
		// A large transaction takes a while: keep confirming meanwhile.
		if err := st.status(false); err != nil {
			return err
		}
		return st.handle(ctx, lsn, data)
	}
	if err := b.replay(replay); err != nil {
		return err
	}
	return st.commit(ctx, &pglogrepl.CommitMessage{CommitLSN: m.CommitLSN, TransactionEndLSN: m.TransactionEndLSN, CommitTime: m.CommitTime})
}

func (st *streamer) dropStream(xid uint32) {
	if b := st.streams[xid]; b != nil {
		st.streamMem -= b.memBytes
		b.close()
		delete(st.streams, xid)
	}
}

func (st *streamer) dropStreams() {
	for xid := range st.streams {
		st.dropStream(xid)
	}
}

// walSenderTimeout reads the server's wal_sender_timeout for the
// replication connection (0: none).
func walSenderTimeout(ctx context.Context, conn *pgconn.PgConn) (time.Duration, error) {
	res, err := conn.Exec(ctx, "SHOW wal_sender_timeout").ReadAll()
	if err != nil {
		return 0, fmt.Errorf("read wal_sender_timeout: %w", deadErr(conn.Conn(), err))
	}
	if len(res) != 1 || len(res[0].Rows) != 1 || len(res[0].Rows[0]) != 1 {
		return 0, fmt.Errorf("read wal_sender_timeout: unexpected answer")
	}
	return parseGUCDuration(string(res[0].Rows[0][0]))
}

// parseGUCDuration parses a time setting as SHOW prints it ("60s",
// "500ms", "1min", "0"), in milliseconds when it has no unit.
func parseGUCDuration(v string) (time.Duration, error) {
	i := strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' })
	if i < 0 {
		i = len(v)
	}
	n, err := strconv.ParseInt(v[:i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("setting %q is not a duration", v)
	}
	unit := map[string]time.Duration{"": time.Millisecond, "us": time.Microsecond, "ms": time.Millisecond,
		"s": time.Second, "min": time.Minute, "h": time.Hour, "d": 24 * time.Hour}
	u, ok := unit[strings.TrimSpace(v[i:])]
	if !ok {
		return 0, fmt.Errorf("setting %q is not a duration", v)
	}
	return time.Duration(n) * u, nil
}

// status sends a standby status update when the worker acknowledged more
// than was confirmed, when one is due, or when forced. Write, flush and
// apply are all the acknowledged LSN, never zero: at worst the position
// streaming started from, which the slot has already confirmed.
func (st *streamer) status(force bool) error {
	ack := max(pglogrepl.LSN(st.src.acked.Load()), st.src.plan.startLSN)
	now := time.Now()
	due := !now.Before(st.nextStatus) || ack > st.sent && now.Sub(st.lastStatus) >= statusMinGap
	if !force && !due {
		return nil
	}
	ack = max(ack, st.sent)
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), st.src.repl, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: ack, WALFlushPosition: ack, WALApplyPosition: ack,
	})
	if err != nil {
		return fmt.Errorf("send standby status update (lsn %s): %w", ack, err)
	}
	st.sent = ack
	st.lastStatus = now
	st.nextStatus = now.Add(st.statusEvery)
	return nil
}

// maybeHeartbeat writes a heartbeat message into the WAL when one is due;
// it comes back through the slot and becomes a heartbeat record whose
// position lets the slot advance even when the captured tables are idle.
func (st *streamer) maybeHeartbeat(ctx context.Context) error {
	if st.nextBeat.IsZero() || time.Now().Before(st.nextBeat) {
		return nil
	}
	st.nextBeat = time.Now().Add(st.src.set.heartbeat)
	qctx, cancel := st.bounded(ctx)
	_, err := st.cat.conn.Exec(qctx, "SELECT pg_logical_emit_message(false, $1, '')", heartbeatPrefix+st.src.set.slot)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(qctx.Err(), context.DeadlineExceeded) {
			return st.deadMeta("write heartbeat (pg_logical_emit_message)")
		}
		return fmt.Errorf("write heartbeat (pg_logical_emit_message): %w", err)
	}
	return nil
}

// bounded returns ctx bounded by wal.receiver.timeout, for a query the
// receive loop makes on the other connection (the catalogue's): through
// a dead network it would wait as long as the replication connection.
func (st *streamer) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if st.deadAfter <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, st.deadAfter)
}

// deadMeta is the error of a query of the receive loop (what) that got no
// answer within wal.receiver.timeout.
func (st *streamer) deadMeta(what string) error {
	s := st.src
	s.log.Warn("postgres: the database connection is dead; the task restarts", "query", what, "wal.receiver.timeout", st.deadAfter)
	return fmt.Errorf("%s: %w: no answer within %s (the server host vanished, or a firewall, NAT or network partition dropped the connection?); "+
		"the task restarts from the last acknowledged position. If the server is only slow to answer, raise wal.receiver.timeout",
		what, errDeadConn, st.deadAfter)
}

// flush hands the pending records to Read. At a commit it does so only
// when the batch is full, or Read has nothing to take and the records
// have waited streamLinger, so that records of small transactions travel
// together (the receive loop wakes when they are due). Inside a
// transaction it keeps the last record back: the commit gives it the
// transaction's position.
func (st *streamer) flush(ctx context.Context, atCommit bool) error {
	n := len(st.pending)
	if st.inTx && n > st.txStart {
		n-- // the open transaction's last record waits for its commit
	}
	if n <= 0 {
		st.pendingSince = time.Time{} // no committed record waits
		return nil
	}
	full := n >= st.src.set.batchSize
	if atCommit && !full {
		now := time.Now()
		if st.pendingSince.IsZero() {
			st.pendingSince = now
		}
		if len(st.src.out) > 0 || now.Sub(st.pendingSince) < streamLinger {
			return nil // let the batch grow
		}
	}
	st.pendingSince = time.Time{}
	batch := st.pending[:n:n]
	rest := st.pending[n:]
	st.pending = append(make([]connect.Record, 0, max(len(rest), 64)), rest...)
	if st.inTx {
		st.txStart = 0
	}
	return st.src.push(ctx, batch, func() error { return st.status(true) })
}

// handle processes one pgoutput message at lsn.
func (st *streamer) handle(ctx context.Context, lsn uint64, data []byte) error {
	if len(data) > 0 && (data[0] == 'I' || data[0] == 'U' || data[0] == 'D') {
		return st.rowChange(ctx, lsn, data)
	}
	msg, err := pglogrepl.Parse(data)
	if err != nil {
		return fmt.Errorf("parse pgoutput message at %s: %w", pglogrepl.LSN(lsn), err)
	}
	switch m := msg.(type) {
	case *pglogrepl.RelationMessage:
		cols := make([]colDef, len(m.Columns))
		for i, c := range m.Columns {
			cols[i] = colDef{name: c.Name, oid: c.DataType, typmod: c.TypeModifier, key: c.Flags&1 != 0}
		}
		rel, err := st.cat.relation(ctx, tableRef{m.Namespace, m.RelationName}, m.RelationID, cols, m.ReplicaIdentity)
		if err != nil {
			return err
		}
		st.rels[m.RelationID] = rel
	case *pglogrepl.BeginMessage:
		st.begin(m.Xid, uint64(m.FinalLSN), m.CommitTime)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			rel, err := st.rel(id)
			if err != nil {
				return err
			}
			if rel == nil {
				continue
			}
			if err := st.change(ctx, rel, connect.OpTruncate, nil, nil, nil, lsn); err != nil {
				return err
			}
		}
	case *pglogrepl.LogicalDecodingMessage:
		return st.message(ctx, m, lsn)
	case *pglogrepl.CommitMessage:
		return st.commit(ctx, m)
	}
	return nil
}

// begin starts a transaction that commits at commitLSN.
func (st *streamer) begin(xid uint32, commitLSN uint64, commitTime time.Time) {
	st.inTx, st.xid, st.txLSN, st.commitTime, st.sawWatermark = true, xid, commitLSN, commitTime, false
	st.txID = strconv.FormatUint(uint64(xid), 10) + ":" + strconv.FormatUint(commitLSN, 10)
	st.total, st.events, st.counts, st.txStart = 0, 0, st.counts[:0], len(st.pending)
	if st.src.set.txMetadata {
		st.pending = append(st.pending, st.enc.txRecord(st.txID, st.commitTime, false, 0, nil))
	}
}

func (st *streamer) rel(id uint32) (*relation, error) {
	rel, ok := st.rels[id]
	if !ok {
		return nil, fmt.Errorf("pgoutput sent a change of relation %d before describing it", id)
	}
	if rel.skip {
		return nil, nil
	}
	return rel, nil
}

// rowChange processes an Insert, Update or Delete message.
func (st *streamer) rowChange(ctx context.Context, lsn uint64, data []byte) error {
	m := &st.rowMsg
	if err := parseRowMessage(data, m); err != nil {
		return fmt.Errorf("parse pgoutput message %q at %s: %w", data[0], pglogrepl.LSN(lsn), err)
	}
	rel, err := st.rel(m.relID)
	if err != nil || rel == nil {
		return err
	}
	var before, after connect.Row
	var unavailable []string // columns of after whose values the stream did not carry
	if m.oldTyp != 0 {
		if before, _, err = st.tuple(rel, m.old, nil); err != nil {
			return err
		}
	}
	switch m.typ {
	case 'I':
		if after, unavailable, err = st.tuple(rel, m.new, nil); err != nil {
			return err
		}
		if rel.signal {
			st.signalRow(after)
			return nil
		}
		return st.change(ctx, rel, connect.OpCreate, nil, after, unavailable, lsn)
	case 'U':
		if after, unavailable, err = st.tuple(rel, m.new, before); err != nil {
			return err
		}
		if before != nil && !rowKeyEqual(rel, before, after) {
			return st.keyChange(ctx, rel, before, after, unavailable, lsn)
		}
		if m.oldTyp == 'K' {
			before = nil // only the old key came: before is null, as under REPLICA IDENTITY DEFAULT
		}
		return st.change(ctx, rel, connect.OpUpdate, before, after, unavailable, lsn)
	}
	return st.change(ctx, rel, connect.OpDelete, before, nil, nil, lsn)
}

// tuple decodes a tuple of rel; unchanged TOASTed values are taken from
// old when it has them (REPLICA IDENTITY FULL), else replaced with the
// placeholder in the column's form (null, with a warning, for a type that
// cannot hold it; see mapper.unavailable), and the names of those columns
// are returned in unavailable. The text of all the values is copied into
// one string, of which the values are parts.
func (st *streamer) tuple(rel *relation, cols []tupleCol, old connect.Row) (row connect.Row, unavailable []string, err error) {
	if len(cols) != len(rel.columns) {
		return nil, nil, fmt.Errorf("table %s: a tuple has %d columns, the relation %d", rel.ref, len(cols), len(rel.columns))
	}
	text := st.textBuf[:0]
	for _, c := range cols {
		if c.kind == pglogrepl.TupleDataTypeText {
			text = append(text, c.data...)
		}
	}
	all := string(text)
	st.textBuf = text[:0]
	row = make(connect.Row, len(rel.columns))
	off := 0
	for i, c := range cols {
		col := &rel.columns[i]
		row[i].Name = col.name
		switch c.kind {
		case pglogrepl.TupleDataTypeNull:
		case pglogrepl.TupleDataTypeToast:
			if old != nil && i < len(old) {
				if _, isText := old[i].Value.(string); old[i].Value != nil && !(isText && old[i].Value == st.enc.mapper.placeholder) {
					row[i].Value = old[i].Value
					continue
				}
			}
			v, ok := st.enc.mapper.unavailable(col)
			if !ok {
				st.src.log.Warn("postgres: an unchanged TOASTed value, which the stream does not carry, is written as null, as Debezium does: its type cannot hold the placeholder; "+
					"ALTER TABLE … REPLICA IDENTITY FULL makes updates carry it", "table", rel.ref.String(), "column", col.name, "type", col.typ.name)
			}
			row[i].Value = v
			unavailable = append(unavailable, col.name)
		case pglogrepl.TupleDataTypeText:
			v, err := st.enc.mapper.decode(col.typ, col.effTypmod(), all[off:off+len(c.data)])
			off += len(c.data)
			if err != nil {
				st.src.log.Warn("postgres: value not understood, written as null", "table", rel.ref.String(), "column", col.name, "type", col.typ.name, "err", err)
				v = nil
			}
			row[i].Value = v
		default:
			return nil, nil, fmt.Errorf("table %s, column %s: tuple data of kind %q", rel.ref, col.name, c.kind)
		}
	}
	return row, unavailable, nil
}

// rowKeyEqual reports whether two rows of rel have the same key.
func rowKeyEqual(rel *relation, a, b connect.Row) bool {
	if len(rel.keyIdx) == 0 || a == nil || b == nil {
		return true
	}
	ka, err1 := rel.key(a).MarshalJSON()
	kb, err2 := rel.key(b).MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(ka, kb)
}

// event builds one change event of the current transaction.
func (st *streamer) event(rel *relation, op connect.Op, before, after connect.Row, lsn uint64) *connect.ChangeEvent {
	ev := &connect.ChangeEvent{Op: op, Before: before, After: after,
		Source: st.enc.source(rel, connect.SnapshotFalse, st.commitTime, st.xid, lsn, st.lastCommit)}
	if op != connect.OpTruncate {
		if after != nil {
			ev.Key = rel.key(after)
		} else {
			ev.Key = rel.key(before)
		}
	}
	ev.SetTime(time.Now())
	st.events++
	if st.src.set.txMetadata {
		st.total++
		name := rel.ref.String()
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
		ev.Transaction = &connect.Transaction{ID: st.txID, TotalOrder: st.total, DataCollectionOrder: n}
	}
	return ev
}

// change emits one change event (and the tombstone after a delete).
// unavailable names the columns of after whose values the stream did not
// carry; they go into the record's connect.UnavailableColumnsHeader.
func (st *streamer) change(ctx context.Context, rel *relation, op connect.Op, before, after connect.Row, unavailable []string, lsn uint64) error {
	if rel.signal {
		return nil // only inserts into the signal table mean something
	}
	if st.src.set.skipped.Skips(op) {
		// skipped.operations: as in Debezium, a skipped change leaves an
		// incremental snapshot's open chunk alone, so the chunk's row is
		// still emitted as read (dropped, the row would be missing from
		// the snapshot when updates are skipped). A truncate empties the
		// chunk all the same: its rows are gone.
		if op == connect.OpTruncate && st.chunk != nil {
			st.streamed(rel, op)
		}
		return nil
	}
	if st.chunk != nil {
		st.streamed(rel, op, rel.key(before), rel.key(after))
	}
	rec, err := st.enc.recordIn(&st.blk, rel, st.event(rel, op, before, after, lsn))
	if err != nil {
		return err
	}
	if len(unavailable) > 0 {
		rec.Headers = append(rec.Headers, connect.UnavailableColumns(unavailable))
	}
	st.pending = append(st.pending, rec)
	if op == connect.OpDelete && st.src.set.tombstones && rec.Key != nil {
		st.pending = append(st.pending, connect.Tombstone(rec))
	}
	return st.maybeFlush(ctx)
}

// keyChange emits an update that changed the key as Debezium does: a
// delete of the old key (header __debezium.newkey), its tombstone, and a
// create of the new key (header __debezium.oldkey, and
// connect.UnavailableColumnsHeader when unavailable names columns).
func (st *streamer) keyChange(ctx context.Context, rel *relation, before, after connect.Row, unavailable []string, lsn uint64) error {
	if rel.signal {
		return nil
	}
	// As in Debezium, skipped.operations sees the two events: d leaves
	// out the delete (and its tombstone), c the create; only the key of
	// an event emitted leaves an incremental snapshot's open chunk.
	skipDel, skipCre := st.src.set.skipped.Skips(connect.OpDelete), st.src.set.skipped.Skips(connect.OpCreate)
	if st.chunk != nil {
		var keys []connect.Row
		if !skipDel {
			keys = append(keys, rel.key(before))
		}
		if !skipCre {
			keys = append(keys, rel.key(after))
		}
		st.streamed(rel, connect.OpUpdate, keys...)
	}
	if skipDel && skipCre {
		return nil
	}
	var del, cre connect.Record
	var err error
	if !skipDel {
		if del, err = st.enc.recordIn(&st.blk, rel, st.event(rel, connect.OpDelete, before, nil, lsn)); err != nil {
			return err
		}
	}
	if !skipCre {
		if cre, err = st.enc.recordIn(&st.blk, rel, st.event(rel, connect.OpCreate, nil, after, lsn)); err != nil {
			return err
		}
	}
	if skipDel || skipCre {
		// The header of the one emitted names the other's key, encoded
		// as the skipped event's key would have been.
		k, err := st.keyOnly(rel, before, after, skipDel)
		if err != nil {
			return err
		}
		if skipDel {
			del.Key = k
		} else {
			cre.Key = k
		}
	}
	if !skipDel {
		del.Headers = append(del.Headers, connect.Header{Key: "__debezium.newkey", Value: cre.Key})
		st.pending = append(st.pending, del)
		if st.src.set.tombstones {
			st.pending = append(st.pending, connect.Tombstone(del))
		}
	}
	if !skipCre {
		cre.Headers = append(cre.Headers, connect.Header{Key: "__debezium.oldkey", Value: del.Key})
		if len(unavailable) > 0 {
			cre.Headers = append(cre.Headers, connect.UnavailableColumns(unavailable))
		}
		st.pending = append(st.pending, cre)
	}
	return st.maybeFlush(ctx)
}

// keyOnly returns the encoded key of the delete (old key) or the create
// (new key) of a key change whose event is skipped, without counting it
// as an event.
func (st *streamer) keyOnly(rel *relation, before, after connect.Row, old bool) ([]byte, error) {
	ev := &connect.ChangeEvent{Op: connect.OpCreate, After: after, Key: rel.key(after),
		Source: st.enc.source(rel, connect.SnapshotFalse, st.commitTime, st.xid, 0, st.lastCommit)}
	if old {
		ev.Op, ev.Before, ev.After, ev.Key = connect.OpDelete, before, nil, rel.key(before)
	}
	ev.SetTime(time.Now())
	rec, err := st.enc.record(rel, ev)
	return rec.Key, err
}

func (st *streamer) maybeFlush(ctx context.Context) error {
	if len(st.pending) > st.src.set.batchSize {
		return st.flush(ctx, false)
	}
	return nil
}

// message handles a logical decoding message: our heartbeat, or a user's
// message (an op m event on <prefix>.message).
func (st *streamer) message(ctx context.Context, m *pglogrepl.LogicalDecodingMessage, lsn uint64) error {
	if strings.HasPrefix(m.Prefix, watermarkPrefix) {
		if m.Prefix == watermarkPrefix+st.src.set.slot {
			st.sawWatermark = true
			st.watermarkMessage(string(m.Content))
		}
		return nil
	}
	if strings.HasPrefix(m.Prefix, heartbeatPrefix) {
		if m.Prefix != heartbeatPrefix+st.src.set.slot || m.Transactional {
			return nil
		}
		pos := st.position(uint64(m.LSN), 0, time.Time{})
		st.pending = append(st.pending, st.enc.heartbeat(time.Now(), pos))
		return st.flush(ctx, true)
	}
	ev := &connect.ChangeEvent{Op: connect.OpMessage, Key: connect.Row{{Name: "prefix", Value: m.Prefix}},
		Message: &connect.Message{Prefix: m.Prefix, Content: m.Content}}
	ev.Source = connect.SourceInfo{Version: version, Connector: connect.ConnectorPostgres, Name: st.src.set.prefix,
		Snapshot: connect.SnapshotFalse, DB: st.src.plan.db,
		Extra: connect.Row{{Name: "schema", Value: ""}, {Name: "table", Value: ""}, {Name: "txId", Value: nil}, {Name: "lsn", Value: int64(m.LSN)}, {Name: "xmin", Value: nil}}}
	if m.Transactional {
		ev.Source.SetTime(st.commitTime)
		ev.Source.Extra[2].Value = int64(st.xid)
	} else {
		ev.Source.SetTime(time.Now())
	}
	ev.TsMs = time.Now().UnixMilli()
	rec, err := st.enc.codec.Record(st.src.set.prefix+".message", ev)
	if err != nil {
		return fmt.Errorf("encode logical decoding message: %w", err)
	}
	if !m.Transactional {
		rec.Position = st.position(uint64(m.LSN), 0, time.Time{})
		st.pending = append(st.pending, rec)
		return st.flush(ctx, true)
	}
	st.pending = append(st.pending, rec)
	return st.maybeFlush(ctx)
}

// commit ends the transaction: its last record gets the position, and
// with transaction metadata the END record follows.
func (st *streamer) commit(ctx context.Context, m *pglogrepl.CommitMessage) error {
	end := uint64(m.TransactionEndLSN)
	chunkDone := st.emitChunk()
	if st.src.set.txMetadata {
		if st.sawWatermark && st.total == 0 && st.txStart < len(st.pending) {
			// A watermark's own transaction: no BEGIN and END for it.
			st.pending = append(st.pending[:st.txStart], st.pending[st.txStart+1:]...)
		} else {
			rec := st.enc.txRecord(st.txID, st.commitTime, true, st.total, st.counts)
			st.pending = append(st.pending, rec)
		}
	}
	pos := st.position(end, st.xid, m.CommitTime)
	if (chunkDone || st.incChanged) && len(st.pending) <= st.txStart {
		// The incremental snapshot moved on (an empty last chunk) or was
		// signalled without a row to show for it: a heartbeat carries
		// the new state.
		st.pending = append(st.pending, st.enc.heartbeat(time.Now(), nil))
	}
	st.incChanged = false
	if len(st.pending) > st.txStart {
		st.pending[len(st.pending)-1].Position = pos
	}
	st.inTx = false
	st.lastCommit = end
	st.src.rep.committed(st.events, m.CommitTime)
	return st.flush(ctx, true)
}

package mysql

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
)

// XA transactions.
//
// MySQL (5.7.7+) and MariaDB (10.5+) write an XA transaction to the binlog
// in two event groups, each with a GTID of its own:
//
//	prepare: GTID (MariaDB: flag FL_PREPARED_XA) [MySQL: Query "XA START xid"]
//	         table maps, rows events, Query "XA END xid", XA_PREPARE_LOG_EVENT
//	outcome: GTID, Query "XA COMMIT xid" or "XA ROLLBACK xid"
//
// The outcome may come much later (other transactions in between), even
// after a server restart, from any session. The rows are in the prepare
// group, but they are committed only by the XA COMMIT. So the streamer
// holds the changes of a prepare group in memory (xaTx), emits them when
// the XA COMMIT is read, as a transaction at the XA COMMIT's place in the
// stream, and drops them on XA ROLLBACK. XA COMMIT … ONE PHASE is an
// ordinary commit: MySQL logs one group ending with an XA_PREPARE_LOG_EVENT
// whose one_phase flag is set; MariaDB logs BEGIN … COMMIT.
//
// Positions. A stored position must let a restart read the rows of every
// prepared transaction still undecided, so while any is held the position
// resumes (file, pos, gtids) at the start of the oldest one's prepare
// group (of those with changes to emit), and its "emitted" mark says how far transactions were emitted:
// after a restart, transactions up to the mark are read again but not
// emitted (replayed), except the prepare groups, which are held again; an
// XA COMMIT up to the mark drops what it would emit. The mark is the end
// of the last transaction read (GTID set, or file and pos without GTIDs).
// A mark beyond the end of the server's binlog is refused at Open
// (checkMark): the transactions written since would pass for replayed.
//
// Memory. The held rows count against xa.buffer.bytes (the size of their
// rows events, uncompressed, plus the change struct of each row); a
// prepare group that would exceed it fails the task
// (connect.Permanent: the same binlog would fail again) naming the
// transaction: raise the setting, or decide the transaction, and restart.
// MySQL's one-phase groups are held too until their last event says
// one-phase, so they count against the setting as well.
//
// A start without a stored position waits until no transaction prepared
// before its position is undecided (xastart.go). With xa.start.wait=0, a
// transaction prepared before the position streaming started from has no
// held rows when its XA COMMIT comes: that is logged as a warning and its
// changes are lost to this source. Signal-table rows of a prepared
// transaction act at the prepare, once: not again when a restart reads the
// prepare again before the emitted mark.

// mariaFlPreparedXA flags the GTID event of an XA prepare group
// (MariaDB's log_event.h).
const mariaFlPreparedXA = 0x40

// xaTx is a prepared XA transaction whose outcome the stream has not read.
type xaTx struct {
	xid     string    // canonical: X'hex',X'hex',formatID
	id      string    // the transaction block's id: the prepare group's txID
	changes []*change // in binlog order
	bytes   int64     // binlog size of the rows events held
	// from is where a restart reads its prepare group again: the group's
	// start and the GTID set executed before it.
	from position
}

// emittedMark is how far a stored position's transactions were emitted
// when it resumes before that (at the oldest undecided XA prepare).
type emittedMark struct {
	File  string `json:"file"`
	Pos   uint32 `json:"pos"`
	GTIDs string `json:"gtids,omitempty"`
}

// replayMark is the emitted mark of the position streaming started from,
// while the stream has not passed it: transactions up to it are not
// emitted again.
type replayMark struct {
	stored emittedMark
	at     coords
	gtids  *gtidSet // nil without GTIDs
}

func newReplayMark(flavor string, m *emittedMark) (*replayMark, error) {
	r := &replayMark{stored: *m, at: coords{m.File, m.Pos}}
	if m.GTIDs != "" {
		g, err := parseGTIDSet(flavor, m.GTIDs)
		if err != nil {
			return nil, fmt.Errorf("stored position, emitted mark: %w", err)
		}
		r.gtids = g
	}
	return r, nil
}

// xaBegin marks the current transaction as an XA prepare group.
func (st *streamer) xaBegin() {
	if st.xaOpen != nil {
		return
	}
	from := position{File: st.file, Pos: st.txStart, ServerID: st.txServerID}
	if st.gtids != nil {
		from.GTIDs = st.gtids.String() // the set before this transaction
	}
	st.xaOpen = &xaTx{id: st.txID(), from: from}
}

// xaUnfinished drops the prepare group being received when the next
// transaction starts (its GTID event) before the group's XA_PREPARE event
// (a binlog cut short): otherwise the changes of every transaction after
// it would be held with it.
func (st *streamer) xaUnfinished(h *replication.EventHeader) {
	x := st.xaOpen
	if x == nil {
		return
	}
	st.src.log.Warn("mysql: XA prepare group without its XA PREPARE before the next transaction: its changes are dropped", "transaction", x.id, "at", coords{st.file, h.LogPos - h.EventSize}.String())
	st.xaBytes -= x.bytes
	st.xaOpen = nil
}

// xaGrow counts n bytes of a rows event of the prepare group (its rows,
// uncompressed, and heldChangeSize per row) against xa.buffer.bytes.
func (st *streamer) xaGrow(n int64, h *replication.EventHeader) error {
	x := st.xaOpen
	x.bytes += n
	st.xaBytes += n
	if limit := st.src.set.xaBufferBytes; st.xaBytes > limit {
		return connect.Permanent(fmt.Errorf("XA transaction %s (prepared at %s:%d): the rows of prepared XA transactions held until their XA COMMIT or XA ROLLBACK exceed xa.buffer.bytes (%d bytes, %d held): raise xa.buffer.bytes, or commit or roll back the prepared transactions (XA RECOVER lists them), then restart the connector", x.id, st.file, h.LogPos, limit, st.xaBytes))
	}
	return nil
}

// heldChangeSize is what xa.buffer.bytes counts for a held change besides
// its row images.
const heldChangeSize = int64(unsafe.Sizeof(change{}))

// queue queues a change of the current transaction: held with the XA
// prepare group it belongs to, or handed to change. A held change is
// copied out of its slab, which would otherwise stay pinned, 64 changes'
// worth, until the XA transaction is decided.
func (st *streamer) queue(c *change) {
	if x := st.xaOpen; x != nil {
		held := new(change)
		*held = *c
		held.slab = nil
		st.encoded(c) // never encoded: its slab may go back to newChange
		x.changes = append(x.changes, held)
		return
	}
	st.change(c)
}

// xaPrepared ends a prepare group: its changes are held until the
// outcome, and the group counts as read (its GTID joins the executed set).
func (st *streamer) xaPrepared(ctx context.Context, h *replication.EventHeader, xid string) error {
	x := st.xaOpen
	if x == nil {
		// No sign of XA before the prepare (a server that flags none):
		// hold the changes the transaction queued and did not hand over
		// yet, dropping its other records (a transaction BEGIN).
		st.src.log.Warn("mysql: XA prepare of a transaction not flagged as XA at its start: its changes handed over already are not taken back", "xid", xid, "at", coords{st.file, h.LogPos}.String(), "gtid", st.txGTID)
		st.xaBegin()
		x = st.xaOpen
		for _, it := range st.pending[st.txMark:] {
			if it.ch != nil {
				it.ch.tx, it.ch.txNext = nil, nil
				x.changes = append(x.changes, it.ch)
			}
		}
		st.pending = st.pending[:st.txMark]
		st.txBegun, st.total, st.counts = false, 0, st.counts[:0]
	}
	x.xid = xid
	st.xaOpen = nil
	if i := st.xaIndex(xid); i >= 0 {
		// The same XID prepared again without an outcome read in between
		// (the outcome was before the position streaming started from).
		st.xaDrop(i)
	}
	st.xaHeld = append(st.xaHeld, x)
	st.src.xaHeld.Store(int64(len(st.xaHeld)))
	return st.commit(ctx, h)
}

func (st *streamer) xaIndex(xid string) int {
	for i, x := range st.xaHeld {
		if x.xid == xid {
			return i
		}
	}
	return -1
}

// xaDrop forgets held transaction i (slices.Delete clears the slot it
// frees: the list's array would keep the changes of x otherwise).
func (st *streamer) xaDrop(i int) *xaTx {
	x := st.xaHeld[i]
	st.xaHeld = slices.Delete(st.xaHeld, i, i+1)
	st.xaBytes -= x.bytes
	st.src.xaHeld.Store(int64(len(st.xaHeld)))
	return x
}

// xaCommit handles an XA COMMIT (two-phase) of xid: the held changes are
// emitted as the transaction the XA COMMIT's group is.
func (st *streamer) xaCommit(ctx context.Context, h *replication.EventHeader, xid string) error {
	i := st.xaIndex(xid)
	if i < 0 {
		if !st.replayed() {
			st.src.log.Warn("mysql: XA COMMIT of a transaction whose prepare this source did not read (prepared before the position streaming started from): its changes to captured tables, if any, are not emitted", "xid", xid, "at", coords{st.file, h.LogPos}.String(), "gtid", st.txGTID)
		}
		return st.commit(ctx, h)
	}
	x := st.xaHeld[i]
	if st.replayed() {
		st.xaDrop(i)
		return st.commit(ctx, h) // emitted before the restart
	}
	return st.xaEmit(ctx, h, x)
}

// xaRollback handles an XA ROLLBACK of xid: the held changes are dropped.
func (st *streamer) xaRollback(ctx context.Context, h *replication.EventHeader, xid string) error {
	if i := st.xaIndex(xid); i >= 0 {
		st.xaDrop(i)
	}
	return st.commit(ctx, h)
}

// xaEmit emits the changes of x in the current transaction, which it
// ends: the XA COMMIT's group, or the one-phase group itself. A held x
// stays held until the commit, so that the position of a batch handed
// over meanwhile still resumes at its prepare. The events
// keep their source block (gtid, file, pos: where the rows are in the
// binlog), but ts_ms is the commit's time, and the transaction block's id
// is the prepare group's (that of source.gtid).
func (st *streamer) xaEmit(ctx context.Context, h *replication.EventHeader, x *xaTx) error {
	st.txIDFixed = x.id
	now := time.Now().UnixNano()
	for n, c := range x.changes {
		c.si.ts, c.now = st.txTime, now
		if st.chunk != nil {
			if err := st.leaveChunk(c, h); err != nil {
				return err
			}
		}
		st.change(c)
		x.changes[n] = nil
		if len(st.pending) > st.src.set.batchSize {
			if err := st.flush(ctx, false); err != nil {
				return err
			}
		}
	}
	if i := slices.Index(st.xaHeld, x); i >= 0 {
		st.xaDrop(i)
	}
	return st.commit(ctx, h)
}

// leaveChunk drops the keys of a change from the open incremental-snapshot
// chunk, as rows does for the changes it queues: a held change does so
// when it is committed, which is when the chunk's query can see it.
func (st *streamer) leaveChunk(c *change, h *replication.EventHeader) error {
	sk := &st.src.set.skipped
	skipDel, skipCre := c.keyChange && sk.Skips(connect.OpDelete), c.keyChange && sk.Skips(connect.OpCreate)
	if c.spec == nil {
		if c.parsed.before != nil && !skipDel {
			st.streamedChange(c.t, c.parsed.before)
		}
		if c.parsed.after != nil && !skipCre {
			st.streamedChange(c.t, c.parsed.after)
		}
		return nil
	}
	if c.kind != rowsInsert && !skipDel {
		if err := st.streamedImage(c.t, c.spec, c.rawBefore, h); err != nil {
			return err
		}
	}
	if c.kind != rowsDelete && !skipCre {
		return st.streamedImage(c.t, c.spec, c.rawAfter, h)
	}
	return nil
}

// xaQuery handles a query event of an XA statement.
func (st *streamer) xaQuery(ctx context.Context, h *replication.EventHeader, q string) error {
	verb, xid := xaStatement(q)
	switch verb {
	case "START", "BEGIN":
		if !st.inTx {
			st.begin(h)
		}
		st.xaBegin()
	case "PREPARE":
		if !st.inTx {
			st.begin(h)
		}
		return st.xaPrepared(ctx, h, xid)
	case "COMMIT ONE PHASE":
		return st.xaOnePhase(ctx, h)
	case "COMMIT":
		if !st.inTx {
			st.begin(h)
		}
		return st.xaCommit(ctx, h, xid)
	case "ROLLBACK":
		if !st.inTx {
			st.begin(h)
		}
		return st.xaRollback(ctx, h, xid)
	}
	return nil // XA END: the prepare follows
}

// xaOnePhase commits the current transaction, XA or not.
func (st *streamer) xaOnePhase(ctx context.Context, h *replication.EventHeader) error {
	x := st.xaOpen
	if x == nil {
		return st.commit(ctx, h)
	}
	st.xaOpen = nil
	st.xaBytes -= x.bytes
	if st.replayed() {
		return st.commit(ctx, h) // emitted before the restart
	}
	return st.xaEmit(ctx, h, x)
}

// xaPrepareEvent handles an XA_PREPARE_LOG_EVENT (body without the common
// header).
func (st *streamer) xaPrepareEvent(ctx context.Context, h *replication.EventHeader, body []byte) error {
	onePhase, xid, err := parseXAPrepare(body)
	if err != nil {
		return fmt.Errorf("XA prepare event at %s:%d: %w", st.file, h.LogPos, err)
	}
	if !st.inTx {
		st.begin(h)
	}
	if onePhase {
		return st.xaOnePhase(ctx, h)
	}
	return st.xaPrepared(ctx, h, xid)
}

// parseXAPrepare reads the body of an XA_PREPARE_LOG_EVENT: one_phase (1
// byte), formatID, gtrid length, bqual length (4 bytes each,
// little-endian), then gtrid and bqual. The XID comes in canonical form
// (xidString).
func parseXAPrepare(body []byte) (onePhase bool, xid string, err error) {
	if len(body) < 13 {
		return false, "", fmt.Errorf("%d bytes, want at least 13", len(body))
	}
	onePhase = body[0] != 0
	format := binary.LittleEndian.Uint32(body[1:])
	gl, bl := uint64(binary.LittleEndian.Uint32(body[5:])), uint64(binary.LittleEndian.Uint32(body[9:]))
	data := body[13:]
	if gl+bl > uint64(len(data)) {
		return false, "", fmt.Errorf("xid of %d+%d bytes in %d", gl, bl, len(body))
	}
	return onePhase, xidString(data[:gl], data[gl:gl+bl], format), nil
}

// xidString is an XID as the binlog's XA statements write it:
// X'gtrid',X'bqual',formatID, hex in upper case.
func xidString(gtrid, bqual []byte, format uint32) string {
	return fmt.Sprintf("X'%s',X'%s',%d", strings.ToUpper(hex.EncodeToString(gtrid)), strings.ToUpper(hex.EncodeToString(bqual)), format)
}

// isXA reports whether a query event's statement is an XA statement.
func isXA(q string) bool {
	return len(q) > 3 && strings.EqualFold(q[:3], "XA ")
}

// xaStatement splits an XA statement of the binlog into its verb (START,
// END, PREPARE, COMMIT, COMMIT ONE PHASE, ROLLBACK) and its XID in
// canonical form (see xidString), whichever way the statement writes it:
// X'hex', 0xhex, B'bits', 'quoted' or "quoted" strings, bqual and
// formatID left out for an empty bqual and 1, MySQL's formatID of 64 bits
// (cut to the 32 its XA_PREPARE event keeps). A form it does not know is
// kept as written, white space cut to single spaces.
func xaStatement(q string) (verb, xid string) {
	if !isXA(q) {
		return "", ""
	}
	rest := strings.TrimLeft(q[3:], xaSpace)
	n := strings.IndexAny(rest, xaSpace)
	if n < 0 {
		n = len(rest)
	}
	verb, rest = strings.ToUpper(rest[:n]), rest[n:]
	if verb == "" {
		return "", ""
	}
	if x, tail, ok := parseXID(rest); ok {
		switch words := strings.ToUpper(strings.Join(strings.Fields(tail), " ")); words {
		case "ONE PHASE":
			return verb + " ONE PHASE", x
		case "", "JOIN", "RESUME", "SUSPEND", "SUSPEND FOR MIGRATE":
			return verb, x
		}
	}
	f := strings.Fields(rest)
	if n := len(f); n >= 2 && strings.EqualFold(f[n-2], "ONE") && strings.EqualFold(f[n-1], "PHASE") {
		f = f[:n-2]
		verb += " ONE PHASE"
	}
	// Words joined by a space: what parseXID did not take never looks
	// canonical (the canonical form, without spaces, parses).
	return verb, strings.Join(f, " ")
}

// xaSpace is the white space between SQL tokens.
const xaSpace = " \t\n\r\f\v"

// parseXID reads an XID at the start of s (after white space): gtrid
// [, bqual [, formatID]]. It returns the XID in canonical form and what
// follows it.
func parseXID(s string) (xid, tail string, ok bool) {
	gtrid, s, ok := xidPart(s)
	if !ok {
		return "", "", false
	}
	var bqual []byte
	format := uint64(1)
	if s, ok = xidComma(s); ok {
		if bqual, s, ok = xidPart(s); !ok {
			return "", "", false
		}
		if s, ok = xidComma(s); ok {
			if format, s, ok = xidNumber(s); !ok {
				return "", "", false
			}
		}
	}
	return xidString(gtrid, bqual, uint32(format)), s, true
}

// xidComma skips a comma after white space.
func xidComma(s string) (string, bool) {
	s = strings.TrimLeft(s, xaSpace)
	if !strings.HasPrefix(s, ",") {
		return s, false
	}
	return s[1:], true
}

// xidPart reads a string of an XID after white space: X'hex', 0xhex,
// B'bits', 0bbits, or a string quoted with ' or " (quotes doubled or
// escaped with a backslash, as MySQL reads them by default).
func xidPart(s string) (b []byte, tail string, ok bool) {
	s = strings.TrimLeft(s, xaSpace)
	if len(s) < 2 {
		return nil, s, false
	}
	switch c := s[0]; {
	case c == '\'' || c == '"':
		return xidQuoted(s)
	case (c == 'X' || c == 'x') && s[1] == '\'':
		end := strings.IndexByte(s[2:], '\'')
		if end < 0 || end%2 != 0 {
			return nil, s, false // MySQL wants pairs of hex digits
		}
		b, err := hex.DecodeString(s[2 : 2+end])
		return b, s[3+end:], err == nil
	case (c == 'B' || c == 'b') && s[1] == '\'':
		end := strings.IndexByte(s[2:], '\'')
		if end < 0 {
			return nil, s, false
		}
		b, ok := xidBits(s[2 : 2+end])
		return b, s[3+end:], ok
	case c == '0' && (s[1] == 'x' || s[1] == 'X'):
		n := 2
		for n < len(s) && isHexDigit(s[n]) {
			n++
		}
		digits := s[2:n]
		if digits == "" || (n < len(s) && isWordByte(s[n])) {
			return nil, s, false
		}
		if len(digits)%2 != 0 {
			digits = "0" + digits
		}
		b, err := hex.DecodeString(digits)
		return b, s[n:], err == nil
	case c == '0' && (s[1] == 'b' || s[1] == 'B'):
		n := 2
		for n < len(s) && (s[n] == '0' || s[n] == '1') {
			n++
		}
		if n == 2 || (n < len(s) && isWordByte(s[n])) {
			return nil, s, false
		}
		b, ok := xidBits(s[2:n])
		return b, s[n:], ok
	}
	return nil, s, false
}

// xidQuoted reads a quoted string at the start of s.
func xidQuoted(s string) (b []byte, tail string, ok bool) {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == q:
			if i+1 < len(s) && s[i+1] == q {
				b = append(b, q)
				i++
				continue
			}
			if b == nil {
				b = []byte{}
			}
			return b, s[i+1:], true
		case c == '\\':
			if i+1 == len(s) {
				return nil, s, false
			}
			i++
			switch e := s[i]; e {
			case '0':
				b = append(b, 0)
			case 'b':
				b = append(b, '\b')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'Z':
				b = append(b, 0x1a)
			case '%', '_':
				b = append(b, '\\', e) // kept with its backslash, as MySQL does
			default:
				b = append(b, e)
			}
		default:
			b = append(b, c)
		}
	}
	return nil, s, false
}

// xidBits turns binary digits into bytes, padded on the left to whole
// bytes.
func xidBits(d string) ([]byte, bool) {
	b := make([]byte, (len(d)+7)/8)
	for i := 0; i < len(d); i++ {
		bit := len(d) - 1 - i // from the right
		switch d[i] {
		case '1':
			b[len(b)-1-bit/8] |= 1 << (bit % 8)
		case '0':
		default:
			return nil, false
		}
	}
	return b, true
}

// xidNumber reads the formatID of an XID after white space: decimal, or
// 0x hex, of at most 64 bits.
func xidNumber(s string) (n uint64, tail string, ok bool) {
	s = strings.TrimLeft(s, xaSpace)
	base, start := 10, 0
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		base, start = 16, 2
	}
	end := start
	for end < len(s) && (s[end] >= '0' && s[end] <= '9' || base == 16 && isHexDigit(s[end])) {
		end++
	}
	if end == start || (end < len(s) && isWordByte(s[end])) {
		return 0, s, false
	}
	n, err := strconv.ParseUint(s[start:end], base, 64)
	return n, s[end:], err == nil
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isWordByte reports whether c continues an SQL word or number.
func isWordByte(c byte) bool {
	return c == '_' || c == '$' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// replayed reports whether the current transaction was emitted before the
// restart this stream started with (it ends at or before the stored
// emitted mark): its changes are not emitted again.
func (st *streamer) replayed() bool {
	m := st.emitted
	if m == nil {
		return false
	}
	if m.gtids != nil {
		switch {
		case st.hasMaria:
			last, ok := m.gtids.maria[st.txMaria.DomainID]
			return ok && st.txMaria.SequenceNumber <= last.SequenceNumber
		case st.txSID != nil:
			one, err := mysql.ParseMysqlGTIDSet(fmt.Sprintf("%s:%d", uuidString(st.txSID), st.txGNO))
			return err == nil && m.gtids.my.Contain(one)
		}
		return false
	}
	return coords{st.file, st.txStart}.less(m.at)
}

// passedMark forgets the emitted mark once the stream is past it (called
// at every commit while there is one).
func (st *streamer) passedMark() {
	m := st.emitted
	if m == nil {
		return
	}
	if m.gtids != nil {
		if st.gtids == nil {
			return
		}
		if m.gtids.flavor == flavorMariaDB {
			for d, id := range m.gtids.maria {
				if have, ok := st.gtids.maria[d]; !ok || have.SequenceNumber < id.SequenceNumber {
					return
				}
			}
		} else if !st.gtids.my.Contain(m.gtids.my) {
			return
		}
		st.emitted = nil
		return
	}
	if !(coords{st.last.File, st.last.Pos}).less(m.at) {
		st.emitted = nil
	}
}

// xaPosition turns p, the end of the last transaction read, into the
// position to store while prepared XA transactions are held or the stream
// is still behind the emitted mark it started with: resume at the oldest
// held prepare, with the mark of what was emitted.
//
// A held transaction without changes (of tables not captured, or of
// operations skipped) has nothing to emit: it does not hold the position
// back. It is held only to tell its XA COMMIT from that of a prepare
// never read (which warns); after a restart past its prepare, its XA
// COMMIT warns too.
func (st *streamer) xaPosition(p *position) {
	var oldest *xaTx
	for _, x := range st.xaHeld {
		if len(x.changes) > 0 {
			oldest = x
			break
		}
	}
	if oldest == nil && st.emitted == nil {
		return
	}
	mark := emittedMark{File: p.File, Pos: p.Pos, GTIDs: p.GTIDs}
	if st.emitted != nil {
		mark = st.emitted.stored
	}
	if oldest != nil {
		from := oldest.from
		p.File, p.Pos, p.GTIDs = from.File, from.Pos, from.GTIDs
	}
	p.Emitted = &mark
}

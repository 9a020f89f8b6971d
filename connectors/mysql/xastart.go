package mysql

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
)

// Starting clear of prepared XA transactions.
//
// A source without a stored position (or re-snapshotting under
// snapshot.mode=when_needed) starts streaming at a position it takes now:
// the snapshot's, or the server's current one. An XA transaction prepared
// before that position and committed after it would be lost: the snapshot
// does not see its rows (uncommitted when its consistent read began), and
// its rows events lie before the position, so the stream meets its
// XA COMMIT without them (xa.go). So startClear takes the position, then
// asks which XA transactions prepared before it are undecided:
//
//	listed := XA RECOVER                      (every prepared transaction)
//	end    := SHOW MASTER STATUS
//	events := SHOW BINLOG EVENTS from the position to end: XA PREPARE, XA COMMIT
//
// A listed transaction whose XA PREPARE is among events was prepared after
// the position: the stream holds it, nothing to wait for. The others were
// prepared before it. An XA COMMIT among events without its XA PREPARE
// before it was prepared before the position and committed since (between
// taking the position and XA RECOVER): already lost to this position. If
// there is any of either kind, startClear gives the position up (rolls
// the snapshot transactions back), waits until XA RECOVER lists none of
// the transactions it found (polling, logging which and for how long),
// and takes a new position. XA RECOVER is read before end, and a server
// writes an XA COMMIT to the binlog before XA RECOVER stops listing the
// transaction, so a transaction prepared before the position is either
// listed or has its XA COMMIT among events: none slips through. Only the
// transactions prepared before the position are waited for, so a server
// busy with short XA transactions does not keep the source from starting.
//
// The wait never holds a lock: on MySQL the snapshot takes FLUSH TABLES
// WITH READ LOCK only while its transactions start, and it blocks commits,
// XA COMMIT and XA PREPARE among them (checked on MariaDB 10.11), so
// waiting under it would wait for a commit the lock blocks. openSnapshots
// has released it when startClear checks.
//
// The wait is bounded by xa.start.wait; beyond it the task fails for good
// (connect.Permanent: a restart would wait again), naming the transactions
// and the statements that decide them. xa.start.wait=0 skips the check
// and only warns, as XA RECOVER needs XA_RECOVER_ADMIN on MySQL 8.0.19+.

// defaultXAPoll is how often a waiting start reads XA RECOVER again.
const defaultXAPoll = time.Second

// xaWaitLogEvery is how often a waiting start logs that it still waits.
const xaWaitLogEvery = 15 * time.Second

// startClear takes the start position with take, again (after release
// and a wait) while XA transactions prepared before it are undecided.
func (s *Source) startClear(ctx context.Context, take func(context.Context) (coords, *gtidSet, error), release func()) (coords, *gtidSet, error) {
	if s.set.xaStartWait == 0 {
		s.warnPreparedXA(ctx)
		return take(ctx)
	}
	began := time.Now()
	deadline := began.Add(s.set.xaStartWait)
	waited := false
	defer s.xaStartWaiting.Store(0)
	for {
		at, gtids, err := take(ctx)
		if err != nil {
			return coords{}, nil, err
		}
		before, err := s.preparedBefore(ctx, at)
		if err != nil {
			release()
			return coords{}, nil, err
		}
		if len(before) == 0 {
			if waited {
				s.log.Info("mysql: no XA transaction prepared before the start position is undecided; starting", "waited", time.Since(began).Round(time.Millisecond), "at", at.String())
			}
			return at, gtids, nil
		}
		release()
		waited = true
		if err := s.waitDecided(ctx, before, began, deadline); err != nil {
			return coords{}, nil, err
		}
	}
}

// waitDecided waits until XA RECOVER lists none of xids, until deadline.
func (s *Source) waitDecided(ctx context.Context, xids []string, began, deadline time.Time) error {
	poll := s.xaPoll
	if poll == 0 {
		poll = defaultXAPoll
	}
	var logged time.Time
	for {
		listed, err := s.xaRecover(ctx)
		if err != nil {
			return err
		}
		var left []string
		for _, x := range xids {
			if slices.Contains(listed, x) {
				left = append(left, x)
			}
		}
		s.xaStartWaiting.Store(int64(len(left)))
		if len(left) == 0 {
			return nil
		}
		now := time.Now()
		if now.After(deadline) {
			return connect.Permanent(xaStartError(left, s.set.xaStartWait))
		}
		if logged.IsZero() || now.Sub(logged) >= xaWaitLogEvery {
			logged = now
			s.log.Warn("mysql: waiting for XA transactions prepared before the start position to be committed or rolled back: the changes of one committed after the start would be lost (a snapshot does not see uncommitted rows; the stream starts after their prepare)",
				"xids", strings.Join(left, " "), "waited", now.Sub(began).Round(time.Second), "xa.start.wait", s.set.xaStartWait)
		}
		t := time.NewTimer(poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

// xaStartError says which transactions kept the source from starting and
// how to decide them.
func xaStartError(xids []string, wait time.Duration) error {
	var decide []string
	for _, x := range xids {
		decide = append(decide, "XA COMMIT "+x+" (or XA ROLLBACK "+x+")")
	}
	return fmt.Errorf("XA transactions prepared before the position this source starts from are still undecided after xa.start.wait (%s): %s; if they committed after the start, their changes would be lost to this source (a snapshot does not see uncommitted rows, and the stream starts after their prepare). Decide them (XA RECOVER lists them): %s; or raise xa.start.wait. Then restart the connector",
		wait, strings.Join(xids, " "), strings.Join(decide, "; "))
}

// preparedBefore returns the XA transactions prepared before at that are
// undecided, or were committed after at (see startClear).
func (s *Source) preparedBefore(ctx context.Context, at coords) ([]string, error) {
	listed, err := s.xaRecover(ctx)
	if err != nil {
		return nil, err
	}
	end, _, err := masterStatus(ctx, s.db)
	if err != nil {
		return nil, err
	}
	events, err := s.binlogXA(ctx, at, end)
	if err != nil {
		return nil, err
	}
	after := map[string]bool{}
	var before []string
	for _, e := range events {
		switch e.verb {
		case "PREPARE":
			after[e.xid] = true
		case "COMMIT":
			if !after[e.xid] && !slices.Contains(before, e.xid) {
				before = append(before, e.xid)
			}
		}
	}
	for _, x := range listed {
		if !after[x] && !slices.Contains(before, x) {
			before = append(before, x)
		}
	}
	return before, nil
}

// xaRecover lists the prepared XA transactions (XA RECOVER), xids in
// canonical form (xidString).
func (s *Source) xaRecover(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, "XA RECOVER")
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && (me.Number == erSpecificAccessDenied || me.Number == erAccessDenied || me.Number == erDBAccessDenied) {
			return nil, connect.Permanent(fmt.Errorf("list the prepared XA transactions (XA RECOVER): %w; a source starting without a stored position waits for the XA transactions prepared before its start position (their changes would be lost otherwise), and MySQL 8.0.19+ lets only users with XA_RECOVER_ADMIN list them: run as an administrator GRANT XA_RECOVER_ADMIN ON *.* TO the source's user, or set xa.start.wait=0 to start without waiting", err))
		}
		return nil, fmt.Errorf("list the prepared XA transactions (XA RECOVER): %w", err)
	}
	defer rows.Close()
	var xids []string
	for rows.Next() {
		var format, gl, bl int64
		var data []byte
		if err := rows.Scan(&format, &gl, &bl, &data); err != nil {
			return nil, fmt.Errorf("list the prepared XA transactions (XA RECOVER): %w", err)
		}
		if gl >= 0 && bl >= 0 && gl <= int64(len(data)) && bl <= int64(len(data))-gl { // no overflow
			xids = append(xids, xidString(data[:gl], data[gl:gl+bl], uint32(format)))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list the prepared XA transactions (XA RECOVER): %w", err)
	}
	return xids, nil
}

// erSpecificAccessDenied is the error of a statement that needs a
// privilege the user lacks (XA RECOVER without XA_RECOVER_ADMIN).
const erSpecificAccessDenied = 1227

// xaEvent is an XA PREPARE, XA COMMIT or XA ROLLBACK in the binlog.
type xaEvent struct{ verb, xid string }

// binlogXA lists the XA PREPARE, XA COMMIT and XA ROLLBACK events from
// from up to to, in binlog order (SHOW BINLOG EVENTS: REPLICATION SLAVE on
// MySQL, BINLOG MONITOR on MariaDB).
func (s *Source) binlogXA(ctx context.Context, from, to coords) ([]xaEvent, error) {
	if !from.less(to) {
		return nil, nil
	}
	files := []string{from.File}
	if to.File != from.File {
		all, err := binaryLogs(ctx, s.db)
		if err != nil {
			return nil, err
		}
		i, j := slices.Index(all, from.File), slices.Index(all, to.File)
		if i < 0 || j < i {
			return nil, fmt.Errorf("read the binlog from %s to %s: the server lists binlog files %s", from, to, strings.Join(all, ", "))
		}
		files = all[i : j+1]
	}
	var out []xaEvent
	for k, f := range files {
		q := "SHOW BINLOG EVENTS IN '" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(f) + "'"
		if k == 0 {
			q += fmt.Sprintf(" FROM %d", from.Pos)
		}
		evs, err := s.binlogEvents(ctx, q, f == to.File, to.Pos)
		if err != nil {
			return nil, fmt.Errorf("read the binlog from %s to %s (%s): %w", from, to, q, err)
		}
		out = append(out, evs...)
	}
	return out, nil
}

// binlogEvents runs one SHOW BINLOG EVENTS and keeps its XA events, up to
// position stop when last.
func (s *Source) binlogEvents(ctx context.Context, q string, last bool, stop uint32) ([]xaEvent, error) {
	rows, err := s.db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	vals := make([]string, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	col := func(name string) int {
		return slices.IndexFunc(cols, func(c string) bool { return strings.EqualFold(c, name) })
	}
	posCol, typeCol, infoCol := col("Pos"), col("Event_type"), col("Info")
	if posCol < 0 || typeCol < 0 || infoCol < 0 {
		return nil, fmt.Errorf("unexpected columns %s", strings.Join(cols, ", "))
	}
	var out []xaEvent
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		var pos uint64
		fmt.Sscan(vals[posCol], &pos)
		if last && pos >= uint64(stop) {
			break
		}
		switch vals[typeCol] {
		case "Query", "XA_prepare":
			verb, xid := xaStatement(vals[infoCol])
			switch verb {
			case "PREPARE", "COMMIT", "ROLLBACK":
				out = append(out, xaEvent{verb, xid})
			}
		}
	}
	return out, rows.Err()
}

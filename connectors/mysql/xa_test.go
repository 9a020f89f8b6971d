package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
)

// xaRun runs statements on a connection of its own to the test database,
// and closes it: a prepared XA transaction left by it is detached from any
// session then, and any session may XA COMMIT or XA ROLLBACK it (MariaDB
// lets no other session see it while its own is connected).
func xaRun(t *testing.T, d *testDB, stmts ...string) {
	t.Helper()
	xaRunOn(t, testServer.dsn(d.name), stmts...)
}

// xaRunOn is xaRun on the server and database of dsn. It returns once the
// server has ended the session: the client's close only asks for that, and
// an XA COMMIT sent before the server's thread detached the prepared
// transaction fails with XAER_NOTA (seen in CI on a loaded machine, which
// left the transaction prepared and every later start waiting for it).
func xaRunOn(t *testing.T, dsn string, stmts ...string) {
	t.Helper()
	ctx := context.Background()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			t.Fatalf("%s: %v", q, err)
		}
	}
	conn.Close()
	db.Close()
	waitSessionGone(t, dsn, id)
}

// waitSessionGone waits until the server of dsn no longer lists session id.
func waitSessionGone(t *testing.T, dsn string, id int64) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id).Scan(&n)
		if err != nil {
			t.Fatalf("wait for session %d to end: %v", id, err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %d still listed by the server after 30s", id)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// prepareXA runs an XA transaction branch up to its prepare, on a session
// that ends then.
func prepareXA(t *testing.T, d *testDB, xid string, stmts ...string) {
	t.Helper()
	all := append([]string{"XA START " + xid}, stmts...)
	xaRun(t, d, append(all, "XA END "+xid, "XA PREPARE "+xid)...)
	t.Cleanup(func() { d.db.Exec("XA ROLLBACK " + xid) }) // when the test did not decide it
}

// changeIDs renders the change events among recs as op and id: "c1 u1 d2".
func changeIDs(t *testing.T, recs []connect.Record) string {
	t.Helper()
	var out []string
	for _, e := range decode(t, recs) {
		if e.Ev == nil {
			continue // a tombstone
		}
		row := e.Ev.After
		if e.Ev.Op == connect.OpDelete {
			row = e.Ev.Before
		}
		id, _ := row.Get("id")
		out = append(out, fmt.Sprintf("%s%v", e.Ev.Op, id))
	}
	return strings.Join(out, " ")
}

// readTo reads s until a change event of id shows, and returns the
// records read.
func readTo(t *testing.T, s *Source, id int) []connect.Record {
	t.Helper()
	return readUntil(t, s, 30*time.Second, func(recs []connect.Record) bool {
		return slices.ContainsFunc(strings.Fields(changeIDs(t, recs)), func(f string) bool { return f[1:] == fmt.Sprint(id) })
	})
}

// TestXA_RolledBackAfterPrepare: the changes of an XA transaction that is
// prepared and then rolled back are never emitted, though the binlog holds
// them from the prepare on.
func TestXA_RolledBackAfterPrepare(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))", "INSERT INTO t VALUES (9, 'old')")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	prepareXA(t, d, "'r1'", "INSERT INTO t VALUES (1, 'never')", "UPDATE t SET v = 'never' WHERE id = 9")
	d.exec(t, "INSERT INTO t VALUES (2, 'after prepare')")
	got := changeIDs(t, readTo(t, s, 2))
	xaRun(t, d, "XA ROLLBACK 'r1'")
	d.exec(t, "INSERT INTO t VALUES (3, 'after rollback')")
	got += " " + changeIDs(t, readTo(t, s, 3))
	if want := "c2 c3"; got != want {
		t.Fatalf("changes %q, want %q", got, want)
	}
}

// TestXA_CommittedAfterPrepare: the changes of a prepared XA transaction
// are emitted when its XA COMMIT is read, after the transactions committed
// in between, as one transaction (its prepare's GTID) with the commit's
// time; while it is undecided, the position resumes at its prepare.
func TestXA_CommittedAfterPrepare(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))", "INSERT INTO t VALUES (9, 'old')")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "provide.transaction.metadata": "true"}, nil)
	prepared := time.Now()
	prepareXA(t, d, "'c1'", "INSERT INTO t VALUES (1, 'xa')", "UPDATE t SET v = 'xa' WHERE id = 9")
	d.exec(t, "INSERT INTO t VALUES (2, 'between')")
	recs := readTo(t, s, 2)
	if got := changeIDs(t, recs); got != "c2" {
		t.Fatalf("before the XA COMMIT: %q, want c2", got)
	}
	p, err := decodePosition(lastPosition(recs))
	if err != nil {
		t.Fatal(err)
	}
	if p.Emitted == nil || p.GTIDs == p.Emitted.GTIDs {
		t.Fatalf("position while prepared: %+v, emitted %+v; want it to resume before the prepare", p, p.Emitted)
	}
	time.Sleep(1100 * time.Millisecond) // the commit's second differs from the prepare's
	xaRun(t, d, "XA COMMIT 'c1'")
	d.exec(t, "INSERT INTO t VALUES (3, 'after')")
	recs = readTo(t, s, 3)
	if got := changeIDs(t, recs); got != "c1 u9 c3" {
		t.Fatalf("after the XA COMMIT: %q, want c1 u9 c3", got)
	}
	evs := decode(t, recs)
	x, after := evs[0].Ev, evs[2].Ev
	gtid := func(e *connect.ChangeEvent) string { v, _ := e.Source.Extra.Get("gtid"); s, _ := v.(string); return s }
	if x.Transaction == nil || x.Transaction.ID != gtid(x) || gtid(x) == "" || evs[1].Ev.Transaction.TotalOrder != 2 {
		t.Errorf("transaction block %+v, source.gtid %q", x.Transaction, gtid(x))
	}
	// ts_ms is the XA COMMIT's time: a second or more after the prepare,
	// at most the next transaction's.
	if gtid(x) == gtid(after) || x.Source.TsMs < after.Source.TsMs-1000 || x.Source.TsMs > after.Source.TsMs || x.Source.TsMs < prepared.UnixMilli()/1000*1000+1000 {
		t.Errorf("XA change: gtid %s ts %d; the next transaction's gtid %s ts %d; prepared at %s", gtid(x), x.Source.TsMs, gtid(after), after.Source.TsMs, prepared)
	}
	var ends int
	for _, r := range recs {
		if strings.HasSuffix(r.Topic, ".transaction") && strings.Contains(string(r.Value), `"END"`) && strings.Contains(string(r.Value), gtid(x)) {
			ends++
			if !strings.Contains(string(r.Value), `"event_count":2`) {
				t.Errorf("END record %s", r.Value)
			}
		}
	}
	if ends != 1 {
		t.Errorf("%d END records of %s:\n%s", ends, gtid(x), dump(recs))
	}
	p, _ = decodePosition(lastPosition(recs))
	if p.Emitted != nil {
		t.Errorf("position after the XA COMMIT still has an emitted mark: %+v", p)
	}
}

// TestXA_OnePhase: XA COMMIT … ONE PHASE is an ordinary commit.
func TestXA_OnePhase(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	xaRun(t, d, "XA START 'o1'", "INSERT INTO t VALUES (1, 'one')", "DELETE FROM t WHERE id = 1", "INSERT INTO t VALUES (2, 'two')",
		"XA END 'o1'", "XA COMMIT 'o1' ONE PHASE")
	if got := changeIDs(t, readTo(t, s, 2)); got != "c1 d1 c2" {
		t.Fatalf("changes %q, want c1 d1 c2", got)
	}
}

// TestXA_RestartWhilePrepared stops the source while an XA transaction is
// prepared, twice, and decides it while the source is stopped: the stored
// position makes the restart read the prepare again, the transactions
// emitted before the restart are not emitted again, and the XA
// transaction's changes come once if committed, never if rolled back;
// with GTID positions and with file/pos positions.
func TestXA_RestartWhilePrepared(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fileOnly bool
		outcome  string
		want     string
	}{
		{"gtid/commit", false, "COMMIT", "c1 c4"},
		{"gtid/rollback", false, "ROLLBACK", "c4"},
		{"file/commit", true, "COMMIT", "c1 c4"},
		{"file/rollback", true, "ROLLBACK", "c4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
			open := func(pos connect.Position) *Source {
				t.Helper()
				v := withTables(d, map[string]string{"snapshot.mode": "never", "dsn": d.dsn, "heartbeat.interval": "0"})
				s := Connector().NewSource().(*Source)
				s.idle, s.fileOnly = 100*time.Millisecond, tc.fileOnly
				cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec(), Position: pos}
				if err := s.Open(t.Context(), cfg); err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			}
			s := open(nil)
			prepareXA(t, d, "'p1'", "INSERT INTO t VALUES (1, 'xa')")
			d.exec(t, "INSERT INTO t VALUES (2, 'between')")
			recs := readTo(t, s, 2)
			s.Close(context.Background())
			if got := changeIDs(t, recs); got != "c2" {
				t.Fatalf("first run: %q, want c2", got)
			}
			pos := lastPosition(recs)
			p, _ := decodePosition(pos)
			if p.Emitted == nil || (tc.fileOnly && (p.GTIDs != "" || p.Emitted.Pos <= p.Pos)) {
				t.Fatalf("position while prepared: %s", pos)
			}

			// Restarted while still prepared: 2 is not emitted again.
			s = open(pos)
			d.exec(t, "INSERT INTO t VALUES (3, 'again')")
			recs = readTo(t, s, 3)
			s.Close(context.Background())
			if got := changeIDs(t, recs); got != "c3" {
				t.Fatalf("second run: %q, want c3", got)
			}
			pos = lastPosition(recs)
			if p2, _ := decodePosition(pos); p2.Emitted == nil || p2.File != p.File || p2.Pos != p.Pos || p2.GTIDs != p.GTIDs {
				t.Fatalf("position of the second run %s; the first %s: want the same resume point", pos, lastPosition(recs))
			}

			// Decided while the source is stopped.
			xaRun(t, d, "XA "+tc.outcome+" 'p1'")
			d.exec(t, "INSERT INTO t VALUES (4, 'after')")
			s = open(pos)
			defer s.Close(context.Background())
			recs = readTo(t, s, 4)
			if got := changeIDs(t, recs); got != tc.want {
				t.Fatalf("third run: %q, want %q", got, tc.want)
			}
			if p, _ := decodePosition(lastPosition(recs)); p.Emitted != nil {
				t.Errorf("position after the outcome still has an emitted mark: %s", lastPosition(recs))
			}
		})
	}
}

// TestXA_BufferLimit: a prepared XA transaction whose rows exceed
// xa.buffer.bytes fails the task permanently, naming the setting; the
// transactions before it were emitted. The rows count uncompressed (they
// are held so): MariaDB's log_bin_compress shrinks these to a few bytes.
func TestXA_BufferLimit(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v text)")
	withGlobal(t, d, "log_bin_compress", "ON")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "xa.buffer.bytes": "4096"}, nil)
	d.exec(t, "INSERT INTO t VALUES (1, 'small')")
	prepareXA(t, d, "'big'", "INSERT INTO t VALUES (2, REPEAT('x', 3000))", "INSERT INTO t VALUES (3, REPEAT('y', 3000))")
	var got []connect.Record
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := s.Read(t.Context())
		got = append(got, recs...)
		if err != nil {
			if !connect.IsPermanent(err) || !strings.Contains(err.Error(), "xa.buffer.bytes") {
				t.Fatalf("error %v (permanent %v), want a permanent one naming xa.buffer.bytes", err, connect.IsPermanent(err))
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no error; records:\n%s", dump(got))
		}
	}
	if ids := changeIDs(t, got); ids != "c1" {
		t.Fatalf("changes %q, want c1", ids)
	}
}

func TestXAStatement(t *testing.T) {
	for _, tc := range []struct{ q, verb, xid string }{
		{"XA START X'7831',X'',1", "START", "X'7831',X'',1"},
		{"XA COMMIT X'7834',X'6234',7", "COMMIT", "X'7834',X'6234',7"},
		{"xa rollback x'ab', x'cd' ,007", "ROLLBACK", "X'AB',X'CD',7"},
		{"XA COMMIT X'01',X'',1 ONE PHASE", "COMMIT ONE PHASE", "X'01',X'',1"},
		{"XA END X'01',X'',1", "END", "X'01',X'',1"},
		// Other forms of the same XIDs, as a client writes them.
		{"XA COMMIT 'plain'", "COMMIT", "X'706C61696E',X'',1"},
		{"XA START 'x1'", "START", "X'7831',X'',1"},
		{"XA COMMIT 'x4' , \"b4\",7", "COMMIT", "X'7834',X'6234',7"},
		{"XA PREPARE 'it''s',_x'',0x1F", "PREPARE", "'it''s',_x'',0x1F"}, // introducers: not known
		{`XA PREPARE 'it''s\'',"a\"b\\\0",0x1F`, "PREPARE", "X'6974277327',X'6122625C00',31"},
		{"XA COMMIT 'one phase' ONE PHASE", "COMMIT ONE PHASE", "X'6F6E65207068617365',X'',1"},
		{"XA COMMIT 'one phase'", "COMMIT", "X'6F6E65207068617365',X'',1"},
		{"XA START 0xABC,b'1',0 JOIN", "START", "X'0ABC',X'01',0"},
		{"XA END 0b100000001 SUSPEND FOR MIGRATE", "END", "X'0101',X'',1"},
		{"XA BEGIN X'01'", "BEGIN", "X'01',X'',1"},
		// Not XIDs: kept as written, one space between words.
		{"XA COMMIT X'0 1',X'',1", "COMMIT", "X'0 1',X'',1"},
		{"XA COMMIT X'ABC',X'',1", "COMMIT", "X'ABC',X'',1"},
		{"XA COMMIT X'01',X'',99999999999999999999", "COMMIT", "X'01',X'',99999999999999999999"},
		{"XA COMMIT 'unterminated  ONE PHASE", "COMMIT ONE PHASE", "'unterminated"},
		{"XA COMMIT 'x' ONE PHASE NOW", "COMMIT", "'x' ONE PHASE NOW"},
		{"XA", "", ""},
		{"XA   ", "", ""},
		// MySQL takes a formatID of 64 bits; its XA_PREPARE event keeps 32.
		{"XA COMMIT X'01',X'',4294967297", "COMMIT", "X'01',X'',1"},
	} {
		verb, xid := xaStatement(tc.q)
		if verb != tc.verb || xid != tc.xid {
			t.Errorf("xaStatement(%q) = %q, %q; want %q, %q", tc.q, verb, xid, tc.verb, tc.xid)
		}
	}
	if got := xidString([]byte("x1"), nil, 1); got != "X'7831',X'',1" {
		t.Errorf("xidString = %q", got)
	}
}

// TestXA_Interleaved holds two prepared XA transactions, decides them in
// the other order, across a lost binlog connection, with more rows than a
// batch: each is emitted whole at its XA COMMIT, and the position resumes
// at the older prepare until both are decided.
func TestXA_Interleaved(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
	dsn := withReplUser(t, d, "xaint")
	s, err := tryOpen(t, dsn, withTables(d, map[string]string{"snapshot.mode": "never", "batch.size": "3"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	var rows []string
	var want []string
	for i := 1; i <= 10; i++ {
		rows = append(rows, fmt.Sprintf("INSERT INTO t VALUES (%d, 'a')", i))
		want = append(want, fmt.Sprintf("c%d", i))
	}
	prepareXA(t, d, "'a'", rows...)
	prepareXA(t, d, "'b'", "INSERT INTO t VALUES (20, 'b')")
	d.exec(t, "INSERT INTO t VALUES (30, 'plain')")
	xaRun(t, d, "XA COMMIT 'b'")
	d.exec(t, "INSERT INTO t VALUES (31, 'plain')")
	recs := readTo(t, s, 31)
	if got := changeIDs(t, recs); got != "c30 c20 c31" {
		t.Fatalf("before a's commit: %q, want c30 c20 c31", got)
	}
	p, _ := decodePosition(lastPosition(recs))
	if p.Emitted == nil {
		t.Fatalf("position with a held: %s", lastPosition(recs))
	}
	killDump(t, d, "xaint", 0)
	xaRun(t, d, "XA COMMIT 'a'")
	d.exec(t, "INSERT INTO t VALUES (32, 'plain')")
	recs = readTo(t, s, 32)
	if got, want := changeIDs(t, recs), strings.Join(append(want, "c32"), " "); got != want {
		t.Fatalf("after a's commit: %q, want %q", got, want)
	}
	if p, _ := decodePosition(lastPosition(recs)); p.Emitted != nil {
		t.Errorf("position after both commits: %s", lastPosition(recs))
	}
	if g := s.Report().Gauges["xa_prepared_held"]; g != 0 {
		t.Errorf("xa_prepared_held = %v", g)
	}
}

// TestXA_MySQLEvents drives the streamer with the event groups MySQL 8
// writes for XA transactions (no MySQL server can run here): a prepare
// group opened by an "XA START" query and closed by an XA_PREPARE_LOG_EVENT,
// its "XA COMMIT" group, and a one-phase group (XA_PREPARE_LOG_EVENT with
// one_phase set). The groups carry no rows: this checks what is held and
// the positions, on MySQL's GTID sets.
func TestXA_MySQLEvents(t *testing.T) {
	s := &Source{srv: &server{flavor: flavorMySQL, gtidMode: true, serverID: 1}, log: slog.New(slog.DiscardHandler)}
	s.set.xaBufferBytes = 1 << 20
	s.plan.start = coords{"binlog.000001", 4}
	st := newStreamer(s, nil)
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	const uuid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	pos := uint32(100)
	header := func(tp replication.EventType, size uint32) *replication.EventHeader {
		pos += size
		return &replication.EventHeader{EventType: tp, LogPos: pos, EventSize: size, ServerID: 1}
	}
	send := func(ev *replication.BinlogEvent) {
		t.Helper()
		if err := st.handle(t.Context(), ev); err != nil {
			t.Fatal(err)
		}
	}
	gtid := func(gno int64) {
		send(&replication.BinlogEvent{Header: header(replication.GTID_EVENT, 65), Event: &replication.GTIDEvent{SID: sid, GNO: gno}})
	}
	query := func(q string) {
		send(&replication.BinlogEvent{Header: header(replication.QUERY_EVENT, uint32(60+len(q))), Event: &replication.QueryEvent{Query: []byte(q)}})
	}
	prepare := func(onePhase byte, gtrid string) {
		t.Helper()
		body := []byte{onePhase, 1, 0, 0, 0, byte(len(gtrid)), 0, 0, 0, 0, 0, 0, 0}
		body = append(body, gtrid...)
		raw := append(make([]byte, replication.EventHeaderSize), body...)
		if err := st.handleRaw(t.Context(), &replication.BinlogEvent{Header: header(replication.XA_PREPARE_LOG_EVENT, uint32(len(raw))), RawData: raw}); err != nil {
			t.Fatal(err)
		}
	}
	position := func() position {
		t.Helper()
		p, err := decodePosition(st.lastPosition())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	gtid(1)
	query("COMMIT") // an ordinary transaction (its rows left out)
	prepareAt := pos
	gtid(2)
	query("XA START X'7831',X'',1")
	query("XA END X'7831',X'',1")
	prepare(0, "x1")
	if len(st.xaHeld) != 1 || st.xaHeld[0].xid != "X'7831',X'',1" || st.xaOpen != nil {
		t.Fatalf("after the prepare: held %+v, open %+v", st.xaHeld, st.xaOpen)
	}
	if p := position(); p.Emitted != nil || p.GTIDs != uuid+":1-2" {
		t.Fatalf("position while prepared without changes: %+v, emitted %+v", p, p.Emitted)
	}
	st.xaHeld[0].changes = []*change{{}} // as if it had rows of a captured table
	p := position()
	if p.GTIDs != uuid+":1" || p.Pos != prepareAt || p.Emitted == nil || p.Emitted.GTIDs != uuid+":1-2" || p.Emitted.Pos != pos {
		t.Fatalf("position while prepared: %+v, emitted %+v", p, p.Emitted)
	}
	st.xaHeld[0].changes = nil // nothing to encode at the commit
	gtid(3)
	query("XA COMMIT X'7831',X'',1")
	if p := position(); len(st.xaHeld) != 0 || p.Emitted != nil || p.GTIDs != uuid+":1-3" || p.Pos != pos {
		t.Fatalf("after the XA COMMIT: held %d, position %+v", len(st.xaHeld), p)
	}

	gtid(4)
	query("XA START X'7832',X'',1")
	query("XA END X'7832',X'',1")
	prepare(1, "x2")
	if p := position(); len(st.xaHeld) != 0 || st.xaOpen != nil || st.inTx || p.Emitted != nil || p.GTIDs != uuid+":1-4" {
		t.Fatalf("after the one-phase commit: held %d, open %v, position %+v", len(st.xaHeld), st.xaOpen, p)
	}

	// An XA ROLLBACK of a transaction the stream did not see prepared.
	gtid(5)
	query("XA ROLLBACK X'7833',X'',1")
	if p := position(); p.GTIDs != uuid+":1-5" {
		t.Fatalf("after the XA ROLLBACK: %+v", p)
	}
}

// TestXA_ServerRestartWhilePrepared restarts the server while an XA
// transaction is prepared and the source streams: the source reconnects,
// keeps the held changes, and emits them at the XA COMMIT written after
// the restart (in the next binlog file).
func TestXA_ServerRestartWhilePrepared(t *testing.T) {
	if testServer == nil {
		t.Skipf("no MariaDB server: %v", serverErr)
	}
	dir := filepath.Join(root, "xarestart")
	if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if srv != nil {
			srv.stop()
		}
	}()
	xaRunOn(t, srv.dsn(""), "CREATE DATABASE shop", "CREATE TABLE shop.t (id int PRIMARY KEY, v text)")
	s, err := tryOpen(t, srv.dsn(""), map[string]string{"tables": "shop.*", "snapshot.mode": "never"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	xaRunOn(t, srv.dsn("shop"), "XA START 'srv'", "INSERT INTO t VALUES (1, 'xa')", "XA END 'srv'", "XA PREPARE 'srv'")
	xaRunOn(t, srv.dsn("shop"), "INSERT INTO t VALUES (2, 'between')")
	if got := changeIDs(t, readTo(t, s, 2)); got != "c2" {
		t.Fatalf("before the restart: %q, want c2", got)
	}

	port := srv.port
	srv.stop()
	if srv, err = startServer(dir, true, fmt.Sprintf("--port=%d", port)); err != nil {
		t.Fatal(err)
	}
	xaRunOn(t, srv.dsn("shop"), "XA COMMIT 'srv'", "INSERT INTO t VALUES (3, 'after')")
	recs := readTo(t, s, 3)
	if got := changeIDs(t, recs); got != "c1 c3" {
		t.Fatalf("after the restart: %q, want c1 c3", got)
	}
	if p, _ := decodePosition(lastPosition(recs)); p.Emitted != nil || p.File == "" {
		t.Errorf("position after the XA COMMIT: %s", lastPosition(recs))
	}

	// Stopped with another prepared, the server restarted, the source
	// restarted from its stored position (in the binlog file before the
	// server's restart).
	xaRunOn(t, srv.dsn("shop"), "XA START 'srv2'", "UPDATE t SET v = 'xa2' WHERE id = 1", "XA END 'srv2'", "XA PREPARE 'srv2'")
	xaRunOn(t, srv.dsn("shop"), "INSERT INTO t VALUES (4, 'between')")
	recs = readTo(t, s, 4)
	s.Close(context.Background())
	if got := changeIDs(t, recs); got != "c4" {
		t.Fatalf("before the second restart: %q, want c4", got)
	}
	pos := lastPosition(recs)
	srv.stop()
	if srv, err = startServer(dir, true, fmt.Sprintf("--port=%d", port)); err != nil {
		t.Fatal(err)
	}
	xaRunOn(t, srv.dsn("shop"), "XA COMMIT 'srv2'", "INSERT INTO t VALUES (5, 'after')")
	s, err = tryOpen(t, srv.dsn(""), map[string]string{"tables": "shop.*", "snapshot.mode": "never"}, pos)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	if got := changeIDs(t, readTo(t, s, 5)); got != "u1 c5" {
		t.Fatalf("after the second restart, from %s: %q, want u1 c5", pos, got)
	}
}

// TestXA_PreparedBeforeStart documents what xa.start.wait=0 gives up: a
// transaction prepared before the position a source starts streaming from
// has no held changes at its XA COMMIT, which emits nothing (the source
// warns at Open and at the XA COMMIT). xastart_test.go has the wait.
func TestXA_PreparedBeforeStart(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
	prepareXA(t, d, "'early'", "INSERT INTO t VALUES (1, 'lost')")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "xa.start.wait": "0"}, nil)
	xaRun(t, d, "XA COMMIT 'early'", "INSERT INTO t VALUES (2, 'after')")
	if got := changeIDs(t, readTo(t, s, 2)); got != "c2" {
		t.Fatalf("changes %q, want c2", got)
	}
}

// TestXA_OtherTables: a prepared XA transaction that changes no captured
// table holds nothing and does not hold the position back.
func TestXA_OtherTables(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)", "CREATE TABLE other (id int PRIMARY KEY)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "tables": d.name + ".t"}, nil)
	prepareXA(t, d, "'o'", "INSERT INTO other VALUES (1)")
	d.exec(t, "INSERT INTO t VALUES (2)")
	recs := readTo(t, s, 2)
	if p, _ := decodePosition(lastPosition(recs)); p.Emitted != nil {
		t.Fatalf("position %s, want no emitted mark", lastPosition(recs))
	}
	xaRun(t, d, "XA COMMIT 'o'", "INSERT INTO t VALUES (3)")
	if got := changeIDs(t, append(recs, readTo(t, s, 3)...)); got != "c2 c3" {
		t.Fatalf("changes %q, want c2 c3", got)
	}
}

// TestXA_ReplayedSignals: a signal row written by a prepared XA
// transaction acts once, at the prepare: a restart that reads the prepare
// again (before the stored emitted mark) does not act on it again.
func TestXA_ReplayedSignals(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))", signalDDL, "INSERT INTO t VALUES (9, 'old')")
	values := map[string]string{"snapshot.mode": "never", "tables": d.name + ".t", "signal.data.collection": d.name + ".debezium_signal"}
	s := openSource(t, d, values, nil)
	prepareXA(t, d, "'sig'", "INSERT INTO t VALUES (1, 'xa')",
		`INSERT INTO debezium_signal VALUES ('s1', 'execute-snapshot', '{"data-collections":["`+d.name+`.t"],"type":"incremental"}')`)
	d.exec(t, "INSERT INTO t VALUES (2, 'between')")
	recs := readUntil(t, s, 30*time.Second, func(recs []connect.Record) bool {
		return incDone(t, recs) && strings.Contains(" "+changeIDs(t, recs)+" ", " c2 ")
	})
	s.Close(context.Background())
	pos := lastPosition(recs)
	if p, _ := decodePosition(pos); p.Emitted == nil {
		t.Fatalf("position while prepared: %s", pos)
	}

	s = openSource(t, d, values, pos)
	d.exec(t, "INSERT INTO t VALUES (3, 'after')")
	recs = readTo(t, s, 3)
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); {
		more, err := s.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, more...)
	}
	if got := changeIDs(t, recs); got != "c3" {
		t.Fatalf("after the restart: %q, want c3 (the snapshot signal of the prepared transaction acted again)", got)
	}
}

// TestXA_UnfinishedPrepareGroup: a prepare group that a new transaction
// follows without its XA_PREPARE event (a binlog cut short) holds nothing
// of the transactions after it.
func TestXA_UnfinishedPrepareGroup(t *testing.T) {
	s := &Source{srv: &server{flavor: flavorMySQL, gtidMode: true, serverID: 1}, log: slog.New(slog.DiscardHandler)}
	s.set.xaBufferBytes = 1 << 20
	s.plan.start = coords{"binlog.000001", 4}
	st := newStreamer(s, nil)
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	pos := uint32(100)
	send := func(tp replication.EventType, size uint32, e replication.Event) {
		t.Helper()
		pos += size
		h := &replication.EventHeader{EventType: tp, LogPos: pos, EventSize: size, ServerID: 1}
		if err := st.handle(t.Context(), &replication.BinlogEvent{Header: h, Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	send(replication.GTID_EVENT, 65, &replication.GTIDEvent{SID: sid, GNO: 1})
	send(replication.QUERY_EVENT, 80, &replication.QueryEvent{Query: []byte("XA START X'7831',X'',1")})
	if st.xaOpen == nil {
		t.Fatal("XA START opened no prepare group")
	}
	st.xaOpen.bytes, st.xaBytes = 100, 100 // as if it had rows
	send(replication.GTID_EVENT, 65, &replication.GTIDEvent{SID: sid, GNO: 2})
	if st.xaOpen != nil || st.xaBytes != 0 {
		t.Fatalf("after the next transaction's GTID event: open %+v, %d bytes held", st.xaOpen, st.xaBytes)
	}
}

// TestXA_RestartAcrossDomainsAndFiles restarts a source whose stored
// position resumes at an undecided prepare in an older binlog file than its
// emitted mark, with transactions of a second GTID domain (new since the
// prepare) in between: nothing emitted before is emitted again, and the
// prepared transaction comes once at its XA COMMIT; with GTID positions
// and with file/pos positions.
func TestXA_RestartAcrossDomainsAndFiles(t *testing.T) {
	for _, fileOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("fileOnly=%v", fileOnly), func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY, v varchar(20))")
			open := func(pos connect.Position) *Source {
				t.Helper()
				v := withTables(d, map[string]string{"snapshot.mode": "never", "dsn": d.dsn, "heartbeat.interval": "0"})
				s := Connector().NewSource().(*Source)
				s.idle, s.fileOnly = 100*time.Millisecond, fileOnly
				cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec(), Position: pos}
				if err := s.Open(t.Context(), cfg); err != nil {
					t.Fatalf("Open: %v", err)
				}
				return s
			}
			domain := func(id int, stmt string) {
				t.Helper()
				xaRun(t, d, fmt.Sprintf("SET SESSION gtid_domain_id = %d", id), stmt)
			}
			s := open(nil)
			prepareXA(t, d, "'dom'", "INSERT INTO t VALUES (1, 'xa')")
			domain(71, "INSERT INTO t VALUES (2, 'other domain')")
			d.exec(t, "INSERT INTO t VALUES (3, 'domain 0')")
			d.exec(t, "FLUSH BINARY LOGS")
			domain(71, "INSERT INTO t VALUES (4, 'next file')")
			recs := readTo(t, s, 4)
			s.Close(context.Background())
			if got := changeIDs(t, recs); got != "c2 c3 c4" {
				t.Fatalf("first run: %q", got)
			}
			pos := lastPosition(recs)
			if p, _ := decodePosition(pos); p.Emitted == nil || p.Emitted.File == p.File {
				t.Fatalf("position %s: want it to resume at the prepare, a file before its emitted mark", pos)
			}

			s = open(pos)
			domain(71, "INSERT INTO t VALUES (5, 'again')")
			recs = readTo(t, s, 5)
			s.Close(context.Background())
			if got := changeIDs(t, recs); got != "c5" {
				t.Fatalf("second run, from %s: %q, want c5", pos, got)
			}
			pos = lastPosition(recs)

			xaRun(t, d, "XA COMMIT 'dom'")
			d.exec(t, "INSERT INTO t VALUES (6, 'after')")
			s = open(pos)
			defer s.Close(context.Background())
			if got := changeIDs(t, readTo(t, s, 6)); got != "c1 c6" {
				t.Fatalf("third run, from %s: %q, want c1 c6", pos, got)
			}
		})
	}
}

// TestXA_DroppedReleased: a held transaction that is rolled back leaves
// nothing behind that keeps its changes in memory.
func TestXA_DroppedReleased(t *testing.T) {
	s := &Source{srv: &server{flavor: flavorMySQL, gtidMode: true, serverID: 1}, log: slog.New(slog.DiscardHandler)}
	s.set.xaBufferBytes = 1 << 20
	s.plan.start = coords{"binlog.000001", 4}
	st := newStreamer(s, nil)
	sid := []byte{0x3e, 0x11, 0xfa, 0x47, 0x71, 0xca, 0x11, 0xe1, 0x9e, 0x33, 0xc8, 0x0a, 0xa9, 0x42, 0x95, 0x62}
	pos := uint32(100)
	header := func(tp replication.EventType, size uint32) *replication.EventHeader {
		pos += size
		return &replication.EventHeader{EventType: tp, LogPos: pos, EventSize: size, ServerID: 1}
	}
	send := func(tp replication.EventType, size uint32, e replication.Event) {
		t.Helper()
		if err := st.handle(t.Context(), &replication.BinlogEvent{Header: header(tp, size), Event: e}); err != nil {
			t.Fatal(err)
		}
	}
	prepare := func(gno int64, gtrid string) {
		t.Helper()
		send(replication.GTID_EVENT, 65, &replication.GTIDEvent{SID: sid, GNO: gno})
		send(replication.QUERY_EVENT, 80, &replication.QueryEvent{Query: []byte("XA START X'" + strings.ToUpper(fmt.Sprintf("%x", gtrid)) + "',X'',1")})
		body := append([]byte{0, 1, 0, 0, 0, byte(len(gtrid)), 0, 0, 0, 0, 0, 0, 0}, gtrid...)
		raw := append(make([]byte, replication.EventHeaderSize), body...)
		if err := st.handleRaw(t.Context(), &replication.BinlogEvent{Header: header(replication.XA_PREPARE_LOG_EVENT, uint32(len(raw))), RawData: raw}); err != nil {
			t.Fatal(err)
		}
	}
	prepare(1, "a")
	prepare(2, "b")
	for _, x := range st.xaHeld {
		x.changes = []*change{{}} // as if it had rows
	}
	send(replication.GTID_EVENT, 65, &replication.GTIDEvent{SID: sid, GNO: 3})
	send(replication.QUERY_EVENT, 80, &replication.QueryEvent{Query: []byte("XA ROLLBACK X'61',X'',1")})
	send(replication.GTID_EVENT, 65, &replication.GTIDEvent{SID: sid, GNO: 4})
	send(replication.QUERY_EVENT, 80, &replication.QueryEvent{Query: []byte("XA ROLLBACK X'62',X'',1")})
	if len(st.xaHeld) != 0 {
		t.Fatalf("held after the rollbacks: %d", len(st.xaHeld))
	}
	for i, x := range st.xaHeld[:cap(st.xaHeld)] {
		if x != nil {
			t.Errorf("slot %d of the held list still refers to %s", i, x.xid)
		}
	}
}

// TestXA_EmittedMarkAhead: a stored position whose emitted mark is beyond
// the server's binlog (the binlog lost its tail in a crash, or was reset)
// is refused, as a position beyond it always was: transactions written
// since would be taken for ones emitted before and skipped.
func TestXA_EmittedMarkAhead(t *testing.T) {
	for _, fileOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("fileOnly=%v", fileOnly), func(t *testing.T) {
			d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
			open := func(pos connect.Position) (*Source, error) {
				t.Helper()
				v := withTables(d, map[string]string{"snapshot.mode": "never", "dsn": d.dsn, "heartbeat.interval": "0"})
				s := Connector().NewSource().(*Source)
				s.idle, s.fileOnly = 100*time.Millisecond, fileOnly
				cfg := connect.Config{Pipeline: "p", Connector: "src", Values: v, Spec: spec(), Position: pos}
				return s, s.Open(t.Context(), cfg)
			}
			s, err := open(nil)
			if err != nil {
				t.Fatal(err)
			}
			d.exec(t, "INSERT INTO t VALUES (1)")
			recs := readTo(t, s, 1)
			s.Close(context.Background())
			p, _ := decodePosition(lastPosition(recs))
			mark := emittedMark{File: p.File, Pos: p.Pos + 1<<30}
			if p.GTIDs != "" {
				g, err := parseGTIDSet(flavorMariaDB, p.GTIDs)
				if err != nil {
					t.Fatal(err)
				}
				for dom, id := range g.maria {
					id.SequenceNumber += 1000
					g.maria[dom] = id
				}
				mark = emittedMark{File: p.File, Pos: p.Pos, GTIDs: g.String()}
			}
			p.Emitted = &mark
			s, err = open(p.encode())
			if err == nil {
				defer s.Close(context.Background())
				d.exec(t, "INSERT INTO t VALUES (2)")
				recs, _ := s.Read(t.Context())
				t.Fatalf("opened from %s; then read %q", p.encode(), changeIDs(t, recs))
			}
			if !connect.IsPermanent(err) || !strings.Contains(err.Error(), "emitted") {
				t.Fatalf("error %v (permanent %v): want a permanent one about the emitted mark", err, connect.IsPermanent(err))
			}
		})
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
)

const (
	myTopic      = "my.soak.t"
	myPartitions = 3
	myKeys       = 64
	myGroup      = "my-file"
	mySource     = "soakmy"
)

// Change states: a change is allowed in the sink once its transaction
// is committing (the COMMIT or XA COMMIT was sent) or committed.
const (
	stOpen        = iota // statement run, transaction not ended
	stPrepared           // XA PREPARE done, undecided
	stRollingBack        // XA ROLLBACK (or ROLLBACK) sent
	stRolledBack
	stCommitting
	stCommitted
)

var stName = [...]string{"open", "prepared (undecided)", "rolling back", "rolled back", "committing", "committed"}

// myChange is one row change the writer made. Its id is the row version
// it wrote (insert, update) or minus the version it removed (delete):
// versions are unique, so ids are.
type myChange struct {
	key   int
	op    byte
	state uint8
	idx   int // its place among the key's committed changes (-1 until committing)
	xid   string
}

// myXA is a prepared XA transaction whose decision the writer delays.
type myXA struct {
	xid      string
	ids      []int64
	keys     []int
	commit   bool
	notUntil time.Time // decide no earlier
	kills    int64     // decide only after more worker kills than this
}

// myScen captures a table of a throwaway MariaDB server (binlog in ROW
// format, MariaDB GTIDs) with a mysql source into a topic read by a file
// sink, while one client keeps committing inserts, updates and deletes of
// 64 keys (some transactions of several rows) and XA transactions: XA
// START … END, then XA PREPARE and XA COMMIT or XA ROLLBACK, now at once,
// now decided later from another session after the prepare's session
// left, often after a worker kill; some XA COMMIT … ONE PHASE. Every row
// version is unique. Invariant (m): every committed change is in the sink
// file after the final clean run; per key, the first appearances of the
// changes follow the commit order (a change may come again after a kill:
// at least once); no change of a rolled-back or still undecided
// transaction is ever in the file.
type myScen struct {
	s   *soak
	rng *rand.Rand
	srv *myServer
	out string

	cancel context.CancelFunc
	done   chan struct{}
	kills  atomic.Int64

	mu       sync.Mutex
	changes  map[int64]*myChange
	perKey   [myKeys + 1][]int64 // committed change ids in commit order
	model    [myKeys + 1]int64   // the rows' versions by the writer's count, when it stopped
	stats    struct{ txns, xaCommit, xaRollback, xaDelayed, xaOnePhase, xaAfterKill int }
	writeErr error

	// what the checks have read of the file
	filePos  int64
	fileN    int
	dups     int
	seen     map[int64]bool
	firstCnt [myKeys + 1]int
}

func newMysql(s *soak) scenario {
	p := &myScen{s: s, rng: rand.New(rand.NewPCG(s.seed, 31)), changes: map[int64]*myChange{}, seen: map[int64]bool{},
		out: filepath.Join(s.dir, "out", "my.jsonl")}
	srv, err := startMy(filepath.Join(s.o.work, s.name+"-mariadb"))
	if errors.Is(err, errNoMariaDB) {
		s.sum.skip = err.Error()
		return p
	}
	if err == nil {
		p.srv = srv
		err = srv.exec("CREATE DATABASE soak",
			"CREATE TABLE soak.t (k INT PRIMARY KEY, ver BIGINT NOT NULL, pad VARCHAR(64) NOT NULL)")
	}
	if err != nil {
		s.sum.err = fmt.Errorf("mysql: %w", err)
	}
	return p
}

func (p *myScen) pipeline() string {
	dsn := ""
	if p.srv != nil {
		dsn = p.srv.dsn("")
	}
	return fmt.Sprintf(`version: 1
name: soak-mysql
log: {backend: embedded, dir: %s}
topics:
  - {name: %s, partitions: %d, config: {segment.bytes: 262144}}
sources:
  - name: %s
    connector: mysql
    topic: "my.{database}.{table}"
    config:
      dsn: %q
      tables: [soak.t]
      heartbeat.interval: 1s
sinks:
  - name: %s
    connector: file
    topics: [%s]
    group: %s
    config: {path: %s, include.metadata: true}
`, p.s.dataDir, myTopic, myPartitions, mySource, dsn, myGroup, myTopic, myGroup, p.out)
}

// startLoad starts the writer once, when the source has stored its first
// position (the snapshot of the empty table is done: a change before it
// would be read by a snapshot taken again, as a row, not as a change).
func (p *myScen) startLoad(ctx context.Context, round int) {
	if p.cancel != nil || p.srv == nil {
		return
	}
	deadline := time.Now().Add(60 * time.Second)
	for !p.hasOffset() {
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.s.violate(round, "(d) the mysql source stored no position within 60 s of a start")
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p.cancel = cancel
	p.done = make(chan struct{})
	go func() {
		defer close(p.done)
		if err := p.write(wctx); err != nil {
			p.mu.Lock()
			p.writeErr = err
			p.mu.Unlock()
			fmt.Println("  mysql writer stopped:", err)
		}
	}()
}

func (p *myScen) hasOffset() bool {
	resp, err := httpc.Get("http://" + p.s.restAddr + "/connectors/" + mySource + "/offsets")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var o struct {
		Offsets []json.RawMessage `json:"offsets"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&o) == nil && len(o.Offsets) > 0
}

// stopLoad counts the kill (the writer runs on: the database does not die
// with the worker).
func (p *myScen) stopLoad()                    { p.kills.Add(1) }
func (p *myScen) between(context.Context, int) {}

// write commits transactions until ctx ends, then decides the pending XA
// transactions. An error stops it: the outcome of a failed commit is
// unknown, so the model would be wrong.
func (p *myScen) write(ctx context.Context) error {
	db, err := sql.Open("mysql", p.srv.dsn("soak"))
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxIdleConns(0) // a closed XA session leaves its prepared transaction detached
	conn, err := db.Conn(context.Background())
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	var (
		cur     [myKeys + 1]int64 // row version per key, 0: no row
		locked  [myKeys + 1]bool  // a pending XA holds the key
		pending []*myXA
		ver     int64
		xaSeq   int
	)
	bg := context.Background()
	// plan makes n changes of free keys and runs them on c.
	plan := func(c *sql.Conn, n int, xid string) ([]int64, []int, error) {
		var ids []int64
		var keys []int
		next := cur
		for tries := 0; len(ids) < n && tries < 100; tries++ {
			k := 1 + p.rng.IntN(myKeys)
			if locked[k] {
				continue
			}
			ver++
			var q string
			var args []any
			var id int64
			op := byte('u')
			switch {
			case next[k] == 0:
				op, id, q, args = 'c', ver, "INSERT INTO t (k, ver, pad) VALUES (?, ?, ?)", []any{k, ver, fmt.Sprintf("v%d", ver)}
				next[k] = ver
			case p.rng.IntN(10) < 3:
				op, id, q, args = 'd', -next[k], "DELETE FROM t WHERE k = ?", []any{k}
				next[k] = 0
			default:
				id, q, args = ver, "UPDATE t SET ver = ?, pad = ? WHERE k = ?", []any{ver, fmt.Sprintf("v%d", ver), k}
				next[k] = ver
			}
			p.mu.Lock()
			p.changes[id] = &myChange{key: k, op: op, state: stOpen, idx: -1, xid: xid}
			p.mu.Unlock()
			ids = append(ids, id)
			keys = append(keys, k)
			if _, err := c.ExecContext(bg, q, args...); err != nil {
				return ids, keys, fmt.Errorf("%s: %w", q, err)
			}
		}
		return ids, keys, nil
	}
	setState := func(ids []int64, st uint8) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, id := range ids {
			c := p.changes[id]
			c.state = st
			if st == stCommitting {
				c.idx = len(p.perKey[c.key])
				p.perKey[c.key] = append(p.perKey[c.key], id)
			}
		}
	}
	// apply moves the model past committed changes.
	apply := func(ids []int64) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, id := range ids {
			c := p.changes[id]
			if c.op == 'd' {
				cur[c.key] = 0
			} else {
				cur[c.key] = id
			}
		}
	}
	commit := func(ids []int64, stmt func() error) error {
		setState(ids, stCommitting)
		if err := stmt(); err != nil {
			return err
		}
		setState(ids, stCommitted)
		apply(ids)
		return nil
	}
	rollback := func(ids []int64, stmt func() error) error {
		setState(ids, stRollingBack)
		if err := stmt(); err != nil {
			return err
		}
		setState(ids, stRolledBack)
		return nil
	}
	decide := func(x *myXA) error {
		q := "XA ROLLBACK '" + x.xid + "'"
		if x.commit {
			q = "XA COMMIT '" + x.xid + "'"
		}
		// The prepare's session left just before: its transaction may
		// not be detached yet (XAER_NOTA).
		run := func() error {
			for try := 0; ; try++ {
				_, err := conn.ExecContext(bg, q)
				var me *mysql.MySQLError
				if err != nil && errors.As(err, &me) && me.Number == 1397 && try < 50 {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				if err != nil {
					return fmt.Errorf("%s: %w", q, err)
				}
				return nil
			}
		}
		var err error
		if x.commit {
			err = commit(x.ids, run)
		} else {
			err = rollback(x.ids, run)
		}
		for _, k := range x.keys {
			locked[k] = false
		}
		p.mu.Lock()
		if x.commit {
			p.stats.xaCommit++
		} else {
			p.stats.xaRollback++
		}
		p.stats.xaDelayed++
		if x.kills >= 0 && p.kills.Load() > x.kills {
			p.stats.xaAfterKill++
		}
		p.mu.Unlock()
		return err
	}
	defer func() {
		for _, x := range pending {
			if err := decide(x); err != nil {
				fmt.Println("  mysql writer: deciding at the end:", err)
			}
		}
		p.mu.Lock()
		p.model = cur
		p.mu.Unlock()
	}()
	for ctx.Err() == nil {
		// Decide the pending XA transactions that are due.
		var keep []*myXA
		for _, x := range pending {
			if time.Now().After(x.notUntil) && p.kills.Load() > x.kills {
				if err := decide(x); err != nil {
					pending = keep
					return err
				}
				continue
			}
			keep = append(keep, x)
		}
		pending = keep
		n := 1
		if p.rng.IntN(4) == 0 {
			n = 2 + p.rng.IntN(6)
		}
		if p.rng.IntN(6) == 0 && len(pending) < 10 {
			xaSeq++
			xid := fmt.Sprintf("soak-%d", xaSeq)
			xc, err := db.Conn(bg)
			if err != nil {
				return fmt.Errorf("XA connection: %w", err)
			}
			if _, err := xc.ExecContext(bg, "XA START '"+xid+"'"); err != nil {
				xc.Close()
				return fmt.Errorf("XA START: %w", err)
			}
			ids, keys, err := plan(xc, n, xid)
			if err == nil {
				_, err = xc.ExecContext(bg, "XA END '"+xid+"'")
			}
			if err != nil {
				xc.Close()
				return fmt.Errorf("XA %s: %w", xid, err)
			}
			r := p.rng.IntN(10)
			switch {
			case r == 0: // one phase
				err = commit(ids, func() error { _, err := xc.ExecContext(bg, "XA COMMIT '"+xid+"' ONE PHASE"); return err })
				p.mu.Lock()
				p.stats.xaOnePhase++
				p.mu.Unlock()
			default:
				if _, err = xc.ExecContext(bg, "XA PREPARE '"+xid+"'"); err != nil {
					break
				}
				setState(ids, stPrepared)
				if r < 5 { // decided at once, in its session
					if p.rng.IntN(5) < 3 {
						err = commit(ids, func() error { _, err := xc.ExecContext(bg, "XA COMMIT '"+xid+"'"); return err })
						p.mu.Lock()
						p.stats.xaCommit++
						p.mu.Unlock()
					} else {
						err = rollback(ids, func() error { _, err := xc.ExecContext(bg, "XA ROLLBACK '"+xid+"'"); return err })
						p.mu.Lock()
						p.stats.xaRollback++
						p.mu.Unlock()
					}
					break
				}
				// Decided later, from the main session, after the next
				// worker kill (r < 9) or after a delay.
				x := &myXA{xid: xid, ids: ids, keys: keys, commit: p.rng.IntN(2) == 0,
					notUntil: time.Now().Add(time.Duration(200+p.rng.IntN(3000)) * time.Millisecond), kills: p.kills.Load()}
				if r == 9 {
					x.kills = -1
				}
				for _, k := range keys {
					locked[k] = true
				}
				pending = append(pending, x)
			}
			xc.Close() // a prepared transaction stays, detached
			if err != nil {
				return fmt.Errorf("XA %s: %w", xid, err)
			}
		} else {
			if _, err := conn.ExecContext(bg, "BEGIN"); err != nil {
				return fmt.Errorf("BEGIN: %w", err)
			}
			ids, _, err := plan(conn, n, "")
			if err != nil {
				return err
			}
			if err := commit(ids, func() error { _, err := conn.ExecContext(bg, "COMMIT"); return err }); err != nil {
				return fmt.Errorf("COMMIT: %w", err)
			}
		}
		p.mu.Lock()
		p.stats.txns++
		p.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(1+p.rng.IntN(4)) * time.Millisecond):
		}
	}
	return nil
}

// finish stops the writer (which decides the pending XA transactions)
// and waits until every committed change is in the file (or 90 s pass).
func (p *myScen) finish(ctx context.Context) {
	p.stopWriter()
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		p.readFile(0)
		if len(p.missing()) == 0 {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	fmt.Printf("    mysql: %d committed changes are not in the file after 90 s\n", len(p.missing()))
}

func (p *myScen) stopWriter() {
	if p.cancel != nil {
		p.cancel()
		<-p.done
	}
}

// missing returns the committed changes not yet in the file.
func (p *myScen) missing() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []int64
	for id, c := range p.changes {
		if c.state == stCommitted && !p.seen[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func (p *myScen) check(ctx context.Context, round int) int {
	if p.srv == nil {
		return 0
	}
	p.readFile(round)
	miss := p.missing()
	p.mu.Lock()
	st, werr, n := p.stats, p.writeErr, len(p.changes)
	p.mu.Unlock()
	if werr != nil {
		// The soak's own failure (its model stops there), not the pipeline's.
		p.s.mu.Lock()
		if p.s.sum.err == nil {
			p.s.sum.err = fmt.Errorf("mysql: the writer stopped: %w", werr)
		}
		p.s.mu.Unlock()
	}
	if round == 0 && werr == nil {
		p.checkTable(round)
	}
	if round == 0 && len(miss) > 0 {
		slices.Sort(miss)
		var ex []string
		for _, id := range miss[:min(10, len(miss))] {
			c := p.changes[id]
			ex = append(ex, fmt.Sprintf("%c key %d id %d (xid %q)", c.op, c.key, id, c.xid))
		}
		p.s.violate(round, "(m) %d committed changes are not in %s after the final clean run, e.g. %s", len(miss), p.out, strings.Join(ex, ", "))
	}
	fmt.Printf("    mysql: %d transactions (XA: %d committed, %d rolled back, %d one-phase, %d decided later, %d of them after a kill), %d changes made, file %d lines (%d repeats), %d committed changes not in the file yet\n",
		st.txns, st.xaCommit, st.xaRollback, st.xaOnePhase, st.xaDelayed, st.xaAfterKill, n, p.fileN, p.dups, len(miss))
	return p.fileN
}

// checkTable compares the table with the writer's model, a check of the
// soak itself (an XA ROLLBACK that did not undo, a lost commit).
func (p *myScen) checkTable(round int) {
	db, err := sql.Open("mysql", p.srv.dsn("soak"))
	if err != nil {
		p.s.violate(round, "(m) open the database: %v", err)
		return
	}
	defer db.Close()
	rows, err := db.Query("SELECT k, ver FROM t")
	if err != nil {
		p.s.violate(round, "(m) read the table: %v", err)
		return
	}
	defer rows.Close()
	var got [myKeys + 1]int64
	for rows.Next() {
		var k int
		var v int64
		if err := rows.Scan(&k, &v); err != nil || k < 1 || k > myKeys {
			p.s.violate(round, "(m) read the table: key %d: %v", k, err)
			return
		}
		got[k] = v
	}
	if err := rows.Err(); err != nil {
		p.s.violate(round, "(m) read the table: %v", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := 1; k <= myKeys; k++ {
		if got[k] != p.model[k] {
			p.s.violate(round, "(m) the soak's model is wrong: key %d has version %d in the table, %d in the model", k, got[k], p.model[k])
		}
	}
}

// readFile checks the lines the file gained since the last call.
func (p *myScen) readFile(round int) {
	f, err := os.Open(p.out)
	if err != nil {
		if !os.IsNotExist(err) {
			p.s.violate(round, "(m) open %s: %v", p.out, err)
		}
		return
	}
	defer f.Close()
	if _, err := f.Seek(p.filePos, io.SeekStart); err != nil {
		p.s.violate(round, "(m) seek %s: %v", p.out, err)
		return
	}
	r := bufio.NewReaderSize(f, 1<<20)
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return // EOF, or a torn last line: not acknowledged, cut at the next open
		}
		pos := p.filePos
		p.filePos += int64(len(line))
		p.fileN++
		type row struct {
			K   int   `json:"k"`
			Ver int64 `json:"ver"`
		}
		var e struct {
			Topic     string `json:"topic"`
			Partition int    `json:"partition"`
			Offset    int64  `json:"offset"`
			Value     struct {
				Op     string `json:"op"`
				Before *row   `json:"before"`
				After  *row   `json:"after"`
			} `json:"value"`
		}
		if err := json.Unmarshal(bytes.TrimSpace(line), &e); err != nil || e.Topic != myTopic {
			p.s.violate(round, "(m) %s byte %d: not a line of the sink: %.200q", p.out, pos, line)
			continue
		}
		var id int64
		var k int
		switch {
		case (e.Value.Op == "c" || e.Value.Op == "u") && e.Value.After != nil:
			id, k = e.Value.After.Ver, e.Value.After.K
		case e.Value.Op == "d" && e.Value.Before != nil:
			id, k = -e.Value.Before.Ver, e.Value.Before.K
		default:
			p.s.violate(round, "(m) %s byte %d: not a change event of the soak table: %.300q", p.out, pos, line)
			continue
		}
		c := p.changes[id]
		where := fmt.Sprintf("%s byte %d (%s [%d] offset %d)", p.out, pos, e.Topic, e.Partition, e.Offset)
		switch {
		case c == nil:
			p.s.violate(round, "(m) %s: %s of key %d version %d, a change the writer never made", where, e.Value.Op, k, id)
			continue
		case c.key != k || string(c.op) != e.Value.Op:
			p.s.violate(round, "(m) %s: %s of key %d id %d, but the writer made %c of key %d", where, e.Value.Op, k, id, c.op, c.key)
			continue
		case c.state < stCommitting:
			p.s.violate(round, "(m) %s: %s of key %d id %d (xid %q) is in the sink while its transaction is %s", where, e.Value.Op, k, id, c.xid, stName[c.state])
			continue
		}
		if p.seen[id] {
			p.dups++
			continue
		}
		p.seen[id] = true
		if c.idx != p.firstCnt[k] {
			exp := p.perKey[k][min(p.firstCnt[k], len(p.perKey[k])-1)]
			p.s.violate(round, "(m) %s: key %d's change %d (its commit #%d, xid %q) comes first after %d changes of the key: expected change %d (commit #%d) first",
				where, k, id, c.idx, c.xid, p.firstCnt[k], exp, p.firstCnt[k])
		}
		p.firstCnt[k] = max(p.firstCnt[k], c.idx+1)
	}
}

func (p *myScen) close() {
	p.stopWriter()
	if p.srv != nil {
		p.srv.stop()
	}
}

// errNoMariaDB says the MariaDB binaries are not installed.
var errNoMariaDB = errors.New("mariadbd or mariadb-install-db not found (install the mariadb-server package)")

// myServer is a throwaway MariaDB server with the binary log in ROW
// format, started as connectors/mysql's tests start theirs.
type myServer struct {
	port int
	cmd  *exec.Cmd
	done chan struct{}
}

func findMyBin(names ...string) (string, error) {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
		for _, dir := range []string{"/usr/sbin", "/usr/bin", "/usr/local/bin", "/usr/local/sbin"} {
			p := filepath.Join(dir, n)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
		}
	}
	return "", errNoMariaDB
}

func startMy(root string) (*myServer, error) {
	install, err := findMyBin("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	bin, err := findMyBin("mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "data")
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	if out, err := exec.Command(install, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %w\n%s", install, err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	base := filepath.Join(root, "mariadb")
	args = []string{"--no-defaults", "--datadir=" + dir, "--socket=" + base + ".sock",
		"--port=" + fmt.Sprint(port), "--bind-address=127.0.0.1", "--pid-file=" + base + ".pid",
		"--log-error=" + base + ".err", "--skip-name-resolve", "--server-id=1",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0", "--performance-schema=OFF", "--max-connections=200", "--innodb-lock-wait-timeout=10",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
		"--log-bin=" + base + "-binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL",
		"--gtid-strict-mode=ON"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	s := &myServer{port: port, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := s.exec("SELECT 1")
		if err == nil {
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(base + ".err")
			return nil, fmt.Errorf("mariadbd exited: %s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("mariadbd did not accept connections within 60 s: %w", err)
		}
	}
}

func (s *myServer) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s?timeout=2s", s.port, db)
}

func (s *myServer) exec(stmts ...string) error {
	db, err := sql.Open("mysql", s.dsn(""))
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

func (s *myServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

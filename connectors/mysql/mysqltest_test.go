package mysql

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"
)

// The tests run against real MariaDB servers started by the tests
// themselves (no mocks): TestMain runs mariadb-install-db once into a
// temporary directory and starts one server with the binary log in ROW
// format, FULL row images and FULL row metadata for the whole package;
// every test gets a database of its own (newDB). Tests that need a
// differently configured server (no binary log) start a second one from a
// copy of the freshly installed directory (startServer).

var update = flag.Bool("update", false, "rewrite generated docs")

// testServer is the package's shared test server; nil when no MariaDB
// binaries are installed (the tests that need it are skipped then).
var testServer *dbServer

// serverErr says why there is no server.
var serverErr error

// pristine is a copy of the data directory right after installation.
var pristine string

// root is the temporary directory of the test servers.
var root string

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	}
	code := runTests(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

func runTests(m *testing.M) int {
	if os.Getenv(E2EChildEnv) != "" {
		return m.Run() // a worker process of the end-to-end test: it needs no server of its own
	}
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		serverErr = errors.New("a fuzzing worker process starts no server")
		return m.Run() // go test -fuzz's worker: it runs the fuzz target only
	}
	var err error
	root, err = os.MkdirTemp("", "tributary-mysqltest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	testServer, serverErr = installAndStart(root)
	if testServer != nil {
		defer testServer.stop()
	}
	return m.Run()
}

// dbServer is one running mariadbd process.
type dbServer struct {
	dir  string // data directory
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

func findBin(names ...string) (string, error) {
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
	return "", fmt.Errorf("none of %s found", strings.Join(names, ", "))
}

// installAndStart installs a data directory into root/data, keeps a
// pristine copy and starts the shared server.
func installAndStart(root string) (*dbServer, error) {
	install, err := findBin("mariadb-install-db", "mysql_install_db")
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "data")
	args := []string{"--no-defaults", "--datadir=" + dir, "--auth-root-authentication-method=normal", "--skip-test-db"}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	cmd := exec.Command(install, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s", install, err, out)
	}
	pristine = filepath.Join(root, "pristine")
	if out, err := exec.Command("cp", "-a", dir, pristine).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy data dir: %v\n%s", err, out)
	}
	return startServer(dir, true)
}

// startServer starts mariadbd on dir, with the binary log (ROW, FULL row
// image and metadata) when logBin and the extra arguments (a --port among
// them replaces the free port it picks), and waits until it accepts
// connections.
func startServer(dir string, logBin bool, extra ...string) (*dbServer, error) {
	bin, err := findBin("mariadbd", "mysqld")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	for _, a := range extra {
		if p, ok := strings.CutPrefix(a, "--port="); ok {
			if port, err = strconv.Atoi(p); err != nil {
				return nil, fmt.Errorf("extra argument %s: %w", a, err)
			}
		}
	}
	base := filepath.Dir(dir) + "/" + filepath.Base(dir)
	args := []string{"--no-defaults", "--datadir=" + dir, "--socket=" + base + ".sock",
		"--port=" + fmt.Sprint(port), "--bind-address=127.0.0.1", "--pid-file=" + base + ".pid",
		"--log-error=" + base + ".err", "--skip-name-resolve", "--server-id=1",
		"--innodb-buffer-pool-size=32M", "--innodb-log-file-size=16M", "--innodb-flush-log-at-trx-commit=2",
		"--sync-binlog=0", "--performance-schema=OFF", "--max-connections=200",
		"--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"}
	if logBin {
		args = append(args, "--log-bin="+base+"-binlog", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL")
	}
	if os.Geteuid() == 0 {
		args = append(args, "--user=root")
	}
	args = append(args, extra...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start mariadbd: %w", err)
	}
	s := &dbServer{dir: dir, port: port, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := sql.Open("mysql", s.dsn(""))
		if err == nil {
			err = db.Ping()
			db.Close()
		}
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
			return nil, fmt.Errorf("mariadbd did not accept connections within 60s: %v", err)
		}
	}
}

// stop shuts the testServer down and waits for it.
func (s *dbServer) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// dsn returns a go-sql-driver DSN for root and db.
func (s *dbServer) dsn(db string) string {
	return fmt.Sprintf("root@tcp(127.0.0.1:%d)/%s", s.port, db)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var dbSeq atomic.Int64

// testDB is one test's database on the shared testServer.
type testDB struct {
	name string
	dsn  string  // root, without a database
	db   *sql.DB // connected to the database as root
}

// newDB creates a database for the test, runs the setup SQL in it and
// drops it when the test ends.
func newDB(t *testing.T, setup ...string) *testDB {
	t.Helper()
	if testServer == nil {
		t.Skipf("no MariaDB server for the tests: %v", serverErr)
	}
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	admin, err := sql.Open("mysql", testServer.dsn(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE DATABASE " + quoteIdent(name)); err != nil {
		t.Fatal(err)
	}
	cfg, _ := mysql.ParseDSN(testServer.dsn(name))
	cfg.MultiStatements = true
	d := &testDB{name: name, dsn: testServer.dsn("")}
	if d.db, err = sql.Open("mysql", cfg.FormatDSN()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.db.Close()
		admin, err := sql.Open("mysql", testServer.dsn(""))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close()
		rollBackLeftXA(t, admin)
		if _, err := admin.Exec("DROP DATABASE IF EXISTS " + quoteIdent(name)); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	for _, q := range setup {
		d.exec(t, q)
	}
	return d
}

// rollBackLeftXA rolls back the XA transactions a test left prepared, and
// fails the test naming them. The tests share one server and run one at a
// time, so whatever is prepared when a test ends is its own; left there,
// it would hold its locks and make every later source start wait for it
// (xa.start.wait).
func rollBackLeftXA(t *testing.T, admin *sql.DB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := preparedXA(admin)
		if err != nil {
			t.Errorf("XA RECOVER: %v", err)
			return
		}
		if len(left) == 0 {
			return
		}
		var failed []string
		for _, xid := range left {
			if _, err := admin.Exec("XA ROLLBACK " + xid); err != nil {
				failed = append(failed, fmt.Sprintf("%s: %v", xid, err))
			}
		}
		if len(failed) == 0 {
			t.Errorf("the test left XA transactions prepared (rolled back now): %s", strings.Join(left, " "))
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("the test left XA transactions prepared and they cannot be rolled back: %s", strings.Join(failed, "; "))
			return
		}
		time.Sleep(50 * time.Millisecond) // its session may still be ending
	}
}

// preparedXA lists the server's prepared XA transactions as XA ROLLBACK
// takes them.
func preparedXA(db *sql.DB) ([]string, error) {
	rows, err := db.Query("XA RECOVER FORMAT='SQL'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var xids []string
	for rows.Next() {
		var format, gtridLen, bqualLen int64
		var data string
		if err := rows.Scan(&format, &gtridLen, &bqualLen, &data); err != nil {
			return nil, err
		}
		xids = append(xids, data)
	}
	return xids, rows.Err()
}

// exec runs SQL on the test database and fails the test on error.
func (d *testDB) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if _, err := d.db.ExecContext(context.Background(), q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// queryString runs a query returning one value.
func (d *testDB) queryString(t *testing.T, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := d.db.QueryRowContext(context.Background(), q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

func TestServer_Starts(t *testing.T) {
	d := newDB(t)
	if got := d.queryString(t, "SELECT @@binlog_format"); got != "ROW" {
		t.Fatalf("binlog_format = %q, want ROW", got)
	}
	if got := d.queryString(t, "SELECT @@binlog_row_metadata"); got != "FULL" {
		t.Fatalf("binlog_row_metadata = %q, want FULL", got)
	}
}

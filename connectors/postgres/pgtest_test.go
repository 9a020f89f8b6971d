package postgres

import (
	"context"
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

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/internal/pgtest"
)

// The tests run against real PostgreSQL servers started by the tests
// themselves (no mocks): TestMain runs initdb once into a temporary
// directory and starts one server with wal_level=logical for the whole
// package; every test gets a database of its own (newDB). Tests that need a
// differently configured server (wal_level=replica) start a second one
// from a copy of the freshly initialised directory.

var update = flag.Bool("update", false, "rewrite generated docs")

// server is the package's shared test server; nil when no PostgreSQL
// binaries are installed (the tests that need it are skipped then).
var server *pgServer

// serverErr says why there is no server.
var serverErr error

// pristine is a copy of the data directory right after initdb, for tests
// that start a server of their own.
var pristine string

func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
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
	// go test -fuzz's worker runs the fuzz target only. A server started
	// here would inherit the worker's fuzzing pipes, outlive a worker that
	// is killed and hang the coordinator, which waits for them to close.
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		serverErr = errors.New("a fuzzing worker process starts no server")
		return m.Run()
	}
	root, err := os.MkdirTemp("", "tributary-pgtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(root)
	server, serverErr = startCluster(root)
	if server != nil {
		defer server.stop()
	}
	return m.Run()
}

// pgServer is one running postgres process.
type pgServer struct {
	dir  string // data directory
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startCluster runs initdb into root/data, keeps a pristine copy and starts
// a server with wal_level=logical.
func startCluster(root string) (*pgServer, error) {
	initdb, err := pgtest.Bin("initdb")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(root, 0o755); err != nil {
		return nil, err
	}
	if err := pgtest.ChownPostgres(root); err != nil {
		return nil, err
	}
	dir := filepath.Join(root, "data")
	cmd := exec.Command(initdb, "-D", dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err := pgtest.AsPostgres(cmd); err != nil {
		return nil, err
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("initdb: %v\n%s", err, out)
	}
	pristine = filepath.Join(root, "pristine")
	cp := exec.Command("cp", "-a", dir, pristine)
	if out, err := cp.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("copy data dir: %v\n%s", err, out)
	}
	return startServer(dir, "logical")
}

// startServer starts postgres on dir with the given wal_level and waits
// until it accepts connections.
func startServer(dir, walLevel string) (*pgServer, error) {
	bin, err := pgtest.Bin("postgres")
	if err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "-D", dir, "-p", strconv.Itoa(port),
		"-c", "wal_level="+walLevel,
		"-c", "max_wal_senders=20", "-c", "max_replication_slots=20",
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "max_connections=100",
		"-c", "wal_sender_timeout=60s", "-c", "logging_collector=off")
	if err := pgtest.AsPostgres(cmd); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(filepath.Dir(dir), filepath.Base(dir)+".log"))
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start postgres: %w", err)
	}
	s := &pgServer{dir: dir, port: port, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(s.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return s, nil
		}
		select {
		case <-s.done:
			log, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("postgres exited: %s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("postgres did not accept connections within 60s: %v", err)
		}
	}
}

// stop shuts the server down (fast mode) and waits for it.
func (s *pgServer) stop() {
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// dsn returns a connection string for the postgres superuser and db.
func (s *pgServer) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
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

// testDB is one test's database on the shared server.
type testDB struct {
	name string
	dsn  string
	conn *pgx.Conn // a superuser connection to the database
}

// newDB creates a database for the test, runs the setup SQL in it and
// drops it (with its replication slots) when the test ends.
func newDB(t *testing.T, setup ...string) *testDB {
	t.Helper()
	return newDBWith(t, "", setup...)
}

// newDBWith is newDB with options of CREATE DATABASE (ENCODING …).
func newDBWith(t *testing.T, options string, setup ...string) *testDB {
	t.Helper()
	if server == nil {
		t.Skipf("no PostgreSQL server for the tests: %v", serverErr)
	}
	name := fmt.Sprintf("t%d_%s", dbSeq.Add(1), strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name())))
	if len(name) > 60 {
		name = name[:60]
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" "+options); err != nil {
		t.Fatal(err)
	}
	db := &testDB{name: name, dsn: server.dsn(name)}
	if db.conn, err = pgx.Connect(ctx, db.dsn); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		db.conn.Close(ctx)
		admin, err := pgx.Connect(ctx, server.dsn("postgres"))
		if err != nil {
			t.Error(err)
			return
		}
		defer admin.Close(ctx)
		// A walsender may take a moment to let go of its slot.
		var err2 error
		for i := 0; i < 100; i++ {
			admin.Exec(ctx, "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL", name)
			admin.Exec(ctx, "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1 AND NOT active", name)
			if _, err2 = admin.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err2 == nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Errorf("drop database %s: %v", name, err2)
	})
	for _, q := range setup {
		db.exec(t, q)
	}
	return db
}

// exec runs SQL statements on the test database and fails the test on error.
func (db *testDB) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := db.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// queryLSN runs a query returning one pg_lsn value.
func (db *testDB) queryString(t *testing.T, sql string, args ...any) string {
	t.Helper()
	var s *string
	if err := db.conn.QueryRow(context.Background(), sql, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if s == nil {
		return ""
	}
	return *s
}

func TestServer_Starts(t *testing.T) {
	db := newDB(t)
	if got := db.queryString(t, "SHOW wal_level"); got != "logical" {
		t.Fatalf("wal_level = %q, want logical", got)
	}
}

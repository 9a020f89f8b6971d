package iceberg

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgServer is a throwaway PostgreSQL server for the SQL catalog tests,
// started by the test itself (initdb into a temporary directory). It can
// be stopped and started again on the same directory and port, to stand
// for a catalog that goes down and comes back.
type pgServer struct {
	bin  string // the postgres binary
	dir  string // data directory
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// startPostgres initialises and starts a server, stopped when the test
// ends. It skips the test when no PostgreSQL binaries are installed
// (Debian: apt-get install postgresql). Running as root, the server runs
// as the postgres OS user, since it refuses to run as root.
func startPostgres(t *testing.T) *pgServer {
	t.Helper()
	initdb, err := pgBin("initdb")
	if err != nil {
		t.Skipf("no PostgreSQL for the test: %v", err)
	}
	bin, err := pgBin("postgres")
	if err != nil {
		t.Skipf("no PostgreSQL for the test: %v", err)
	}
	root, err := os.MkdirTemp("", "tributary-iceberg-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := chownPostgres(root); err != nil {
		t.Skip(err)
	}
	s := &pgServer{bin: bin, dir: filepath.Join(root, "data")}
	cmd := exec.Command(initdb, "-D", s.dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err := asPostgres(cmd); err != nil {
		t.Skip(err)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.port = l.Addr().(*net.TCPAddr).Port
	l.Close()
	s.start(t)
	t.Cleanup(s.stop)
	return s
}

// start starts the server and waits until it accepts connections.
func (s *pgServer) start(t *testing.T) {
	t.Helper()
	cmd := exec.Command(s.bin, "-D", s.dir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "logging_collector=off")
	if err := asPostgres(cmd); err != nil {
		t.Fatal(err)
	}
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(s.dir), "postgres.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start postgres: %v", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.dsn("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return
		}
		select {
		case <-done:
			log, _ := os.ReadFile(logf.Name())
			t.Fatalf("postgres exited: %s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("postgres did not accept connections within 60s: %v", err)
		}
	}
}

// stop shuts the server down (fast mode: connections are closed) and
// waits for it; stopping a stopped server does nothing.
func (s *pgServer) stop() {
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// dsn returns a connection URI for the postgres superuser and db.
func (s *pgServer) dsn(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", s.port, db)
}

// createDB creates a database.
func (s *pgServer) createDB(t *testing.T, name string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), s.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
}

// pgBin finds a PostgreSQL binary on PATH or under /usr/lib/postgresql/*/bin.
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", fmt.Errorf("%s not found on PATH nor under /usr/lib/postgresql/*/bin", name)
}

// postgresUser returns the postgres OS user's ids when the tests run as
// root; ok is false otherwise.
func postgresUser() (uid, gid int, home string, ok bool, err error) {
	if os.Geteuid() != 0 {
		return 0, 0, "", false, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return 0, 0, "", false, fmt.Errorf("running as root needs a postgres OS user: %w", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid, u.HomeDir, true, nil
}

func asPostgres(cmd *exec.Cmd) error {
	uid, gid, home, ok, err := postgresUser()
	if !ok {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Env = append(os.Environ(), "HOME="+home, "USER=postgres", "LOGNAME=postgres")
	return nil
}

func chownPostgres(dir string) error {
	uid, gid, _, ok, err := postgresUser()
	if !ok {
		return err
	}
	return filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
}

// Package pgtest starts throwaway PostgreSQL servers for tests, from the
// installed server binaries (initdb and postgres, on PATH or under
// /usr/lib/postgresql/*/bin): never a mock. A server lives in a temporary
// directory, listens on a free port of 127.0.0.1 and is stopped when the
// test ends. Running as root, it runs as the postgres OS user, since
// PostgreSQL refuses to run as root.
package pgtest

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

// Logical are the settings logical replication needs.
var Logical = []string{"wal_level=logical", "max_wal_senders=10", "max_replication_slots=10"}

// Server is a throwaway PostgreSQL server. It can be stopped and started
// again on the same directory and port, to stand for a database that goes
// down and comes back.
type Server struct {
	bin      string   // the postgres binary
	dir      string   // data directory
	settings []string // extra -c settings
	port     int
	cmd      *exec.Cmd
	done     chan struct{} // closed when the process has exited
}

// Start initialises and starts a server with the extra settings (each
// "name=value", e.g. Logical...), stopped when the test ends. It skips the
// test when no PostgreSQL binaries are installed (Debian: apt-get install
// postgresql) or, as root, when there is no postgres OS user.
func Start(t testing.TB, settings ...string) *Server {
	t.Helper()
	initdb, err := Bin("initdb")
	if err != nil {
		t.Skipf("no PostgreSQL for the test: %v", err)
	}
	bin, err := Bin("postgres")
	if err != nil {
		t.Skipf("no PostgreSQL for the test: %v", err)
	}
	root, err := os.MkdirTemp("", "tributary-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ChownPostgres(root); err != nil {
		t.Skip(err)
	}
	s := &Server{bin: bin, dir: filepath.Join(root, "data"), settings: settings}
	cmd := exec.Command(initdb, "-D", s.dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
	if err := AsPostgres(cmd); err != nil {
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
	s.Start(t)
	t.Cleanup(s.Stop)
	return s
}

// Start starts the (stopped) server and waits until it accepts
// connections.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	args := []string{"-D", s.dir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + s.dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "logging_collector=off"}
	for _, kv := range s.settings {
		args = append(args, "-c", kv)
	}
	cmd := exec.Command(s.bin, args...)
	if err := AsPostgres(cmd); err != nil {
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
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
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

// Stop shuts the server down (fast mode: connections are closed) and
// waits for it; stopping a stopped server does nothing.
func (s *Server) Stop() {
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

// DSN returns a connection URI for the postgres superuser and db.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=2", s.port, db)
}

// CreateDB creates a database.
func (s *Server) CreateDB(t testing.TB, name string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
}

// Bin finds a PostgreSQL binary on PATH or under /usr/lib/postgresql/*/bin.
func Bin(name string) (string, error) {
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

// AsPostgres makes cmd run as the postgres OS user when the tests run as
// root; otherwise it leaves cmd alone.
func AsPostgres(cmd *exec.Cmd) error {
	uid, gid, home, ok, err := postgresUser()
	if !ok {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	cmd.Env = append(os.Environ(), "HOME="+home, "USER=postgres", "LOGNAME=postgres")
	return nil
}

// ChownPostgres gives dir and everything below it to the postgres OS user
// when the tests run as root.
func ChownPostgres(dir string) error {
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

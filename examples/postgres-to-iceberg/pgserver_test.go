package postgrestoiceberg_test

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

// startPostgres runs initdb into a temporary directory and starts a
// throwaway PostgreSQL server with wal_level=logical, stopped when the test
// ends. It skips the test when no PostgreSQL binaries are installed (Debian:
// apt-get install postgresql). Running as root, the server runs as the
// postgres OS user, since it refuses to run as root.
func startPostgres(t *testing.T) (dsn func(db string) string) {
	t.Helper()
	initdb, err := pgBin("initdb")
	if err != nil {
		t.Skipf("no PostgreSQL for the test: %v", err)
	}
	postgres, err := pgBin("postgres")
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
	if err := chownPostgres(root); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "data")
	cmd := exec.Command(initdb, "-D", dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions")
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
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd = exec.Command(postgres, "-D", dir, "-p", strconv.Itoa(port),
		"-c", "wal_level=logical", "-c", "max_wal_senders=10", "-c", "max_replication_slots=10",
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+dir,
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=32MB", "-c", "logging_collector=off")
	if err := asPostgres(cmd); err != nil {
		t.Skip(err)
	}
	logf, err := os.Create(filepath.Join(root, "postgres.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("start postgres: %v", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	dsn = func(db string) string {
		return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", port, db)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, dsn("postgres"))
		cancel()
		if err == nil {
			conn.Close(context.Background())
			return dsn
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

// postgresUser returns the postgres OS user's ids when the test runs as
// root, and ok false otherwise.
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

package mysql

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
)

// wantErr checks that err mentions every part.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

// wantPermanent checks that err is marked connect.Permanent (the worker
// leaves the task FAILED) exactly when want says so.
func wantPermanent(t *testing.T, err error, want bool) {
	t.Helper()
	if got := connect.IsPermanent(err); got != want {
		t.Errorf("IsPermanent(%q) = %v, want %v", err, got, want)
	}
}

// withGlobal sets a global variable for the test and restores it after.
func withGlobal(t *testing.T, d *testDB, name, value string) {
	t.Helper()
	old := d.queryString(t, "SELECT @@GLOBAL."+name)
	d.exec(t, "SET GLOBAL "+name+" = '"+value+"'")
	if _, err := strconv.Atoi(old); err != nil {
		old = "'" + old + "'" // a boolean reads as 0 or 1, which it takes only unquoted
	}
	t.Cleanup(func() {
		if _, err := d.db.Exec("SET GLOBAL " + name + " = " + old); err != nil {
			t.Errorf("restore %s: %v", name, err)
		}
	})
}

func TestSetup_BinlogFormatNotRow(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	withGlobal(t, d, "binlog_format", "STATEMENT")
	_, err := tryOpen(t, d.dsn, withTables(d, nil), nil)
	wantErr(t, err, "binlog_format is STATEMENT", "SET GLOBAL binlog_format = 'ROW'")
	wantPermanent(t, err, true)
}

func TestSetup_RowImageNotFull(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	withGlobal(t, d, "binlog_row_image", "MINIMAL")
	_, err := tryOpen(t, d.dsn, withTables(d, nil), nil)
	wantErr(t, err, "binlog_row_image is MINIMAL", "SET GLOBAL binlog_row_image = 'FULL'")
	wantPermanent(t, err, true)
}

func TestSetup_NoRowMetadataNeedsStateDir(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	withGlobal(t, d, "binlog_row_metadata", "MINIMAL")
	_, err := tryOpen(t, d.dsn, withTables(d, map[string]string{"snapshot.mode": "never"}), nil)
	wantErr(t, err, "binlog_row_metadata is not FULL", "state.dir")
	wantPermanent(t, err, true)
}

func TestSetup_UserWithoutReplication(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	d.exec(t, "CREATE USER IF NOT EXISTS 'norepl'@'%' IDENTIFIED BY 's3cret-pw'")
	d.exec(t, "GRANT SELECT ON *.* TO 'norepl'@'%'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS 'norepl'@'%'") })
	dsn := strings.Replace(d.dsn, "root@", "norepl:s3cret-pw@", 1)
	_, err := tryOpen(t, dsn, withTables(d, nil), nil)
	wantErr(t, err, "user norepl@% lacks REPLICATION SLAVE and REPLICATION CLIENT", "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'norepl'@'%';")
	wantPermanent(t, err, true)

	d.exec(t, "GRANT REPLICATION SLAVE ON *.* TO 'norepl'@'%'")
	_, err = tryOpen(t, dsn, withTables(d, nil), nil)
	wantErr(t, err, "lacks REPLICATION CLIENT")
	wantPermanent(t, err, true)
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Errorf("the error shows the password: %v", err)
	}
}

func TestSetup_WrongPasswordIsMasked(t *testing.T) {
	d := newDB(t)
	d.exec(t, "CREATE USER IF NOT EXISTS 'pwuser'@'%' IDENTIFIED BY 'right-pw'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS 'pwuser'@'%'") })
	for _, dsn := range []string{
		strings.Replace(d.dsn, "root@", "pwuser:wrong-pw@", 1),
		"mysql://pwuser:wrong-pw@" + strings.TrimSuffix(strings.TrimPrefix(d.dsn, "root@tcp("), ")/"),
	} {
		_, err := tryOpen(t, dsn, nil, nil)
		if err == nil || strings.Contains(err.Error(), "wrong-pw") || !strings.Contains(err.Error(), connect.Masked) {
			t.Errorf("dsn %s: error %v", strings.ReplaceAll(dsn, "wrong-pw", "…"), err)
		}
		wantPermanent(t, err, true) // access denied (1045)
	}
}

func TestSetup_PurgedBinlog(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	d.exec(t, "INSERT INTO t VALUES (1)")
	pos := lastPosition(readRecords(t, s, 1, 30*time.Second))
	s.Close(context.Background())
	p, _ := decodePosition(pos)

	d.exec(t, "INSERT INTO t VALUES (2)")
	d.exec(t, "FLUSH BINARY LOGS")
	d.exec(t, "INSERT INTO t VALUES (3)")
	cur := d.queryString(t, "SELECT @@GLOBAL.gtid_binlog_pos")
	var file string
	rows, err := d.db.Query("SHOW MASTER STATUS")
	if err != nil {
		t.Fatal(err)
	}
	cols, _ := rows.Columns()
	vals := make([]any, len(cols))
	for i := range vals {
		vals[i] = new(any)
	}
	for rows.Next() {
		rows.Scan(vals...)
		file = string((*(vals[0].(*any))).([]byte))
	}
	rows.Close()
	// MariaDB purges a file only after its binlog checkpoint moved on.
	for deadline := time.Now().Add(10 * time.Second); ; {
		d.exec(t, "PURGE BINARY LOGS TO '"+file+"'")
		var oldest string
		if err := d.db.QueryRow("SHOW BINARY LOGS").Scan(&oldest, new(any)); err == nil && oldest != p.File {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("binlog %s was not purged", p.File)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// file/pos in a purged file.
	p2 := p
	p2.GTIDs = ""
	_, err = tryOpen(t, d.dsn, withTables(d, nil), p2.encode())
	wantErr(t, err, "binlog file "+p.File+", which the server no longer has", "snapshot.mode=when_needed")
	wantPermanent(t, err, true)

	// A GTID position older than the oldest binlog.
	_, err = tryOpen(t, d.dsn, withTables(d, nil), pos)
	wantErr(t, err, "needs binlog the server purged", "delete the source's stored offsets")
	wantPermanent(t, err, true)

	// when_needed takes a new snapshot instead.
	s2 := openSource(t, d, map[string]string{"snapshot.mode": "when_needed"}, pos)
	recs := readUntil(t, s2, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Position != nil && !strings.Contains(string(r[len(r)-1].Position), `"snapshot"`)
	})
	if n := len(decode(t, recs)); n != 3 {
		t.Errorf("snapshot after purge: %d records, want 3:\n%s", n, dump(recs))
	}
	_ = cur
}

func TestSetup_BinlogOff(t *testing.T) {
	if testServer == nil {
		t.Skipf("no MariaDB server: %v", serverErr)
	}
	dir := filepath.Join(root, "nobinlog")
	if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	srv, err := startServer(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	defer srv.stop()
	_, err = tryOpen(t, srv.dsn(""), nil, nil)
	wantErr(t, err, "the binary log is off", "log_bin=ON", "restart the server")
	wantPermanent(t, err, true)
}

func TestSetup_ConnectErrors(t *testing.T) {
	d := newDB(t)
	d.exec(t, "CREATE USER IF NOT EXISTS 'nodbuser'@'%' IDENTIFIED BY 'pw'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS 'nodbuser'@'%'") })
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, dsn, want string
		permanent       bool
	}{
		{"unknown database", testServer.dsn("no_such_db"), "Unknown database 'no_such_db'", true},
		{"database access denied", strings.Replace(testServer.dsn(d.name), "root@", "nodbuser:pw@", 1), "Access denied for user 'nodbuser'@'%' to database", true},
		// Nothing listens there: a server that comes up later must be
		// picked up, so this stays retryable.
		{"refused", fmt.Sprintf("root@tcp(127.0.0.1:%d)/", port), "connection refused", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tryOpen(t, c.dsn, nil, nil)
			wantErr(t, err, c.want)
			wantPermanent(t, err, c.permanent)
		})
	}
}

func TestLoginRefused(t *testing.T) {
	for n, want := range map[uint16]bool{1044: true, 1045: true, 1049: true, 1130: true, 1040: false, 1053: false} {
		err := fmt.Errorf("ping: %w", &mysql.MySQLError{Number: n, Message: "x"})
		if got := loginRefused(err); got != want {
			t.Errorf("loginRefused(error %d) = %v, want %v", n, got, want)
		}
	}
	if loginRefused(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}) {
		t.Error("a refused connection counts as a refused login")
	}
}

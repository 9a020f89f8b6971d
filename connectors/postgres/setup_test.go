package postgres

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"

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

func TestSetup_UserWithoutReplication(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	db.exec(t, "DO $$ BEGIN CREATE ROLE norepl LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	dsn := strings.Replace(db.dsn, "postgres@", "norepl@", 1)
	s, err := tryOpen(t, dsn, nil, nil)
	if err == nil {
		s.Close(context.Background())
	}
	wantErr(t, err, `user "norepl" lacks the REPLICATION attribute`, `ALTER ROLE "norepl" WITH REPLICATION;`)
	wantPermanent(t, err, true)
}

func TestSetup_TableWithoutKey(t *testing.T) {
	db := newDB(t, "CREATE TABLE nokey (v text)", "CREATE TABLE nothing (id int PRIMARY KEY)", "ALTER TABLE nothing REPLICA IDENTITY NOTHING")
	_, err := tryOpen(t, db.dsn, map[string]string{"tables": "public.nokey"}, nil)
	wantErr(t, err, "table public.nokey has no primary key", `ALTER TABLE "public"."nokey" REPLICA IDENTITY FULL;`)
	_, err = tryOpen(t, db.dsn, map[string]string{"tables": "public.nothing"}, nil)
	wantErr(t, err, "REPLICA IDENTITY NOTHING", `ALTER TABLE "public"."nothing" REPLICA IDENTITY DEFAULT;`)
	_, err = tryOpen(t, db.dsn, map[string]string{"tables": "public.missing"}, nil)
	wantErr(t, err, "table public.missing (in tables) does not exist")

	// With REPLICA IDENTITY FULL the table can be captured; its key is null.
	db.exec(t, "ALTER TABLE nokey REPLICA IDENTITY FULL")
	s := openSource(t, db, map[string]string{"tables": "public.nokey", "snapshot.mode": "never"}, nil)
	db.exec(t, "INSERT INTO nokey VALUES ('a')")
	db.exec(t, "DELETE FROM nokey")
	evs := decode(t, readRecords(t, s, 2, 30*time.Second))
	if evs[0].Rec.Key != nil || evs[1].Ev.Op != connect.OpDelete || evs[1].Ev.Before.String() != `{"v":"a"}` {
		t.Errorf("keyless table: %s", dump([]connect.Record{evs[0].Rec, evs[1].Rec}))
	}
}

func TestSetup_SlotInUse(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	openSource(t, db, map[string]string{"snapshot.mode": "never"}, nil)
	deadline := time.Now().Add(30 * time.Second)
	for db.queryString(t, "SELECT active::text FROM pg_replication_slots WHERE database = $1", db.name) != "true" {
		if time.Now().After(deadline) {
			t.Fatal("the slot did not become active")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err := tryOpen(t, db.dsn, map[string]string{"snapshot.mode": "never"}, nil)
	wantErr(t, err, "is in use by the process with pid", "SELECT pg_terminate_backend(")
	wantPermanent(t, err, false) // it clears by itself when the other consumer lets go
}

func TestSetup_PublicationMissingTable(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)", "CREATE PUBLICATION pub FOR TABLE a")
	_, err := tryOpen(t, db.dsn, map[string]string{"publication": "pub"}, nil)
	wantErr(t, err, `publication pub does not publish "public"."b"`, `ALTER PUBLICATION "pub" ADD TABLE "public"."b";`)
	wantPermanent(t, err, true)
}

func TestSetup_SlotGoneOrAhead(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	stored := position{LSN: 1}.encode()
	// A stored position but no slot: the slot was dropped.
	_, err := tryOpen(t, db.dsn, map[string]string{"snapshot.mode": "never"}, stored)
	wantErr(t, err, "does not exist, but a position is stored", "snapshot.mode=always")
	wantPermanent(t, err, true)
	// A slot that confirmed beyond the stored position.
	s := openSource(t, db, map[string]string{"snapshot.mode": "never"}, nil)
	s.Close(context.Background())
	_, err = tryOpen(t, db.dsn, map[string]string{"snapshot.mode": "never"}, stored)
	wantErr(t, err, "beyond the stored position", "are missing here")
	wantPermanent(t, err, true)
}

func TestSetup_WalLevelReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second server")
	}
	if server == nil {
		t.Skipf("no PostgreSQL server for the tests: %v", serverErr)
	}
	// Under the package's temporary directory, which the postgres OS user
	// can reach (t.TempDir's parents belong to root, mode 0700).
	dir := filepath.Join(filepath.Dir(pristine), "replica")
	if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy data dir: %v\n%s", err, out)
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir, "replica")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	_, err = tryOpen(t, srv.dsn("postgres"), nil, nil)
	wantErr(t, err, `wal_level is "replica"`, "ALTER SYSTEM SET wal_level = logical; then restart")
	wantPermanent(t, err, true)
}

func TestSetup_PublicationWithoutCreatePrivilege(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	db.exec(t, "DO $$ BEGIN CREATE ROLE repl_nocreate LOGIN REPLICATION; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	db.exec(t, "GRANT SELECT ON t TO repl_nocreate")
	t.Cleanup(func() { db.conn.Exec(context.Background(), "REVOKE ALL ON t FROM repl_nocreate") })
	dsn := strings.Replace(db.dsn, "postgres@", "repl_nocreate@", 1)
	_, err := tryOpen(t, dsn, nil, nil)
	wantErr(t, err, "create publication", "GRANT CREATE ON DATABASE", "SQLSTATE 42501")
	wantPermanent(t, err, true)
}

func TestSetup_ConnectErrors(t *testing.T) {
	db := newDB(t)
	for _, c := range []struct {
		name, dsn, want string
		permanent       bool
	}{
		{"no such database", server.dsn("no_such_db"), `database "no_such_db" does not exist`, true},
		{"no such role", strings.Replace(db.dsn, "postgres@", "no_such_role@", 1), `role "no_such_role" does not exist`, true},
		// Nothing listens there: a server that comes up later must be
		// picked up, so this stays retryable.
		{"refused", "postgres://postgres@127.0.0.1:" + strconv.Itoa(closedPort(t)) + "/x?sslmode=disable", "connect", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := tryOpen(t, c.dsn, nil, nil)
			wantErr(t, err, c.want)
			wantPermanent(t, err, c.permanent)
		})
	}
	// The replication connection classifies the same way.
	_, err := connectReplication(t.Context(), server.dsn("no_such_db"))
	wantErr(t, err, "open a replication connection", `database "no_such_db" does not exist`)
	wantPermanent(t, err, true)
}

// closedPort returns a local TCP port that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func TestConnectErr_Classifies(t *testing.T) {
	dsn := "postgres://u:hunter2@h/db"
	for code, want := range map[string]bool{"3D000": true, "28000": true, "28P01": true, "57P03": false, "53300": false} {
		// As pgconn returns it: a *ConnectError around the *PgError.
		cause := fmt.Errorf("failed to connect to `user=u database=db`: %w", &pgconn.PgError{Severity: "FATAL", Code: code, Message: "password hunter2"})
		err := connectErr(cause, dsn, "connect to %s: %s")
		wantPermanent(t, err, want)
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: the error shows the password: %v", code, err)
		}
	}
	wantPermanent(t, connectErr(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, dsn, "connect to %s: %s"), false)
}

func TestCheckSlot_Permanent(t *testing.T) {
	pid := int32(42)
	lost := "lost"
	for _, c := range []struct {
		slot      slotInfo
		want      string
		permanent bool
	}{
		{slotInfo{plugin: "test_decoding", database: "shop"}, `uses the output plugin "test_decoding"`, true},
		{slotInfo{plugin: "pgoutput", database: "other"}, `belongs to database "other"`, true},
		{slotInfo{plugin: "pgoutput", database: "shop", walStatus: &lost}, "has lost WAL", true},
		{slotInfo{plugin: "pgoutput", database: "shop", active: true, activePID: &pid}, "in use by the process with pid 42", false},
	} {
		err := checkSlot(&c.slot, "s", "shop")
		wantErr(t, err, c.want)
		wantPermanent(t, err, c.permanent)
	}
	if err := checkSlot(&slotInfo{plugin: "pgoutput", database: "shop"}, "s", "shop"); err != nil {
		t.Errorf("a usable slot: %v", err)
	}
}

// A first start (no stored position) on a slot this process did not create
// — another pipeline's source of the same name, say, which shares the
// default slot name — warns: the source continues from the slot's
// confirmed LSN and takes changes the slot's owner has not consumed yet.
func TestSetup_ExistingSlotWithoutPosition_Warns(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	// Slots are server-wide: the database's unique prefix keeps this one
	// to this test. The database's cleanup drops it.
	slot := "tributary_shop_" + strings.SplitN(db.name, "_", 2)[0]
	db.exec(t, "SELECT pg_create_logical_replication_slot($1, 'pgoutput')", slot)
	confirmed := db.queryString(t, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", slot)

	var log bytes.Buffer
	logTo := func(s *Source) { s.logger = slog.New(slog.NewTextHandler(&log, nil)) }
	s, err := tryOpenSource(t, db.dsn, map[string]string{"snapshot.mode": "never", "slot": slot}, logTo, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.Close(context.Background())
	warns := warnings(&log)
	if len(warns) != 1 {
		t.Fatalf("%d warnings, want 1:\n%s", len(warns), log.String())
	}
	for _, want := range []string{"replication slot " + slot + " already exists", "confirmed LSN " + confirmed, "another pipeline", "(slot: in its config)"} {
		if !strings.Contains(warns[0], want) {
			t.Errorf("warning %s\ndoes not mention %q", warns[0], want)
		}
	}

	// With a stored position, the slot is this source's: no warning.
	log.Reset()
	stored := position{LSN: uint64(mustLSN(t, confirmed))}.encode()
	s, err = tryOpenSource(t, db.dsn, map[string]string{"snapshot.mode": "never", "slot": slot}, logTo, stored)
	if err != nil {
		t.Fatalf("Open with a position: %v", err)
	}
	s.Close(context.Background())
	if warns := warnings(&log); len(warns) != 0 {
		t.Errorf("with a stored position: %d warnings, want none:\n%s", len(warns), log.String())
	}

	// A slot this process created (a task restarting before it stored a
	// position): no warning either.
	log.Reset()
	s, err = tryOpenSource(t, db.dsn, map[string]string{"snapshot.mode": "never"}, logTo, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.Close(context.Background())
	s, err = tryOpenSource(t, db.dsn, map[string]string{"snapshot.mode": "never"}, logTo, nil)
	if err != nil {
		t.Fatalf("Open again: %v", err)
	}
	s.Close(context.Background())
	if warns := warnings(&log); len(warns) != 0 {
		t.Errorf("on its own slot: %d warnings, want none:\n%s", len(warns), log.String())
	}
}

func warnings(buf *bytes.Buffer) []string {
	var out []string
	for l := range strings.Lines(buf.String()) {
		if strings.Contains(l, "level=WARN") {
			out = append(out, l)
		}
	}
	return out
}

func mustLSN(t *testing.T, s string) pglogrepl.LSN {
	t.Helper()
	lsn, err := pglogrepl.ParseLSN(s)
	if err != nil {
		t.Fatal(err)
	}
	return lsn
}

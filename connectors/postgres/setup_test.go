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
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/syncbuf"
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

// TestSetup_PublicationMissingTable: a publication that lacks a captured
// table is left alone, with the command to run, when another role owns it
// or publication.autocreate.mode is disabled.
func TestSetup_PublicationMissingTable(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)", "CREATE PUBLICATION pub FOR TABLE a")
	_, err := tryOpen(t, db.dsn, map[string]string{"publication": "pub", "publication.autocreate.mode": "disabled"}, nil)
	wantErr(t, err, `publication pub does not publish "public"."b"`, "publication.autocreate.mode is disabled", `ALTER PUBLICATION "pub" ADD TABLE "public"."b";`)
	wantPermanent(t, err, true)

	db.exec(t, "DO $$ BEGIN CREATE ROLE pub_owner; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	db.exec(t, "GRANT CREATE ON DATABASE "+db.name+" TO pub_owner")
	db.exec(t, "ALTER PUBLICATION pub OWNER TO pub_owner")
	t.Cleanup(func() { db.conn.Exec(context.Background(), "ALTER PUBLICATION pub OWNER TO CURRENT_USER") })
	_, err = tryOpen(t, db.dsn, map[string]string{"publication": "pub"}, nil)
	wantErr(t, err, `publication pub does not publish "public"."b"`, "not owned by the connector's user", `ALTER PUBLICATION "pub" ADD TABLE "public"."b";`)
	wantPermanent(t, err, true)
	if got := db.queryString(t, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 'pub'"); got != "a" {
		t.Errorf("publication changed: it publishes %s", got)
	}
}

// TestSetup_PublicationDisabledMissing: under disabled, a missing
// publication is not created.
func TestSetup_PublicationDisabledMissing(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)")
	_, err := tryOpen(t, db.dsn, map[string]string{"publication": "pub", "publication.autocreate.mode": "disabled"}, nil)
	wantErr(t, err, "publication pub does not exist", `CREATE PUBLICATION "pub" FOR TABLE "public"."a"`)
	wantPermanent(t, err, true)
	if n := db.queryString(t, "SELECT count(*)::text FROM pg_publication"); n != "0" {
		t.Errorf("%s publications, want none", n)
	}
}

// TestSetup_PublicationAllTables: all_tables creates the publication FOR
// ALL TABLES, and only the captured tables' changes are emitted.
func TestSetup_PublicationAllTables(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE other (id int PRIMARY KEY)")
	s := openSource(t, db, map[string]string{"publication": "pub", "publication.autocreate.mode": "all_tables", "tables": "public.a", "snapshot.mode": "never"}, nil)
	if got := db.queryString(t, "SELECT puballtables::text FROM pg_publication WHERE pubname = 'pub'"); got != "true" {
		t.Errorf("puballtables = %s", got)
	}
	db.exec(t, "INSERT INTO other VALUES (1)")
	db.exec(t, "INSERT INTO a VALUES (2)")
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	if evs[0].Rec.Topic != "src.public.a" || string(evs[0].Rec.Key) != `{"id":2}` {
		t.Errorf("first event %s %s, want the insert into a", evs[0].Rec.Topic, evs[0].Rec.Key)
	}
}

// TestSetup_PublicationGetsNewTables: a table created while the source
// runs that matches its tables pattern is not in the publication the
// source created; at the next start the source adds it (logged at INFO)
// instead of failing, streams its changes from then on, and an incremental
// snapshot brings the rows written before.
func TestSetup_PublicationGetsNewTables(t *testing.T) {
	db := newDB(t, "CREATE TABLE fullt1 (id int PRIMARY KEY)", "CREATE TABLE other (id int PRIMARY KEY)")
	cfg := map[string]string{"tables": "public.full*", "publication": "s3pub", "snapshot.mode": "never"}
	var log syncbuf.Buffer // the runner logs while the test reads
	logTo := func(s *Source) { s.logger = slog.New(slog.NewTextHandler(&log, nil)) }
	s, err := tryOpenSource(t, db.dsn, cfg, logTo, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	db.exec(t, "INSERT INTO fullt1 VALUES (1)")
	pos := lastPosition(readRecords(t, s, 1, 30*time.Second))
	db.exec(t, "CREATE TABLE fullt2 (id int PRIMARY KEY)")
	db.exec(t, "CREATE TABLE other2 (id int PRIMARY KEY)") // matches nothing: no warning
	db.exec(t, "INSERT INTO fullt2 VALUES (10)")           // before the restart: not in the publication
	// While running, the source warns (once) that fullt2 is not captured.
	want := "table public.fullt2 matches tables but is not in publication s3pub"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(log.String(), want); {
		if time.Now().After(deadline) {
			t.Fatalf("no warning %q in:\n%s", want, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Close(context.Background())
	if warns := strings.Count(log.String(), "level=WARN"); warns != 1 || !strings.Contains(log.String(), `ALTER PUBLICATION \"s3pub\" ADD TABLE \"public\".\"fullt2\"`) {
		t.Errorf("%d warnings, want 1 naming the ALTER:\n%s", warns, log.String())
	}

	log.Reset()
	s, err = tryOpenSource(t, db.dsn, cfg, logTo, pos)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	if got := db.queryString(t, "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_publication_tables WHERE pubname = 's3pub'"); got != "fullt1,fullt2" {
		t.Errorf("publication has %s, want fullt1,fullt2", got)
	}
	if !strings.Contains(log.String(), "level=INFO") || !strings.Contains(log.String(), "added tables to the publication") || !strings.Contains(log.String(), "tables=public.fullt2") {
		t.Errorf("no INFO line about the added table in:\n%s", log.String())
	}
	db.exec(t, "INSERT INTO fullt2 VALUES (11)")
	evs := decode(t, readRecords(t, s, 1, 30*time.Second))
	if e := evs[0]; e.Rec.Topic != "src.public.fullt2" || string(e.Rec.Key) != `{"id":11}` || e.Ev.Op != connect.OpCreate {
		t.Fatalf("first event after the restart: %s %s, want the insert of 11 into fullt2", e.Rec.Topic, e.Rec.Key)
	}
	// The row written before the restart comes with an incremental snapshot.
	if err := s.ExecuteSnapshot(t.Context(), []string{`public\.fullt2`}); err != nil {
		t.Fatalf("ExecuteSnapshot: %v", err)
	}
	var reads []string
	readUntil(t, s, 30*time.Second, func(recs []connect.Record) bool {
		reads = reads[:0]
		for _, e := range decode(t, recs) {
			if e.Ev != nil && e.Ev.Op == connect.OpRead {
				reads = append(reads, string(e.Rec.Key))
			}
		}
		return len(reads) >= 2
	})
	if strings.Join(reads, ",") != `{"id":10},{"id":11}` {
		t.Errorf("incremental snapshot read %s, want ids 10 and 11", reads)
	}
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
	_, err := connectReplication(t.Context(), server.dsn("no_such_db"), time.Minute, nil)
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

// TestSetup_PublicationWithoutSomeOperations: a publication that does not
// publish updates or deletes makes pgoutput leave them out; the source
// says so when it starts, naming the statement that fixes it.
func TestSetup_PublicationWithoutSomeOperations(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE t (id int PRIMARY KEY)",
		"CREATE PUBLICATION ins_only FOR TABLE t WITH (publish = 'insert')",
	)
	var log syncbuf.Buffer
	logTo := func(s *Source) { s.logger = slog.New(slog.NewTextHandler(&log, nil)) }
	s, err := tryOpenSource(t, db.dsn, map[string]string{"snapshot.mode": "never", "publication": "ins_only"}, logTo, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	s.Close(context.Background())
	var warn string
	for l := range strings.Lines(log.String()) {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "ins_only") {
			warn = l
		}
	}
	for _, want := range []string{"update, delete", "SET (publish = 'insert, update, delete, truncate')"} {
		if !strings.Contains(warn, want) {
			t.Errorf("warning %q does not mention %q:\n%s", warn, want, log.String())
		}
	}
}

func TestCheckVersion(t *testing.T) {
	if err := checkVersion(130012, "13.12"); err == nil || !connect.IsPermanent(err) || !strings.Contains(err.Error(), "PostgreSQL 13.12 is too old") {
		t.Errorf("checkVersion(13.12) = %v, want a permanent error", err)
	}
	for _, v := range []int{140000, 150004, 170000} {
		if err := checkVersion(v, ""); err != nil {
			t.Errorf("checkVersion(%d) = %v", v, err)
		}
	}
}

// TestSlotLost_WhileStreaming: the slot of a running source falls behind
// max_slot_wal_keep_size (nothing is acknowledged) and a checkpoint
// invalidates it. The source fails with the permanent error that says
// what happened and what to do, not with a retried connection error.
func TestSlotLost_WhileStreaming(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a second server")
	}
	if server == nil {
		t.Skipf("no PostgreSQL server for the tests: %v", serverErr)
	}
	dir := filepath.Join(filepath.Dir(pristine), "slotlost")
	if out, err := exec.Command("cp", "-a", pristine, dir).CombinedOutput(); err != nil {
		t.Fatalf("copy data dir: %v\n%s", err, out)
	}
	defer os.RemoveAll(dir)
	srv, err := startServer(dir, "logical")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, srv.dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	run := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	run("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
	run("SELECT pg_reload_conf()")
	run("CREATE TABLE t (id int PRIMARY KEY, pad text)")
	s, err := tryOpen(t, srv.dsn("postgres"), map[string]string{"snapshot.mode": "never", "slot": "lost_slot"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	for i := range 4 {
		run(fmt.Sprintf("INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series(%d, %d) g", i*1000, i*1000+999))
		run("SELECT pg_switch_wal()")
	}
	run("CHECKPOINT")
	var readErr error
	deadline := time.Now().Add(30 * time.Second)
	for readErr == nil && time.Now().Before(deadline) {
		_, readErr = s.Read(ctx) // the records are never acknowledged
	}
	wantErr(t, readErr, "replication slot lost_slot has lost WAL", "pg_drop_replication_slot('lost_slot')", "snapshot")
	wantPermanent(t, readErr, true)
}

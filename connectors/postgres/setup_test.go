package postgres

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

func TestSetup_UserWithoutReplication(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	db.exec(t, "DO $$ BEGIN CREATE ROLE norepl LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$")
	dsn := strings.Replace(db.dsn, "postgres@", "norepl@", 1)
	s, err := tryOpen(t, dsn, nil, nil)
	if err == nil {
		s.Close(context.Background())
	}
	wantErr(t, err, `user "norepl" lacks the REPLICATION attribute`, `ALTER ROLE "norepl" WITH REPLICATION;`)
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
}

func TestSetup_PublicationMissingTable(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)", "CREATE PUBLICATION pub FOR TABLE a")
	_, err := tryOpen(t, db.dsn, map[string]string{"publication": "pub"}, nil)
	wantErr(t, err, `publication pub does not publish "public"."b"`, `ALTER PUBLICATION "pub" ADD TABLE "public"."b";`)
}

func TestSetup_SlotGoneOrAhead(t *testing.T) {
	db := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	stored := position{LSN: 1}.encode()
	// A stored position but no slot: the slot was dropped.
	_, err := tryOpen(t, db.dsn, map[string]string{"snapshot.mode": "never"}, stored)
	wantErr(t, err, "does not exist, but a position is stored", "snapshot.mode=always")
	// A slot that confirmed beyond the stored position.
	s := openSource(t, db, map[string]string{"snapshot.mode": "never"}, nil)
	s.Close(context.Background())
	_, err = tryOpen(t, db.dsn, map[string]string{"snapshot.mode": "never"}, stored)
	wantErr(t, err, "beyond the stored position", "are missing here")
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
}

package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestServer starts a logical-replication server, creates a database,
// stops and restarts the server on the same port, and finds the database
// still there.
func TestServer(t *testing.T) {
	s := Start(t, Logical...)
	s.CreateDB(t, "lake")
	query := func(db, sql string) string {
		conn, err := pgx.Connect(context.Background(), s.DSN(db))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		var v string
		if err := conn.QueryRow(context.Background(), sql).Scan(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	if got := query("lake", "SHOW wal_level"); got != "logical" {
		t.Fatalf("wal_level = %s, want logical", got)
	}
	s.Stop()
	if _, err := pgx.Connect(context.Background(), s.DSN("lake")); err == nil {
		t.Fatal("a stopped server accepted a connection")
	}
	s.Start(t)
	if got := query("lake", "SELECT current_database()"); got != "lake" {
		t.Fatalf("after a restart: database %s", got)
	}
}

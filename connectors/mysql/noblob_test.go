package mysql

import (
	"context"
	"database/sql"
	"encoding/base64"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/tributary-io/tributary/connect"
)

// noblobWant is one change event a NOBLOB test expects: op, before,
// after and the unavailable-columns header ("" for none).
type noblobWant struct{ op, before, after, header string }

// checkNoblob compares the change events of recs with want.
func checkNoblob(t *testing.T, recs []connect.Record, want []noblobWant) {
	t.Helper()
	evs := decode(t, recs)
	if len(evs) != len(want) {
		t.Fatalf("got %d events, want %d:\n%s", len(evs), len(want), dump(recs))
	}
	for i, w := range want {
		e := evs[i]
		if e.Ev == nil {
			t.Errorf("event %d: a tombstone", i)
			continue
		}
		h, _ := e.Rec.Header(connect.UnavailableColumnsHeader)
		if string(e.Ev.Op) != w.op || e.Ev.Before.String() != w.before || e.Ev.After.String() != w.after || string(h) != w.header {
			t.Errorf("event %d:\n got %s before %s after %s header %s\nwant %s before %s after %s header %s",
				i, e.Ev.Op, e.Ev.Before, e.Ev.After, h, w.op, w.before, w.after, w.header)
		}
	}
}

// TestStream_NoblobRowImage: under binlog_row_image=NOBLOB (set globally,
// or by one session while the server's setting is FULL) the server leaves
// the BLOB and TEXT columns that are not part of the primary key out of
// the before image of updates and deletes, and out of the after image of
// an update that did not change them. As Debezium (debezium/dbz#473), the
// connector writes the unavailable.value.placeholder for them, in the
// column's form (the text, or its bytes for a binary column), never null,
// and names the columns missing from the after image in the header
// __tributary.unavailable.columns (on the create of a key change). An
// insert leaves out the BLOB and TEXT columns it does not name. Both row
// decoders run it.
func TestStream_NoblobRowImage(t *testing.T) {
	p := connect.UnavailableValue
	pb := base64.StdEncoding.EncodeToString([]byte(p))
	row := func(id, n int, tx, bl string) string {
		return `{"id":` + strconv.Itoa(id) + `,"n":` + strconv.Itoa(n) + `,"tx":` + tx + `,"bl":` + bl + `}`
	}
	q := func(s string) string { return `"` + s + `"` }
	want := []noblobWant{
		// INSERT INTO nb VALUES (1, 1, 'hello', 'bytes')
		{"c", "null", row(1, 1, q("hello"), q("Ynl0ZXM=")), ""},
		// UPDATE nb SET n = 2 WHERE id = 1
		{"u", row(1, 1, q(p), q(pb)), row(1, 2, q(p), q(pb)), `["tx","bl"]`},
		// UPDATE nb SET tx = 'changed' WHERE id = 1
		{"u", row(1, 2, q(p), q(pb)), row(1, 2, q("changed"), q(pb)), `["bl"]`},
		// UPDATE nb SET id = 3 WHERE id = 1: a delete and a create
		{"d", row(1, 2, q(p), q(pb)), "null", ""},
		{"c", "null", row(3, 2, q(p), q(pb)), `["tx","bl"]`},
		// DELETE FROM nb WHERE id = 3
		{"d", row(3, 2, q(p), q(pb)), "null", ""},
		// INSERT INTO nb (id, n) VALUES (2, 5): the columns the insert
		// does not name are left out too (their values are the
		// defaults, which the binlog does not carry)
		{"c", "null", row(2, 5, q(p), q(pb)), `["tx","bl"]`},
		// INSERT INTO nb (id, n, tx) VALUES (4, 6, NULL): a null named
		// is logged
		{"c", "null", row(4, 6, "null", q(pb)), `["bl"]`},
	}
	stmts := []string{
		"INSERT INTO nb VALUES (1, 1, 'hello', 'bytes')",
		"UPDATE nb SET n = 2 WHERE id = 1",
		"UPDATE nb SET tx = 'changed' WHERE id = 1",
		"UPDATE nb SET id = 3 WHERE id = 1",
		"DELETE FROM nb WHERE id = 3",
		"INSERT INTO nb (id, n) VALUES (2, 5)",
		"INSERT INTO nb (id, n, tx) VALUES (4, 6, NULL)",
	}
	for _, scope := range []string{"global", "session"} {
		for _, goMySQL := range []bool{false, true} {
			name := scope
			if goMySQL {
				name += "/go-mysql"
			}
			t.Run(name, func(t *testing.T) {
				d := newDB(t, "CREATE TABLE nb (id int PRIMARY KEY, n int, tx text, bl blob)")
				if scope == "global" {
					withGlobal(t, d, "binlog_row_image", "NOBLOB")
				}
				s := openStreaming(t, d, map[string]string{"tombstones.on.delete": "false"}, goMySQL)
				conn := noblobConn(t, d)
				run := stmts
				if scope == "session" {
					run = append([]string{"SET SESSION binlog_row_image = NOBLOB"}, stmts...)
				}
				for _, q := range run {
					if _, err := conn.ExecContext(t.Context(), q); err != nil {
						t.Fatalf("%s: %v", q, err)
					}
				}
				checkNoblob(t, readRecords(t, s, len(want), 30*time.Second), want)
				expectQuiet(t, s, 300*time.Millisecond)
			})
		}
	}
}

// TestStream_NoblobWithoutPrimaryKey: for a table without a primary key
// (nor a unique NOT NULL key standing in for one) NOBLOB logs whole rows,
// as FULL does: the events carry every value and no header.
func TestStream_NoblobWithoutPrimaryKey(t *testing.T) {
	d := newDB(t, "CREATE TABLE nk (n int, tx text, bl blob)")
	withGlobal(t, d, "binlog_row_image", "NOBLOB")
	s := openStreaming(t, d, nil, false)
	conn := noblobConn(t, d)
	for _, q := range []string{
		"INSERT INTO nk VALUES (1, 'a', 'b')",
		"UPDATE nk SET n = 2",
		"DELETE FROM nk",
	} {
		if _, err := conn.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	checkNoblob(t, readRecords(t, s, 3, 30*time.Second), []noblobWant{
		{"c", "null", `{"n":1,"tx":"a","bl":"Yg=="}`, ""},
		{"u", `{"n":1,"tx":"a","bl":"Yg=="}`, `{"n":2,"tx":"a","bl":"Yg=="}`, ""},
		{"d", `{"n":2,"tx":"a","bl":"Yg=="}`, "null", ""},
	})
}

// noblobConn returns a new connection to d's database: its session reads
// the global binlog_row_image as it is now.
func noblobConn(t *testing.T, d *testDB) *sql.Conn {
	t.Helper()
	cfg, err := mysql.ParseDSN(testServer.dsn(d.name))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

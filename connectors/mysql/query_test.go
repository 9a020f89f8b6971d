package mysql

import (
	"testing"
	"time"
)

// TestStream_IncludeQuery: with include.query, source.query holds the
// statement of each change (MariaDB's Annotate_rows events), one per
// statement of a multi-statement transaction; without it, null.
func TestStream_IncludeQuery(t *testing.T) {
	d := newDB(t, "CREATE TABLE q (id int PRIMARY KEY, v varchar(20))")
	s := openSource(t, d, map[string]string{"snapshot.mode": "never", "include.query": "true", "tombstones.on.delete": "false"}, nil)
	plain := openSource(t, d, map[string]string{"snapshot.mode": "never", "server.id": "6400123", "tombstones.on.delete": "false"}, nil)
	stmts := []string{
		"INSERT INTO q VALUES (1, 'a'), (2, 'b')",
		"UPDATE q SET v = 'c' /* why */ WHERE id = 2",
		"DELETE FROM q WHERE id = 1",
	}
	tx, err := d.db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range stmts[1:] {
		if q == stmts[1] {
			if _, err := d.db.Exec(stmts[0]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	want := []string{stmts[0], stmts[0], stmts[1], stmts[2]}
	evs := decode(t, readRecords(t, s, len(want), 30*time.Second))
	for i, e := range evs {
		if got, _ := e.Ev.Source.Extra.Get("query"); got != want[i] {
			t.Errorf("event %d (%s): source.query %v, want %q", i, e.Ev.Op, got, want[i])
		}
	}
	for i, e := range decode(t, readRecords(t, plain, len(want), 30*time.Second)) {
		if got, _ := e.Ev.Source.Extra.Get("query"); got != nil {
			t.Errorf("without include.query, event %d: source.query %v", i, got)
		}
	}
}

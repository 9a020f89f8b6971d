// Package postgrestoiceberg_test checks the postgres-to-iceberg example: the
// pipeline validates against the real connector and transform specs, and,
// where PostgreSQL is installed, runs in process against a throwaway
// server started by the test: after a snapshot and a stream of inserts,
// updates and deletes, the mirror tables equal the source tables and the
// history tables hold every change once.
package postgrestoiceberg_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connectors/iceberg"
	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/internal/exampletest"
	"github.com/tributary-io/tributary/internal/pgtest"
	tlog "github.com/tributary-io/tributary/log"
	"github.com/tributary-io/tributary/pipelines"
)

func load(t *testing.T, env map[string]string) *pipelines.Pipeline {
	t.Helper()
	return exampletest.Load(t, "pipeline.yaml", env, postgres.Connector(), iceberg.Connector())
}

func TestExample_Validate(t *testing.T) {
	p := load(t, map[string]string{"PG_DSN": "postgres://tributary:s3cret@db:5432/shop"})
	if len(p.Sources) != 1 || len(p.Sinks) != 2 {
		t.Fatalf("%d sources, %d sinks; want 1 and 2", len(p.Sources), len(p.Sinks))
	}
	modes := map[string]string{}
	for _, s := range p.Sinks {
		modes[s.Name] = s.Config["mode"]
	}
	if modes["shop-mirror"] != "upsert" || modes["shop-history"] != "append" {
		t.Errorf("modes %v", modes)
	}
	if masked := fmt.Sprint(p.Masked()); strings.Contains(masked, "s3cret") {
		t.Errorf("the masked pipeline shows the password: %s", masked)
	}
}

// The source tables, before the pipeline starts (read by the snapshot).
const setup = `
CREATE TABLE customers (id int PRIMARY KEY, email text NOT NULL, name text,
  created_at timestamptz NOT NULL DEFAULT '2026-01-02 03:04:05.123456+00');
CREATE TABLE orders (id bigint PRIMARY KEY, customer_id int NOT NULL, total numeric(10,2),
  status text NOT NULL DEFAULT 'new', created_at timestamptz NOT NULL DEFAULT now());
INSERT INTO customers (id, email, name) VALUES (1, 'ada@example.org', 'Ada Lovelace'),
  (2, 'grace@example.org', 'Grace Hopper'), (3, 'alan@example.org', NULL);
INSERT INTO orders (id, customer_id, total) VALUES (1, 1, 12.30), (2, 2, 5.00);
`

// The changes streamed after the snapshot: 6 change events.
var changes = []string{
	`INSERT INTO orders (id, customer_id, total) VALUES (3, 3, 1234.56)`,
	`UPDATE customers SET name = 'Ada King' WHERE id = 1`,
	`DELETE FROM customers WHERE id = 2`,
	`BEGIN; UPDATE orders SET status = 'paid' WHERE id = 1; UPDATE orders SET total = 99.95 WHERE id = 1; COMMIT`,
	`DELETE FROM orders WHERE id = 2`,
}

// startShop starts a throwaway server with the database shop set up, and
// returns its DSN and a connection to it.
func startShop(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	dsn := pgtest.Start(t, pgtest.Logical...).DSN
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "CREATE DATABASE shop"); err != nil {
		t.Fatal(err)
	}
	db, err := pgx.Connect(ctx, dsn("shop"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	if _, err := db.Exec(ctx, setup); err != nil {
		t.Fatal(err)
	}
	return dsn("shop"), db
}

func TestExample_Runs(t *testing.T) {
	ctx := t.Context()
	dsn, db := startShop(t)
	dir := t.TempDir()
	p := load(t, map[string]string{"TRIBUTARY_DATA_DIR": dir, "PG_DSN": dsn})
	run := exampletest.Run(t, p, postgres.Connector(), iceberg.Connector())
	// The snapshot's 5 rows first, so that the changes are streamed.
	waitRecords(t, run.Log, 5)
	for _, q := range changes {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// 11 change events and 2 tombstones, all committed by both sinks.
	waitRecords(t, run.Log, 13)
	for _, group := range []string{"shop-mirror", "shop-history"} {
		exampletest.WaitFor(t, 30*time.Second, "sink "+group+" catches up", func() error { return run.CaughtUp(group, 13) })
	}
	run.Shutdown()

	cat := exampletest.IcebergCatalog(t, filepath.Join(dir, "iceberg", "catalog.db"))
	// The mirror equals the source tables, column by column.
	for _, tc := range []struct{ table, query string }{
		{"customers", `SELECT id::text, email, coalesce(name, '<null>'), (extract(epoch FROM created_at) * 1000000)::bigint::text FROM customers ORDER BY id`},
		{"orders", `SELECT id::text, customer_id::text, total::text, status, (extract(epoch FROM created_at) * 1000000)::bigint::text FROM orders ORDER BY id`},
	} {
		want := queryRows(t, db, tc.query)
		cols := []string{"id", "email", "name", "created_at"}
		if tc.table == "orders" {
			cols = []string{"id", "customer_id", "total", "status", "created_at"}
		}
		tbl := exampletest.IcebergTable(t, cat, "shop."+tc.table)
		got := exampletest.IcebergRows(t, tbl, cols...)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("mirror shop.%s\n got %v\nwant %v", tc.table, got, want)
		}
		t.Logf("mirror shop.%s: %v; schema %s", tc.table, got, tbl.Schema())
	}
	// The history holds every change once: snapshot reads, then the stream.
	for _, tc := range []struct {
		table string
		want  []string
	}{
		{"customers", []string{"1 r false", "1 u false", "2 d true", "2 r false", "3 r false"}},
		{"orders", []string{"1 r false", "1 u false", "1 u false", "2 d true", "2 r false", "3 c false"}},
	} {
		got := exampletest.IcebergRows(t, exampletest.IcebergTable(t, cat, "shop_history."+tc.table), "id", "__op", "__deleted")
		var flat []string
		for _, r := range got {
			flat = append(flat, strings.Join(r, " "))
		}
		slices.Sort(flat)
		if fmt.Sprint(flat) != fmt.Sprint(tc.want) {
			t.Errorf("history shop_history.%s\n got %v\nwant %v", tc.table, flat, tc.want)
		}
	}
}

// waitRecords waits until the two topics hold n records.
func waitRecords(t *testing.T, l *tlog.Log, n int64) {
	t.Helper()
	exampletest.WaitFor(t, 30*time.Second, fmt.Sprintf("the topics hold %d records", n), func() error {
		var total int64
		for _, topic := range []string{"shop.public.customers", "shop.public.orders"} {
			parts, err := l.Partitions(topic)
			if err != nil {
				continue
			}
			for p := range int32(parts) {
				if _, end, err := l.Offsets(topic, p); err == nil {
					total += end
				}
			}
		}
		if total < n {
			return fmt.Errorf("they hold %d", total)
		}
		return nil
	})
}

func queryRows(t *testing.T, db *pgx.Conn, q string) [][]string {
	t.Helper()
	rows, err := db.Query(t.Context(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out [][]string
	for rows.Next() {
		vals, err := rows.Values()
		if err != nil {
			t.Fatal(err)
		}
		r := make([]string, len(vals))
		for i, v := range vals {
			r[i] = fmt.Sprint(v)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExample_TruncateSkipped: a TRUNCATE of a captured table emits
// nothing by default (skipped.operations=t): its event has no key, which
// the example's compacted topics refuse, so the task would retry it
// forever and nothing after it would arrive.
func TestExample_TruncateSkipped(t *testing.T) {
	ctx := t.Context()
	dsn, db := startShop(t)
	p := load(t, map[string]string{"TRIBUTARY_DATA_DIR": t.TempDir(), "PG_DSN": dsn})
	run := exampletest.Run(t, p, postgres.Connector(), iceberg.Connector())
	waitRecords(t, run.Log, 5) // the snapshot
	for _, q := range []string{`TRUNCATE orders`, `INSERT INTO orders (id, customer_id, total) VALUES (10, 1, 1.00)`} {
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// The insert after the truncate arrives.
	waitRecords(t, run.Log, 6)
	run.Shutdown()
}

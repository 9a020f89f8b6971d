package iceberg

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/postgres"
	"github.com/tributary-io/tributary/internal/cdctest"
	"github.com/tributary-io/tributary/internal/pgtest"
)

// Real Postgres change events (the Postgres source on a throwaway server)
// into an upsert table: an update that leaves a TOASTed text and bytea
// unchanged keeps their values, timestamptz infinity and numeric NaN
// become null, and a truncate empties the mirror.
func TestSink_Upsert_FromPostgresSource(t *testing.T) {
	pg, exec := startShop(t)
	ctx := t.Context()
	// EXTERNAL storage: large values go out of line uncompressed, so
	// repeated text is TOASTed too.
	exec(`CREATE TABLE docs (id int PRIMARY KEY, t text, big text, blob bytea, ts timestamptz, amount numeric(10,2));
ALTER TABLE docs ALTER big SET STORAGE EXTERNAL, ALTER blob SET STORAGE EXTERNAL;
INSERT INTO docs VALUES (29, 'S', repeat('x', 9000), decode(repeat('ab', 9000), 'hex'), '2026-01-02 03:04:05+00', 1.50);`)

	values := map[string]string{"dsn": pg.DSN("shop"), "tables": "public.docs", "schemas": "true",
		"heartbeat.interval": "0", "slot": "iceberg_test", "topic.prefix": "shop"}
	for _, p := range postgres.Connector().Spec.Params {
		if p.Name == "skipped.operations" {
			values[p.Name] = "none" // the test needs the truncates
		}
	}
	src := postgres.Connector().NewSource()
	cfg := connect.Config{Pipeline: "p", Connector: "shop", Values: values, Spec: postgres.Connector().Spec}
	if err := src.Open(ctx, cfg); err != nil {
		t.Fatalf("open the source: %v", err)
	}
	t.Cleanup(func() { src.Close(context.Background()) })

	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false", "schema": "amount decimal(10,2)"})
	s := e.open(t)
	offset := int64(0)
	// deliver reads n change events (tombstones and other records pass
	// too) and writes them to the sink, as the worker would.
	deliver := func(n int) []connect.Record {
		t.Helper()
		count := func(recs []connect.Record) int {
			c := 0
			for _, r := range recs {
				if r.Value != nil && strings.Contains(string(r.Value), `"op"`) {
					c++
				}
			}
			return c
		}
		recs := cdctest.ReadUntil(t, src, 60*time.Second, func(r []connect.Record) bool { return count(r) >= n })
		for i := range recs {
			recs[i].Partition, recs[i].Offset = 0, offset
			offset++
		}
		write(t, s, recs...)
		flush(t, s)
		return recs
	}
	rows := func() string {
		var out []string
		for _, r := range e.rows(t, "public.docs", "id") {
			big, _ := r["big"].(string)
			blob, _ := r["blob"].([]byte)
			out = append(out, fmt.Sprintf("%v:%v:big=%d×%.1s:blob=%d:ts=%v:amount=%v", r["id"], r["t"], len(big), big, len(blob), r["ts"] != nil, r["amount"]))
		}
		return strings.Join(out, " ")
	}
	deliver(1) // the snapshot's row

	// A new task (nothing buffered): the unchanged values come from the table.
	s = e.open(t)
	exec(`UPDATE docs SET t = 'S2' WHERE id = 29`)
	// Within one commit: from the buffered row.
	exec(`INSERT INTO docs VALUES (30, 'T1', repeat('y', 9000), decode(repeat('cd', 9000), 'hex'), 'infinity', 'NaN')`)
	exec(`UPDATE docs SET t = 'T2' WHERE id = 30`)
	recs := deliver(3)
	// The source did send placeholders (text and bytea), else this tests nothing.
	var placeholders int
	for _, r := range recs {
		placeholders += strings.Count(string(r.Value), connect.UnavailableValue)
		placeholders += strings.Count(string(r.Value), base64.StdEncoding.EncodeToString([]byte(connect.UnavailableValue)))
	}
	if placeholders != 4 {
		t.Fatalf("the updates carry %d placeholders, want 4 (big and blob of two updates):\n%s", placeholders, cdctest.Dump(recs))
	}
	if got, want := rows(), "29:S2:big=9000×x:blob=9000:ts=true:amount=1.5 30:T2:big=9000×y:blob=9000:ts=false:amount=<nil>"; got != want {
		t.Errorf("after the updates:\n got %s\nwant %s", got, want)
	}

	exec(`TRUNCATE docs`)
	exec(`INSERT INTO docs (id, t) VALUES (31, 'U')`)
	deliver(2)
	if got, want := rows(), "31:U:big=0×:blob=0:ts=false:amount=<nil>"; got != want {
		t.Errorf("after the truncate:\n got %s\nwant %s", got, want)
	}
}

// An update that leaves unchanged a TOASTed column whose type cannot hold
// the unavailable-value placeholder (a real[] embedding, a numeric under
// decimal.handling.mode=precise) carries null for it, as Debezium writes
// it; the source names such columns in a header, and the sink keeps their
// values instead of writing null over them.
func TestSink_Upsert_FromPostgresSource_UnavailableNulls(t *testing.T) {
	pg, exec := startShop(t)
	ctx := t.Context()
	// toast_tuple_target 128, EXTERNAL storage and a PLAIN pad that
	// stays inline: once the embedding makes a row large, the numeric
	// goes out of line too.
	const amount = "1.2345678901234567890123456789012345678"
	exec(`CREATE TABLE emb (id int PRIMARY KEY, t text, vec real[], amount numeric(38,37), pad text DEFAULT repeat('p', 120)) WITH (toast_tuple_target = 128);
ALTER TABLE emb ALTER vec SET STORAGE EXTERNAL, ALTER amount SET STORAGE EXTERNAL, ALTER pad SET STORAGE PLAIN;
INSERT INTO emb SELECT 1, 'a', array_agg(i / 1000.0)::real[], ` + amount + ` FROM generate_series(1, 1536) i;`)

	src := postgres.Connector().NewSource()
	cfg := connect.Config{Pipeline: "p", Connector: "shop", Spec: postgres.Connector().Spec, Values: map[string]string{
		"dsn": pg.DSN("shop"), "tables": "public.emb", "schemas": "true", "heartbeat.interval": "0",
		"slot": "iceberg_test", "topic.prefix": "shop", "decimal.handling.mode": "precise"}}
	if err := src.Open(ctx, cfg); err != nil {
		t.Fatalf("open the source: %v", err)
	}
	t.Cleanup(func() { src.Close(context.Background()) })

	e := newEnv(t, map[string]string{"mode": "upsert", "metadata.columns": "false"})
	s := e.open(t)
	offset := int64(0)
	deliver := func(n int) []connect.Record {
		t.Helper()
		recs := cdctest.ReadUntil(t, src, 60*time.Second, func(r []connect.Record) bool { return len(r) >= n })
		for i := range recs {
			recs[i].Partition, recs[i].Offset = 0, offset
			offset++
		}
		write(t, s, recs...)
		flush(t, s)
		return recs
	}
	rows := func() string {
		var out []string
		for _, r := range e.rows(t, "public.emb", "id") {
			vec, _ := r["vec"].(string)
			out = append(out, fmt.Sprintf("%v:%v:vec=%d:amount=%v", r["id"], r["t"], strings.Count(vec, ",")+1, r["amount"]))
		}
		return strings.Join(out, " ")
	}
	deliver(1) // the snapshot's row
	before := rows()
	if want := "1:a:vec=1536:amount=" + amount; before != want {
		t.Fatalf("after the snapshot:\n got %s\nwant %s", before, want)
	}

	// A new task (nothing buffered): the values come from the table.
	s = e.open(t)
	exec(`UPDATE emb SET t = 'b' WHERE id = 1`)
	// Within one batch: from the buffered row.
	exec(`INSERT INTO emb SELECT 2, 'c', array_agg(i / 1000.0)::real[], ` + amount + ` FROM generate_series(1, 1536) i`)
	exec(`UPDATE emb SET t = 'd' WHERE id = 2`)
	recs := deliver(3)
	// The updates do carry null for both columns, else this tests
	// nothing, and name them in the header.
	var nulls int
	for _, r := range recs {
		if strings.Contains(string(r.Value), `"op":"u"`) {
			nulls += strings.Count(string(r.Value), `"vec":null`) + strings.Count(string(r.Value), `"amount":null`)
			if h, _ := r.Header(connect.UnavailableColumnsHeader); string(h) != `["vec","amount"]` {
				t.Errorf("an update's header %s = %q, want [\"vec\",\"amount\"]", connect.UnavailableColumnsHeader, h)
			}
		}
	}
	if nulls != 4 {
		t.Fatalf("the updates carry %d nulls for vec and amount, want 4", nulls)
	}
	if got, want := rows(), "1:b:vec=1536:amount="+amount+" 2:d:vec=1536:amount="+amount; got != want {
		t.Errorf("after the updates:\n got %s\nwant %s", got, want)
	}
}

// startShop starts a throwaway Postgres with logical replication and a
// database shop, and returns it with a function that runs a statement
// there (failing the test on an error).
func startShop(t *testing.T) (*pgtest.Server, func(q string)) {
	t.Helper()
	pg := pgtest.Start(t, pgtest.Logical...)
	pg.CreateDB(t, "shop")
	ctx := t.Context()
	db, err := pgx.Connect(ctx, pg.DSN("shop"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close(context.Background()) })
	return pg, func(q string) {
		t.Helper()
		if _, err := db.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

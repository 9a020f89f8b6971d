package iceberg

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/internal/pgtest"
)

// keyed makes an upsert record: key {"id":id}, a JSON value.
func keyed(topic string, partition int32, offset int64, id int, value string) connect.Record {
	r := rec(topic, partition, offset, value)
	r.Key = fmt.Appendf(nil, `{"id":%d}`, id)
	return r
}

// The SQL catalog on a real PostgreSQL server (started by the test): the
// sink creates its tables there, an independent catalog on the same
// database reads them back; the server going down fails the commit with a
// clear error and leaves the committed data intact; once it is back, a
// restarted sink, fed the same records again by the worker, writes each
// once.
func TestSink_PostgresCatalog(t *testing.T) {
	pg := pgtest.Start(t)
	pg.CreateDB(t, "lake")
	e := newEnv(t, map[string]string{"catalog.uri": pg.DSN("lake"), "mode": "upsert", "metadata.columns": "false"})
	s := e.open(t)
	batch := []connect.Record{
		keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`),
		keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`),
		keyed("shop.public.items", 0, 2, 1, `{"id":1,"name":"a2"}`),
	}
	write(t, s, batch[:2]...)
	flush(t, s)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a"},{"id":2,"name":"b"}]` {
		t.Fatalf("after the first commit the table holds %s", got)
	}
	var loc string
	conn, err := pgx.Connect(t.Context(), pg.DSN("lake"))
	if err != nil {
		t.Fatal(err)
	}
	err = conn.QueryRow(t.Context(), `SELECT metadata_location FROM iceberg_tables WHERE catalog_name = 'tributary' AND table_namespace = 'public' AND table_name = 'items'`).Scan(&loc)
	conn.Close(context.Background())
	if err != nil || !strings.HasPrefix(loc, "file://"+e.dir) {
		t.Fatalf("the catalog's row for public.items: location %q, %v", loc, err)
	}

	// The catalog goes down between two commits.
	pg.Stop()
	write(t, s, batch[2])
	err = s.Flush(t.Context())
	if err == nil || !strings.Contains(err.Error(), "commit table public.items") {
		t.Fatalf("Flush with the catalog down = %v, want a commit error naming the table", err)
	}
	t.Logf("catalog down: %v", err)
	if err := s.Write(t.Context(), batch[2:]); err == nil {
		t.Error("Write after a failed commit succeeded; the task must restart")
	}

	// It comes back; the task restarts, and the worker redelivers from its
	// last committed offset (here: all three records).
	pg.Start(t)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a"},{"id":2,"name":"b"}]` {
		t.Fatalf("after the failed commit the table holds %s, want the committed rows", got)
	}
	s2 := e.open(t)
	write(t, s2, batch...)
	flush(t, s2)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a2"},{"id":2,"name":"b"}]` {
		t.Fatalf("after the restart the table holds %s", got)
	}
	tbl := e.table(t, "public.items")
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2: the redelivered records at or below the stored offsets are skipped", n)
	}
}

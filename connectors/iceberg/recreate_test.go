package iceberg

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/rest"
	tlog "github.com/tributary-io/tributary/log"
)

// restCall calls a worker's REST API and returns the status and body.
func restCall(t *testing.T, srv *httptest.Server, method, path, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitFor polls cond until it holds, failing the test after a bound on a
// hang (not a speed check).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An Iceberg sink of a pipeline file that fails on a bad record has
// committed the records of the failed batch before it to its table (the
// worker's final flush) but not to its consumer group. The
// user deletes it over REST and creates it again with
// errors.tolerance=all to skip the bad record. It resumes from its
// group's offsets, so it reads the records the table already holds again:
// it must skip them, as the same sink restarted does, by the offsets its
// earlier incarnation stored in the table (tributary.offsets.shop.lake),
// not write them twice under an identity of its own.
func TestSink_RecreatedOverREST_KeepsItsIdentity_NoDuplicates(t *testing.T) {
	logger := slog.New(slog.DiscardHandler)
	l, err := tlog.Open(tlog.Options{Dir: t.TempDir(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	b := engine.NewEmbedded(l, logger)
	w, err := engine.NewWorker(t.Context(), engine.Options{Backend: b, Connectors: connect.Default(), Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.New(w, l, "test", logger))
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		w.Shutdown(ctx)
	})
	if err := l.CreateTopic("orders", 1, nil); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, nil)
	produce := func(from, to int64, bad int64) {
		t.Helper()
		var recs []connect.Record
		for o := from; o <= to; o++ {
			v := fmt.Sprintf(`{"id":%d}`, o)
			if o == bad {
				v = `not json`
			}
			recs = append(recs, connect.Record{Topic: "orders", Partition: 0, Value: []byte(v)})
		}
		if err := b.Produce(t.Context(), recs); err != nil {
			t.Fatal(err)
		}
	}
	rows := func() int { return len(e.rows(t, "default.orders", "_offset")) }

	// The sink commits to its table from Write (commit.records), and the
	// worker commits its group after a flush (every 5 s, or when the task
	// ends).
	cfg := maps.Clone(e.values)
	cfg["mode"] = "append"
	cfg["commit.records"] = "1"
	if err := w.Start(t.Context(), engine.ConnectorSpec{Pipeline: "shop", Name: "lake", Kind: connect.KindSink, Connector: Name,
		Topics: []string{"orders"}, Config: cfg}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	produce(0, 9, -1)
	waitFor(t, "offsets 0 to 9 in the table", func() bool { return tableExists(t, e, "default.orders") && rows() == 10 })
	// One batch: 10 and 11, the bad record at 12, then 13 to 19.
	produce(10, 19, 12)
	waitFor(t, "the sink to fail on the bad record", func() bool {
		st, err := w.Status("lake")
		return err == nil && len(st.Tasks) > 0 && st.Tasks[0].State == engine.StateFailed
	})
	// The final flush of the failed task committed 10 and 11 to the table,
	// and to the group only the batch before.
	if got := rows(); got != 12 {
		t.Fatalf("the failed sink left %d rows in default.orders; want 12 (offsets 0 to 11, before the bad record)", got)
	}
	if code, body := restCall(t, srv, "GET", "/connectors/lake/offsets", ""); code != 200 || !strings.Contains(body, `"kafka_offset":10}`) {
		t.Fatalf("GET /connectors/lake/offsets = %d %s; want the group at offset 10 (the failed batch uncommitted)", code, body)
	}

	if code, body := restCall(t, srv, "DELETE", "/connectors/lake", ""); code != 204 {
		t.Fatalf("DELETE /connectors/lake = %d %s", code, body)
	}
	cfg["connector.class"] = Name
	cfg["topics"] = "orders"
	cfg["errors.tolerance"] = "all"
	body := `{"name":"lake","config":` + js(cfg) + `}`
	if code, body := restCall(t, srv, "POST", "/connectors", body); code != 201 {
		t.Fatalf("POST /connectors = %d %s", code, body)
	}
	waitFor(t, "the sink created again to commit its group to offset 20", func() bool {
		code, body := restCall(t, srv, "GET", "/connectors/lake/offsets", "")
		return code == 200 && strings.Contains(body, `"kafka_offset":20`)
	})

	count := map[string]int{}
	for _, row := range e.rows(t, "default.orders", "_offset") {
		count[fmt.Sprint(row["_offset"])]++
	}
	for o := range 20 {
		want := 1
		if o == 12 {
			want = 0
		}
		if got := count[fmt.Sprint(o)]; got != want {
			t.Errorf("offset %d is in default.orders %d times; want %d", o, got, want)
		}
	}
}

// tableExists says whether the environment's catalog has the table yet.
func tableExists(t *testing.T, e *env, name string) bool {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(e.dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cat, err := sqlcat.NewCatalog("tributary", db, sqlcat.SQLite, nil)
	if err != nil {
		return false // not created yet
	}
	ok, err := cat.CheckTableExists(t.Context(), catalog.ToIdentifier(strings.Split(name, ".")...))
	return err == nil && ok
}

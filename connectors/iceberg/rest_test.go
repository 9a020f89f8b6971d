package iceberg

import (
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg/internal/restfixture"
)

// startREST starts a REST catalog server for the test, with OAuth2 client
// credentials, a path prefix and a required header, and returns an
// environment whose sink uses it.
func startREST(t *testing.T, o restfixture.Options, values map[string]string) (*restfixture.Server, *env) {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	srv, err := restfixture.Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	v := map[string]string{"catalog.type": "rest", "catalog.uri": srv.URL}
	if o.ClientID != "" {
		v["catalog.credential"] = o.ClientID + ":" + o.ClientSecret
	}
	if o.Token != "" {
		v["catalog.token"] = o.Token
	}
	for k, x := range values {
		v[k] = x
	}
	e := newEnv(t, v)
	e.load = func(t *testing.T, ident table.Identifier) *table.Table {
		t.Helper()
		tbl, err := srv.Catalog().LoadTable(t.Context(), ident)
		if err != nil {
			t.Fatalf("load table %v from the REST server's store: %v", ident, err)
		}
		return tbl
	}
	return srv, e
}

// Through a REST catalog (OAuth2 client credentials, a prefix, an extra
// header): append with restarts that redeliver records (each once), a
// column added mid-stream, and an upsert table fed random changes.
func TestSink_REST_AppendAndUpsert_ExactlyOnce(t *testing.T) {
	srv, e := startREST(t, restfixture.Options{ClientID: "tributary", ClientSecret: "s3cret", Prefix: "lake",
		RequireHeaders: map[string]string{"X-Tenant": "acme"}},
		map[string]string{"catalog.headers": "X-Tenant=acme", "catalog.prefix": "lake", "commit.records": "1000000"})
	var recs []connect.Record
	for p := int32(0); p < 2; p++ {
		for o := int64(0); o < 20; o++ {
			v := fmt.Sprintf(`{"p":%d,"o":%d}`, p, o)
			if o >= 15 {
				v = fmt.Sprintf(`{"p":%d,"o":%d,"extra":"x%d"}`, p, o, o)
			}
			recs = append(recs, rec("web.clicks", p, o, v))
		}
	}
	s := e.open(t)
	write(t, s, recs[:25]...)
	flush(t, s)
	write(t, s, recs[25:30]...) // never flushed: lost in the "crash"
	s2 := e.open(t)
	write(t, s2, recs...)
	flush(t, s2)
	s3 := e.open(t)
	write(t, s3, recs[5:]...)
	flush(t, s3)

	got := e.rows(t, "web.clicks", "_offset")
	if len(got) != len(recs) {
		t.Fatalf("table has %d rows, want %d (each record once)", len(got), len(recs))
	}
	seen := map[string]bool{}
	for _, r := range got {
		k := fmt.Sprint(r["_partition"], "/", r["_offset"])
		if seen[k] {
			t.Errorf("record %s is in the table twice", k)
		}
		seen[k] = true
		o := r["_offset"].(int64)
		if want := any(nil); o >= 15 {
			if r["extra"] != fmt.Sprintf("x%d", o) {
				t.Errorf("row %v: extra = %v", r, r["extra"])
			}
		} else if r["extra"] != want {
			t.Errorf("row %v: extra = %v, want null", r, r["extra"])
		}
	}
	tbl := e.table(t, "web.clicks")
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2 (the third flush had nothing new)", n)
	}
	if v := tbl.CurrentSnapshot().Summary.Properties["tributary.offsets.p.lake"]; v != `{"web.clicks":{"0":19,"1":19}}` {
		t.Errorf("offsets in the snapshot summary = %s", v)
	}

	// Upsert through the same catalog.
	e.values["mode"] = "upsert"
	e.values["metadata.columns"] = "false"
	u := e.open(t)
	write(t, u,
		keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`),
		keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`),
		keyed("shop.public.items", 0, 2, 1, `{"id":1,"name":"a2"}`),
	)
	flush(t, u)
	tomb := keyed("shop.public.items", 0, 4, 2, "")
	write(t, u, keyed("shop.public.items", 0, 3, 3, `{"id":3,"name":"c"}`), tomb)
	flush(t, u)
	u2 := e.open(t) // redelivered from the start: all skipped
	write(t, u2, keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`), keyed("shop.public.items", 0, 5, 1, `{"id":1,"name":"a3"}`))
	flush(t, u2)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a3"},{"id":3,"name":"c"}]` {
		t.Errorf("upsert table holds %s", got)
	}
	if srv.Commits() < 5 {
		t.Errorf("the server saw %d commits, want at least 5", srv.Commits())
	}
}

// Two sinks (say two tasks) commit to one table through the REST catalog.
// Each commit asserts the snapshot it was built on (the server refuses a
// stale one with 409, and iceberg-go refreshes and commits again on top:
// restfixture's tests cover that); the sink reloads the table before each
// commit, so commits that follow another writer's are not stale, and both
// writers' rows and offsets survive.
func TestSink_REST_ConcurrentWriters(t *testing.T) {
	srv, e := startREST(t, restfixture.Options{Token: "t0ken"}, map[string]string{"table": "lake.events", "commit.records": "1000000"})
	open := func(name string) *Sink {
		s := Connector().NewSink().(*Sink)
		if err := s.Open(t.Context(), connect.Config{Pipeline: "p", Connector: name, Values: e.values, Spec: spec()}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close(t.Context()) })
		return s
	}
	a, b := open("a"), open("b")
	write(t, a, rec("ta", 0, 0, `{"w":"a","i":0}`))
	flush(t, a) // creates the table
	write(t, b, rec("tb", 0, 0, `{"w":"b","i":0}`))
	flush(t, b) // b loaded the table after a's commit: no conflict
	for i := int64(1); i <= 4; i++ {
		// Both write on top of what they last saw; the second is stale.
		write(t, a, rec("ta", 0, i, fmt.Sprintf(`{"w":"a","i":%d}`, i)))
		write(t, b, rec("tb", 0, i, fmt.Sprintf(`{"w":"b","i":%d}`, i)))
		flush(t, a)
		flush(t, b)
	}
	if srv.Conflicts() != 0 {
		t.Errorf("the server refused %d stale commits: the sink did not reload the table before committing", srv.Conflicts())
	}
	t.Logf("%d commits", srv.Commits())
	got := e.rows(t, "lake.events", "_topic")
	if len(got) != 10 {
		t.Fatalf("table has %d rows, want 10: %s", len(got), js(got))
	}
	// Each writer finds its own offsets (in the ancestors) after a restart.
	a2 := open("a")
	write(t, a2, rec("ta", 0, 4, `{"w":"a","i":4}`))
	if a2.pending != 0 {
		t.Errorf("a restarted writer buffered a record the table holds")
	}
}

// Wrong credentials, or a server that is not there, fail Open with a
// clear, retryable error that shows no secret.
func TestSink_REST_OpenErrors(t *testing.T) {
	_, e := startREST(t, restfixture.Options{ClientID: "tributary", ClientSecret: "s3cret"}, nil)
	e.values["catalog.credential"] = "tributary:wrong-secret"
	s := Connector().NewSink()
	err := s.Open(t.Context(), connect.Config{Connector: "x", Values: e.values, Spec: spec()})
	if err == nil || !connect.IsRetryable(err) || !strings.Contains(err.Error(), "catalog.credential") {
		t.Errorf("Open with a wrong secret = %v, want a retryable error pointing at catalog.credential", err)
	}
	if err != nil && strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("error %q shows the secret", err)
	}
	e.values["catalog.credential"] = ""
	e.values["catalog.token"] = "nope"
	if err := s.Open(t.Context(), connect.Config{Connector: "x", Values: e.values, Spec: spec()}); err == nil {
		t.Errorf("Open with a wrong token succeeded")
	} else {
		t.Logf("wrong token: %v", err)
	}
	for _, tc := range []struct{ uri, want string }{
		{"http://127.0.0.1:1", "connect to REST catalog"},
		{"ftp://x", "wants the REST endpoint"},
	} {
		values := map[string]string{"catalog.type": "rest", "catalog.uri": tc.uri}
		err := s.Open(t.Context(), connect.Config{Connector: "x", Values: values, Spec: spec()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%s) = %v, want %q", tc.uri, err, tc.want)
		}
	}
}

// The REST catalog going down between two commits fails the commit with a
// clear error and leaves the committed data intact; once it is back, a
// restarted sink writes each redelivered record once.
func TestSink_REST_CatalogDown(t *testing.T) {
	srv, e := startREST(t, restfixture.Options{}, map[string]string{"mode": "upsert", "metadata.columns": "false"})
	s := e.open(t)
	batch := []connect.Record{
		keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`),
		keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`),
		keyed("shop.public.items", 0, 2, 1, `{"id":1,"name":"a2"}`),
	}
	write(t, s, batch[:2]...)
	flush(t, s)
	srv.SetDown(true)
	write(t, s, batch[2])
	err := s.Flush(t.Context())
	if err == nil || !strings.Contains(err.Error(), "commit table public.items") {
		t.Fatalf("Flush with the catalog down = %v, want a commit error naming the table", err)
	}
	t.Logf("catalog down: %v", err)
	if err := s.Write(t.Context(), batch[2:]); err == nil {
		t.Error("Write after a failed commit succeeded; the task must restart")
	}
	srv.SetDown(false)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a"},{"id":2,"name":"b"}]` {
		t.Fatalf("after the failed commit the table holds %s, want the committed rows", got)
	}
	s2 := e.open(t)
	write(t, s2, batch...)
	flush(t, s2)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a2"},{"id":2,"name":"b"}]` {
		t.Fatalf("after the restart the table holds %s", got)
	}
	if n := len(e.table(t, "public.items").Metadata().Snapshots()); n != 2 {
		t.Errorf("%d snapshots, want 2", n)
	}
}

// Compaction and expiry go through the REST catalog too.
func TestSink_REST_Upkeep(t *testing.T) {
	_, e := startREST(t, restfixture.Options{}, map[string]string{"metadata.columns": "false", "compact.min.files": "2", "expire.older.than": "0s", "expire.retain.last": "1"})
	s := e.open(t)
	for i := range int64(3) {
		write(t, s, rec("a.b", 0, i, fmt.Sprintf(`{"i":%d}`, i)))
		flush(t, s)
	}
	cfg := connect.Config{Pipeline: "p", Connector: "lake", Values: e.values, Spec: spec()}
	res, err := Compact(t.Context(), cfg, "a.b")
	if err != nil || res.CompactedFiles != 3 || res.CompactionOutputFiles != 1 {
		t.Fatalf("Compact = %+v, %v; want 3 files into 1", res, err)
	}
	res, err = Expire(t.Context(), cfg, "a.b")
	if err != nil || res.ExpiredSnapshots != 3 {
		t.Fatalf("Expire = %+v, %v; want 3 snapshots expired", res, err)
	}
	if got := js(e.rows(t, "a.b", "i")); got != `[{"i":0},{"i":1},{"i":2}]` {
		t.Errorf("table holds %s", got)
	}
	if _, err := Compact(t.Context(), cfg, "a.missing"); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Compact of a missing table = %v", err)
	}
}

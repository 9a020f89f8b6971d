package iceberg

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/connectors/iceberg/internal/restfixture"
)

// s3Server is an S3-compatible server (gofakes3, in memory) with the
// bucket "lake".
type s3Server struct {
	endpoint string
	be       *s3mem.Backend
	handler  atomic.Pointer[http.Handler]
}

func startS3(t *testing.T) *s3Server {
	t.Helper()
	s := &s3Server{be: s3mem.New()}
	if err := s.be.CreateBucket("lake"); err != nil {
		t.Fatal(err)
	}
	h := gofakes3.New(s.be, gofakes3.WithoutVersioning()).Server()
	s.handler.Store(&h)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*s.handler.Load()).ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	s.endpoint = srv.URL
	return s
}

// failAll makes every request fail with 503 SlowDown.
func (s *s3Server) failAll() {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>down (test)</Message></Error>`)
	})
	s.handler.Store(&h)
}

// objects lists the keys under prefix in the bucket "lake".
func objects(t *testing.T, be *s3mem.Backend, prefix string) []string {
	t.Helper()
	p := gofakes3.NewPrefix(&prefix, nil)
	list, err := be.ListBucket("lake", &p, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range list.Contents {
		keys = append(keys, o.Key)
	}
	return keys
}

// A warehouse on S3-compatible storage: append (credentials from the
// environment) and upsert (credentials in the settings), restarts that
// redeliver records, read back with iceberg-go's scan from the bucket.
func TestSink_S3Warehouse_AppendAndUpsert(t *testing.T) {
	s3 := startS3(t)
	endpoint, be := s3.endpoint, s3.be
	t.Setenv("AWS_ACCESS_KEY_ID", "env-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "env-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	e := newEnv(t, map[string]string{"warehouse": "s3://lake/wh", "s3.endpoint": endpoint, "s3.region": "us-east-1", "commit.records": "1000000"})
	var recs []connect.Record
	for o := int64(0); o < 30; o++ {
		recs = append(recs, rec("web.clicks", int32(o%2), o/2, fmt.Sprintf(`{"o":%d}`, o)))
	}
	s := e.open(t)
	write(t, s, recs[:20]...)
	flush(t, s)
	write(t, s, recs[20:25]...) // never flushed
	s2 := e.open(t)
	write(t, s2, recs...)
	flush(t, s2)
	got := e.rows(t, "web.clicks", "o")
	if len(got) != len(recs) {
		t.Fatalf("table has %d rows, want %d", len(got), len(recs))
	}
	seen := map[any]bool{}
	for _, r := range got {
		if seen[r["o"]] {
			t.Errorf("row %v twice", r)
		}
		seen[r["o"]] = true
	}
	tbl := e.table(t, "web.clicks")
	if loc := tbl.Location(); !strings.HasPrefix(loc, "s3://lake/wh/web.db/clicks") {
		t.Errorf("table location %s, want under s3://lake/wh", loc)
	}
	if keys := objects(t, be, "wh/web.db/clicks/data/"); len(keys) != 2 {
		t.Errorf("%d data files in the bucket, want 2 (one per commit): %v", len(keys), keys)
	}

	// Upsert with the credentials in the settings, none in the environment.
	t.Setenv("AWS_ACCESS_KEY_ID", "")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "")
	e.values["mode"] = "upsert"
	e.values["metadata.columns"] = "false"
	e.values["s3.access.key.id"] = "cfg-key"
	e.values["s3.secret.access.key"] = "cfg-secret"
	e.values["s3.path.style"] = "true"
	u := e.open(t)
	write(t, u,
		keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`),
		keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`),
	)
	flush(t, u)
	write(t, u, keyed("shop.public.items", 0, 2, 1, `{"id":1,"name":"a2"}`), keyed("shop.public.items", 0, 3, 2, ""))
	flush(t, u)
	u2 := e.open(t)
	write(t, u2, keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`), keyed("shop.public.items", 0, 4, 3, `{"id":3,"name":"c"}`))
	flush(t, u2)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a2"},{"id":3,"name":"c"}]` {
		t.Errorf("upsert table holds %s", got)
	}
	if keys := objects(t, be, "wh/public.db/items/metadata/"); len(keys) < 4 {
		t.Errorf("metadata objects %v", keys)
	}
}

// The REST catalog with its warehouse on S3: the server writes metadata
// files to the bucket, the sink's data files go there too.
func TestSink_REST_S3Warehouse(t *testing.T) {
	s3 := startS3(t)
	endpoint, be := s3.endpoint, s3.be
	io := map[string]string{"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access-key-id": "k", "s3.secret-access-key": "s"}
	_, e := startREST(t, restfixture.Options{Warehouse: "s3://lake/rest", IOProps: io},
		map[string]string{"s3.endpoint": endpoint, "s3.region": "us-east-1", "s3.access.key.id": "k", "s3.secret.access.key": "s", "mode": "upsert", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s, keyed("shop.public.items", 0, 0, 1, `{"id":1,"name":"a"}`), keyed("shop.public.items", 0, 1, 2, `{"id":2,"name":"b"}`))
	flush(t, s)
	write(t, s, keyed("shop.public.items", 0, 2, 1, `{"id":1,"name":"a2"}`))
	flush(t, s)
	if got := js(e.rows(t, "public.items", "id")); got != `[{"id":1,"name":"a2"},{"id":2,"name":"b"}]` {
		t.Errorf("table holds %s", got)
	}
	if keys := objects(t, be, "rest/public.db/items/data/"); len(keys) < 2 {
		t.Errorf("data objects in the bucket: %v", keys)
	}
}

// S3 unreachable at commit time: a clear error, nothing committed, and
// the records land once after a restart.
func TestSink_S3Warehouse_Down(t *testing.T) {
	s3 := startS3(t)
	t.Setenv("AWS_MAX_ATTEMPTS", "1") // no SDK retries with backoff: fail at once
	e := newEnv(t, map[string]string{"warehouse": "s3://lake/wh", "s3.endpoint": s3.endpoint, "s3.region": "us-east-1",
		"s3.access.key.id": "k", "s3.secret.access.key": "s", "metadata.columns": "false"})
	s := e.open(t)
	write(t, s, rec("a.b", 0, 0, `{"i":0}`))
	flush(t, s)
	s3.failAll()
	write(t, s, rec("a.b", 0, 1, `{"i":1}`))
	err := s.Flush(t.Context())
	if err == nil || !strings.Contains(err.Error(), "a.b") {
		t.Fatalf("Flush with the bucket gone = %v, want an error naming the table", err)
	}
	t.Logf("S3 down: %v", err)
	if err := s.Write(t.Context(), []connect.Record{rec("a.b", 0, 2, `{"i":2}`)}); err == nil {
		t.Error("Write after a failed commit succeeded; the task must restart")
	}
	// S3 is back with the same bucket; the task restarts and the worker
	// redelivers everything.
	h := gofakes3.New(s3.be, gofakes3.WithoutVersioning()).Server()
	s3.handler.Store(&h)
	if got := js(e.rows(t, "a.b", "i")); got != `[{"i":0}]` {
		t.Fatalf("after the failed commit the table holds %s", got)
	}
	s2 := e.open(t)
	write(t, s2, rec("a.b", 0, 0, `{"i":0}`), rec("a.b", 0, 1, `{"i":1}`), rec("a.b", 0, 2, `{"i":2}`))
	flush(t, s2)
	if got := js(e.rows(t, "a.b", "i")); got != `[{"i":0},{"i":1},{"i":2}]` {
		t.Fatalf("after the restart the table holds %s", got)
	}
}

// Settings that do not fit together are refused at Open.
func TestSink_Open_S3AndRESTConfig(t *testing.T) {
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"warehouse": "s3:///x"}, "names no bucket"},
		{map[string]string{"warehouse": "gs://bucket/x"}, "s3://BUCKET/PREFIX"},
		{map[string]string{"s3.access.key.id": "k"}, "go together"},
		{map[string]string{"s3.session.token": "t"}, "needs s3.access.key.id"},
		{map[string]string{"s3.path.style": "maybe"}, "s3.path.style"},
		{map[string]string{"catalog.uri": "http://127.0.0.1:1"}, "set catalog.type: rest"},
		{map[string]string{"catalog.type": "rest", "catalog.uri": "http://x", "catalog.token": "a", "catalog.credential": "b"}, "both set"},
		{map[string]string{"catalog.type": "rest", "catalog.uri": "http://x", "catalog.headers": "X-A"}, "NAME=VALUE"},
	} {
		e := newEnv(t, tc.values)
		s := Connector().NewSink()
		err := s.Open(t.Context(), connect.Config{Connector: "x", Values: e.values, Spec: spec()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%v) = %v, want %q", tc.values, err, tc.want)
		}
		if err == nil {
			s.Close(t.Context())
		}
	}
}

package iceberg

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	"go.uber.org/goleak"

	"github.com/tributary-io/tributary/connect"
)

var update = flag.Bool("update", false, "rewrite generated docs")

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener lives until the DB is closed;
		// modernc's sqlite keeps none. Arrow's and iceberg-go's pools are
		// process-wide.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"),
	)
}

// env is a catalog and warehouse in a test's temporary directory.
type env struct {
	dir    string
	values map[string]string
	// load, when set, loads a table instead of the SQL catalog catalog.uri
	// names (a REST catalog's backing store).
	load func(t *testing.T, ident table.Identifier) *table.Table
}

func newEnv(t *testing.T, values map[string]string) *env {
	t.Helper()
	dir := t.TempDir()
	v := map[string]string{
		"catalog.uri": "sqlite://" + filepath.Join(dir, "catalog.db"),
		"warehouse":   filepath.Join(dir, "warehouse"),
	}
	for k, x := range values {
		v[k] = x
	}
	return &env{dir: dir, values: v}
}

// open opens a new sink instance on the environment.
func (e *env) open(t *testing.T) *Sink {
	t.Helper()
	s := Connector().NewSink().(*Sink)
	if err := s.Open(t.Context(), connect.Config{Pipeline: "p", Connector: "lake", Values: e.values, Spec: spec()}); err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

func write(t *testing.T, s *Sink, recs ...connect.Record) {
	t.Helper()
	if err := s.Write(t.Context(), recs); err != nil {
		t.Fatalf("Write: %v", err)
	}
}

func flush(t *testing.T, s *Sink) {
	t.Helper()
	if err := s.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

// rec makes a record of topic/partition at offset with a JSON value.
func rec(topic string, partition int32, offset int64, value string) connect.Record {
	r := connect.Record{Topic: topic, Partition: partition, Offset: offset,
		Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(offset) * time.Second)}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

// table opens the environment's catalog (the SQLite file, or the Postgres
// database catalog.uri names) independently of any sink and loads a table.
func (e *env) table(t *testing.T, name string) *table.Table {
	t.Helper()
	if e.load != nil {
		return e.load(t, catalog.ToIdentifier(strings.Split(name, ".")...))
	}
	driver, dsn, dialect := "sqlite", filepath.Join(e.dir, "catalog.db"), sqlcat.SQLite
	if uri := e.values["catalog.uri"]; strings.HasPrefix(uri, "postgres://") {
		driver, dsn, dialect = "pgx", uri, sqlcat.Postgres
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// The same S3 settings as the sink's (credentials may come from the
	// environment).
	props, err := s3Props(e.values["s3.endpoint"], e.values["s3.region"], e.values["s3.path.style"],
		e.values["s3.access.key.id"], e.values["s3.secret.access.key"], e.values["s3.session.token"])
	if err != nil {
		t.Fatal(err)
	}
	cat, err := sqlcat.NewCatalog("tributary", db, dialect, props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(t.Context(), catalog.ToIdentifier(strings.Split(name, ".")...))
	if err != nil {
		t.Fatalf("load table %s: %v", name, err)
	}
	return tbl
}

// rows scans a table with iceberg-go and returns its rows as JSON-ish maps,
// sorted by the given column's text.
func (e *env) rows(t *testing.T, name, sortBy string) []map[string]any {
	t.Helper()
	return scanRows(t, e.table(t, name), sortBy)
}

// scanRows scans a table with iceberg-go and returns its rows as JSON-ish
// maps, sorted by the given column's text.
func scanRows(t *testing.T, tbl *table.Table, sortBy string) []map[string]any {
	t.Helper()
	name := strings.Join(tbl.Identifier(), ".")
	at, err := tbl.Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatalf("scan %s: %v", name, err)
	}
	defer at.Release()
	var out []map[string]any
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rb := tr.RecordBatch()
		for i := 0; i < int(rb.NumRows()); i++ {
			m := map[string]any{}
			for c := 0; c < int(rb.NumCols()); c++ {
				col := rb.Column(c)
				if col.IsNull(i) {
					m[rb.ColumnName(c)] = nil
					continue
				}
				m[rb.ColumnName(c)] = col.GetOneForMarshal(i)
			}
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return fmt.Sprint(out[i][sortBy]) < fmt.Sprint(out[j][sortBy]) })
	return out
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

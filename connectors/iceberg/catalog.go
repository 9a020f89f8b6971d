package iceberg

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for the SQL catalog on Postgres
	_ "modernc.org/sqlite"             // database/sql driver "sqlite" (pure Go) for the embedded catalog
)

// catalogConfig is what openCatalog needs.
type catalogConfig struct {
	typ       string // "sql"
	uri       string // sqlite://path, postgres://…
	name      string // the catalog's name (the catalog_name column of the SQL catalog)
	warehouse string // file:///abs/path (resolved by resolveWarehouse)
}

// openCatalog opens the catalog. It creates a SQLite file's directory.
func openCatalog(ctx context.Context, cc catalogConfig) (catalog.Catalog, error) {
	props := ib.Properties{"warehouse": cc.warehouse}
	switch cc.typ {
	case "sql":
	case "rest":
		return nil, errors.New("catalog.type rest is not built in yet: use catalog.type sql with a SQLite file or Postgres")
	default:
		return nil, fmt.Errorf("catalog.type %q: want sql or rest", cc.typ)
	}
	driver, dsn, dialect, err := sqlDSN(cc.uri)
	if err != nil {
		return nil, err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, fmt.Errorf("open catalog %s: %w", redactURI(cc.uri), err)
	}
	if dialect == sqlcat.SQLite {
		// One connection: SQLite serializes writers anyway, and a single
		// connection keeps "database is locked" out of commits.
		db.SetMaxOpenConns(1)
	}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to catalog %s: %w", redactURI(cc.uri), err)
	}
	cat, err := sqlcat.NewCatalog(cc.name, db, dialect, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("open catalog %s: %w", redactURI(cc.uri), err)
	}
	return &sqlCatalog{Catalog: cat, db: db}, nil
}

// sqlCatalog closes the database handle the catalog was given.
type sqlCatalog struct {
	*sqlcat.Catalog
	db *sql.DB
}

func (c *sqlCatalog) Close() error {
	return errors.Join(c.Catalog.Close(), c.db.Close())
}

// sqlDSN turns catalog.uri into a database/sql driver, DSN and dialect.
func sqlDSN(uri string) (driver, dsn string, dialect sqlcat.SupportedDialect, err error) {
	switch {
	case strings.HasPrefix(uri, "sqlite://"):
		path := strings.TrimPrefix(uri, "sqlite://")
		if path == "" {
			return "", "", "", fmt.Errorf("catalog.uri %q names no file; e.g. sqlite://./data/iceberg/catalog.db", uri)
		}
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", "", "", fmt.Errorf("catalog.uri %q: %w", uri, err)
		}
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			return "", "", "", fmt.Errorf("create the directory of catalog %s: %w", abs, err)
		}
		// WAL and a busy timeout, on every pooled connection.
		return "sqlite", "file:" + abs + "?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)", sqlcat.SQLite, nil
	case strings.HasPrefix(uri, "postgres://"), strings.HasPrefix(uri, "postgresql://"):
		return "pgx", uri, sqlcat.Postgres, nil
	}
	return "", "", "", fmt.Errorf("catalog.uri %q: want sqlite://PATH or postgres://USER@HOST/DB for catalog.type sql", redactURI(uri))
}

// resolveWarehouse turns the warehouse setting into a URL: a plain or
// relative path, or a file:// URL, becomes an absolute file:// URL (the
// directory is created); s3:// is passed on.
func resolveWarehouse(w string) (string, error) {
	if strings.HasPrefix(w, "s3://") || strings.HasPrefix(w, "s3a://") {
		return "", fmt.Errorf("warehouse %q: S3 warehouses are not built in yet; use a local path", w)
	}
	path := strings.TrimPrefix(w, "file://")
	if strings.Contains(path, "://") {
		return "", fmt.Errorf("warehouse %q: want a local path or file:// URL", w)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("warehouse %q: %w", w, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("create warehouse directory %s: %w", abs, err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// redactURI hides a password in a URI, for errors and logs.
func redactURI(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

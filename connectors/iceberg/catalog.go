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
	"github.com/apache/iceberg-go/catalog/rest"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	iceio "github.com/apache/iceberg-go/io"
	_ "github.com/apache/iceberg-go/io/gocloud/s3" // registers the s3, s3a and s3n schemes (S3 and S3-compatible stores only, not the other clouds)
	_ "github.com/jackc/pgx/v5/stdlib"             // database/sql driver "pgx" for the SQL catalog on Postgres
	_ "modernc.org/sqlite"                         // database/sql driver "sqlite" (pure Go) for the embedded catalog

	"github.com/tributary-io/tributary/connect"
)

// The catalog types.
const (
	catalogSQL  = "sql"
	catalogREST = "rest"
)

// catalogConfig is what openCatalog needs.
type catalogConfig struct {
	typ       string // "sql" or "rest"
	uri       string // sqlite://path, postgres://…, or the REST endpoint http(s)://…
	name      string // the catalog's name (the catalog_name column of the SQL catalog)
	warehouse string // sql: file:///abs/path or s3://bucket/prefix (resolved by resolveWarehouse)

	// REST catalog settings.
	restWarehouse string            // the warehouse the REST server is asked for (?warehouse=)
	credential    string            // OAuth2 client credentials, CLIENT_ID:SECRET or SECRET
	token         string            // a bearer token
	prefix        string            // the path prefix after /v1
	oauthURI      string            // the OAuth2 token endpoint; default {uri}/v1/oauth/tokens
	scope         string            // the OAuth2 scope; default catalog
	headers       map[string]string // extra HTTP headers on every request

	// io holds the file IO properties (s3.*) that iceberg-go reads when it
	// opens a table's files.
	io ib.Properties
}

// openCatalog opens the catalog. It creates a SQLite file's directory.
func openCatalog(ctx context.Context, cc catalogConfig) (catalog.Catalog, error) {
	switch cc.typ {
	case catalogSQL:
		return openSQLCatalog(ctx, cc)
	case catalogREST:
		return openRESTCatalog(ctx, cc)
	}
	return nil, fmt.Errorf("catalog.type %q: want sql or rest", cc.typ)
}

func openSQLCatalog(ctx context.Context, cc catalogConfig) (catalog.Catalog, error) {
	props := ib.Properties{"warehouse": cc.warehouse}
	for k, v := range cc.io {
		props[k] = v
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

// openRESTCatalog connects to an Iceberg REST catalog: it fetches the
// server's configuration (GET /v1/config) and, with catalog.credential,
// an OAuth2 token.
func openRESTCatalog(ctx context.Context, cc catalogConfig) (catalog.Catalog, error) {
	u, err := url.Parse(cc.uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("catalog.uri %q: catalog.type rest wants the REST endpoint, e.g. https://catalog.example.com or http://127.0.0.1:8181 (without /v1)", redactURI(cc.uri))
	}
	if cc.credential != "" && cc.token != "" {
		return nil, errors.New("catalog.credential and catalog.token are both set: use a token, or client credentials that fetch one, not both")
	}
	var opts []rest.Option
	if cc.restWarehouse != "" {
		opts = append(opts, rest.WithWarehouseLocation(cc.restWarehouse))
	}
	if cc.credential != "" {
		opts = append(opts, rest.WithCredential(cc.credential))
	}
	if cc.token != "" {
		opts = append(opts, rest.WithOAuthToken(cc.token))
	}
	if cc.prefix != "" {
		opts = append(opts, rest.WithPrefix(cc.prefix))
	}
	if cc.scope != "" {
		opts = append(opts, rest.WithScope(cc.scope))
	}
	if cc.oauthURI != "" {
		au, err := url.Parse(cc.oauthURI)
		if err != nil || au.Host == "" {
			return nil, fmt.Errorf("catalog.oauth2.server.uri %q: want the OAuth2 token endpoint's URL, e.g. https://auth.example.com/oauth/tokens", cc.oauthURI)
		}
		opts = append(opts, rest.WithAuthURI(au))
	}
	if len(cc.headers) > 0 {
		opts = append(opts, rest.WithHeaders(cc.headers))
	}
	if len(cc.io) > 0 {
		opts = append(opts, rest.WithAdditionalProps(cc.io))
	}
	cat, err := rest.NewCatalog(ctx, cc.name, strings.TrimSuffix(strings.TrimSuffix(cc.uri, "/"), "/v1"), opts...)
	if err != nil {
		hint := "check catalog.uri and that the server is up"
		switch {
		case errors.Is(err, rest.ErrOAuthError):
			hint = "the OAuth2 token endpoint refused catalog.credential: check the client id and secret, catalog.oauth2.server.uri and catalog.scope"
		case errors.Is(err, rest.ErrUnauthorized), errors.Is(err, rest.ErrForbidden):
			hint = "check catalog.credential or catalog.token"
		case errors.Is(err, rest.ErrRESTError) && cc.restWarehouse == "":
			hint = "check catalog.uri; a server hosting several warehouses needs catalog.warehouse"
		}
		return nil, fmt.Errorf("connect to REST catalog %s: %w (%s)", redactURI(cc.uri), err, hint)
	}
	return cat, nil
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
	case strings.HasPrefix(uri, "http://"), strings.HasPrefix(uri, "https://"):
		return "", "", "", fmt.Errorf("catalog.uri %q is a REST endpoint: set catalog.type: rest", redactURI(uri))
	}
	return "", "", "", fmt.Errorf("catalog.uri %q: want sqlite://PATH or postgres://USER@HOST/DB for catalog.type sql", redactURI(uri))
}

// resolveWarehouse turns the warehouse setting into a URL: a plain or
// relative path, or a file:// URL, becomes an absolute file:// URL (the
// directory is created); s3://bucket/prefix is passed on.
func resolveWarehouse(w string) (string, error) {
	if scheme, rest, ok := strings.Cut(w, "://"); ok && scheme != "file" {
		switch scheme {
		case "s3", "s3a", "s3n":
			bucket, _, _ := strings.Cut(rest, "/")
			if bucket == "" {
				return "", fmt.Errorf("warehouse %q names no bucket: write s3://BUCKET/PREFIX", w)
			}
			return strings.TrimSuffix(w, "/"), nil
		}
		return "", fmt.Errorf("warehouse %q: want a local path, a file:// URL or s3://BUCKET/PREFIX", w)
	}
	path := strings.TrimPrefix(w, "file://")
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("warehouse %q: %w", w, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return "", fmt.Errorf("create warehouse directory %s: %w", abs, err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// s3Props maps the sink's s3.* settings to iceberg-go's file IO
// properties. Unset settings are left out, so that the AWS SDK's default
// chain (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
// AWS_REGION, shared config files, instance roles) fills them in.
func s3Props(endpoint, region, pathStyle, keyID, secret, session string) (ib.Properties, error) {
	p := ib.Properties{}
	set := func(k, v string) {
		if v != "" {
			p[k] = v
		}
	}
	set(iceio.S3EndpointURL, endpoint)
	set(iceio.S3Region, region)
	set(iceio.S3AccessKeyID, keyID)
	set(iceio.S3SecretAccessKey, secret)
	set(iceio.S3SessionToken, session)
	switch pathStyle {
	case "", "auto":
	case "true":
		p[iceio.S3ForceVirtualAddressing] = "false"
	case "false":
		p[iceio.S3ForceVirtualAddressing] = "true"
	default:
		return nil, connect.FieldError{Param: "s3.path.style", Message: fmt.Sprintf("%q: want auto, true or false", pathStyle)}
	}
	if (keyID == "") != (secret == "") {
		return nil, connect.FieldError{Param: "s3.access.key.id", Message: "s3.access.key.id and s3.secret.access.key go together: set both, or neither to take AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY from the environment"}
	}
	if session != "" && keyID == "" {
		return nil, connect.FieldError{Param: "s3.session.token", Message: "needs s3.access.key.id and s3.secret.access.key; or leave all three unset to use the environment"}
	}
	return p, nil
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

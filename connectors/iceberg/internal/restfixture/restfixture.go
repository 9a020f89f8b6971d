// Package restfixture is an Apache Iceberg REST catalog server for tests:
// the endpoints of the Iceberg REST OpenAPI spec that iceberg-go's
// catalog/rest client uses, over HTTP on a loopback port, backed by
// iceberg-go's SQL catalog on a SQLite file.
//
// It is strict where exactly-once depends on it: a table commit (POST
// /v1/{prefix}/namespaces/{ns}/tables/{table}) is checked against every
// requirement the client sends (assert-ref-snapshot-id,
// assert-table-uuid, assert-current-schema-id, …) under one lock, and a
// failed requirement answers 409 CommitFailedException, as the spec says;
// the server writes the new metadata file and moves the table pointer
// only then. Requirements or updates it does not know answer 400.
//
// Served: GET /v1/config, POST /v1/oauth/tokens (client_credentials),
// namespaces (list, create, load, exists, drop), tables (list, create,
// load, exists, commit, drop). Not served: staged creates, views,
// multi-table transactions, scan planning, credential vending, metrics.
//
// Authentication: with Options.Token every request needs that bearer
// token; with Options.ClientID and ClientSecret, /v1/oauth/tokens issues
// a token for those credentials and every request needs it. With neither,
// requests need no token.
package restfixture

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite" // database/sql driver "sqlite"
)

// Options configure a Server.
type Options struct {
	// Dir holds the SQLite catalog file, and the warehouse unless
	// Warehouse is set. Required.
	Dir string
	// Warehouse is where tables go, e.g. s3://bucket/prefix; default
	// Dir/warehouse.
	Warehouse string
	// IOProps are iceberg-go file IO properties (s3.endpoint, …) the
	// server uses to write metadata files. They are not sent to clients.
	IOProps map[string]string
	// Prefix, when set, is announced in GET /v1/config's overrides and
	// every other path must start with /v1/{Prefix}/.
	Prefix string
	// Token is a bearer token every request must carry.
	Token string
	// ClientID and ClientSecret are the OAuth2 client credentials that
	// /v1/oauth/tokens accepts.
	ClientID, ClientSecret string
	// RequireHeaders are headers every request must carry with these
	// values (checked after authentication).
	RequireHeaders map[string]string
}

// Server is a running REST catalog. Close stops it.
type Server struct {
	// URL is the catalog's base URL (clients add /v1).
	URL string

	o    Options
	srv  *http.Server
	ln   net.Listener
	done chan struct{}
	db   *sql.DB
	cat  *sqlcat.Catalog

	commitMu sync.Mutex // serializes table commits, creates and drops

	tokMu  sync.Mutex
	tokens map[string]bool // issued OAuth2 tokens

	down      atomic.Bool
	commits   atomic.Int64
	conflicts atomic.Int64
}

// Start starts a server on a loopback port.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.Dir == "" {
		return nil, errors.New("restfixture: Options.Dir is required")
	}
	wh := o.Warehouse
	if wh == "" {
		wh = "file://" + filepath.ToSlash(filepath.Join(o.Dir, "warehouse"))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(o.Dir, "rest-catalog.db")+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return nil, fmt.Errorf("restfixture: open catalog database: %w", err)
	}
	db.SetMaxOpenConns(1)
	props := ib.Properties{"warehouse": wh}
	for k, v := range o.IOProps {
		props[k] = v
	}
	cat, err := sqlcat.NewCatalog("rest", db, sqlcat.SQLite, props)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("restfixture: open SQL catalog: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("restfixture: listen: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), o: o, ln: ln, db: db, cat: cat,
		tokens: map[string]bool{}, done: make(chan struct{})}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the server and closes the catalog.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	return errors.Join(err, s.cat.Close(), s.db.Close())
}

// SetDown makes every request answer 503 (down) or be served again.
func (s *Server) SetDown(down bool) { s.down.Store(down) }

// Commits is how many table commits succeeded; Conflicts how many were
// refused with 409 because a requirement failed.
func (s *Server) Commits() int64   { return s.commits.Load() }
func (s *Server) Conflicts() int64 { return s.conflicts.Load() }

// Catalog is the SQL catalog behind the server, for reading tables back
// independently of the REST client.
func (s *Server) Catalog() *sqlcat.Catalog { return s.cat }

// restError is the spec's ErrorModel inside {"error": …}.
type restError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	if v != nil {
		json.NewEncoder(w).Encode(v)
	}
}

func fail(w http.ResponseWriter, code int, typ, format string, args ...any) {
	writeJSON(w, code, map[string]restError{"error": {Message: fmt.Sprintf(format, args...), Type: typ, Code: code}})
}

// ServeHTTP routes a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.down.Load() {
		fail(w, http.StatusServiceUnavailable, "ServiceUnavailableException", "the catalog is down (test)")
		return
	}
	path := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(path, "/v1/")
	if !ok {
		fail(w, http.StatusNotFound, "NotFoundException", "no route %s", path)
		return
	}
	if rest == "oauth/tokens" && r.Method == http.MethodPost {
		s.issueToken(w, r)
		return
	}
	if !s.authorized(r) {
		fail(w, http.StatusUnauthorized, "NotAuthorizedException", "missing or wrong bearer token")
		return
	}
	for k, v := range s.o.RequireHeaders {
		if got := r.Header.Get(k); got != v {
			fail(w, http.StatusBadRequest, "BadRequestException", "header %s is %q, want %q", k, got, v)
			return
		}
	}
	if rest == "config" && r.Method == http.MethodGet {
		s.config(w)
		return
	}
	if s.o.Prefix != "" {
		if rest, ok = strings.CutPrefix(rest, s.o.Prefix+"/"); !ok {
			fail(w, http.StatusNotFound, "NotFoundException", "path %s lacks the prefix /v1/%s/", path, s.o.Prefix)
			return
		}
	}
	seg := strings.Split(rest, "/")
	for i := range seg {
		u, err := url.PathUnescape(seg[i])
		if err != nil {
			fail(w, http.StatusBadRequest, "BadRequestException", "path segment %q: %v", seg[i], err)
			return
		}
		seg[i] = u
	}
	ctx := r.Context()
	switch {
	case len(seg) == 1 && seg[0] == "namespaces":
		switch r.Method {
		case http.MethodGet:
			s.listNamespaces(ctx, w, r)
		case http.MethodPost:
			s.createNamespace(ctx, w, r)
		default:
			methodNotAllowed(w, r)
		}
	case len(seg) == 2 && seg[0] == "namespaces":
		ns := splitNamespace(seg[1])
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			props, err := s.cat.LoadNamespaceProperties(ctx, ns)
			if err != nil {
				s.catalogError(w, err)
				return
			}
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"namespace": ns, "properties": props})
		case http.MethodDelete:
			if err := s.cat.DropNamespace(ctx, ns); err != nil {
				s.catalogError(w, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, r)
		}
	case len(seg) == 3 && seg[0] == "namespaces" && seg[2] == "tables":
		ns := splitNamespace(seg[1])
		switch r.Method {
		case http.MethodGet:
			s.listTables(ctx, w, ns)
		case http.MethodPost:
			s.createTable(ctx, w, r, ns)
		default:
			methodNotAllowed(w, r)
		}
	case len(seg) == 4 && seg[0] == "namespaces" && seg[2] == "tables":
		ident := append(splitNamespace(seg[1]), seg[3])
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			tbl, err := s.cat.LoadTable(ctx, ident)
			if err != nil {
				s.catalogError(w, err)
				return
			}
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			s.writeTable(w, http.StatusOK, tbl.Metadata(), tbl.MetadataLocation())
		case http.MethodPost:
			s.commitTable(ctx, w, r, ident)
		case http.MethodDelete:
			s.commitMu.Lock()
			var err error
			if r.URL.Query().Get("purgeRequested") == "true" {
				err = s.cat.PurgeTable(ctx, ident)
			} else {
				err = s.cat.DropTable(ctx, ident)
			}
			s.commitMu.Unlock()
			if err != nil {
				s.catalogError(w, err)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			methodNotAllowed(w, r)
		}
	default:
		fail(w, http.StatusNotFound, "NotFoundException", "no route %s %s in this test server", r.Method, path)
	}
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	fail(w, http.StatusMethodNotAllowed, "BadRequestException", "method %s not allowed on %s", r.Method, r.URL.Path)
}

// splitNamespace splits a namespace path parameter at the unit separator
// (0x1F) the spec uses between levels.
func splitNamespace(s string) table.Identifier {
	s = strings.ReplaceAll(s, "%1F", "\x1f")
	return strings.Split(s, "\x1f")
}

func (s *Server) authorized(r *http.Request) bool {
	if s.o.Token == "" && s.o.ClientID == "" && s.o.ClientSecret == "" {
		return true
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || tok == "" {
		return false
	}
	if s.o.Token != "" && tok == s.o.Token {
		return true
	}
	s.tokMu.Lock()
	defer s.tokMu.Unlock()
	return s.tokens[tok]
}

// issueToken is the OAuth2 token endpoint, client_credentials grant.
func (s *Server) issueToken(w http.ResponseWriter, r *http.Request) {
	oauthErr := func(code int, e, desc string) {
		writeJSON(w, code, map[string]string{"error": e, "error_description": desc})
	}
	if err := r.ParseForm(); err != nil {
		oauthErr(http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	if g := r.PostForm.Get("grant_type"); g != "client_credentials" {
		oauthErr(http.StatusBadRequest, "unsupported_grant_type", "grant_type "+g)
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		id, secret = u, p
	}
	if s.o.ClientSecret == "" || id != s.o.ClientID || secret != s.o.ClientSecret {
		oauthErr(http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	b := make([]byte, 16)
	rand.Read(b)
	tok := hex.EncodeToString(b)
	s.tokMu.Lock()
	s.tokens[tok] = true
	s.tokMu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"access_token": tok, "token_type": "bearer", "expires_in": 3600,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token"})
}

// endpoints are the routes this server advertises in GET /v1/config.
var endpoints = []string{
	"GET /v1/{prefix}/namespaces",
	"POST /v1/{prefix}/namespaces",
	"GET /v1/{prefix}/namespaces/{namespace}",
	"HEAD /v1/{prefix}/namespaces/{namespace}",
	"DELETE /v1/{prefix}/namespaces/{namespace}",
	"GET /v1/{prefix}/namespaces/{namespace}/tables",
	"POST /v1/{prefix}/namespaces/{namespace}/tables",
	"GET /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"HEAD /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"POST /v1/{prefix}/namespaces/{namespace}/tables/{table}",
	"DELETE /v1/{prefix}/namespaces/{namespace}/tables/{table}",
}

func (s *Server) config(w http.ResponseWriter) {
	overrides := map[string]string{}
	if s.o.Prefix != "" {
		overrides["prefix"] = s.o.Prefix
	}
	writeJSON(w, http.StatusOK, map[string]any{"defaults": map[string]string{}, "overrides": overrides, "endpoints": endpoints})
}

func (s *Server) listNamespaces(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var parent table.Identifier
	if p := r.URL.Query().Get("parent"); p != "" {
		parent = splitNamespace(p)
	}
	nss, err := s.cat.ListNamespaces(ctx, parent)
	if err != nil {
		s.catalogError(w, err)
		return
	}
	if nss == nil {
		nss = []table.Identifier{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": nss})
}

func (s *Server) createNamespace(ctx context.Context, w http.ResponseWriter, r *http.Request) {
	var req struct {
		Namespace  table.Identifier `json:"namespace"`
		Properties ib.Properties    `json:"properties"`
	}
	if err := decode(r, &req); err != nil || len(req.Namespace) == 0 {
		fail(w, http.StatusBadRequest, "BadRequestException", "want {\"namespace\": [...], \"properties\": {...}}: %v", err)
		return
	}
	if err := s.cat.CreateNamespace(ctx, req.Namespace, req.Properties); err != nil {
		s.catalogError(w, err)
		return
	}
	if req.Properties == nil {
		req.Properties = ib.Properties{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespace": req.Namespace, "properties": req.Properties})
}

func (s *Server) listTables(ctx context.Context, w http.ResponseWriter, ns table.Identifier) {
	type ident struct {
		Namespace table.Identifier `json:"namespace"`
		Name      string           `json:"name"`
	}
	out := []ident{}
	for id, err := range s.cat.ListTables(ctx, ns) {
		if err != nil {
			s.catalogError(w, err)
			return
		}
		out = append(out, ident{Namespace: catalog.NamespaceFromIdent(id), Name: catalog.TableNameFromIdent(id)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"identifiers": out})
}

func (s *Server) createTable(ctx context.Context, w http.ResponseWriter, r *http.Request, ns table.Identifier) {
	var req struct {
		Name          string            `json:"name"`
		Schema        *ib.Schema        `json:"schema"`
		Location      string            `json:"location"`
		PartitionSpec *ib.PartitionSpec `json:"partition-spec"`
		WriteOrder    *table.SortOrder  `json:"write-order"`
		StageCreate   bool              `json:"stage-create"`
		Properties    ib.Properties     `json:"properties"`
	}
	if err := decode(r, &req); err != nil {
		fail(w, http.StatusBadRequest, "BadRequestException", "create table request: %v", err)
		return
	}
	if req.Name == "" || req.Schema == nil {
		fail(w, http.StatusBadRequest, "BadRequestException", "create table request needs name and schema")
		return
	}
	if req.StageCreate {
		fail(w, http.StatusBadRequest, "BadRequestException", "stage-create is not supported by this test server")
		return
	}
	var opts []catalog.CreateTableOpt
	if req.Location != "" {
		opts = append(opts, catalog.WithLocation(req.Location))
	}
	if req.PartitionSpec != nil {
		opts = append(opts, catalog.WithPartitionSpec(req.PartitionSpec))
	}
	if req.WriteOrder != nil {
		opts = append(opts, catalog.WithSortOrder(*req.WriteOrder))
	}
	if req.Properties != nil {
		opts = append(opts, catalog.WithProperties(req.Properties))
	}
	s.commitMu.Lock()
	tbl, err := s.cat.CreateTable(ctx, append(table.Identifier{}, append(ns, req.Name)...), req.Schema, opts...)
	s.commitMu.Unlock()
	if err != nil {
		s.catalogError(w, err)
		return
	}
	s.writeTable(w, http.StatusOK, tbl.Metadata(), tbl.MetadataLocation())
}

// commitTable checks the requirements against the table's current
// metadata and applies the updates, all under commitMu.
func (s *Server) commitTable(ctx context.Context, w http.ResponseWriter, r *http.Request, ident table.Identifier) {
	var req struct {
		Identifier *struct {
			Namespace table.Identifier `json:"namespace"`
			Name      string           `json:"name"`
		} `json:"identifier"`
		Requirements table.Requirements `json:"requirements"`
		Updates      table.Updates      `json:"updates"`
	}
	if err := decode(r, &req); err != nil {
		fail(w, http.StatusBadRequest, "BadRequestException", "commit table request: %v", err)
		return
	}
	if id := req.Identifier; id != nil && (strings.Join(id.Namespace, ".") != strings.Join(catalog.NamespaceFromIdent(ident), ".") || id.Name != catalog.TableNameFromIdent(ident)) {
		fail(w, http.StatusBadRequest, "BadRequestException", "identifier %v.%s does not match the path's %v", id.Namespace, id.Name, ident)
		return
	}
	s.commitMu.Lock()
	defer s.commitMu.Unlock()
	var meta table.Metadata
	cur, err := s.cat.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		// Only a create (assert-create) may commit to a missing table.
	case err != nil:
		s.catalogError(w, err)
		return
	default:
		meta = cur.Metadata()
	}
	if meta == nil && !hasAssertCreate(req.Requirements) {
		fail(w, http.StatusNotFound, "NoSuchTableException", "table %s does not exist", strings.Join(ident, "."))
		return
	}
	for _, rq := range req.Requirements {
		if err := rq.Validate(meta); err != nil {
			s.conflicts.Add(1)
			fail(w, http.StatusConflict, "CommitFailedException", "%s: %v", rq.GetType(), err)
			return
		}
	}
	md, loc, err := s.cat.CommitTable(ctx, ident, req.Requirements, req.Updates)
	if err != nil {
		if errors.Is(err, table.ErrCommitFailed) {
			s.conflicts.Add(1)
			fail(w, http.StatusConflict, "CommitFailedException", "%v", err)
			return
		}
		// The spec's answer when the server cannot tell the outcome;
		// clients must not assume the commit failed.
		fail(w, http.StatusInternalServerError, "CommitStateUnknownException", "%v", err)
		return
	}
	s.commits.Add(1)
	s.writeTable(w, http.StatusOK, md, loc)
}

func hasAssertCreate(reqs table.Requirements) bool {
	for _, r := range reqs {
		if r.GetType() == "assert-create" {
			return true
		}
	}
	return false
}

// writeTable answers a LoadTableResult (also a CommitTableResponse).
func (s *Server) writeTable(w http.ResponseWriter, code int, md table.Metadata, loc string) {
	raw, err := json.Marshal(md)
	if err != nil {
		fail(w, http.StatusInternalServerError, "ServerErrorException", "encode metadata: %v", err)
		return
	}
	writeJSON(w, code, map[string]any{"metadata-location": loc, "metadata": json.RawMessage(raw), "config": map[string]string{}})
}

// catalogError maps the SQL catalog's errors to the spec's answers.
func (s *Server) catalogError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		fail(w, http.StatusNotFound, "NoSuchTableException", "%v", err)
	case errors.Is(err, catalog.ErrNoSuchNamespace):
		fail(w, http.StatusNotFound, "NoSuchNamespaceException", "%v", err)
	case errors.Is(err, catalog.ErrTableAlreadyExists), errors.Is(err, catalog.ErrNamespaceAlreadyExists):
		fail(w, http.StatusConflict, "AlreadyExistsException", "%v", err)
	case errors.Is(err, catalog.ErrNamespaceNotEmpty):
		fail(w, http.StatusConflict, "NamespaceNotEmptyException", "%v", err)
	default:
		fail(w, http.StatusInternalServerError, "ServerErrorException", "%v", err)
	}
}

func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<20))
	return dec.Decode(v)
}

package restfixture

import (
	"errors"
	"testing"

	ib "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

func start(t *testing.T, o Options) (*Server, *rest.Catalog) {
	t.Helper()
	o.Dir = t.TempDir()
	srv, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var opts []rest.Option
	if o.Token != "" {
		opts = append(opts, rest.WithOAuthToken(o.Token))
	}
	cat, err := rest.NewCatalog(t.Context(), "test", srv.URL, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	return srv, cat
}

// A commit whose requirements do not hold against the table's current
// metadata is refused with 409 CommitFailedException, and changes nothing.
func TestServer_Commit_RequirementsChecked(t *testing.T) {
	srv, cat := start(t, Options{Token: "tok"})
	ctx := t.Context()
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Errorf("second CreateNamespace = %v, want ErrNamespaceAlreadyExists", err)
	}
	sc := ib.NewSchema(0, ib.NestedField{ID: 1, Name: "id", Type: ib.PrimitiveTypes.Int64, Required: true})
	ident := table.Identifier{"ns", "t"}
	tbl, err := cat.CreateTable(ctx, ident, sc)
	if err != nil {
		t.Fatal(err)
	}
	set := []table.Update{table.NewSetPropertiesUpdate(ib.Properties{"k": "v"})}
	for name, rq := range map[string]table.Requirement{
		"table uuid":        table.AssertTableUUID(uuid.New()),
		"current schema id": table.AssertCurrentSchemaID(7),
		"last field id":     table.AssertLastAssignedFieldID(99),
		"default spec id":   table.AssertDefaultSpecID(3),
		"main at a snapshot": func() table.Requirement {
			id := int64(42)
			return table.AssertRefSnapshotID("main", &id)
		}(),
		"create": table.AssertCreate(),
	} {
		_, _, err := cat.CommitTable(ctx, ident, []table.Requirement{rq}, set)
		if !errors.Is(err, table.ErrCommitFailed) {
			t.Errorf("%s: CommitTable = %v, want ErrCommitFailed (409)", name, err)
		}
	}
	if srv.Conflicts() != 6 || srv.Commits() != 0 {
		t.Errorf("server counted %d conflicts and %d commits, want 6 and 0", srv.Conflicts(), srv.Commits())
	}
	// The right requirements commit.
	md, _, err := cat.CommitTable(ctx, ident, []table.Requirement{table.AssertTableUUID(tbl.Metadata().TableUUID()), table.AssertRefSnapshotID("main", nil)}, set)
	if err != nil {
		t.Fatalf("CommitTable with true requirements: %v", err)
	}
	if md.Properties()["k"] != "v" {
		t.Errorf("committed properties %v", md.Properties())
	}
	got, err := cat.LoadTable(ctx, ident)
	if err != nil || got.Properties()["k"] != "v" {
		t.Errorf("LoadTable after the commit: %v, %v", err, got)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{"ns", "missing"}); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Errorf("LoadTable of a missing table = %v", err)
	}
	ok, err := cat.CheckTableExists(ctx, ident)
	if !ok || err != nil {
		t.Errorf("CheckTableExists = %v, %v", ok, err)
	}
	var names []string
	for id, err := range cat.ListTables(ctx, table.Identifier{"ns"}) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, catalog.TableNameFromIdent(id))
	}
	if len(names) != 1 || names[0] != "t" {
		t.Errorf("ListTables = %v", names)
	}
	if err := cat.DropTable(ctx, ident); err != nil {
		t.Errorf("DropTable: %v", err)
	}
}

// Without the token every request is refused; a down server answers 503.
func TestServer_AuthAndDown(t *testing.T) {
	srv, err := Start(t.Context(), Options{Dir: t.TempDir(), ClientID: "id", ClientSecret: "secret", Prefix: "wh1"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if _, err := rest.NewCatalog(t.Context(), "x", srv.URL); !errors.Is(err, rest.ErrUnauthorized) {
		t.Errorf("NewCatalog without credentials = %v, want ErrUnauthorized", err)
	}
	if _, err := rest.NewCatalog(t.Context(), "x", srv.URL, rest.WithCredential("id:wrong")); !errors.Is(err, rest.ErrOAuthError) {
		t.Errorf("NewCatalog with a wrong secret = %v, want an OAuth error", err)
	}
	cat, err := rest.NewCatalog(t.Context(), "x", srv.URL, rest.WithCredential("id:secret"))
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	if err := cat.CreateNamespace(t.Context(), table.Identifier{"a"}, nil); err != nil {
		t.Fatalf("CreateNamespace under the announced prefix: %v", err)
	}
	srv.SetDown(true)
	if _, err := cat.ListNamespaces(t.Context(), nil); !errors.Is(err, rest.ErrServiceUnavailable) {
		t.Errorf("ListNamespaces while down = %v", err)
	}
	srv.SetDown(false)
	nss, err := cat.ListNamespaces(t.Context(), nil)
	if err != nil || len(nss) != 1 {
		t.Errorf("ListNamespaces = %v, %v", nss, err)
	}
}

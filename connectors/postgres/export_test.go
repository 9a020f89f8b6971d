package postgres

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// What the external tests (package postgres_test) use of the test server.

// E2EChildEnv is set in the environment of the worker processes the
// end-to-end test starts; TestMain then starts no server.
const E2EChildEnv = "TRIBUTARY_PG_E2E_CHILD"

// NewTestDB creates a database on the package's test server, runs the setup
// SQL in it and returns its DSN and a superuser connection; both go away
// when the test ends.
func NewTestDB(t *testing.T, setup ...string) (dsn string, conn *pgx.Conn) {
	db := newDB(t, setup...)
	return db.dsn, db.conn
}

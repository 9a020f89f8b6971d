package mysql

import (
	"database/sql"
	"testing"
)

// What the external tests (package mysql_test) use of the test server.

// E2EChildEnv is set in the environment of the worker processes the
// end-to-end test starts; TestMain then starts no server.
const E2EChildEnv = "TRIBUTARY_MYSQL_E2E_CHILD"

// NewTestDB creates a database on the package's test server, runs the
// setup SQL in it and returns the server's DSN (root, no database), the
// database's name and a root connection pool to it; the database is
// dropped when the test ends.
func NewTestDB(t *testing.T, setup ...string) (dsn, name string, db *sql.DB) {
	d := newDB(t, setup...)
	return d.dsn, d.name, d.db
}

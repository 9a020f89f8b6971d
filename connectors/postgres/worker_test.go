package postgres

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/cdctest"
)

// TestWorker_MisconfiguredServerStaysFailed runs the source in the real
// worker on a server it cannot capture from (its user lacks REPLICATION):
// the task ends FAILED with the connector's message as its trace, and is
// not restarted until the user fixes the server and restarts it.
func TestWorker_MisconfiguredServerStaysFailed(t *testing.T) {
	db := newDB(t, "DO $$ BEGIN CREATE ROLE worker_norepl LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$",
		"ALTER ROLE worker_norepl NOREPLICATION",
		"CREATE TABLE t (id int PRIMARY KEY)", "ALTER TABLE t OWNER TO worker_norepl")
	db.exec(t, "GRANT CREATE ON DATABASE "+db.name+" TO worker_norepl")
	dsn := strings.Replace(db.dsn, "postgres@", "worker_norepl@", 1)

	cdctest.FailsPermanently(t, Connector(), engine.ConnectorSpec{Pipeline: "p", Name: "src", Topic: "p.{schema}.{table}",
		Config: map[string]string{"dsn": dsn, "slot": "worker_" + db.name, "publication": "worker_pub", "heartbeat.interval": "0", "snapshot.mode": "never"}},
		`user "worker_norepl" lacks the REPLICATION attribute`,
		func() { db.exec(t, "ALTER ROLE worker_norepl REPLICATION") })
}

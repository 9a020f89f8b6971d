package mysql

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/internal/cdctest"
)

// TestWorker_MisconfiguredServerStaysFailed runs the source in the real
// worker on a server it cannot capture from (its user lacks the
// replication grants): the task ends FAILED with the connector's message
// as its trace, and is not restarted until the user fixes the grants and
// restarts it.
func TestWorker_MisconfiguredServerStaysFailed(t *testing.T) {
	d := newDB(t, "CREATE TABLE t (id int PRIMARY KEY)")
	d.exec(t, "DROP USER IF EXISTS 'worker_norepl'@'%'")
	d.exec(t, "CREATE USER 'worker_norepl'@'%' IDENTIFIED BY 'pw'")
	d.exec(t, "GRANT SELECT ON *.* TO 'worker_norepl'@'%'")
	t.Cleanup(func() { d.db.Exec("DROP USER IF EXISTS 'worker_norepl'@'%'") })
	dsn := strings.Replace(d.dsn, "root@", "worker_norepl:pw@", 1)

	cdctest.FailsPermanently(t, Connector(), engine.ConnectorSpec{Pipeline: "perm", Name: "worker_src", Topic: "perm.{database}.{table}",
		Config: map[string]string{"dsn": dsn, "tables": d.name + ".*", "heartbeat.interval": "0", "snapshot.mode": "never"}},
		"user worker_norepl@% lacks REPLICATION SLAVE and REPLICATION CLIENT",
		func() { d.exec(t, "GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* TO 'worker_norepl'@'%'") })
}

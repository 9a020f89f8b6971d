package postgres

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// TestPartitionedTable_SnapshotAndStream captures a partitioned table with
// the default tables (every table): its rows, read and streamed, are events
// of the partitioned table (the publication publishes via the partition
// root), not lost because neither the partitioned table nor its
// partitions are ordinary tables.
func TestPartitionedTable_SnapshotAndStream(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE m (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
		"CREATE TABLE m_eu PARTITION OF m FOR VALUES IN ('eu')",
		"CREATE TABLE m_us PARTITION OF m FOR VALUES IN ('us')",
		"CREATE TABLE plain (id int PRIMARY KEY)",
		"INSERT INTO m VALUES (1, 'eu', 'a'), (2, 'us', 'b')",
	)
	s := openSource(t, db, map[string]string{"tombstones.on.delete": "false"}, nil)
	db.exec(t, "INSERT INTO m VALUES (3, 'us', 'c')")
	db.exec(t, "UPDATE m SET v = 'a2' WHERE id = 1")
	db.exec(t, "DELETE FROM m WHERE id = 2")
	db.exec(t, "INSERT INTO plain VALUES (-1)")
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Topic == "src.public.plain"
	})
	var got []string
	for _, e := range decode(t, recs) {
		if e.Ev == nil || e.Rec.Topic == "src.public.plain" {
			continue
		}
		row := e.Ev.After
		if row == nil {
			row = e.Ev.Before
		}
		got = append(got, e.Rec.Topic+" "+string(e.Ev.Op)+" "+string(e.Rec.Key)+" "+row.String())
	}
	want := []string{
		`src.public.m r {"id":1,"region":"eu"} {"id":1,"region":"eu","v":"a"}`,
		`src.public.m r {"id":2,"region":"us"} {"id":2,"region":"us","v":"b"}`,
		`src.public.m c {"id":3,"region":"us"} {"id":3,"region":"us","v":"c"}`,
		`src.public.m u {"id":1,"region":"eu"} {"id":1,"region":"eu","v":"a2"}`,
		`src.public.m d {"id":2,"region":"us"} {"id":2,"region":"us","v":null}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events:\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestPartitionedTable_ExistingPublication: a publication of a partitioned
// table that publishes it as its partitions is switched to publishing via
// the root when the connector's user owns it (filtered), and is an error
// saying what to run when the connector may not change it.
func TestPartitionedTable_ExistingPublication(t *testing.T) {
	db := newDB(t,
		"CREATE TABLE m (id int PRIMARY KEY) PARTITION BY RANGE (id)",
		"CREATE TABLE m_1 PARTITION OF m FOR VALUES FROM (0) TO (100)",
		"CREATE TABLE marker (id int PRIMARY KEY)",
		"CREATE PUBLICATION pub FOR TABLE m, marker",
	)
	_, err := tryOpen(t, db.dsn, map[string]string{"publication": "pub", "publication.autocreate.mode": "disabled", "snapshot.mode": "never"}, nil)
	if err == nil || !connect.IsPermanent(err) || !strings.Contains(err.Error(), "ALTER PUBLICATION \"pub\" SET (publish_via_partition_root = true);") {
		t.Fatalf("Open with publication.autocreate.mode=disabled: %v, want a permanent error with the ALTER to run", err)
	}
	s := openSource(t, db, map[string]string{"publication": "pub", "snapshot.mode": "never"}, nil)
	if via := db.queryString(t, "SELECT pubviaroot::text FROM pg_publication WHERE pubname = 'pub'"); via != "true" {
		t.Fatalf("pubviaroot = %s after Open, want true", via)
	}
	db.exec(t, "INSERT INTO m VALUES (5)")
	db.exec(t, "INSERT INTO marker VALUES (1)")
	recs := readUntil(t, s, 30*time.Second, func(r []connect.Record) bool {
		return len(r) > 0 && r[len(r)-1].Topic == "src.public.marker"
	})
	if len(recs) != 2 || recs[0].Topic != "src.public.m" || string(recs[0].Key) != `{"id":5}` {
		t.Fatalf("want the insert into m, then the marker:\n%s", dump(recs))
	}
}

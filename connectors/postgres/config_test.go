package postgres

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
)

func TestRedactDSN(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:s3cret@h:5432/db?sslmode=disable": "postgres://u:%2A%2A%2A%2A%2A%2A%2A%2A@h:5432/db?sslmode=disable",
		"postgres://u@h/db?password=s3cret":             "postgres://u@h/db?password=%2A%2A%2A%2A%2A%2A%2A%2A",
		"host=h user=u password=s3cret dbname=db":       "host=h user=u password=******** dbname=db",
		"host=h password='s 3cret' dbname=db":           "host=h password=******** dbname=db",
	} {
		got := redactDSN(in)
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("redactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSettings(t *testing.T) {
	cfg := connect.Config{Connector: "My Source", Spec: spec(), Values: map[string]string{"dsn": "postgres://u:pw@h/db"}}
	s, err := parseSettings(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if s.slot != "tributary_my_source" || s.publication != "tributary_my_source" || s.prefix != "My Source" ||
		s.topicFor("public", "t") != "My Source.public.t" || s.decimals != decimalString || !s.tombstones || s.heartbeat != 10*time.Second || s.deadAfter != time.Minute {
		t.Errorf("defaults: %+v", s)
	}
	if shown := fmt.Sprint(cfg); strings.Contains(shown, "pw") || !strings.Contains(shown, connect.Masked) {
		t.Errorf("the dsn is not masked: %s", cfg)
	}
	cfg.Values = map[string]string{"dsn": "postgres://u@h/db?keepalives_idle=ten", "slot": "Bad-Slot", "tables": "nodot", "snapshot.workers": "0"}
	_, err = parseSettings(cfg)
	for _, want := range []string{"slot: \"Bad-Slot\"", "tables: \"nodot\"", "snapshot.workers: \"0\"", "keepalives_idle=\"ten\""} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %s", err, want)
		}
	}
}

func TestStream_PublicationForAllTablesIsFiltered(t *testing.T) {
	db := newDB(t, "CREATE TABLE a (id int PRIMARY KEY)", "CREATE TABLE b (id int PRIMARY KEY)", "CREATE PUBLICATION allpub FOR ALL TABLES")
	s := openSource(t, db, map[string]string{"snapshot.mode": "never", "publication": "allpub", "tables": "public.a"}, nil)
	db.exec(t, "INSERT INTO b VALUES (1)")
	db.exec(t, "INSERT INTO a VALUES (2)")
	recs := readRecords(t, s, 1, 30*time.Second)
	if len(recs) != 1 || recs[0].Topic != "src.public.a" {
		t.Errorf("want only the change of public.a:\n%s", dump(recs))
	}
}

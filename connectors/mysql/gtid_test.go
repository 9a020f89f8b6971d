package mysql

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

func TestGTIDSet_MySQL(t *testing.T) {
	const a = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
	const b = "0b8bd2d1-5b38-11ee-8d3a-0242ac120002"
	g, err := parseGTIDSet(flavorMySQL, a+":1-5:7,\n"+b+":1-3")
	if err != nil {
		t.Fatal(err)
	}
	sid, _ := uuid.Parse(a)
	if err := g.addMySQL(sid[:], 6); err != nil {
		t.Fatal(err)
	}
	if got, want := g.String(), b+":1-3,"+a+":1-7"; got != want {
		t.Errorf("after adding :6: %s, want %s", got, want)
	}
	c := g.clone()
	c.addMySQL(sid[:], 9)
	if g.String() == c.String() {
		t.Error("clone shares state")
	}
	purged, _ := parseGTIDSet(flavorMySQL, a+":1-3")
	if m := g.missing(purged); m != "" {
		t.Errorf("missing %q, want none", m)
	}
	purged, _ = parseGTIDSet(flavorMySQL, a+":1-10,"+b+":1-2")
	if m := g.missing(purged); m != a+":8-10" {
		t.Errorf("missing %q", m)
	}
	set, err := g.forSync()
	if err != nil || set.String() != g.String() {
		t.Errorf("forSync %v %v", set, err)
	}
	if _, err := parseGTIDSet(flavorMySQL, "not-a-uuid:1"); err == nil {
		t.Error("bad set accepted")
	}
	empty, _ := parseGTIDSet(flavorMySQL, "")
	if !empty.isEmpty() || empty.String() != "" {
		t.Errorf("empty set %q", empty)
	}
}

func TestGTIDSet_MariaDB(t *testing.T) {
	g, err := parseGTIDSet(flavorMariaDB, "1-7-3,0-1-42")
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != "0-1-42,1-7-3" {
		t.Errorf("order: %s", g)
	}
	// A new master in a domain replaces the domain's position.
	g.addMaria(mysql.MariadbGTID{DomainID: 0, ServerID: 2, SequenceNumber: 43})
	if g.String() != "0-2-43,1-7-3" {
		t.Errorf("after 0-2-43: %s", g)
	}
	oldest, _ := parseGTIDSet(flavorMariaDB, "0-2-50,1-7-1,5-1-1")
	if b := g.behind(oldest); len(b) != 1 || b[0][:8] != "domain 0" {
		t.Errorf("behind %q", b)
	}
	if _, err := parseGTIDSet(flavorMariaDB, "0-1-1,0-2-2"); err == nil {
		t.Error("two positions in one domain accepted")
	}
	if _, err := parseGTIDSet(flavorMariaDB, "0-1"); err == nil {
		t.Error("bad gtid accepted")
	}
}

func TestParseDSN(t *testing.T) {
	for _, dsn := range []string{"mysql://u:p%40ss@db.example:3307/x?tls=false", "u:p@ss@tcp(db.example:3307)/x"} {
		cfg, err := parseDSN(dsn)
		if err != nil {
			t.Fatalf("%s: %v", dsn, err)
		}
		if cfg.User != "u" || cfg.Passwd != "p@ss" || cfg.Addr != "db.example:3307" {
			t.Errorf("%s: %+v", dsn, cfg)
		}
	}
	cfg, err := parseDSN("mysql://u@h")
	if err != nil || cfg.Addr != "h:3306" {
		t.Errorf("default port: %v %v", cfg, err)
	}
	for _, bad := range []string{"mysql://u:secret@h:notaport", "u:secret@tcp(h:1", "mysql://:secret@h"} {
		_, err := parseDSN(bad)
		if err == nil {
			t.Errorf("%s accepted", bad)
			continue
		}
		if contains(err.Error(), "secret") {
			t.Errorf("%s: error shows the password: %v", bad, err)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

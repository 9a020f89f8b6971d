package mysql

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/google/uuid"
)

// Server flavors, as go-mysql names them.
const (
	flavorMySQL   = mysql.MySQLFlavor
	flavorMariaDB = mysql.MariaDBFlavor
)

// gtidSet is the GTID position of a stream in either flavor.
//
// MariaDB GTIDs are domain-server-sequence; a replica's position is the
// last GTID applied in each replication domain ("0-1-42,1-7-3"), and that
// is what it connects with (@slave_connect_state). So for MariaDB the set
// keeps one GTID per domain: the last one seen, whatever its server id.
// (go-mysql's MariadbGTIDSet keeps one per domain and server, which a
// server refuses as a connect state once a domain has had two masters.)
//
// MySQL GTIDs are source_uuid:transaction_id, and a position is the set of
// every transaction executed, as uuid:interval lists
// ("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,…"); that is go-mysql's
// MysqlGTIDSet.
type gtidSet struct {
	flavor string
	maria  map[uint32]mysql.MariadbGTID // domain → last GTID
	my     *mysql.MysqlGTIDSet
}

// newGTIDSet returns an empty set of the flavor.
func newGTIDSet(flavor string) *gtidSet {
	if flavor == flavorMariaDB {
		return &gtidSet{flavor: flavor, maria: map[uint32]mysql.MariadbGTID{}}
	}
	set, _ := mysql.ParseMysqlGTIDSet("")
	return &gtidSet{flavor: flavorMySQL, my: set.(*mysql.MysqlGTIDSet)}
}

// parseGTIDSet parses a set in the flavor's text form; spaces and
// newlines (as @@gtid_executed prints them) are ignored.
func parseGTIDSet(flavor, s string) (*gtidSet, error) {
	s = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\n' || r == '\r' || r == '\t' {
			return -1
		}
		return r
	}, s)
	g := newGTIDSet(flavor)
	if s == "" {
		return g, nil
	}
	if flavor == flavorMariaDB {
		for _, part := range strings.Split(s, ",") {
			if part == "" {
				continue
			}
			id, err := mysql.ParseMariadbGTID(part)
			if err != nil || strings.Count(part, "-") != 2 {
				return nil, fmt.Errorf("gtid %q is not a MariaDB GTID (domain-server-sequence): %v", part, err)
			}
			if prev, ok := g.maria[id.DomainID]; ok && prev != *id {
				return nil, fmt.Errorf("gtid set %q names domain %d twice", s, id.DomainID)
			}
			g.maria[id.DomainID] = *id
		}
		return g, nil
	}
	set, err := mysql.ParseMysqlGTIDSet(s)
	if err != nil {
		return nil, fmt.Errorf("gtid set %q is not a MySQL GTID set (uuid:interval[:interval],…): %v", s, err)
	}
	g.my = set.(*mysql.MysqlGTIDSet)
	return g, nil
}

// addMaria records a MariaDB GTID as the last of its domain.
func (g *gtidSet) addMaria(id mysql.MariadbGTID) { g.maria[id.DomainID] = id }

// addMySQL adds one MySQL transaction to the set.
func (g *gtidSet) addMySQL(sid []byte, gno int64) error {
	u, err := uuid.FromBytes(sid)
	if err != nil {
		return fmt.Errorf("gtid event with a bad source id: %w", err)
	}
	g.my.AddGTID(u, gno)
	return nil
}

// String returns the set in the flavor's text form, in a stable order.
// (It runs once per transaction: MariaDB's form is written by hand.)
func (g *gtidSet) String() string {
	if g.flavor != flavorMariaDB {
		return g.my.String()
	}
	var one [1]uint32
	ids := one[:0]
	for d := range g.maria {
		ids = append(ids, d)
	}
	slices.Sort(ids)
	b := make([]byte, 0, 32*len(ids))
	for i, d := range ids {
		id := g.maria[d]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMariaGTID(b, id)
	}
	return string(b)
}

// mariaGTIDString formats a MariaDB GTID, domain-server-sequence.
func mariaGTIDString(id mysql.MariadbGTID) string {
	var buf [32]byte
	return string(appendMariaGTID(buf[:0], id))
}

func appendMariaGTID(b []byte, id mysql.MariadbGTID) []byte {
	b = strconv.AppendUint(b, uint64(id.DomainID), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, uint64(id.ServerID), 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.SequenceNumber, 10)
}

// isEmpty reports whether the set holds nothing.
func (g *gtidSet) isEmpty() bool {
	if g.flavor == flavorMariaDB {
		return len(g.maria) == 0
	}
	return len(g.my.Sets) == 0
}

// clone returns a deep copy.
func (g *gtidSet) clone() *gtidSet {
	c := &gtidSet{flavor: g.flavor}
	if g.flavor == flavorMariaDB {
		c.maria = make(map[uint32]mysql.MariadbGTID, len(g.maria))
		for k, v := range g.maria {
			c.maria[k] = v
		}
		return c
	}
	c.my = g.my.Clone().(*mysql.MysqlGTIDSet)
	return c
}

// forSync returns the set as go-mysql's type, to start a binlog dump from.
func (g *gtidSet) forSync() (mysql.GTIDSet, error) {
	if g.flavor == flavorMariaDB {
		return mysql.ParseMariadbGTIDSet(g.String())
	}
	return g.my.Clone(), nil
}

// missing returns the part of purged that g does not contain (MySQL):
// transactions the server no longer has in its binlog and that this
// position has not seen. Empty means nothing is missing.
func (g *gtidSet) missing(purged *gtidSet) string {
	if g.flavor != flavorMySQL || purged == nil || purged.my == nil {
		return ""
	}
	rest := purged.my.Clone().(*mysql.MysqlGTIDSet)
	rest.Minus(*g.my)
	return rest.String()
}

// behind returns the domains where g is behind oldest (MariaDB: the GTID
// state at the start of the oldest binlog the server still has): a
// position in such a domain needs purged binlog. It compares sequence
// numbers within a domain, which MariaDB keeps increasing.
func (g *gtidSet) behind(oldest *gtidSet) []string {
	if g.flavor != flavorMariaDB || oldest == nil {
		return nil
	}
	var out []string
	for d, old := range oldest.maria {
		have, ok := g.maria[d]
		if ok && have.SequenceNumber < old.SequenceNumber {
			out = append(out, fmt.Sprintf("domain %d: have %s, the oldest binlog starts after %s", d, have.String(), old.String()))
		}
	}
	sort.Strings(out)
	return out
}

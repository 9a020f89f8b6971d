package mysql

import (
	"context"
	"github.com/tributary-io/tributary/connect"
	"testing"
	"time"
)

// allTypes is a table with a column of every type the connector maps.
const allTypes = `CREATE TABLE types (
  id bigint unsigned PRIMARY KEY, ti tinyint, tu tinyint unsigned, si smallint unsigned, mi mediumint unsigned,
  ii int unsigned, big bigint, dc decimal(10,3), f float, dbl double, b1 bit(1), b bit(10), d date, tm time(3),
  dt datetime(6), dt0 datetime, ts timestamp(2) NULL, y year, c char(5) CHARACTER SET latin1, vc varchar(20) CHARACTER SET latin1,
  u8 varchar(20) CHARACTER SET utf8mb4, tx text, bl blob, bn binary(4), vb varbinary(8), e enum('a','b','c'), s set('x','y','z'),
  j json, g geometry) CHARACTER SET utf8mb4`

const typesRow = `INSERT INTO types VALUES (18446744073709551615, -5, 250, 65535, 16777215, 4294967295, -9223372036854775808,
  -1234567.891, 1.5, 2.25, b'1', b'1010101010', '2024-02-29', '-838:59:59.000', '2024-01-02 03:04:05.123456',
  '1999-12-31 23:59:59', '2024-01-02 03:04:05.12', 2024, 'héllo', 'vé€', 'ünï 😀', 'text', x'0001ff', x'0102', x'00ff00',
  'b', 'x,z', '{"a": [1, 2]}', ST_GeomFromText('POINT(1 2)'))`

// wantTypes is the row above as the connector writes it.
const wantTypes = `{"id":"18446744073709551615","ti":-5,"tu":250,"si":65535,"mi":16777215,"ii":4294967295,"big":-9223372036854775808,` +
	`"dc":"-1234567.891","f":1.5,"dbl":2.25,"b1":true,"b":"qgI=","d":19782,"tm":-3020399000000,` +
	`"dt":1704164645123456,"dt0":946684799000,"ts":"2024-01-02T03:04:05.12Z","y":2024,"c":"héllo","vc":"vé€",` +
	`"u8":"ünï 😀","tx":"text","bl":"AAH/","bn":"AQIAAA==","vb":"AP8A","e":"b","s":"x,z","j":"{\"a\": [1, 2]}",` +
	`"g":{"wkb":"AQEAAAAAAAAAAADwPwAAAAAAAABA","srid":0}}`

func TestTypes_StreamAndSnapshotAgree(t *testing.T) {
	d := newDB(t, allTypes)
	s := openSource(t, d, map[string]string{"snapshot.mode": "never"}, nil)
	d.exec(t, "SET time_zone = '+05:00'") // TIMESTAMP is stored in UTC whatever the session's zone
	d.exec(t, "SET time_zone = '+00:00'")
	d.exec(t, typesRow)
	d.exec(t, "SET sql_mode = ''")
	d.exec(t, "INSERT INTO types (id, d, dt, ts) VALUES (1, '0000-00-00', '0000-00-00 00:00:00', '0000-00-00 00:00:00')")
	evs := decode(t, readRecords(t, s, 2, 30*time.Second))
	if got := evs[0].Ev.After.String(); got != wantTypes {
		t.Errorf("streamed:\n got %s\nwant %s", got, wantTypes)
	}
	if got := evs[1].Ev.After.String(); got != `{"id":"1","ti":null,"tu":null,"si":null,"mi":null,"ii":null,"big":null,"dc":null,"f":null,"dbl":null,"b1":null,"b":null,"d":null,"tm":null,"dt":null,"dt0":null,"ts":null,"y":null,"c":null,"vc":null,"u8":null,"tx":null,"bl":null,"bn":null,"vb":null,"e":null,"s":null,"j":null,"g":null}` {
		t.Errorf("zero dates: %s", got)
	}
	// The rows events were decoded by the connector, none by go-mysql.
	if g := s.Report().Gauges; g["binlog_rows_events_decoded"] < 2 || g["binlog_rows_events_parsed_by_go_mysql"] != 0 {
		t.Errorf("rows events decoded %v, parsed by go-mysql %v; want 2 and 0", g["binlog_rows_events_decoded"], g["binlog_rows_events_parsed_by_go_mysql"])
	}
	s.Close(context.Background())

	streamed := map[string]string{}
	var recs []connect.Record
	for _, e := range evs {
		recs = append(recs, e.Rec)
	}
	apply(t, streamed, recs)
	snap := tableState(t, d, "types")
	if diff := diffStates(streamed, snap); diff != "" {
		t.Errorf("stream and snapshot disagree:\n%s", diff)
	}
}

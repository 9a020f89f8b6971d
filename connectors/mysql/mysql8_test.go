package mysql

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// TestMySQLJSON_Mapping covers the mapping of MySQL 8's binary JSON
// columns as go-mysql hands them over (rendered as JSON text: a string, or
// bytes; an empty value is JSON null), which MariaDB, whose JSON is
// LONGTEXT, never exercises. The binary decoding itself is go-mysql's; no
// MySQL server is available to the tests.
func TestMySQLJSON_Mapping(t *testing.T) {
	m := &mapper{}
	c := &column{Name: "j", Type: mysql.MYSQL_TYPE_JSON}
	for _, tc := range []struct {
		in   any
		want any
	}{
		{`{"a":[1,2]}`, `{"a":[1,2]}`},
		{[]byte(`[true,null]`), `[true,null]`},
		{[]byte{}, "null"},
		{nil, nil},
	} {
		got, err := m.fromBinlog(c, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("fromBinlog(%#v) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	if _, err := m.fromBinlog(c, int64(1)); err == nil {
		t.Error("fromBinlog of a partial JSON update's value: no error")
	}
	if s := m.schema(c); s.Name != "io.debezium.data.Json" {
		t.Errorf("schema %+v, want io.debezium.data.Json", s)
	}
}

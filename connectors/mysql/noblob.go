package mysql

import (
	"slices"

	"github.com/go-mysql-org/go-mysql/mysql"

	"github.com/tributary-io/tributary/connect"
)

// Row images that leave columns out. Under binlog_row_image=NOBLOB
// (global, or set by one session) the server leaves out of a rows event
// the BLOB and TEXT columns (binlog type MYSQL_TYPE_BLOB: TINY/MEDIUM/LONG
// BLOB and TEXT, and MariaDB's JSON, a LONGTEXT) that are not part of the
// primary key: from the before image of every update and delete, and
// from the after image of an update that did not change them. A table
// without a primary key (nor a unique NOT NULL key standing in for one)
// is logged whole. The rows event's bitmaps say which columns each image
// carries.
//
// As Debezium's MySQL connector (debezium/dbz#473), the connector writes
// unavailable.value.placeholder for such a column, in the column's form
// (mapper.unavailable), and names the columns the after image left out in
// the record's connect.UnavailableColumnsHeader, so that a sink keeping
// a previous state (the Iceberg sink's upserts) keeps their values. A row
// image leaving out any other column (binlog_row_image=MINIMAL, or
// MariaDB's FULL_NODUP) stops the connector (partialImageError): those
// values would be written as null or a placeholder the column cannot
// hold.

// unavailable returns the placeholder in the form of column c: the text
// for a text column, its bytes for a binary one; ok is false for a
// column of another type.
func (m *mapper) unavailable(c *column) (v any, ok bool) {
	if c.MariaType != "" {
		return nil, false
	}
	switch m.typeSchema(c).Type {
	case connect.SchemaString:
		return m.placeholder, true
	case connect.SchemaBytes:
		return []byte(m.placeholder), true
	}
	return nil, false
}

// leftOutColumn checks the column bitmaps of a rows event of t whose
// binlog column types are types: it returns the index of the first column
// a bitmap leaves out that NOBLOB would not leave out (see above), or -1
// when there is none.
func (m *mapper) leftOutColumn(t *table, types []byte, bitmaps ...[]byte) int {
	n := len(types)
	for _, bm := range bitmaps {
		if bm == nil || allColumns(bm, n) {
			continue
		}
		if len(bm) != (n+7)/8 {
			continue // corrupt: the decoder says so (rowSpec.nextImage)
		}
		for i := range n {
			if bitSet(bm, i) {
				continue
			}
			if types[i] != mysql.MYSQL_TYPE_BLOB || i >= len(t.def.Columns) || slices.Contains(t.def.Key, i) {
				return i
			}
			if _, ok := m.unavailable(&t.def.Columns[i]); !ok {
				return i
			}
		}
	}
	return -1
}

// fillLeftOut writes the placeholder into the columns of row that an
// image whose bitmap is present left out, and appends their names to
// names.
func (m *mapper) fillLeftOut(t *table, row connect.Row, present []byte, names []string) []string {
	if present == nil || allColumns(present, len(row)) {
		return names
	}
	for i := range row {
		if i>>3 < len(present) && !bitSet(present, i) {
			row[i].Value, _ = m.unavailable(&t.def.Columns[i])
			names = append(names, row[i].Name)
		}
	}
	return names
}

package mysql

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/tributary-io/tributary/connect"
)

// column is one column of a captured table, as the value mapping needs
// it. It is built from a binlog table map event (with
// binlog_row_metadata=FULL) or from information_schema (for the snapshot
// and the schema history), and both give the same column for the same
// definition.
type column struct {
	Name     string   `json:"name"`
	Type     byte     `json:"type"`               // binlog type (mysql.MYSQL_TYPE_*), ENUM and SET resolved
	Unsigned bool     `json:"unsigned,omitempty"` // numeric columns
	Charset  string   `json:"charset,omitempty"`  // character columns: the charset; "binary" for binary strings
	Labels   []string `json:"labels,omitempty"`   // ENUM and SET: the labels in order
	Nullable bool     `json:"nullable,omitempty"`
	Length   int      `json:"length,omitempty"` // BINARY(n): n; BIT(n): n
	Prec     int      `json:"prec,omitempty"`   // DECIMAL precision
	Scale    int      `json:"scale,omitempty"`  // DECIMAL scale
	FSP      int      `json:"fsp,omitempty"`    // TIME, DATETIME, TIMESTAMP fractional digits
	// MariaType is MariaDB's uuid, inet4 or inet6 (mariatypes.go): a
	// binary string in the binlog, text in events.
	MariaType string `json:"maria_type,omitempty"`
}

// tableDef is the definition of a table at one point of the binlog.
type tableDef struct {
	DB      string   `json:"db"`
	Name    string   `json:"name"`
	Columns []column `json:"columns"`
	Key     []int    `json:"key,omitempty"` // primary-key columns, in key order
}

// ref returns db.table.
func (t *tableDef) ref() string { return t.DB + "." + t.Name }

// columnNames returns the names of t's columns, in order.
func (t *tableDef) columnNames() []string {
	names := make([]string, len(t.Columns))
	for i := range t.Columns {
		names[i] = t.Columns[i].Name
	}
	return names
}

// sameShape reports whether the binlog types of t's columns are those of a
// table map event: the check that a definition fits the rows it decodes.
func (t *tableDef) sameShape(tm *replication.TableMapEvent) bool {
	if len(t.Columns) != int(tm.ColumnCount) {
		return false
	}
	for i := range t.Columns {
		tp, _ := realType(tm.ColumnType[i], tm.ColumnMeta[i])
		if !sameBinlogType(t.Columns[i].Type, tp) {
			return false
		}
	}
	return true
}

// sameNulls reports whether the nullability of t's columns is that of a
// table map event's null bitmap (which every table map carries): a table
// changed by ALTER ... MODIFY ... [NOT] NULL has the same shape.
func (t *tableDef) sameNulls(tm *replication.TableMapEvent) bool {
	if len(tm.NullBitmap) == 0 {
		return true
	}
	for i := range t.Columns {
		if _, null := tm.Nullable(i); null != t.Columns[i].Nullable {
			return false
		}
	}
	return true
}

// withNulls returns t, or a copy of it with the nullability of a table map
// event of the same shape when it differs: the binlog's is the one of its
// rows, a definition from the schema history or information_schema may be
// older or newer.
func (t *tableDef) withNulls(tm *replication.TableMapEvent) *tableDef {
	if t.sameNulls(tm) {
		return t
	}
	cp := *t
	cp.Columns = slices.Clone(t.Columns)
	for i := range cp.Columns {
		_, cp.Columns[i].Nullable = tm.Nullable(i)
	}
	return &cp
}

// sameBinlogType compares binlog types, taking the old and new encodings
// of temporal types and the string types as equal.
func sameBinlogType(a, b byte) bool {
	norm := func(t byte) byte {
		switch t {
		case mysql.MYSQL_TYPE_TIMESTAMP:
			return mysql.MYSQL_TYPE_TIMESTAMP2
		case mysql.MYSQL_TYPE_DATETIME:
			return mysql.MYSQL_TYPE_DATETIME2
		case mysql.MYSQL_TYPE_TIME:
			return mysql.MYSQL_TYPE_TIME2
		case mysql.MYSQL_TYPE_VAR_STRING:
			return mysql.MYSQL_TYPE_VARCHAR
		case mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
			return mysql.MYSQL_TYPE_BLOB
		}
		return t
	}
	return norm(a) == norm(b)
}

// realType resolves the type a table map gives a column: ENUM and SET
// travel as MYSQL_TYPE_STRING with the real type in the metadata. It also
// returns a CHAR/BINARY column's length in bytes.
func realType(tp byte, meta uint16) (byte, int) {
	if tp == mysql.MYSQL_TYPE_STRING && meta >= 256 {
		b0, b1 := byte(meta>>8), byte(meta&0xff)
		if b0&0x30 != 0x30 {
			return b0 | 0x30, int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
		}
		return b0, int(b1)
	}
	if tp == mysql.MYSQL_TYPE_STRING {
		return tp, int(meta)
	}
	return tp, 0
}

// hasFullMetadata reports whether a table map carries the column names
// (binlog_row_metadata=FULL).
func hasFullMetadata(tm *replication.TableMapEvent) bool {
	return len(tm.ColumnName) == int(tm.ColumnCount)
}

// defFromTableMap builds a table definition from a table map event logged
// with binlog_row_metadata=FULL. collations maps collation ids to
// charsets.
func defFromTableMap(tm *replication.TableMapEvent, collations map[uint64]string) (*tableDef, error) {
	if !hasFullMetadata(tm) {
		return nil, fmt.Errorf("table map of %s.%s has no column names (binlog_row_metadata is not FULL)", tm.Schema, tm.Table)
	}
	names := tm.ColumnNameString()
	unsigned := tm.UnsignedMap()
	colls := tm.CollationMap()
	enumColls := tm.EnumSetCollationMap()
	enums := tm.EnumStrValueMap()
	sets := tm.SetStrValueMap()
	def := &tableDef{DB: string(tm.Schema), Name: string(tm.Table), Columns: make([]column, tm.ColumnCount)}
	for i := range def.Columns {
		tp, length := realType(tm.ColumnType[i], tm.ColumnMeta[i])
		meta := tm.ColumnMeta[i]
		c := column{Name: names[i], Type: tp, Unsigned: unsigned[i]}
		_, c.Nullable = tm.Nullable(i)
		switch tp {
		case mysql.MYSQL_TYPE_NEWDECIMAL:
			c.Prec, c.Scale = int(meta>>8), int(meta&0xff)
		case mysql.MYSQL_TYPE_TIME2, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP2:
			c.FSP = int(meta)
		case mysql.MYSQL_TYPE_BIT:
			c.Length = int(meta>>8)*8 + int(meta&0xff)
		case mysql.MYSQL_TYPE_STRING:
			c.Length = length
		case mysql.MYSQL_TYPE_ENUM:
			c.Labels = enums[i]
		case mysql.MYSQL_TYPE_SET:
			c.Labels = sets[i]
		}
		if id, ok := colls[i]; ok {
			cs, known := collations[id]
			if !known {
				return nil, fmt.Errorf("table %s.%s column %s: unknown collation id %d", tm.Schema, tm.Table, c.Name, id)
			}
			c.Charset = cs
		} else if id, ok := enumColls[i]; ok {
			c.Charset = collations[id]
		}
		if c.Charset == "binary" && tp == mysql.MYSQL_TYPE_STRING {
			// BINARY(n): the length is in bytes already.
		} else if tp == mysql.MYSQL_TYPE_STRING {
			c.Length = 0 // CHAR: not padded
		}
		def.Columns[i] = c
	}
	for _, k := range tm.PrimaryKey {
		def.Key = append(def.Key, int(k))
	}
	return def, nil
}

// readTableDef reads a table's definition from information_schema; nil
// when the table does not exist.
func readTableDef(ctx context.Context, q querier, db, table string) (*tableDef, error) {
	rows, err := q.QueryContext(ctx, `
SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, COALESCE(CHARACTER_SET_NAME, ''), IS_NULLABLE,
       COALESCE(CHARACTER_OCTET_LENGTH, 0), COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0),
       COALESCE(DATETIME_PRECISION, 0), COLUMN_KEY
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", db, table, err)
	}
	defer rows.Close()
	def := &tableDef{DB: db, Name: table}
	for rows.Next() {
		var name, dataType, colType, charset, nullable, key string
		var octets, prec, scale, fsp int64
		if err := rows.Scan(&name, &dataType, &colType, &charset, &nullable, &octets, &prec, &scale, &fsp, &key); err != nil {
			return nil, fmt.Errorf("read the columns of %s.%s: %w", db, table, err)
		}
		c, err := columnFromInfo(name, strings.ToLower(dataType), colType, charset, nullable == "YES", octets, prec, scale, fsp)
		if err != nil {
			return nil, fmt.Errorf("table %s.%s: %w", db, table, err)
		}
		def.Columns = append(def.Columns, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the columns of %s.%s: %w", db, table, err)
	}
	if len(def.Columns) == 0 {
		return nil, nil
	}
	krows, err := q.QueryContext(ctx, `
SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION`, db, table)
	if err != nil {
		return nil, fmt.Errorf("read the primary key of %s.%s: %w", db, table, err)
	}
	defer krows.Close()
	for krows.Next() {
		var name string
		if err := krows.Scan(&name); err != nil {
			return nil, fmt.Errorf("read the primary key of %s.%s: %w", db, table, err)
		}
		for i, c := range def.Columns {
			if strings.EqualFold(c.Name, name) {
				def.Key = append(def.Key, i)
			}
		}
	}
	return def, krows.Err()
}

// querier is what readTableDef needs of *sql.DB, *sql.Conn and *sql.Tx.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// columnFromInfo maps an information_schema column to a column.
func columnFromInfo(name, dataType, colType, charset string, nullable bool, octets, prec, scale, fsp int64) (column, error) {
	c := column{Name: name, Nullable: nullable, Unsigned: strings.Contains(strings.ToLower(colType), "unsigned")}
	switch dataType {
	case "tinyint":
		c.Type = mysql.MYSQL_TYPE_TINY
	case "smallint":
		c.Type = mysql.MYSQL_TYPE_SHORT
	case "mediumint":
		c.Type = mysql.MYSQL_TYPE_INT24
	case "int", "integer":
		c.Type = mysql.MYSQL_TYPE_LONG
	case "bigint":
		c.Type = mysql.MYSQL_TYPE_LONGLONG
	case "decimal", "numeric":
		c.Type, c.Prec, c.Scale = mysql.MYSQL_TYPE_NEWDECIMAL, int(prec), int(scale)
	case "float":
		c.Type = mysql.MYSQL_TYPE_FLOAT
	case "double", "real", "double precision":
		c.Type = mysql.MYSQL_TYPE_DOUBLE
	case "bit":
		c.Type, c.Length = mysql.MYSQL_TYPE_BIT, int(prec)
	case "date":
		c.Type = mysql.MYSQL_TYPE_DATE
	case "time":
		c.Type, c.FSP = mysql.MYSQL_TYPE_TIME2, int(fsp)
	case "datetime":
		c.Type, c.FSP = mysql.MYSQL_TYPE_DATETIME2, int(fsp)
	case "timestamp":
		c.Type, c.FSP = mysql.MYSQL_TYPE_TIMESTAMP2, int(fsp)
	case "year":
		c.Type = mysql.MYSQL_TYPE_YEAR
	case "char":
		c.Type, c.Charset = mysql.MYSQL_TYPE_STRING, charset
	case "varchar":
		c.Type, c.Charset = mysql.MYSQL_TYPE_VARCHAR, charset
	case "binary":
		c.Type, c.Charset, c.Length = mysql.MYSQL_TYPE_STRING, "binary", int(octets)
	case "varbinary":
		c.Type, c.Charset = mysql.MYSQL_TYPE_VARCHAR, "binary"
	case "tinytext", "text", "mediumtext", "longtext":
		c.Type, c.Charset = mysql.MYSQL_TYPE_BLOB, charset
	case "tinyblob", "blob", "mediumblob", "longblob":
		c.Type, c.Charset = mysql.MYSQL_TYPE_BLOB, "binary"
	case "json":
		c.Type = mysql.MYSQL_TYPE_JSON
	case "enum", "set":
		c.Type = mysql.MYSQL_TYPE_ENUM
		if dataType == "set" {
			c.Type = mysql.MYSQL_TYPE_SET
		}
		c.Charset = charset
		labels, err := parseLabels(colType)
		if err != nil {
			return c, fmt.Errorf("column %s: %w", name, err)
		}
		c.Labels = labels
	case "geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon", "geometrycollection", "geomcollection":
		c.Type = mysql.MYSQL_TYPE_GEOMETRY
	case mariaUUID, mariaINET4, mariaINET6:
		c.Type, c.Charset, c.MariaType, c.Length = mysql.MYSQL_TYPE_STRING, "binary", dataType, mariaLength(dataType)
	default:
		// Whatever a newer server adds.
		c.Type, c.Charset = mysql.MYSQL_TYPE_STRING, "binary"
		return c, fmt.Errorf("column %s: type %s is not supported", name, dataType)
	}
	return c, nil
}

// parseLabels reads the labels of an ENUM or SET column type:
// enum('a','b”c') → a, b'c.
func parseLabels(colType string) ([]string, error) {
	open := strings.IndexByte(colType, '(')
	if open < 0 || !strings.HasSuffix(colType, ")") {
		return nil, fmt.Errorf("cannot read the labels of %q", colType)
	}
	s := colType[open+1 : len(colType)-1]
	var labels []string
	for i := 0; i < len(s); {
		if s[i] != '\'' {
			return nil, fmt.Errorf("cannot read the labels of %q", colType)
		}
		i++
		var b strings.Builder
		for {
			if i >= len(s) {
				return nil, fmt.Errorf("cannot read the labels of %q", colType)
			}
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					b.WriteByte('\'')
					i += 2
					continue
				}
				i++
				break
			}
			if s[i] == '\\' && i+1 < len(s) {
				b.WriteByte(s[i+1])
				i += 2
				continue
			}
			b.WriteByte(s[i])
			i++
		}
		labels = append(labels, b.String())
		if i < len(s) {
			if s[i] != ',' {
				return nil, fmt.Errorf("cannot read the labels of %q", colType)
			}
			i++
		}
	}
	return labels, nil
}

// loadCollations reads collation id → charset from the server.
func loadCollations(ctx context.Context, db *sql.DB) (map[uint64]string, error) {
	rows, err := db.QueryContext(ctx, "SELECT ID, CHARACTER_SET_NAME FROM information_schema.COLLATIONS")
	if err != nil {
		return nil, fmt.Errorf("read the server's collations: %w", err)
	}
	defer rows.Close()
	out := map[uint64]string{}
	for rows.Next() {
		var id sql.NullInt64
		var cs sql.NullString
		if err := rows.Scan(&id, &cs); err != nil {
			return nil, fmt.Errorf("read the server's collations: %w", err)
		}
		if id.Valid && cs.Valid {
			out[uint64(id.Int64)] = cs.String
		}
	}
	out[63] = "binary"
	return out, rows.Err()
}

// table is a captured table as the stream and the snapshot use it: its
// definition, its topic and its event schema.
type table struct {
	def    *tableDef
	topic  string
	schema *connect.EventSchema // nil unless schemas are embedded

	signal     bool // the signal table (signal.data.collection)
	signalOnly bool // read for its signals only, not captured
}

// key returns the key columns of row, or nil for a table without a key.
func (t *table) key(row connect.Row) connect.Row {
	if len(t.def.Key) == 0 || row == nil {
		return nil
	}
	return t.keyInto(make(connect.Row, 0, len(t.def.Key)), row)
}

// keyInto is key, appending the key columns to dst (empty) to reuse it.
func (t *table) keyInto(dst connect.Row, row connect.Row) connect.Row {
	if len(t.def.Key) == 0 || row == nil {
		return nil
	}
	for _, idx := range t.def.Key {
		dst = append(dst, row[idx])
	}
	return dst
}

// newTable makes the table for a definition.
func (m *mapper) newTable(set *settings, def *tableDef) (*table, error) {
	t := &table{def: def, topic: set.topicFor(def.DB, def.Name)}
	if set.schemas {
		cols := make([]connect.Schema, len(def.Columns))
		for i := range def.Columns {
			cols[i] = m.schema(&def.Columns[i])
		}
		var keys []string
		for _, k := range def.Key {
			keys = append(keys, def.Columns[k].Name)
			cols[k].Optional = false
		}
		es, err := connect.NewEventSchema(t.topic, cols, keys)
		if err != nil {
			return nil, err
		}
		t.schema = es
	}
	return t, nil
}

// quoteIdent quotes a MySQL identifier.
func quoteIdent(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

func itoa(i int) string { return strconv.Itoa(i) }

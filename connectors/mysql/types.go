package mysql

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/japanese"
	"golang.org/x/text/encoding/korean"
	"golang.org/x/text/encoding/simplifiedchinese"
	"golang.org/x/text/encoding/traditionalchinese"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"

	"github.com/tributary-io/tributary/connect"
)

// Values reach the connector in two forms: decoded from binlog row events
// by go-mysql (integers as signed Go integers of the column's width,
// DECIMAL and temporal values as text, strings as the column charset's
// bytes, ENUM as an index, SET as a bit mask, BIT as an integer) and as
// text from the snapshot's SELECT (the connection's charset utf8mb4 and
// time_zone +00:00). Each column maps both to one Debezium form
// (fromBinlog, fromText) with one schema (schema).

// mapper maps column values.
type mapper struct {
	decimals    decimalMode
	placeholder string // unavailable.value.placeholder
}

// Debezium's logical names the MySQL connector uses beyond those connect
// defines.
const (
	logicalBits     = "io.debezium.data.Bits"
	logicalEnumSet  = "io.debezium.data.EnumSet"
	logicalYear     = "io.debezium.time.Year"
	logicalGeometry = "io.debezium.data.geometry.Geometry"
)

// isBinary reports whether a string column holds bytes.
func (c *column) isBinary() bool { return c.Charset == "binary" }

// schema returns the Kafka Connect schema of column c, named c.Name:
// optional unless the column is NOT NULL, as in Debezium.
func (m *mapper) schema(c *column) connect.Schema {
	s := m.typeSchema(c)
	s.Field = c.Name
	s.Optional = c.Nullable
	return s
}

func (m *mapper) typeSchema(c *column) connect.Schema {
	str := connect.Schema{Type: connect.SchemaString}
	switch c.MariaType {
	case mariaUUID:
		return connect.Schema{Type: connect.SchemaString, Name: connect.LogicalUUID, Version: 1}
	case mariaINET4, mariaINET6:
		return str
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY:
		return connect.Schema{Type: connect.SchemaInt16}
	case mysql.MYSQL_TYPE_SHORT:
		if c.Unsigned {
			return connect.Schema{Type: connect.SchemaInt32}
		}
		return connect.Schema{Type: connect.SchemaInt16}
	case mysql.MYSQL_TYPE_INT24:
		return connect.Schema{Type: connect.SchemaInt32}
	case mysql.MYSQL_TYPE_LONG:
		if c.Unsigned {
			return connect.Schema{Type: connect.SchemaInt64}
		}
		return connect.Schema{Type: connect.SchemaInt32}
	case mysql.MYSQL_TYPE_LONGLONG:
		if c.Unsigned {
			return m.decimalSchema(20, 0)
		}
		return connect.Schema{Type: connect.SchemaInt64}
	case mysql.MYSQL_TYPE_FLOAT:
		return connect.Schema{Type: connect.SchemaFloat32}
	case mysql.MYSQL_TYPE_DOUBLE:
		return connect.Schema{Type: connect.SchemaFloat64}
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return m.decimalSchema(c.Prec, c.Scale)
	case mysql.MYSQL_TYPE_BIT:
		if c.Length == 1 {
			return connect.Schema{Type: connect.SchemaBoolean}
		}
		return connect.Schema{Type: connect.SchemaBytes, Name: logicalBits, Version: 1,
			Parameters: []connect.SchemaParam{{Key: "length", Value: strconv.Itoa(c.Length)}}}
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		return connect.Schema{Type: connect.SchemaInt32, Name: connect.LogicalDate, Version: 1}
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return connect.Schema{Type: connect.SchemaInt64, Name: connect.LogicalMicroTime, Version: 1}
	case mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2:
		if c.FSP <= 3 {
			return connect.Schema{Type: connect.SchemaInt64, Name: connect.LogicalTimestamp, Version: 1}
		}
		return connect.Schema{Type: connect.SchemaInt64, Name: connect.LogicalMicroTimestamp, Version: 1}
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return connect.Schema{Type: connect.SchemaString, Name: connect.LogicalZonedTimestamp, Version: 1}
	case mysql.MYSQL_TYPE_YEAR:
		return connect.Schema{Type: connect.SchemaInt32, Name: logicalYear, Version: 1}
	case mysql.MYSQL_TYPE_ENUM:
		return connect.Schema{Type: connect.SchemaString, Name: connect.LogicalEnum, Version: 1,
			Parameters: []connect.SchemaParam{{Key: "allowed", Value: strings.Join(c.Labels, ",")}}}
	case mysql.MYSQL_TYPE_SET:
		return connect.Schema{Type: connect.SchemaString, Name: logicalEnumSet, Version: 1,
			Parameters: []connect.SchemaParam{{Key: "allowed", Value: strings.Join(c.Labels, ",")}}}
	case mysql.MYSQL_TYPE_JSON:
		return connect.Schema{Type: connect.SchemaString, Name: connect.LogicalJSON, Version: 1}
	case mysql.MYSQL_TYPE_GEOMETRY:
		return connect.Schema{Type: connect.SchemaStruct, Name: logicalGeometry,
			Doc: "Geometry",
			Fields: []connect.Schema{
				{Type: connect.SchemaBytes, Field: "wkb"},
				{Type: connect.SchemaInt32, Optional: true, Field: "srid"},
			}}
	case mysql.MYSQL_TYPE_STRING, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING,
		mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_TINY_BLOB, mysql.MYSQL_TYPE_MEDIUM_BLOB, mysql.MYSQL_TYPE_LONG_BLOB:
		if c.isBinary() {
			return connect.Schema{Type: connect.SchemaBytes}
		}
		return str
	}
	return str
}

func (m *mapper) decimalSchema(prec, scale int) connect.Schema {
	switch m.decimals {
	case decimalDouble:
		return connect.Schema{Type: connect.SchemaFloat64}
	case decimalPrecise:
		params := []connect.SchemaParam{{Key: "scale", Value: strconv.Itoa(scale)}}
		if prec > 0 {
			params = append(params, connect.SchemaParam{Key: "connect.decimal.precision", Value: strconv.Itoa(prec)})
		}
		return connect.Schema{Type: connect.SchemaBytes, Name: connect.LogicalDecimal, Version: 1, Parameters: params}
	}
	return connect.Schema{Type: connect.SchemaString}
}

// fromBinlog maps a value as go-mysql decodes it from a row event.
func (m *mapper) fromBinlog(c *column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		var i int64
		var bits uint
		switch n := v.(type) {
		case int8:
			i, bits = int64(n), 8
		case int16:
			i, bits = int64(n), 16
		case int32:
			i, bits = int64(n), 32
			if c.Type == mysql.MYSQL_TYPE_INT24 {
				bits = 24
			}
		case int64:
			i, bits = n, 64
		default:
			return nil, fmt.Errorf("integer column: unexpected %T", v)
		}
		if c.Unsigned && i < 0 {
			if bits == 64 {
				return m.unsigned64(uint64(i)), nil
			}
			i += 1 << bits
		}
		if c.Type == mysql.MYSQL_TYPE_LONGLONG && c.Unsigned {
			return m.unsigned64(uint64(i)), nil
		}
		return i, nil
	case mysql.MYSQL_TYPE_FLOAT:
		f, ok := v.(float32)
		if !ok {
			return nil, fmt.Errorf("float column: unexpected %T", v)
		}
		return f, nil
	case mysql.MYSQL_TYPE_DOUBLE:
		f, ok := v.(float64)
		if !ok {
			return nil, fmt.Errorf("double column: unexpected %T", v)
		}
		return f, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("decimal column: unexpected %T", v)
		}
		return m.decimal(s, c.Scale)
	case mysql.MYSQL_TYPE_BIT:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("bit column: unexpected %T", v)
		}
		return bitValue(c, uint64(n)), nil
	case mysql.MYSQL_TYPE_YEAR:
		n, ok := v.(int)
		if !ok {
			return nil, fmt.Errorf("year column: unexpected %T", v)
		}
		return int64(n), nil
	case mysql.MYSQL_TYPE_ENUM:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("enum column: unexpected %T", v)
		}
		if n <= 0 || int(n) > len(c.Labels) {
			return "", nil // the error value '' of an invalid ENUM
		}
		return c.Labels[n-1], nil
	case mysql.MYSQL_TYPE_SET:
		n, ok := v.(int64)
		if !ok {
			return nil, fmt.Errorf("set column: unexpected %T", v)
		}
		var parts []string
		for i, l := range c.Labels {
			if n&(1<<uint(i)) != 0 {
				parts = append(parts, l)
			}
		}
		return strings.Join(parts, ","), nil
	case mysql.MYSQL_TYPE_GEOMETRY:
		b, ok := v.([]byte)
		if !ok {
			return nil, fmt.Errorf("geometry column: unexpected %T", v)
		}
		return geometry(b)
	case mysql.MYSQL_TYPE_JSON:
		// MySQL's binary JSON, which go-mysql renders as JSON text.
		switch s := v.(type) {
		case string:
			return strings.Clone(s), nil
		case []byte:
			if len(s) == 0 {
				return "null", nil
			}
			return string(s), nil
		}
		return nil, fmt.Errorf("json column: unexpected %T (a partial JSON update? set binlog_row_value_options='')", v)
	}
	if isTemporal(c.Type) {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("temporal column: unexpected %T", v)
		}
		return m.temporal(c, s)
	}
	if c.MariaType != "" {
		switch s := v.(type) {
		case string:
			return mariaText(c.MariaType, []byte(s))
		case []byte:
			return mariaText(c.MariaType, s)
		}
		return nil, fmt.Errorf("%s column: unexpected %T", c.MariaType, v)
	}
	// Strings and blobs. go-mysql's strings alias the event's packet,
	// which it never reuses (every packet is read into a new buffer), and
	// a mapped row lives only until its event is encoded: a valid UTF-8
	// string is used as it is.
	var raw []byte
	switch s := v.(type) {
	case string:
		if !c.isBinary() && isUTF8(c.Charset) && utf8.ValidString(s) {
			return s, nil
		}
		raw = []byte(s)
	case []byte:
		if !c.isBinary() && isUTF8(c.Charset) && utf8.Valid(s) {
			return string(s), nil
		}
		raw = append([]byte(nil), s...)
	default:
		return nil, fmt.Errorf("string column: unexpected %T", v)
	}
	if c.isBinary() {
		if c.Type == mysql.MYSQL_TYPE_STRING && c.Length > len(raw) {
			// BINARY(n) is stored padded with zero bytes, and the binlog
			// drops the trailing zeros: put them back.
			raw = append(raw, make([]byte, c.Length-len(raw))...)
		}
		return raw, nil
	}
	return decodeCharset(c.Charset, raw)
}

// fromText maps a value read as text by the snapshot's SELECT.
func (m *mapper) fromText(c *column, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	s := string(b)
	if c.MariaType != "" {
		return s, nil // MariaDB's text form already
	}
	switch c.Type {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
		if c.Unsigned {
			u, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				return nil, err
			}
			if c.Type == mysql.MYSQL_TYPE_LONGLONG {
				return m.unsigned64(u), nil
			}
			return int64(u), nil
		}
		return strconv.ParseInt(s, 10, 64)
	case mysql.MYSQL_TYPE_FLOAT:
		f, err := strconv.ParseFloat(s, 32)
		return float32(f), err
	case mysql.MYSQL_TYPE_DOUBLE:
		return strconv.ParseFloat(s, 64)
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return m.decimal(s, c.Scale)
	case mysql.MYSQL_TYPE_BIT:
		// BIT comes as big-endian bytes.
		var n uint64
		for _, x := range b {
			n = n<<8 | uint64(x)
		}
		return bitValue(c, n), nil
	case mysql.MYSQL_TYPE_YEAR:
		return strconv.ParseInt(s, 10, 64)
	case mysql.MYSQL_TYPE_ENUM:
		return s, nil
	case mysql.MYSQL_TYPE_SET:
		return s, nil
	case mysql.MYSQL_TYPE_GEOMETRY:
		return geometry(b)
	case mysql.MYSQL_TYPE_JSON:
		return s, nil
	}
	if isTemporal(c.Type) {
		return m.temporal(c, s)
	}
	if c.isBinary() {
		return append([]byte(nil), b...), nil
	}
	return s, nil
}

// unsigned64 maps a BIGINT UNSIGNED value exactly, as a decimal of scale 0
// in the decimal.handling.mode.
func (m *mapper) unsigned64(u uint64) any {
	switch m.decimals {
	case decimalDouble:
		return float64(u)
	case decimalPrecise:
		return connect.DecimalBytes(new(big.Int).SetUint64(u))
	}
	return strconv.FormatUint(u, 10)
}

// decimal maps a DECIMAL value given as exact text.
func (m *mapper) decimal(s string, scale int) (any, error) {
	switch m.decimals {
	case decimalDouble:
		return strconv.ParseFloat(s, 64)
	case decimalPrecise:
		neg := strings.HasPrefix(s, "-")
		digits := strings.TrimLeft(s, "-+")
		ip, fp, _ := strings.Cut(digits, ".")
		for len(fp) < scale {
			fp += "0"
		}
		fp = fp[:min(len(fp), scale)]
		n, ok := new(big.Int).SetString(ip+fp, 10)
		if !ok {
			return nil, fmt.Errorf("decimal %q: not a number", s)
		}
		if neg {
			n.Neg(n)
		}
		return connect.DecimalBytes(n), nil
	}
	return s, nil
}

// bitValue maps a BIT(n) value: a boolean for BIT(1), otherwise the bits
// as little-endian bytes ((n+7)/8 of them), as Debezium's Bits.
func bitValue(c *column, n uint64) any {
	if c.Length == 1 {
		return n != 0
	}
	size := (max(c.Length, 1) + 7) / 8
	out := make([]byte, size)
	for i := range out {
		out[i] = byte(n >> (8 * i))
	}
	return out
}

// geometry maps MySQL's internal geometry value (4 bytes SRID,
// little-endian, then WKB) to Debezium's Geometry struct {wkb, srid}.
func geometry(b []byte) (any, error) {
	if len(b) < 4 {
		return nil, fmt.Errorf("geometry value of %d bytes is too short", len(b))
	}
	srid := int64(binary.LittleEndian.Uint32(b))
	return connect.Row{{Name: "wkb", Value: append([]byte(nil), b[4:]...)}, {Name: "srid", Value: srid}}, nil
}

func isTemporal(t byte) bool {
	switch t {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2,
		mysql.MYSQL_TYPE_DATETIME, mysql.MYSQL_TYPE_DATETIME2, mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return true
	}
	return false
}

// temporal maps DATE, TIME, DATETIME and TIMESTAMP text. Zero dates
// (0000-00-00, and dates with a zero month or day, which MySQL allows
// without NO_ZERO_DATE) become null, as Debezium writes them.
func (m *mapper) temporal(c *column, s string) (any, error) {
	switch c.Type {
	case mysql.MYSQL_TYPE_DATE, mysql.MYSQL_TYPE_NEWDATE:
		y, mo, d, ok := parseDate(s)
		if !ok {
			return nil, fmt.Errorf("date %q", s)
		}
		if mo == 0 || d == 0 {
			return nil, nil
		}
		days := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
		return days, nil
	case mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_TIME2:
		return parseTimeOfDay(s)
	}
	// DATETIME, TIMESTAMP: "YYYY-MM-DD HH:MM:SS[.ffffff]"
	date, clock, ok := strings.Cut(s, " ")
	if !ok {
		clock = "00:00:00"
	}
	y, mo, d, ok := parseDate(date)
	if !ok {
		return nil, fmt.Errorf("datetime %q", s)
	}
	if mo == 0 || d == 0 {
		return nil, nil
	}
	us, err := parseTimeOfDay(clock)
	if err != nil || us < 0 {
		return nil, fmt.Errorf("datetime %q", s)
	}
	t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Add(time.Duration(us) * time.Microsecond)
	switch c.Type {
	case mysql.MYSQL_TYPE_TIMESTAMP, mysql.MYSQL_TYPE_TIMESTAMP2:
		return zonedTimestamp(t, c.FSP), nil
	}
	if c.FSP <= 3 {
		return t.UnixMilli(), nil
	}
	return t.UnixMicro(), nil
}

// zonedTimestamp writes t (UTC) as ISO-8601 with the column's fractional
// digits, as Debezium's ZonedTimestamp does for MySQL: 2024-01-02T03:04:05.12Z.
func zonedTimestamp(t time.Time, fsp int) string {
	layout := "2006-01-02T15:04:05"
	if fsp > 0 {
		layout += "." + strings.Repeat("0", fsp)
	}
	return t.UTC().Format(layout) + "Z"
}

// parseDate parses YYYY-MM-DD, allowing zero parts.
func parseDate(s string) (y, m, d int, ok bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return 0, 0, 0, false
	}
	var err1, err2, err3 error
	y, err1 = strconv.Atoi(s[:4])
	m, err2 = strconv.Atoi(s[5:7])
	d, err3 = strconv.Atoi(s[8:])
	return y, m, d, err1 == nil && err2 == nil && err3 == nil && m <= 12 && d <= 31
}

// parseTimeOfDay parses [-]HHH:MM:SS[.ffffff] to microseconds.
func parseTimeOfDay(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	t := strings.TrimPrefix(s, "-")
	clock, frac, _ := strings.Cut(t, ".")
	parts := strings.Split(clock, ":")
	if len(parts) != 3 {
		return 0, fmt.Errorf("time %q", s)
	}
	h, err1 := strconv.ParseInt(parts[0], 10, 64)
	mi, err2 := strconv.ParseInt(parts[1], 10, 64)
	sec, err3 := strconv.ParseInt(parts[2], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || len(frac) > 9 {
		return 0, fmt.Errorf("time %q", s)
	}
	for len(frac) < 6 {
		frac += "0"
	}
	us, err := strconv.ParseInt(frac[:6], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("time %q", s)
	}
	v := ((h*60+mi)*60+sec)*1_000_000 + us
	if neg {
		v = -v
	}
	return v, nil
}

// charsets maps MySQL charset names to decoders; utf8 variants and ascii
// are taken as they are.
var charsets = map[string]encoding.Encoding{
	"latin1":   charmap.Windows1252, // MySQL's latin1 is cp1252
	"latin2":   charmap.ISO8859_2,
	"latin5":   charmap.ISO8859_9,
	"latin7":   charmap.ISO8859_13,
	"cp1250":   charmap.Windows1250,
	"cp1251":   charmap.Windows1251,
	"cp1256":   charmap.Windows1256,
	"cp1257":   charmap.Windows1257,
	"cp850":    charmap.CodePage850,
	"cp852":    charmap.CodePage852,
	"cp866":    charmap.CodePage866,
	"greek":    charmap.ISO8859_7,
	"hebrew":   charmap.ISO8859_8,
	"koi8r":    charmap.KOI8R,
	"koi8u":    charmap.KOI8U,
	"macroman": charmap.Macintosh,
	"swe7":     nil,
	"ucs2":     unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf16":    unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
	"utf16le":  unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM),
	"utf32":    utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM),
	"gbk":      simplifiedchinese.GBK,
	"gb2312":   simplifiedchinese.GBK, // EUC-CN, which GBK extends
	"gb18030":  simplifiedchinese.GB18030,
	"big5":     traditionalchinese.Big5,
	"sjis":     japanese.ShiftJIS,
	"cp932":    japanese.ShiftJIS,
	"ujis":     japanese.EUCJP,
	"eucjpms":  japanese.EUCJP,
	"euckr":    korean.EUCKR,
}

// isUTF8 reports whether a charset's bytes are UTF-8 as they are.
func isUTF8(cs string) bool {
	switch cs {
	case "", "utf8mb4", "utf8", "utf8mb3", "ascii":
		return true
	}
	return false
}

// decodeCharset turns a string column's bytes into UTF-8.
func decodeCharset(cs string, raw []byte) (string, error) {
	switch cs {
	case "", "utf8mb4", "utf8", "utf8mb3", "ascii":
		if !utf8.Valid(raw) {
			return strings.ToValidUTF8(string(raw), "\uFFFD"), nil
		}
		return string(raw), nil
	}
	enc, ok := charsets[cs]
	if !ok || enc == nil {
		return "", fmt.Errorf("charset %s is not supported; value as base64: %s", cs, base64.StdEncoding.EncodeToString(raw))
	}
	out, err := enc.NewDecoder().Bytes(raw)
	if err != nil {
		return "", fmt.Errorf("decode %s: %w", cs, err)
	}
	return string(out), nil
}

// fromRaw maps a value as the binlog has it (v holds exactly its bytes;
// s is its column's binlog form): integers and UTF-8 strings straight,
// everything else through go-mysql's form (colSpec.binlogValue) and
// fromBinlog, so that both decodings map alike.
func (m *mapper) fromRaw(c *column, s *colSpec, v []byte) (any, error) {
	if c.MariaType == "" && c.Type == s.tp {
		switch s.tp {
		case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_LONGLONG:
			u := leUint(v)
			if c.Unsigned {
				if s.tp == mysql.MYSQL_TYPE_LONGLONG {
					return m.unsigned64(u), nil
				}
				return int64(u), nil
			}
			shift := 64 - 8*uint(len(v))
			return int64(u<<shift) >> shift, nil
		case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
			if !c.isBinary() && isUTF8(c.Charset) {
				if b := s.stringBytes(v); utf8.Valid(b) {
					return bytesString(b), nil
				}
			}
		}
	}
	x, _, err := s.binlogValue(v)
	if err != nil {
		return nil, err
	}
	return m.fromBinlog(c, x)
}

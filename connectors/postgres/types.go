package postgres

import (
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// Every value reaches the connector in PostgreSQL's text format, from the
// replication stream (pgoutput without binary) and from the snapshot
// queries alike, so one set of parsers maps both. The sessions pin the
// settings that shape that text (see sessionParams): DateStyle ISO,
// IntervalStyle iso_8601, TimeZone UTC, extra_float_digits 1 (shortest
// exact floats), bytea_output hex, lc_monetary C.

// sessionParams are the run-time parameters of every connection the
// connector opens.
var sessionParams = map[string]string{
	"DateStyle":          "ISO, YMD",
	"IntervalStyle":      "iso_8601",
	"TimeZone":           "UTC",
	"extra_float_digits": "1",
	"bytea_output":       "hex",
	"lc_monetary":        "C",
	"application_name":   "tributary",
}

// kind is how a column's values are mapped.
type kind int

const (
	kindText kind = iota // a string, as PostgreSQL prints it
	kindBool
	kindInt16
	kindInt32
	kindInt64
	kindFloat32
	kindFloat64
	kindNumeric
	kindMoney
	kindBytea
	kindUUID
	kindJSON
	kindXML
	kindDate
	kindTime
	kindTimeTZ
	kindTimestamp
	kindTimestampTZ
	kindInterval
	kindEnum
	kindArray
	kindBit     // bit: a boolean for bit(1), else text ("1010")
	kindHstore  // hstore (an extension's type): a JSON string of its pairs
	kindUnknown // a type the connector does not know: text, with a warning
)

// pgType is a column type, resolved down to how its values are mapped:
// domains become their base type, arrays know their element type.
type pgType struct {
	oid    uint32
	name   string
	kind   kind
	elem   *pgType  // kindArray: the element type
	delim  byte     // kindArray: the element delimiter (',' but ';' for box)
	labels []string // kindEnum: the labels in sort order
	typmod int32    // a domain's own type modifier, -1 when none
}

// Built-in type OIDs (pg_type.dat) mapped to a kind. Built-ins not listed
// (geometric, network, ranges, bit strings, text search, ...) map to text
// without a warning.
var builtinKinds = map[uint32]struct {
	name string
	kind kind
}{
	16: {"bool", kindBool}, 17: {"bytea", kindBytea}, 18: {"char", kindText}, 19: {"name", kindText},
	20: {"int8", kindInt64}, 21: {"int2", kindInt16}, 23: {"int4", kindInt32}, 25: {"text", kindText},
	26: {"oid", kindInt64}, 114: {"json", kindJSON}, 142: {"xml", kindXML},
	700: {"float4", kindFloat32}, 701: {"float8", kindFloat64}, 790: {"money", kindMoney},
	1042: {"bpchar", kindText}, 1043: {"varchar", kindText}, 1082: {"date", kindDate},
	1083: {"time", kindTime}, 1114: {"timestamp", kindTimestamp}, 1184: {"timestamptz", kindTimestampTZ},
	1186: {"interval", kindInterval}, 1266: {"timetz", kindTimeTZ}, 1700: {"numeric", kindNumeric},
	2950: {"uuid", kindUUID}, 3802: {"jsonb", kindJSON},
	// Mapped to text on purpose: geometric, network, bit strings, ranges,
	// text search, pg_lsn, and the like.
	600: {"point", kindText}, 601: {"lseg", kindText}, 602: {"path", kindText}, 603: {"box", kindText},
	604: {"polygon", kindText}, 628: {"line", kindText}, 718: {"circle", kindText},
	650: {"cidr", kindText}, 869: {"inet", kindText}, 829: {"macaddr", kindText}, 774: {"macaddr8", kindText},
	1560: {"bit", kindBit}, 1562: {"varbit", kindText}, 3614: {"tsvector", kindText}, 3615: {"tsquery", kindText},
	3904: {"int4range", kindText}, 3906: {"numrange", kindText}, 3908: {"tsrange", kindText},
	3910: {"tstzrange", kindText}, 3912: {"daterange", kindText}, 3926: {"int8range", kindText},
	3220: {"pg_lsn", kindText}, 28: {"xid", kindText}, 5069: {"xid8", kindText}, 2205: {"regclass", kindText},
	4451: {"int4multirange", kindText}, 4532: {"nummultirange", kindText}, 4533: {"tsmultirange", kindText},
	4534: {"tstzmultirange", kindText}, 4535: {"datemultirange", kindText}, 4536: {"int8multirange", kindText},
}

// decimalMode is decimal.handling.mode.
type decimalMode string

const (
	decimalString  decimalMode = "string"
	decimalPrecise decimalMode = "precise"
	decimalDouble  decimalMode = "double"
)

// column is one column of a captured table.
type column struct {
	name    string
	typ     *pgType
	typmod  int32 // atttypmod: -1 when none
	key     bool  // part of the record key
	notNull bool  // NOT NULL (pg_attribute.attnotnull)
}

// effTypmod is the type modifier that applies: the column's, or its
// domain's.
func (c *column) effTypmod() int32 {
	if c.typmod < 0 && c.typ.typmod >= 0 {
		return c.typ.typmod
	}
	return c.typmod
}

// mapper turns text values into the connector's values and describes them
// as Kafka Connect schemas.
type mapper struct {
	decimals    decimalMode
	placeholder string // for unchanged TOASTed values
}

// numericScale returns precision and scale of a numeric type modifier, ok
// false when the column has none (variable scale). The scale is the low 11
// bits, signed (numeric.c's numeric_typmod_scale): PostgreSQL 15 allows
// scales from -1000 (numeric(5,-2) rounds to hundreds) to 1000.
func numericScale(typmod int32) (prec, scale int, ok bool) {
	if typmod < 4 {
		return 0, 0, false
	}
	t := typmod - 4
	return int((t >> 16) & 0xffff), int((t&0x7ff)^0x400) - 0x400, true
}

// timePrecision returns the fractional-second digits of a time or timestamp
// type modifier (6 when none).
func timePrecision(typmod int32) int {
	if typmod < 0 || typmod > 6 {
		return 6
	}
	return int(typmod)
}

// schema returns the Kafka Connect schema of column c, named c.name:
// optional unless the column is NOT NULL, as Debezium describes columns.
// Key columns are NOT NULL in PostgreSQL (a primary key's and a replica
// identity index's alike); they are required whatever the catalogue said.
func (m *mapper) schema(c *column) connect.Schema {
	s := m.typeSchema(c.typ, c.effTypmod())
	s.Field = c.name
	s.Optional = !c.notNull && !c.key
	return s
}

func (m *mapper) typeSchema(t *pgType, typmod int32) connect.Schema {
	str := connect.Schema{Type: connect.SchemaString, Optional: true}
	switch t.kind {
	case kindBool:
		return connect.Schema{Type: connect.SchemaBoolean, Optional: true}
	case kindInt16:
		return connect.Schema{Type: connect.SchemaInt16, Optional: true}
	case kindInt32:
		return connect.Schema{Type: connect.SchemaInt32, Optional: true}
	case kindInt64:
		return connect.Schema{Type: connect.SchemaInt64, Optional: true}
	case kindFloat32:
		return connect.Schema{Type: connect.SchemaFloat32, Optional: true}
	case kindFloat64:
		return connect.Schema{Type: connect.SchemaFloat64, Optional: true}
	case kindNumeric, kindMoney:
		prec, scale, fixed := numericScale(typmod)
		if t.kind == kindMoney {
			prec, scale, fixed = 0, 2, true
		}
		switch m.decimals {
		case decimalDouble:
			return connect.Schema{Type: connect.SchemaFloat64, Optional: true}
		case decimalPrecise:
			if !fixed {
				return connect.Schema{Type: connect.SchemaStruct, Optional: true, Name: connect.LogicalVariableDecimal,
					Doc: "Variable scaled decimal",
					Fields: []connect.Schema{
						{Type: connect.SchemaInt32, Field: "scale"},
						{Type: connect.SchemaBytes, Field: "value"},
					}}
			}
			params := []connect.SchemaParam{{Key: "scale", Value: strconv.Itoa(scale)}}
			if prec > 0 {
				params = append(params, connect.SchemaParam{Key: "connect.decimal.precision", Value: strconv.Itoa(prec)})
			}
			return connect.Schema{Type: connect.SchemaBytes, Optional: true, Name: connect.LogicalDecimal, Version: 1, Parameters: params}
		}
		return str
	case kindBytea:
		return connect.Schema{Type: connect.SchemaBytes, Optional: true}
	case kindUUID:
		str.Name, str.Version = connect.LogicalUUID, 1
	case kindJSON:
		str.Name, str.Version = connect.LogicalJSON, 1
	case kindXML:
		str.Name, str.Version = connect.LogicalXML, 1
	case kindDate:
		return connect.Schema{Type: connect.SchemaInt32, Optional: true, Name: connect.LogicalDate, Version: 1}
	case kindTime:
		if timePrecision(typmod) <= 3 {
			return connect.Schema{Type: connect.SchemaInt32, Optional: true, Name: connect.LogicalTime, Version: 1}
		}
		return connect.Schema{Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalMicroTime, Version: 1}
	case kindTimeTZ:
		str.Name, str.Version = connect.LogicalZonedTime, 1
	case kindTimestamp:
		if timePrecision(typmod) <= 3 {
			return connect.Schema{Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalTimestamp, Version: 1}
		}
		return connect.Schema{Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalMicroTimestamp, Version: 1}
	case kindTimestampTZ:
		str.Name, str.Version = connect.LogicalZonedTimestamp, 1
	case kindInterval:
		return connect.Schema{Type: connect.SchemaInt64, Optional: true, Name: connect.LogicalMicroDuration, Version: 1}
	case kindBit:
		if typmod == 1 {
			return connect.Schema{Type: connect.SchemaBoolean, Optional: true}
		}
	case kindHstore:
		str.Name, str.Version = connect.LogicalJSON, 1
	case kindEnum:
		str.Name, str.Version = connect.LogicalEnum, 1
		str.Parameters = []connect.SchemaParam{{Key: "allowed", Value: strings.Join(t.labels, ",")}}
	case kindArray:
		items := m.typeSchema(t.elem, typmod)
		return connect.Schema{Type: connect.SchemaArray, Optional: true, Items: &items}
	}
	return str
}

// decode maps the text value of a column of type t.
func (m *mapper) decode(t *pgType, typmod int32, s string) (any, error) {
	switch t.kind {
	case kindText, kindUnknown, kindUUID, kindJSON, kindXML, kindEnum:
		return s, nil
	case kindBool:
		switch s {
		case "t":
			return true, nil
		case "f":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a boolean", s)
	case kindInt16, kindInt32, kindInt64:
		return strconv.ParseInt(s, 10, 64)
	case kindBit:
		if typmod != 1 {
			return s, nil
		}
		switch s {
		case "1":
			return true, nil
		case "0":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not a bit(1)", s)
	case kindHstore:
		return hstoreJSON(s)
	case kindFloat32:
		f, err := parseFloat(s, 32)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nonFinite(f), nil
		}
		return float32(f), nil
	case kindFloat64:
		f, err := parseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nonFinite(f), nil
		}
		return f, nil
	case kindNumeric:
		return m.decimal(s, typmod, false)
	case kindMoney:
		return m.decimal(moneyText(s), typmod, true)
	case kindBytea:
		if !strings.HasPrefix(s, `\x`) {
			return nil, fmt.Errorf("bytea %q is not in hex format", truncate(s))
		}
		return hex.DecodeString(s[2:])
	case kindDate:
		return parseDate(s)
	case kindTime:
		us, err := parseClock(s)
		if err != nil {
			return nil, err
		}
		if timePrecision(typmod) <= 3 {
			return us / 1000, nil
		}
		return us, nil
	case kindTimeTZ:
		return parseTimeTZ(s)
	case kindTimestamp:
		us, err := parseTimestamp(s)
		if err != nil {
			return nil, err
		}
		if timePrecision(typmod) <= 3 {
			return floorDiv(us, 1000), nil
		}
		return us, nil
	case kindTimestampTZ:
		return parseTimestampTZ(s)
	case kindInterval:
		return parseInterval(s)
	case kindArray:
		elems, err := parseArray(s, t.delim)
		if err != nil {
			return nil, err
		}
		return m.decodeElems(t.elem, typmod, elems)
	}
	return s, nil
}

// decodeElems maps the elements of a parsed array (strings, nils and
// nested []any) by the element type.
func (m *mapper) decodeElems(t *pgType, typmod int32, elems []any) ([]any, error) {
	out := make([]any, len(elems))
	for i, e := range elems {
		switch e := e.(type) {
		case nil:
		case string:
			v, err := m.decode(t, typmod, e)
			if err != nil {
				return nil, fmt.Errorf("element %d: %w", i, err)
			}
			out[i] = v
		case []any:
			v, err := m.decodeElems(t, typmod, e)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
	}
	return out, nil
}

// unavailable is the value that stands for an unchanged TOASTed value of
// column c, which the stream did not carry: the placeholder in the form
// Debezium gives it for the column's type (see connect.UnavailableValue).
// ok is false for a type that cannot hold the placeholder (a number, a
// boolean, a time, numeric under decimal.handling.mode precise or double,
// and arrays of them other than int[], bigint[] and date[]): the value is
// then null, as Debezium leaves such a field (its converter fails on the
// placeholder and event.converting.failure.handling.mode=warn writes
// null), and the caller says so in the log.
func (m *mapper) unavailable(c *column) (v any, ok bool) {
	return m.unavailableOf(c.typ, c.effTypmod())
}

func (m *mapper) unavailableOf(t *pgType, typmod int32) (any, bool) {
	switch t.kind {
	case kindHstore:
		return connect.UnavailableHstore(m.placeholder), true
	case kindNumeric, kindMoney:
		if m.decimals != decimalString {
			return nil, false
		}
	case kindArray:
		switch t.elem.kind {
		case kindInt32, kindInt64, kindDate:
			nums := connect.UnavailableNumbers(m.placeholder)
			out := make([]any, len(nums))
			for i, n := range nums {
				out[i] = n
			}
			return out, true
		case kindUUID:
			return []any{connect.UnavailableUUID(m.placeholder)}, true
		}
		e, ok := m.unavailableOf(t.elem, typmod)
		if !ok {
			return nil, false
		}
		return []any{e}, true
	}
	switch m.typeSchema(t, typmod).Type {
	case connect.SchemaString:
		return m.placeholder, true
	case connect.SchemaBytes:
		return []byte(m.placeholder), true
	}
	return nil, false
}

// hstoreJSON turns hstore's text ("a"=>"1", "b"=>NULL) into a JSON object
// of its pairs ({"a":"1","b":null}), as Debezium's default
// hstore.handling.mode=json writes it, pairs in PostgreSQL's order.
func hstoreJSON(s string) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("hstore %q: %s", truncate(s), why)
	}
	// quoted reads a double-quoted string with \ escapes at s[i].
	quoted := func(i int) (string, int, bool) {
		if i >= len(s) || s[i] != '"' {
			return "", i, false
		}
		var b strings.Builder
		for i++; i < len(s); i++ {
			switch c := s[i]; c {
			case '\\':
				if i++; i >= len(s) {
					return "", i, false
				}
				b.WriteByte(s[i])
			case '"':
				return b.String(), i + 1, true
			default:
				b.WriteByte(c)
			}
		}
		return "", i, false
	}
	row := connect.Row{}
	for i := 0; i < len(s); {
		k, j, ok := quoted(i)
		if !ok || !strings.HasPrefix(s[j:], "=>") {
			return bad("want \"key\"=>")
		}
		j += 2
		var v any
		if strings.HasPrefix(s[j:], "NULL") {
			j += 4
		} else if v, j, ok = quoted(j); !ok {
			return bad("want a quoted value or NULL")
		}
		row = append(row, connect.Field{Name: k, Value: v})
		if i = j; i < len(s) {
			if !strings.HasPrefix(s[i:], ", ") {
				return bad("want , between pairs")
			}
			i += 2
		}
	}
	b, err := row.MarshalJSON()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// nonFinite is how NaN and the infinities are written: as Jackson writes
// them for Debezium, the strings "NaN", "Infinity" and "-Infinity".
func nonFinite(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case f > 0:
		return "Infinity"
	}
	return "-Infinity"
}

func parseFloat(s string, bits int) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, bits)
}

// decimal maps a numeric (or money, as plain decimal text) by
// decimal.handling.mode.
func (m *mapper) decimal(s string, typmod int32, money bool) (any, error) {
	special, isSpecial := specialDecimals[s]
	switch m.decimals {
	case decimalDouble:
		f, err := parseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		// Out of range, ParseFloat returns ±Inf, as BigDecimal.doubleValue
		// does for Debezium.
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nonFinite(f), nil
		}
		return f, nil
	case decimalPrecise:
		if isSpecial {
			return nil, fmt.Errorf("numeric %s has no decimal form under decimal.handling.mode=precise, so it is written as null as Debezium writes it; "+
				"set decimal.handling.mode=string or double to keep it", s)
		}
		unscaled, scale, err := parseDecimal(s)
		if err != nil {
			return nil, err
		}
		_, want, fixed := numericScale(typmod)
		if money {
			want, fixed = 2, true
		}
		if !fixed {
			return connect.Row{{Name: "scale", Value: int64(scale)}, {Name: "value", Value: connect.DecimalBytes(unscaled)}}, nil
		}
		if err := rescale(unscaled, scale, want); err != nil {
			return nil, err
		}
		return connect.DecimalBytes(unscaled), nil
	}
	if isSpecial {
		return special, nil
	}
	return s, nil
}

// specialDecimals maps PostgreSQL's special numeric values to the text
// Debezium writes for them under decimal.handling.mode=string: the names
// of its SpecialValueDecimal constants (SpecialValueDecimal.toString).
var specialDecimals = map[string]string{
	"NaN":       "NAN",
	"Infinity":  "POSITIVE_INFINITY",
	"-Infinity": "NEGATIVE_INFINITY",
}

// rescale turns unscaled, a decimal of scale from, into the unscaled value
// of the same number at scale to. A negative to (numeric(5,-2)) drops
// trailing zeros — 12300 is 123 at scale -2 — which PostgreSQL's rounding
// guarantees are there.
func rescale(unscaled *big.Int, from, to int) error {
	ten := big.NewInt(10)
	for ; from < to; from++ {
		unscaled.Mul(unscaled, ten)
	}
	r := new(big.Int)
	for ; from > to; from-- {
		if unscaled.QuoRem(unscaled, ten, r); r.Sign() != 0 {
			return fmt.Errorf("numeric value has more digits than its column's scale %d allows", to)
		}
	}
	return nil
}

// moneyText turns money output ("$1,234.56", "-$0.50") into decimal text.
func moneyText(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '-' || c == '.' || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// parseDecimal splits decimal text into the unscaled integer and the scale.
func parseDecimal(s string) (*big.Int, int, error) {
	digits, scale := s, 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits, scale = s[:i]+s[i+1:], len(s)-i-1
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, 0, fmt.Errorf("%q is not a decimal number", truncate(s))
	}
	return n, scale, nil
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// splitBC strips the " BC" suffix of dates before year 1.
func splitBC(s string) (string, bool) {
	if strings.HasSuffix(s, " BC") {
		return s[:len(s)-3], true
	}
	return s, false
}

// civil parses "Y-MM-DD" (any number of year digits) into a date.
func civil(s string, bc bool) (y, mo, d int, err error) {
	parts := strings.SplitN(s, "-", 3)
	if len(parts) != 3 {
		return 0, 0, 0, fmt.Errorf("%q is not a date", s)
	}
	if y, err = strconv.Atoi(parts[0]); err == nil {
		if mo, err = strconv.Atoi(parts[1]); err == nil {
			d, err = strconv.Atoi(parts[2])
		}
	}
	if err != nil {
		return 0, 0, 0, fmt.Errorf("%q is not a date", s)
	}
	if bc {
		y = 1 - y // 1 BC is year 0
	}
	return y, mo, d, nil
}

// parseDate returns days since 1970-01-01; infinity maps to the int32
// extremes.
func parseDate(s string) (any, error) {
	switch s {
	case "infinity":
		return int64(math.MaxInt32), nil
	case "-infinity":
		return int64(math.MinInt32), nil
	}
	s, bc := splitBC(s)
	y, mo, d, err := civil(s, bc)
	if err != nil {
		return nil, err
	}
	t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
	return floorDiv(t.Unix(), 86400), nil
}

// parseClock parses "HH:MM:SS[.ffffff]" into microseconds past midnight
// (24:00:00 is allowed).
func parseClock(s string) (int64, error) {
	bad := fmt.Errorf("%q is not a time of day", s)
	if len(s) < 8 || s[2] != ':' || s[5] != ':' {
		return 0, bad
	}
	h, err1 := strconv.Atoi(s[0:2])
	mi, err2 := strconv.Atoi(s[3:5])
	sec, err3 := strconv.Atoi(s[6:8])
	if err1 != nil || err2 != nil || err3 != nil {
		return 0, bad
	}
	us := (int64(h)*3600 + int64(mi)*60 + int64(sec)) * 1e6
	if len(s) > 8 {
		if s[8] != '.' {
			return 0, bad
		}
		frac := s[9:]
		if len(frac) == 0 || len(frac) > 6 {
			return 0, bad
		}
		f, err := strconv.Atoi(frac + strings.Repeat("0", 6-len(frac)))
		if err != nil {
			return 0, bad
		}
		us += int64(f)
	}
	return us, nil
}

// splitZone splits a trailing numeric zone (+HH, -HH:MM, +HH:MM:SS) off
// s and returns its offset in seconds east of UTC.
func splitZone(s string) (string, int, error) {
	i := strings.LastIndexAny(s, "+-")
	if i < 8 {
		return "", 0, fmt.Errorf("%q has no zone offset", s)
	}
	sign := 1
	if s[i] == '-' {
		sign = -1
	}
	secs := 0
	for n, p := range strings.Split(s[i+1:], ":") {
		v, err := strconv.Atoi(p)
		if err != nil || n > 2 {
			return "", 0, fmt.Errorf("%q has a malformed zone offset", s)
		}
		secs += v * []int{3600, 60, 1}[n]
	}
	return s[:i], sign * secs, nil
}

// parseTimeTZ maps "HH:MM:SS[.f]+HH[:MM]" to an ISO-8601 time in UTC
// ("10:15:30.5Z"), as Debezium's ZonedTime.
func parseTimeTZ(s string) (any, error) {
	clock, off, err := splitZone(s)
	if err != nil {
		return nil, err
	}
	us, err := parseClock(clock)
	if err != nil {
		return nil, err
	}
	us -= int64(off) * 1e6
	const day = 86400 * 1e6
	us = ((us % day) + day) % day
	t := time.UnixMicro(us).UTC()
	return t.Format("15:04:05.999999999Z"), nil
}

// The microseconds Debezium writes for a timestamp of infinity and
// -infinity: the PostgreSQL JDBC driver's stand-ins
// (PGStatement.DATE_POSITIVE_INFINITY and DATE_NEGATIVE_INFINITY), read as
// microseconds. A timestamp(0-3) is the same instant in milliseconds.
const (
	timestampPosInfinity = 9223372036825200000
	timestampNegInfinity = -9223372036832400000
)

// parseTimestamp maps "YYYY-MM-DD HH:MM:SS[.f][ BC]" to microseconds since
// the epoch; infinity and -infinity map to Debezium's stand-ins.
func parseTimestamp(s string) (int64, error) {
	switch s {
	case "infinity":
		return timestampPosInfinity, nil
	case "-infinity":
		return timestampNegInfinity, nil
	}
	s, bc := splitBC(s)
	date, clock, ok := strings.Cut(s, " ")
	if !ok {
		return 0, fmt.Errorf("%q is not a timestamp", s)
	}
	y, mo, d, err := civil(date, bc)
	if err != nil {
		return 0, err
	}
	us, err := parseClock(clock)
	if err != nil {
		return 0, err
	}
	days := floorDiv(time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC).Unix(), 86400)
	return days*86400*1e6 + us, nil
}

// parseTimestampTZ maps a timestamptz to ISO-8601 in UTC
// ("2024-01-02T03:04:05.123456Z"), as Debezium's ZonedTimestamp; infinity
// stays "infinity" / "-infinity".
func parseTimestampTZ(s string) (any, error) {
	if s == "infinity" || s == "-infinity" {
		return s, nil
	}
	s, bc := splitBC(s)
	local, off, err := splitZone(s)
	if err != nil {
		return nil, err
	}
	// Through time.Time rather than microseconds since 1970, which
	// overflow int64 in the last decades before PostgreSQL's maximum
	// (294276-12-31).
	date, clock, ok := strings.Cut(local, " ")
	if !ok {
		return nil, fmt.Errorf("%q is not a timestamp", local)
	}
	y, mo, d, err := civil(date, bc)
	if err != nil {
		return nil, err
	}
	us, err := parseClock(clock)
	if err != nil {
		return nil, err
	}
	t := time.Date(y, time.Month(mo), d, 0, 0, 0, int(us%1e6)*1e3, time.UTC).
		Add(time.Duration(us/1e6-int64(off)) * time.Second)
	return isoInstant(t), nil
}

// isoInstant formats t as java.time's ISO formatter does for Debezium:
// four-digit years padded with zeros, years beyond 9999 with a leading +
// ("+10000-01-01T00:00:00Z"), years before 1 astronomically with a - (1 BC
// is "0000", 2 BC "-0001"), as Go writes them too.
func isoInstant(t time.Time) string {
	s := t.Format(time.RFC3339Nano)
	if t.Year() > 9999 {
		return "+" + s
	}
	return s
}

// Microseconds per unit for intervals, as Debezium's MicroDuration counts
// them: a month is 365.25/12 = 30.4375 days.
const (
	usPerDay   = 86400 * 1e6
	usPerMonth = 2629800 * 1e6 // 30.4375 days
	usPerYear  = 12 * usPerMonth
)

// parseInterval maps an ISO-8601 interval as PostgreSQL prints it with
// IntervalStyle iso_8601 ("P1Y2M3DT4H5M6.5S", "P-1DT2H", "PT0S") to
// microseconds.
func parseInterval(s string) (int64, error) {
	bad := fmt.Errorf("%q is not an ISO-8601 interval", s)
	if !strings.HasPrefix(s, "P") {
		return 0, bad
	}
	var total int64
	inTime := false
	rest := s[1:]
	for rest != "" {
		if rest[0] == 'T' {
			inTime, rest = true, rest[1:]
			continue
		}
		i := 0
		for i < len(rest) && (rest[i] == '-' || rest[i] == '+' || rest[i] == '.' || (rest[i] >= '0' && rest[i] <= '9')) {
			i++
		}
		if i == 0 || i == len(rest) {
			return 0, bad
		}
		num, unit := rest[:i], rest[i]
		rest = rest[i+1:]
		var per int64
		switch {
		case unit == 'Y' && !inTime:
			per = usPerYear
		case unit == 'M' && !inTime:
			per = usPerMonth
		case unit == 'W' && !inTime:
			per = 7 * usPerDay
		case unit == 'D' && !inTime:
			per = usPerDay
		case unit == 'H' && inTime:
			per = 3600 * 1e6
		case unit == 'M' && inTime:
			per = 60 * 1e6
		case unit == 'S' && inTime:
			per = 1e6
		default:
			return 0, bad
		}
		if per == 1e6 {
			us, err := secondsToMicros(num)
			if err != nil {
				return 0, bad
			}
			total += us
			continue
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, bad
		}
		total += n * per
	}
	return total, nil
}

// secondsToMicros parses "-6.5" seconds exactly.
func secondsToMicros(s string) (int64, error) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return 0, err
	}
	if len(frac) > 6 {
		frac = frac[:6]
	}
	var f int64
	if frac != "" {
		if f, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64); err != nil {
			return 0, err
		}
	}
	us := w*1e6 + f
	if neg {
		us = -us
	}
	return us, nil
}

// parseArray parses PostgreSQL's array text ("{1,2,NULL}", `{"a b","c\"d"}`,
// "{{1,2},{3,4}}", "[0:1]={1,2}") into []any of strings, nils (NULL) and
// nested []any.
func parseArray(s string, delim byte) ([]any, error) {
	if strings.HasPrefix(s, "[") {
		i := strings.IndexByte(s, '=')
		if i < 0 {
			return nil, fmt.Errorf("array %q: malformed dimensions", truncate(s))
		}
		s = s[i+1:]
	}
	p := arrayParser{s: s, delim: delim}
	v, err := p.array()
	if err != nil {
		return nil, fmt.Errorf("array %q: %w", truncate(s), err)
	}
	if p.i != len(s) {
		return nil, fmt.Errorf("array %q: junk after the closing brace", truncate(s))
	}
	return v, nil
}

type arrayParser struct {
	s     string
	i     int
	delim byte
}

func (p *arrayParser) array() ([]any, error) {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return nil, fmt.Errorf("want '{' at %d", p.i)
	}
	p.i++
	out := []any{}
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return out, nil
	}
	for {
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated array")
		}
		switch c := p.s[p.i]; {
		case c == '{':
			sub, err := p.array()
			if err != nil {
				return nil, err
			}
			out = append(out, sub)
		case c == '"':
			p.i++
			var b strings.Builder
			for {
				if p.i >= len(p.s) {
					return nil, fmt.Errorf("unterminated quoted element")
				}
				c := p.s[p.i]
				p.i++
				if c == '\\' && p.i < len(p.s) {
					b.WriteByte(p.s[p.i])
					p.i++
					continue
				}
				if c == '"' {
					break
				}
				b.WriteByte(c)
			}
			out = append(out, b.String())
		default:
			var b strings.Builder
			for p.i < len(p.s) && p.s[p.i] != p.delim && p.s[p.i] != '}' {
				c := p.s[p.i]
				p.i++
				if c == '\\' && p.i < len(p.s) {
					c = p.s[p.i]
					p.i++
				}
				b.WriteByte(c)
			}
			if e := b.String(); strings.EqualFold(e, "NULL") {
				out = append(out, nil)
			} else {
				out = append(out, e)
			}
		}
		if p.i >= len(p.s) {
			return nil, fmt.Errorf("unterminated array")
		}
		switch p.s[p.i] {
		case p.delim:
			p.i++
		case '}':
			p.i++
			return out, nil
		default:
			return nil, fmt.Errorf("unexpected %q at %d", p.s[p.i], p.i)
		}
	}
}

// truncate shortens s for error messages.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

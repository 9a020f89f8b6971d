package iceberg

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/decimal128"
	ib "github.com/apache/iceberg-go"

	"github.com/tributary-io/tributary/connect"
)

// Buffered values use a small set of Go types, whatever the column type, so
// that a column widened after rows were buffered needs no rewrite:
//
//	nil             null
//	bool            boolean
//	int64           int, long; date (days); time, timestamp, timestamptz (µs)
//	float64         float, double
//	string          string
//	[]byte          binary
//	decimal128.Num  decimal, unscaled, at the column's scale

// typeFromConnect returns the Iceberg type for a Kafka Connect schema, as
// Debezium embeds it. Nested types (struct, array, map) and logical types
// without an Iceberg counterpart become strings (JSON text).
func typeFromConnect(s *connect.Schema) ib.Type {
	switch s.Name {
	case connect.LogicalDate, connect.LogicalConnectDate:
		return ib.PrimitiveTypes.Date
	case connect.LogicalTime, connect.LogicalConnectTime, connect.LogicalMicroTime:
		return ib.PrimitiveTypes.Time
	case connect.LogicalTimestamp, connect.LogicalConnectTimestamp, connect.LogicalMicroTimestamp, connect.LogicalNanoTimestamp:
		return ib.PrimitiveTypes.Timestamp
	case connect.LogicalZonedTimestamp:
		return ib.PrimitiveTypes.TimestampTz
	case connect.LogicalDecimal:
		scale := 0
		if v, ok := s.Param("scale"); ok {
			scale, _ = strconv.Atoi(v)
		}
		prec := 38
		if v, ok := s.Param("connect.decimal.precision"); ok {
			if p, err := strconv.Atoi(v); err == nil && p > 0 && p <= 38 {
				prec = p
			}
		}
		if scale < 0 || scale > prec {
			return ib.PrimitiveTypes.String
		}
		return ib.DecimalTypeOf(prec, scale)
	}
	switch s.Type {
	case connect.SchemaInt8, connect.SchemaInt16, connect.SchemaInt32:
		return ib.PrimitiveTypes.Int32
	case connect.SchemaInt64:
		return ib.PrimitiveTypes.Int64
	case connect.SchemaFloat32:
		return ib.PrimitiveTypes.Float32
	case connect.SchemaFloat64:
		return ib.PrimitiveTypes.Float64
	case connect.SchemaBoolean:
		return ib.PrimitiveTypes.Bool
	case connect.SchemaBytes:
		return ib.PrimitiveTypes.Binary
	}
	return ib.PrimitiveTypes.String
}

// typeOfValue infers the Iceberg type of a schemaless JSON value: JSON
// numbers become long or double, nested objects and arrays JSON text. It
// returns nil for null, whose type is unknown.
func typeOfValue(v any) ib.Type {
	switch v.(type) {
	case nil:
		return nil
	case bool:
		return ib.PrimitiveTypes.Bool
	case int64:
		return ib.PrimitiveTypes.Int64
	case float64:
		return ib.PrimitiveTypes.Float64
	case []byte:
		return ib.PrimitiveTypes.Binary
	}
	return ib.PrimitiveTypes.String
}

// canPromote reports whether Iceberg can widen a column of type from to to
// (int→long, float→double, decimal(P,S)→decimal(P',S) with P' > P), or the
// types are equal.
func canPromote(from, to ib.Type) bool {
	if from.Equals(to) {
		return true
	}
	switch f := from.(type) {
	case ib.Int32Type:
		_, ok := to.(ib.Int64Type)
		return ok
	case ib.Float32Type:
		_, ok := to.(ib.Float64Type)
		return ok
	case ib.DecimalType:
		t, ok := to.(ib.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	}
	return false
}

// parseType parses a type name of a pinned schema: Iceberg's names
// (boolean, int, long, float, double, decimal(P,S), date, time, timestamp,
// timestamptz, string, binary) and a few aliases.
func parseType(s string) (ib.Type, error) {
	t := strings.ToLower(strings.Join(strings.Fields(s), ""))
	switch t {
	case "boolean", "bool":
		return ib.PrimitiveTypes.Bool, nil
	case "int", "integer", "int32":
		return ib.PrimitiveTypes.Int32, nil
	case "long", "bigint", "int64":
		return ib.PrimitiveTypes.Int64, nil
	case "float", "float32", "real":
		return ib.PrimitiveTypes.Float32, nil
	case "double", "float64":
		return ib.PrimitiveTypes.Float64, nil
	case "date":
		return ib.PrimitiveTypes.Date, nil
	case "time":
		return ib.PrimitiveTypes.Time, nil
	case "timestamp":
		return ib.PrimitiveTypes.Timestamp, nil
	case "timestamptz":
		return ib.PrimitiveTypes.TimestampTz, nil
	case "string", "text", "varchar":
		return ib.PrimitiveTypes.String, nil
	case "binary", "bytes":
		return ib.PrimitiveTypes.Binary, nil
	}
	if strings.HasPrefix(t, "decimal(") && strings.HasSuffix(t, ")") {
		ps := strings.Split(t[len("decimal("):len(t)-1], ",")
		if len(ps) == 2 {
			p, err1 := strconv.Atoi(ps[0])
			sc, err2 := strconv.Atoi(ps[1])
			if err1 == nil && err2 == nil && p >= 1 && p <= 38 && sc >= 0 && sc <= p {
				return ib.DecimalTypeOf(p, sc), nil
			}
		}
		return nil, fmt.Errorf("type %q: want decimal(P,S) with 1 <= P <= 38 and 0 <= S <= P", s)
	}
	return nil, fmt.Errorf("unknown type %q (valid: boolean, int, long, float, double, decimal(P,S), date, time, timestamp, timestamptz, string, binary)", s)
}

// errNoConversion is wrapped by convert when a value does not fit a column.
var errNoConversion = errors.New("does not fit")

// errNoIcebergValue is wrapped by convert for a value that Postgres has and
// Iceberg's type does not: timestamp 'infinity' and '-infinity', numeric
// 'NaN' and the infinities. Such a value never fits: the sink writes null
// instead (into an optional column) or fails the record.
var errNoIcebergValue = errors.New("no Iceberg value")

// nonFiniteText reports whether v is the text of a non-finite number or
// timestamp: NaN, Infinity, -Infinity (any case, as Postgres and Jackson
// write them), or POSITIVE_INFINITY and NEGATIVE_INFINITY, as Debezium
// writes numeric infinities under decimal.handling.mode=string.
func nonFiniteText(v any) bool {
	s, ok := v.(string)
	if !ok || len(s) < 3 || len(s) > len("positive_infinity") {
		return false
	}
	for _, w := range [...]string{"nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf", "positive_infinity", "negative_infinity"} {
		if strings.EqualFold(s, w) {
			return true
		}
	}
	return false
}

// parseNonFinite returns the float64 of non-finite text.
func parseNonFinite(s string) float64 {
	switch {
	case strings.EqualFold(s, "nan"):
		return math.NaN()
	case strings.HasPrefix(s, "-"), strings.EqualFold(s, "negative_infinity"):
		return math.Inf(-1)
	}
	return math.Inf(1)
}

// convert turns a value of the record (in connect's value model, typed by
// the Connect schema s when known) into the buffered form for a column of
// type t.
func convert(v any, s *connect.Schema, t ib.Type) (any, error) {
	if v == nil {
		return nil, nil
	}
	bad := func() (any, error) {
		return nil, fmt.Errorf("%w: a %s value for a %s column", errNoConversion, describe(v), t)
	}
	if row, ok := v.(connect.Row); ok {
		// A variable-scale decimal is written as its number: its text in
		// a string column, its value in a decimal one.
		_, dec := t.(ib.DecimalType)
		if dec || (s != nil && s.Name == connect.LogicalVariableDecimal) {
			text, err := variableDecimal(row)
			if err != nil {
				return nil, err
			}
			v = text
		}
	}
	switch t := t.(type) {
	case ib.Int32Type, ib.Int64Type:
		var i int64
		switch n := v.(type) {
		case int64:
			i = n
		case float64:
			if n != math.Trunc(n) || math.Abs(n) > 1<<53 {
				return bad()
			}
			i = int64(n)
		case json.Number:
			x, err := strconv.ParseInt(string(n), 10, 64)
			if err != nil {
				return bad()
			}
			i = x
		default:
			return bad()
		}
		if _, ok := t.(ib.Int32Type); ok && (i < math.MinInt32 || i > math.MaxInt32) {
			return nil, fmt.Errorf("%w: %d is out of range for an int column", errNoConversion, i)
		}
		return i, nil
	case ib.Float32Type, ib.Float64Type:
		switch n := v.(type) {
		case float64:
			return n, nil
		case int64:
			return float64(n), nil
		case json.Number:
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil {
				return bad()
			}
			return f, nil
		case string:
			// Debezium writes a non-finite real or double as text.
			if nonFiniteText(n) {
				return parseNonFinite(n), nil
			}
		}
		return bad()
	case ib.BooleanType:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return bad()
	case ib.StringType:
		switch x := v.(type) {
		case string:
			return x, nil
		case []byte:
			if s != nil && s.Name == connect.LogicalDecimal {
				// A Decimal whose scale Iceberg's decimal cannot take.
				return decimalText(x, s), nil
			}
		case int64:
			return strconv.FormatInt(x, 10), nil
		case float64:
			return strconv.FormatFloat(x, 'g', -1, 64), nil
		case bool:
			return strconv.FormatBool(x), nil
		case json.Number:
			return string(x), nil
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNoConversion, err)
		}
		return string(b), nil
	case ib.BinaryType:
		switch x := v.(type) {
		case []byte:
			return x, nil
		case string:
			b, err := base64.StdEncoding.DecodeString(x)
			if err != nil {
				return nil, fmt.Errorf("%w: a binary column takes base64 text", errNoConversion)
			}
			return b, nil
		}
		return bad()
	case ib.DateType:
		switch x := v.(type) {
		case int64:
			return x, nil
		case string:
			d, err := time.Parse(time.DateOnly, x)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not a date (YYYY-MM-DD)", errNoConversion, x)
			}
			return d.Unix() / 86400, nil
		}
		return bad()
	case ib.TimeType:
		x, ok := v.(int64)
		if !ok {
			return bad()
		}
		if s != nil && (s.Name == connect.LogicalTime || s.Name == connect.LogicalConnectTime) {
			x *= 1000
		}
		return x, nil
	case ib.TimestampType, ib.TimestampTzType:
		switch x := v.(type) {
		case int64:
			unit := ""
			if s != nil {
				unit = s.Name
			}
			switch unit {
			case connect.LogicalMicroTimestamp:
				return x, nil
			case connect.LogicalNanoTimestamp:
				// Round towards the past, also before 1970.
				us := x / 1000
				if x%1000 < 0 {
					us--
				}
				return us, nil
			}
			return x * 1000, nil // epoch milliseconds
		case string:
			if nonFiniteText(x) {
				return nil, fmt.Errorf("%w: %q is not a point in time, and an Iceberg %s cannot hold it", errNoIcebergValue, x, t)
			}
			ts, err := parseTime(x)
			if err != nil {
				return nil, fmt.Errorf("%w: %q is not an ISO-8601 timestamp", errNoConversion, x)
			}
			return ts.UnixMicro(), nil
		}
		return bad()
	case ib.DecimalType:
		return toDecimal(v, s, t)
	}
	return nil, fmt.Errorf("%w: column type %s is not supported by this sink", errNoConversion, t)
}

// parseTime parses an ISO-8601 timestamp, with a zone or without one (UTC).
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, errNoConversion
}

// toDecimal converts a decimal value (Connect's unscaled bytes, a string
// such as "12.34", or a number) to an unscaled Num at the column's scale.
func toDecimal(v any, s *connect.Schema, t ib.DecimalType) (any, error) {
	prec, scale := int32(t.Precision()), int32(t.Scale())
	var text string
	switch x := v.(type) {
	case []byte:
		text = decimalText(x, s)
	case string:
		text = x
	case int64:
		text = strconv.FormatInt(x, 10)
	case float64:
		text = strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		text = string(x)
	default:
		return nil, fmt.Errorf("%w: a %s value for a %s column", errNoConversion, describe(v), t)
	}
	if nonFiniteText(text) {
		return nil, fmt.Errorf("%w: %q is not a number an Iceberg %s can hold", errNoIcebergValue, text, t)
	}
	r, ok := new(big.Rat).SetString(text)
	if !ok {
		return nil, fmt.Errorf("%w: %q is not a decimal number", errNoConversion, text)
	}
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)))
	if !scaled.IsInt() {
		return nil, fmt.Errorf("%w: %s has more than %d digits after the point", errNoConversion, text, scale)
	}
	n := scaled.Num()
	limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(prec)), nil)
	if new(big.Int).Abs(n).Cmp(limit) >= 0 {
		return nil, fmt.Errorf("%w: %s does not fit %s", errNoConversion, text, t)
	}
	return decimal128.FromBigInt(n), nil
}

// decimalText returns the number a Kafka Connect Decimal's unscaled bytes
// stand for at the scale of its schema s (0 without one), as text: a
// negative scale multiplies (PostgreSQL 15's numeric(5,-2)).
func decimalText(unscaled []byte, s *connect.Schema) string {
	scale := 0
	if s != nil {
		if p, ok := s.Param("scale"); ok {
			scale, _ = strconv.Atoi(p)
		}
	}
	n := connect.DecimalBig(unscaled)
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil)
	if scale < 0 {
		return n.Mul(n, pow).String()
	}
	return new(big.Rat).SetFrac(n, pow).FloatString(scale)
}

// variableDecimal returns the text of a Debezium VariableScaleDecimal,
// {"scale":S,"value":<unscaled big-endian two's complement bytes>} (bytes
// as base64 text without an embedded schema).
func variableDecimal(row connect.Row) (string, error) {
	bad := fmt.Errorf("%w: want a variable-scale decimal {\"scale\":S,\"value\":<bytes>}", errNoConversion)
	if len(row) != 2 || row[0].Name != "scale" || row[1].Name != "value" {
		return "", bad
	}
	var scale int64
	switch x := row[0].Value.(type) {
	case int64:
		scale = x
	case json.Number:
		n, err := strconv.ParseInt(string(x), 10, 32)
		if err != nil {
			return "", bad
		}
		scale = n
	default:
		return "", bad
	}
	var b []byte
	switch x := row[1].Value.(type) {
	case []byte:
		b = x
	case string:
		var err error
		if b, err = base64.StdEncoding.DecodeString(x); err != nil {
			return "", bad
		}
	default:
		return "", bad
	}
	if scale < -1000 || scale > 1000 {
		return "", bad
	}
	r := new(big.Rat).SetInt(connect.DecimalBig(b))
	pow := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(max(scale, -scale)), nil))
	if scale >= 0 {
		r.Quo(r, pow)
	} else {
		r.Mul(r, pow)
	}
	return r.FloatString(int(max(scale, 0))), nil
}

// describe names the kind of a value for error messages.
func describe(v any) string {
	switch v.(type) {
	case bool:
		return "boolean"
	case int64:
		return "integer"
	case float64:
		return "floating-point"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []byte:
		return "binary"
	case connect.Row:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

// keyString encodes buffered key values into a map key.
func keyString(vals []any) string {
	var b []byte
	for _, v := range vals {
		switch x := v.(type) {
		case nil:
			b = append(b, 'n')
		case int64:
			b = append(b, 'i')
			b = binary.BigEndian.AppendUint64(b, uint64(x))
		case string:
			b = append(b, 's')
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case []byte:
			b = append(b, 'b')
			b = binary.AppendUvarint(b, uint64(len(x)))
			b = append(b, x...)
		case bool:
			if x {
				b = append(b, 'T')
			} else {
				b = append(b, 'F')
			}
		case decimal128.Num:
			b = append(b, 'd')
			b = binary.BigEndian.AppendUint64(b, uint64(x.HighBits()))
			b = binary.BigEndian.AppendUint64(b, x.LowBits())
		default:
			b = fmt.Appendf(b, "?%v", x)
		}
	}
	return string(b)
}

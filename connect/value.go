package connect

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"math/big"
	"strconv"
)

// appendValue appends v as JSON. With a schema, the schema decides the shape
// exactly as Kafka Connect's JsonConverter would: struct fields in schema
// order, a null replaced by the schema's default, bytes as base64, range
// checks for the integer widths. Without one (s == nil), the Go type of v
// decides (see Field for the value model).
func appendValue(b []byte, v any, s *Schema) ([]byte, error) {
	if s == nil {
		return appendPlain(b, v)
	}
	if v == nil {
		if s.Default != nil {
			d := *s
			d.Default = nil
			return appendValue(b, s.Default, &d)
		}
		if s.Optional {
			return append(b, "null"...), nil
		}
		return b, valueErrorf("null for a required %s field", s.Type)
	}
	switch s.Type {
	case SchemaInt8, SchemaInt16, SchemaInt32, SchemaInt64:
		i, ok := toInt64(v)
		if !ok {
			return b, valueErrorf("want an integer for %s, have %T", s.Type, v)
		}
		if lo, hi := intRange(s.Type); i < lo || i > hi {
			return b, valueErrorf("%d is out of range for %s", i, s.Type)
		}
		return strconv.AppendInt(b, i, 10), nil
	case SchemaFloat32, SchemaFloat64:
		bits := 64
		if s.Type == SchemaFloat32 {
			bits = 32
		}
		switch f := v.(type) {
		case float64:
			return appendFloat(b, f, bits)
		case float32:
			return appendFloat(b, float64(f), 32)
		case json.Number:
			if !validNumber(string(f)) {
				return b, valueErrorf("%q is not a JSON number", string(f))
			}
			return append(b, f...), nil
		case string:
			// The values JSON lacks, as a source may hold them (an
			// element of a float8[]): written as Jackson writes them, as
			// decoding reads them back.
			switch f {
			case "NaN", "Infinity", "-Infinity":
				return appendString(b, f), nil
			}
			return b, valueErrorf("want a number for %s, have string %q", s.Type, f)
		}
		if i, ok := toInt64(v); ok {
			return appendFloat(b, float64(i), bits)
		}
		return b, valueErrorf("want a number for %s, have %T", s.Type, v)
	case SchemaBoolean:
		bv, ok := v.(bool)
		if !ok {
			return b, valueErrorf("want a bool for boolean, have %T", v)
		}
		return strconv.AppendBool(b, bv), nil
	case SchemaString:
		sv, ok := v.(string)
		if !ok {
			return b, valueErrorf("want a string for string, have %T", v)
		}
		return appendString(b, sv), nil
	case SchemaBytes:
		bv, ok := v.([]byte)
		if !ok && s.Name == LogicalDecimal {
			var err error
			if bv, err = decimalUnscaled(v, s); err != nil {
				return b, err
			}
			ok = true
		}
		if !ok {
			return b, valueErrorf("want []byte for bytes, have %T", v)
		}
		return appendBytes(b, bv), nil
	case SchemaStruct:
		row, ok := v.(Row)
		if !ok {
			return b, valueErrorf("want a Row for struct, have %T", v)
		}
		return appendStruct(b, row, s)
	case SchemaArray:
		arr, ok := v.([]any)
		if !ok {
			return b, valueErrorf("want []any for array, have %T", v)
		}
		if s.Items == nil {
			return b, valueErrorf("array schema has no items schema")
		}
		b = append(b, '[')
		for i, e := range arr {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, s.Items); err != nil {
				return b, inIndex(i, err)
			}
		}
		return append(b, ']'), nil
	case SchemaMap:
		if s.Keys == nil || s.Values == nil {
			return b, valueErrorf("map schema needs keys and values schemas")
		}
		return appendMap(b, v, s)
	}
	return b, valueErrorf("unknown schema type %q", s.Type)
}

// appendStruct writes row in the field order of s. Every field of row must
// be in s; fields of s that row lacks are written as null (or their default).
func appendStruct(b []byte, row Row, s *Schema) ([]byte, error) {
	matched := 0
	l := lookup{r: row}
	b = append(b, '{')
	for i := range s.Fields {
		f := &s.Fields[i]
		var v any
		if j := l.find(i, f.Field); j >= 0 {
			v = row[j].Value
			matched++
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f.Field)
		b = append(b, ':')
		var err error
		if b, err = appendValue(b, v, f); err != nil {
			return b, inField(f.Field, err)
		}
	}
	if matched != len(row) {
		if err := checkUniqueNames(row); err != nil {
			return b, valueErrorf("%v", err)
		}
		known := make(map[string]bool, len(s.Fields))
		for i := range s.Fields {
			known[s.Fields[i].Field] = true
		}
		for _, f := range row {
			if !known[f.Name] {
				return b, valueErrorf("field %q is not in the schema", f.Name)
			}
		}
	}
	return append(b, '}'), nil
}

// appendMap writes a map as Kafka Connect does: a JSON object when the keys
// are strings (the value is a Row), otherwise an array of [key, value]
// pairs (the value is []any of two-element []any).
func appendMap(b []byte, v any, s *Schema) ([]byte, error) {
	var err error
	switch m := v.(type) {
	case Row:
		if s.Keys.Type != SchemaString {
			return b, valueErrorf("a map with %s keys must be []any of [key, value] pairs, not a Row", s.Keys.Type)
		}
		if err := checkUniqueNames(m); err != nil {
			return b, valueErrorf("%v", err)
		}
		b = append(b, '{')
		for i, f := range m {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, f.Name)
			b = append(b, ':')
			if b, err = appendValue(b, f.Value, s.Values); err != nil {
				return b, inField(f.Name, err)
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range m {
			pair, ok := e.([]any)
			if !ok || len(pair) != 2 {
				return b, inIndex(i, valueErrorf("want a [key, value] pair, have %T", e))
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '[')
			if b, err = appendValue(b, pair[0], s.Keys); err != nil {
				return b, inIndex(i, err)
			}
			b = append(b, ',')
			if b, err = appendValue(b, pair[1], s.Values); err != nil {
				return b, inIndex(i, err)
			}
			b = append(b, ']')
		}
		return append(b, ']'), nil
	}
	return b, valueErrorf("want a Row or []any for map, have %T", v)
}

// appendPlain appends v as JSON by its Go type.
func appendPlain(b []byte, v any) ([]byte, error) {
	var err error
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case string:
		return appendString(b, v), nil
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int8:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case uint:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(v), 10), nil
	case uint64:
		return strconv.AppendUint(b, v, 10), nil
	case float64:
		return appendFloat(b, v, 64)
	case float32:
		return appendFloat(b, float64(v), 32)
	case json.Number:
		if !validNumber(string(v)) {
			return b, valueErrorf("%q is not a JSON number", string(v))
		}
		return append(b, v...), nil
	case []byte:
		return appendBytes(b, v), nil
	case Row:
		return appendPlainRow(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendPlain(b, e); err != nil {
				return b, inIndex(i, err)
			}
		}
		return append(b, ']'), nil
	}
	return b, valueErrorf("unsupported value type %T", v)
}

// appendPlainRow appends r as a JSON object by the Go types of its values
// (nil is null). The common values of rows — null, int64, strings and
// bytes — are written inline; the others go through appendPlain.
func appendPlainRow(b []byte, r Row) ([]byte, error) {
	if r == nil {
		return append(b, "null"...), nil
	}
	if err := checkUniqueNames(r); err != nil {
		return b, valueErrorf("%v", err)
	}
	if len(r) == 0 {
		return append(b, '{', '}'), nil
	}
	sep := byte('{')
	for i := range r {
		f := &r[i]
		b = appendMember(b, sep, f.Name)
		sep = ','
		switch v := f.Value.(type) {
		case nil:
			b = append(b, "null"...)
		case int64:
			b = strconv.AppendInt(b, v, 10)
		case string:
			b = appendString(b, v)
		case []byte:
			b = appendBytes(b, v)
		default:
			var err error
			if b, err = appendPlain(b, v); err != nil {
				return b, inField(f.Name, err)
			}
		}
	}
	return append(b, '}'), nil
}

func appendFloat(b []byte, f float64, bits int) ([]byte, error) {
	out, err := appendJavaFloat(b, f, bits)
	if err != nil {
		return b, valueErrorf("%v", err)
	}
	return out, nil
}

func appendBytes(b []byte, v []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, v)
	return append(b, '"')
}

// decimalUnscaled turns an integer — a Go integer, or a json.Number
// integer literal of any size — into the unscaled bytes of a Kafka
// Connect Decimal with s's "scale" (big-endian two's complement in the
// fewest bytes, as Java's BigInteger.toByteArray). This is how an integer
// beyond int64 is written when the schema was inferred (see inferSchema).
func decimalUnscaled(v any, s *Schema) ([]byte, error) {
	n := new(big.Int)
	switch x := v.(type) {
	case json.Number:
		if !isIntegerLiteral(string(x)) {
			return nil, valueErrorf("want an integer or []byte for a Decimal, have %s", string(x))
		}
		if _, ok := n.SetString(string(x), 10); !ok {
			return nil, valueErrorf("%q is not a JSON number", string(x))
		}
	case uint:
		n.SetUint64(uint64(x))
	case uint64:
		n.SetUint64(x)
	default:
		i, ok := toInt64(v)
		if !ok {
			return nil, valueErrorf("want []byte or an integer for a Decimal, have %T", v)
		}
		n.SetInt64(i)
	}
	scale := 0
	if p, ok := s.Param("scale"); ok {
		var err error
		// PostgreSQL's numeric scales lie in [-1000, 16383]; the bound
		// keeps 10^scale small.
		if scale, err = strconv.Atoi(p); err != nil || scale < -1<<15 || scale > 1<<15 {
			return nil, valueErrorf("Decimal schema: scale %q is not an integer in [-32768, 32768]", p)
		}
	}
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(scale, -scale))), nil)
	if scale >= 0 {
		n.Mul(n, pow)
	} else if _, r := n.QuoRem(n, pow, new(big.Int)); r.Sign() != 0 {
		return nil, valueErrorf("%v is not a multiple of 10^%d, as a Decimal of scale %d needs", v, -scale, scale)
	}
	return DecimalBytes(n), nil
}

// DecimalBytes returns the unscaled value n as a Kafka Connect Decimal
// (org.apache.kafka.connect.data.Decimal) carries it: big-endian two's
// complement in the fewest bytes, as Java's BigInteger.toByteArray.
func DecimalBytes(n *big.Int) []byte {
	if n.Sign() >= 0 {
		b := n.Bytes()
		if len(b) == 0 || b[0]&0x80 != 0 {
			b = append([]byte{0}, b...)
		}
		return b
	}
	// -n = ^(n-1): the bytes of |n|-1, inverted.
	m := new(big.Int).Neg(n)
	m.Sub(m, big.NewInt(1))
	b := m.Bytes()
	for i := range b {
		b[i] = ^b[i]
	}
	if len(b) == 0 || b[0]&0x80 == 0 {
		b = append([]byte{0xff}, b...)
	}
	return b
}

// DecimalBig reads the unscaled value of a Kafka Connect Decimal: b is
// big-endian two's complement (DecimalBytes' form, or any sign-extended
// one).
func DecimalBig(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b))*8))
	}
	return n
}

// toInt64 converts any Go integer (and an integral json.Number) to int64.
func toInt64(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case int:
		return int64(n), true
	case int8:
		return int64(n), true
	case int16:
		return int64(n), true
	case int32:
		return int64(n), true
	case uint:
		return int64(n), uint64(n) <= math.MaxInt64
	case uint8:
		return int64(n), true
	case uint16:
		return int64(n), true
	case uint32:
		return int64(n), true
	case uint64:
		return int64(n), n <= math.MaxInt64
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		return i, err == nil
	}
	return 0, false
}

func intRange(t SchemaType) (lo, hi int64) {
	switch t {
	case SchemaInt8:
		return math.MinInt8, math.MaxInt8
	case SchemaInt16:
		return math.MinInt16, math.MaxInt16
	case SchemaInt32:
		return math.MinInt32, math.MaxInt32
	}
	return math.MinInt64, math.MaxInt64
}

// decodeValue turns a parsed JSON value (see parseJSON) into the value model,
// typed by s. Without a schema the parsed value is already in the model.
// Like the JsonConverter, a null (or missing struct field) takes the
// schema's default, and payload fields the struct schema lacks are ignored.
func decodeValue(v any, s *Schema) (any, error) {
	if s == nil {
		return v, nil
	}
	if v == nil {
		if s.Default != nil {
			return s.Default, nil
		}
		if s.Optional {
			return nil, nil
		}
		return nil, valueErrorf("null for a required %s field", s.Type)
	}
	switch s.Type {
	case SchemaInt8, SchemaInt16, SchemaInt32, SchemaInt64:
		var i int64
		switch n := v.(type) {
		case int64:
			i = n
		case json.Number:
			if isIntegerLiteral(string(n)) {
				return nil, valueErrorf("%s is out of range for %s", string(n), s.Type)
			}
			return nil, valueErrorf("want an integer for %s, have %s", s.Type, string(n))
		case float64:
			return nil, valueErrorf("want an integer for %s, have %v", s.Type, n)
		default:
			return nil, valueErrorf("want an integer for %s, have %s", s.Type, jsonKind(v))
		}
		if lo, hi := intRange(s.Type); i < lo || i > hi {
			return nil, valueErrorf("%d is out of range for %s", i, s.Type)
		}
		return i, nil
	case SchemaFloat32, SchemaFloat64:
		var f float64
		switch n := v.(type) {
		case float64:
			f = n
		case int64:
			f = float64(n)
		case json.Number:
			var err error
			if f, err = strconv.ParseFloat(string(n), 64); err != nil || math.IsInf(f, 0) {
				return nil, valueErrorf("%s is out of range for %s", string(n), s.Type)
			}
		case string:
			// Jackson's spelling of the values JSON lacks.
			switch n {
			case "NaN":
				return math.NaN(), nil
			case "Infinity":
				return math.Inf(1), nil
			case "-Infinity":
				return math.Inf(-1), nil
			}
			return nil, valueErrorf("want a number for %s, have string %q", s.Type, n)
		default:
			return nil, valueErrorf("want a number for %s, have %s", s.Type, jsonKind(v))
		}
		if s.Type == SchemaFloat32 {
			// As JsonConverter's floatValue(): round to float32 first, so
			// Float.MAX_VALUE as Java writes it ("3.4028235E38", a hair
			// above float32's max as a float64) decodes, and a value
			// decodes to what encoding it again would write.
			if !math.IsInf(f, 0) && float32Overflows(f) {
				return nil, valueErrorf("%v is out of range for float (float32, max ±%v); declare the field double", f, float32(math.MaxFloat32))
			}
			return float64(float32(f)), nil
		}
		return f, nil
	case SchemaBoolean:
		if _, ok := v.(bool); !ok {
			return nil, valueErrorf("want a boolean, have %s", jsonKind(v))
		}
		return v, nil
	case SchemaString:
		if _, ok := v.(string); !ok {
			return nil, valueErrorf("want a string, have %s", jsonKind(v))
		}
		return v, nil
	case SchemaBytes:
		str, ok := v.(string)
		if !ok {
			return nil, valueErrorf("want a base64 string for bytes, have %s", jsonKind(v))
		}
		out, err := base64.StdEncoding.DecodeString(str)
		if err != nil {
			if out, err = base64.RawStdEncoding.DecodeString(str); err != nil {
				return nil, valueErrorf("bytes: %q is not base64", str)
			}
		}
		return out, nil
	case SchemaStruct:
		obj, ok := v.(Row)
		if !ok {
			return nil, valueErrorf("want an object for struct, have %s", jsonKind(v))
		}
		row := make(Row, 0, len(s.Fields))
		l := lookup{r: obj}
		for i := range s.Fields {
			f := &s.Fields[i]
			var fv any
			if j := l.find(i, f.Field); j >= 0 {
				fv = obj[j].Value
			}
			dv, err := decodeValue(fv, f)
			if err != nil {
				return nil, inField(f.Field, err)
			}
			row = append(row, Field{Name: f.Field, Value: dv})
		}
		return row, nil
	case SchemaArray:
		arr, ok := v.([]any)
		if !ok {
			return nil, valueErrorf("want an array, have %s", jsonKind(v))
		}
		out := make([]any, len(arr))
		for i, e := range arr {
			dv, err := decodeValue(e, s.Items)
			if err != nil {
				return nil, inIndex(i, err)
			}
			out[i] = dv
		}
		return out, nil
	case SchemaMap:
		switch m := v.(type) {
		case Row:
			if s.Keys.Type != SchemaString {
				return nil, valueErrorf("a map with %s keys must be an array of [key, value] pairs", s.Keys.Type)
			}
			out := make(Row, len(m))
			for i, f := range m {
				dv, err := decodeValue(f.Value, s.Values)
				if err != nil {
					return nil, inField(f.Name, err)
				}
				out[i] = Field{Name: f.Name, Value: dv}
			}
			return out, nil
		case []any:
			out := make([]any, len(m))
			for i, e := range m {
				pair, ok := e.([]any)
				if !ok || len(pair) != 2 {
					return nil, inIndex(i, valueErrorf("want a [key, value] pair, have %s", jsonKind(e)))
				}
				k, err := decodeValue(pair[0], s.Keys)
				if err != nil {
					return nil, inIndex(i, err)
				}
				val, err := decodeValue(pair[1], s.Values)
				if err != nil {
					return nil, inIndex(i, err)
				}
				out[i] = []any{k, val}
			}
			return out, nil
		}
		return nil, valueErrorf("want an object or an array for map, have %s", jsonKind(v))
	}
	return nil, valueErrorf("unknown schema type %q", s.Type)
}

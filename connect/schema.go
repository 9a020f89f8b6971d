package connect

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// SchemaType is a Kafka Connect schema type, spelled as Kafka Connect's
// JsonConverter spells it in the "type" of an embedded schema.
type SchemaType string

// Kafka Connect schema types. Note the JSON names of the floating-point
// types: Kafka Connect's FLOAT32 and FLOAT64 are "float" and "double".
const (
	SchemaInt8    SchemaType = "int8"
	SchemaInt16   SchemaType = "int16"
	SchemaInt32   SchemaType = "int32"
	SchemaInt64   SchemaType = "int64"
	SchemaFloat32 SchemaType = "float"
	SchemaFloat64 SchemaType = "double"
	SchemaBoolean SchemaType = "boolean"
	SchemaString  SchemaType = "string"
	SchemaBytes   SchemaType = "bytes"
	SchemaArray   SchemaType = "array"
	SchemaMap     SchemaType = "map"
	SchemaStruct  SchemaType = "struct"
)

func (t SchemaType) valid() bool {
	switch t {
	case SchemaInt8, SchemaInt16, SchemaInt32, SchemaInt64, SchemaFloat32, SchemaFloat64,
		SchemaBoolean, SchemaString, SchemaBytes, SchemaArray, SchemaMap, SchemaStruct:
		return true
	}
	return false
}

// Logical type names (Schema.Name) that Debezium and Kafka Connect put on
// primitive schemas to say how to read the value. The list is not complete;
// any name is allowed.
const (
	LogicalDate             = "io.debezium.time.Date"           // int32: days since the epoch
	LogicalTime             = "io.debezium.time.Time"           // int32: ms past midnight
	LogicalMicroTime        = "io.debezium.time.MicroTime"      // int64: µs past midnight
	LogicalTimestamp        = "io.debezium.time.Timestamp"      // int64: ms since the epoch, no zone
	LogicalMicroTimestamp   = "io.debezium.time.MicroTimestamp" // int64: µs since the epoch, no zone
	LogicalNanoTimestamp    = "io.debezium.time.NanoTimestamp"  // int64: ns since the epoch, no zone
	LogicalZonedTimestamp   = "io.debezium.time.ZonedTimestamp" // string: ISO-8601 with zone
	LogicalZonedTime        = "io.debezium.time.ZonedTime"      // string: ISO-8601 time with zone
	LogicalMicroDuration    = "io.debezium.time.MicroDuration"  // int64: µs
	LogicalInterval         = "io.debezium.time.Interval"       // string: ISO-8601 duration
	LogicalJSON             = "io.debezium.data.Json"           // string holding JSON text
	LogicalUUID             = "io.debezium.data.Uuid"           // string
	LogicalEnum             = "io.debezium.data.Enum"           // string; parameter "allowed"
	LogicalEnumSet          = "io.debezium.data.EnumSet"        // string "a,c"; parameter "allowed"
	LogicalBits             = "io.debezium.data.Bits"           // bytes; parameter "length"
	LogicalXML              = "io.debezium.data.Xml"            // string
	LogicalVariableDecimal  = "io.debezium.data.VariableScaleDecimal"
	LogicalDecimal          = "org.apache.kafka.connect.data.Decimal"   // bytes: unscaled two's complement; parameter "scale"
	LogicalConnectDate      = "org.apache.kafka.connect.data.Date"      // int32: days since the epoch
	LogicalConnectTime      = "org.apache.kafka.connect.data.Time"      // int32: ms past midnight
	LogicalConnectTimestamp = "org.apache.kafka.connect.data.Timestamp" // int64: ms since the epoch
)

// UnavailableValue is what Debezium writes for a value it does not have,
// such as an unchanged TOASTed Postgres column.
const UnavailableValue = "__debezium_unavailable_value"

// Schema is a Kafka Connect schema, the description that Debezium embeds in
// its JSON when schemas are enabled. Struct schemas list their fields in
// order; each field is a Schema whose Field holds the field's name.
type Schema struct {
	// Type is the schema's type.
	Type SchemaType

	// Fields are the fields of a struct, in order; each has Field set.
	Fields []Schema
	// Items is the element schema of an array.
	Items *Schema
	// Keys and Values are the key and value schemas of a map.
	Keys, Values *Schema

	// Optional allows null.
	Optional bool
	// Name is the schema's name: a logical type such as
	// io.debezium.time.MicroTimestamp, or a struct's name such as
	// dbserver1.inventory.customers.Value.
	Name string
	// Version is the schema version; 0 means none.
	Version int
	// Doc is the schema's documentation.
	Doc string
	// Parameters are string parameters, in order: a decimal's scale, an
	// enum's allowed values.
	Parameters []SchemaParam
	// Default is the value used for null, in the value model of Field; nil
	// means no default.
	Default any

	// Field is the name of this schema's field when it is one of a
	// struct's Fields; it is ignored elsewhere.
	Field string
}

// SchemaParam is one schema parameter.
type SchemaParam struct {
	Key, Value string // the parameter's name and value
}

// FieldSchema returns the schema of the struct field called name.
func (s *Schema) FieldSchema(name string) (*Schema, bool) {
	for i := range s.Fields {
		if s.Fields[i].Field == name {
			return &s.Fields[i], true
		}
	}
	return nil, false
}

// Param returns the value of the parameter called key.
func (s *Schema) Param(key string) (string, bool) {
	for _, p := range s.Parameters {
		if p.Key == key {
			return p.Value, true
		}
	}
	return "", false
}

// MarshalJSON encodes the schema as Kafka Connect's JsonConverter does, with
// its key order: type, fields/items/keys/values, optional, name, version,
// doc, parameters, default (and field, for the fields of a struct).
func (s Schema) MarshalJSON() ([]byte, error) {
	return appendSchema(nil, &s, false)
}

// UnmarshalJSON decodes a Kafka Connect JSON schema.
func (s *Schema) UnmarshalJSON(data []byte) error {
	v, err := parseJSON(data)
	if err != nil {
		return fmt.Errorf("decode schema: %w", err)
	}
	ps, err := schemaFromJSON(v)
	if err != nil {
		return fmt.Errorf("decode schema: %w", err)
	}
	*s = *ps
	return nil
}

// appendSchema appends s as Kafka Connect JSON; a struct field (inStruct)
// ends with its name, "field".
func appendSchema(b []byte, s *Schema, inStruct bool) ([]byte, error) {
	if !s.Type.valid() {
		return b, valueErrorf("unknown schema type %q", s.Type)
	}
	var err error
	b = append(b, `{"type":`...)
	b = appendString(b, string(s.Type))
	switch s.Type {
	case SchemaStruct:
		b = append(b, `,"fields":[`...)
		var names map[string]bool
		if len(s.Fields) > 16 {
			names = make(map[string]bool, len(s.Fields))
		}
		for i := range s.Fields {
			f := &s.Fields[i]
			dup := false
			if names != nil {
				dup = names[f.Field]
				names[f.Field] = true
			} else {
				for j := 0; j < i && !dup; j++ {
					dup = s.Fields[j].Field == f.Field
				}
			}
			if dup {
				return b, valueErrorf("duplicate field %q in struct schema", f.Field)
			}
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendSchema(b, f, true); err != nil {
				return b, inField(f.Field, err)
			}
		}
		b = append(b, ']')
	case SchemaArray:
		if s.Items == nil {
			return b, valueErrorf("array schema has no items schema")
		}
		b = append(b, `,"items":`...)
		if b, err = appendSchema(b, s.Items, false); err != nil {
			return b, err
		}
	case SchemaMap:
		if s.Keys == nil || s.Values == nil {
			return b, valueErrorf("map schema needs keys and values schemas")
		}
		b = append(b, `,"keys":`...)
		if b, err = appendSchema(b, s.Keys, false); err != nil {
			return b, err
		}
		b = append(b, `,"values":`...)
		if b, err = appendSchema(b, s.Values, false); err != nil {
			return b, err
		}
	}
	b = append(b, `,"optional":`...)
	b = strconv.AppendBool(b, s.Optional)
	if s.Name != "" {
		b = append(b, `,"name":`...)
		b = appendString(b, s.Name)
	}
	if s.Version != 0 {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, int64(s.Version), 10)
	}
	if s.Doc != "" {
		b = append(b, `,"doc":`...)
		b = appendString(b, s.Doc)
	}
	if s.Parameters != nil {
		b = append(b, `,"parameters":{`...)
		for i, p := range s.Parameters {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p.Key)
			b = append(b, ':')
			b = appendString(b, p.Value)
		}
		b = append(b, '}')
	}
	if s.Default != nil {
		b = append(b, `,"default":`...)
		if b, err = appendValue(b, s.Default, s); err != nil {
			return b, fmt.Errorf("default: %w", err)
		}
	}
	if inStruct {
		b = append(b, `,"field":`...)
		b = appendString(b, s.Field)
	}
	return append(b, '}'), nil
}

// schemaFromJSON builds a schema from its parsed Kafka Connect JSON form. Like
// the JsonConverter it requires "type", ignores keys it does not know and
// ignores "name", "version" and "doc" of the wrong JSON type.
func schemaFromJSON(v any) (*Schema, error) {
	obj, ok := v.(Row)
	if !ok {
		return nil, valueErrorf("schema: want an object, have %s", jsonKind(v))
	}
	t, _ := obj.Get("type")
	ts, ok := t.(string)
	if !ok {
		return nil, valueErrorf(`schema: "type" must be a string`)
	}
	s := &Schema{Type: SchemaType(ts)}
	if !s.Type.valid() {
		return nil, valueErrorf("schema: unknown type %q", ts)
	}
	switch s.Type {
	case SchemaStruct:
		fv, _ := obj.Get("fields")
		fields, ok := fv.([]any)
		if !ok {
			return nil, valueErrorf(`struct schema: "fields" must be an array`)
		}
		s.Fields = make([]Schema, 0, len(fields))
		names := make(map[string]bool, len(fields))
		for i, f := range fields {
			fo, ok := f.(Row)
			if !ok {
				return nil, inIndex(i, valueErrorf("struct schema field: want an object, have %s", jsonKind(f)))
			}
			nv, _ := fo.Get("field")
			name, ok := nv.(string)
			if !ok {
				return nil, inIndex(i, valueErrorf(`struct schema field: "field" must be a string`))
			}
			if names[name] {
				return nil, valueErrorf("struct schema: duplicate field %q", name)
			}
			names[name] = true
			fs, err := schemaFromJSON(fo)
			if err != nil {
				return nil, inField(name, err)
			}
			fs.Field = name
			s.Fields = append(s.Fields, *fs)
		}
	case SchemaArray:
		iv, _ := obj.Get("items")
		if iv == nil {
			return nil, valueErrorf(`array schema: "items" is missing`)
		}
		items, err := schemaFromJSON(iv)
		if err != nil {
			return nil, inField("items", err)
		}
		s.Items = items
	case SchemaMap:
		kv, _ := obj.Get("keys")
		vv, _ := obj.Get("values")
		if kv == nil || vv == nil {
			return nil, valueErrorf(`map schema: "keys" and "values" are required`)
		}
		keys, err := schemaFromJSON(kv)
		if err != nil {
			return nil, inField("keys", err)
		}
		values, err := schemaFromJSON(vv)
		if err != nil {
			return nil, inField("values", err)
		}
		s.Keys, s.Values = keys, values
	}
	if o, _ := obj.Get("optional"); o == true {
		s.Optional = true
	}
	if n, ok := obj.Get("name"); ok {
		if n, ok := n.(string); ok {
			s.Name = n
		}
	}
	if ver, ok := obj.Get("version"); ok {
		if ver, ok := ver.(int64); ok && ver >= -1<<31 && ver < 1<<31 {
			s.Version = int(ver)
		}
	}
	if d, ok := obj.Get("doc"); ok {
		if d, ok := d.(string); ok {
			s.Doc = d
		}
	}
	if p, ok := obj.Get("parameters"); ok && p != nil {
		params, ok := p.(Row)
		if !ok {
			return nil, valueErrorf(`schema: "parameters" must be an object`)
		}
		s.Parameters = make([]SchemaParam, 0, len(params))
		for _, f := range params {
			pv, ok := f.Value.(string)
			if !ok {
				return nil, valueErrorf("schema: parameter %q must be a string", f.Name)
			}
			s.Parameters = append(s.Parameters, SchemaParam{Key: f.Name, Value: pv})
		}
	}
	if d, ok := obj.Get("default"); ok && d != nil {
		def, err := decodeValue(d, s)
		if err != nil {
			return nil, inField("default", err)
		}
		s.Default = def
	}
	return s, nil
}

// inferSchema describes a value from its Go type, for encoding with an
// embedded schema when the connector gave none: every schema is optional;
// integers are int64, float64 double, float32 float; a nil value is taken
// to be a string; an array's items are described by its first non-nil
// element. An integer beyond int64 (a uint64, or a json.Number integer
// literal) is a Kafka Connect Decimal of scale 0 — what Debezium gives
// MySQL's BIGINT UNSIGNED in precise mode — so it keeps its exact value;
// it decodes, as every Decimal does, to its unscaled bytes.
func inferSchema(v any) (Schema, error) {
	switch v := v.(type) {
	case nil, string:
		return Schema{Type: SchemaString, Optional: true}, nil
	case bool:
		return Schema{Type: SchemaBoolean, Optional: true}, nil
	case uint:
		if uint64(v) > math.MaxInt64 {
			return integerDecimalSchema(), nil
		}
		return Schema{Type: SchemaInt64, Optional: true}, nil
	case uint64:
		if v > math.MaxInt64 {
			return integerDecimalSchema(), nil
		}
		return Schema{Type: SchemaInt64, Optional: true}, nil
	case int, int8, int16, int32, int64, uint8, uint16, uint32:
		return Schema{Type: SchemaInt64, Optional: true}, nil
	case float32:
		return Schema{Type: SchemaFloat32, Optional: true}, nil
	case float64:
		return Schema{Type: SchemaFloat64, Optional: true}, nil
	case []byte:
		return Schema{Type: SchemaBytes, Optional: true}, nil
	case json.Number:
		if _, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			return Schema{Type: SchemaInt64, Optional: true}, nil
		}
		if isIntegerLiteral(string(v)) {
			return integerDecimalSchema(), nil
		}
		return Schema{Type: SchemaFloat64, Optional: true}, nil
	case Row:
		return inferRowSchema(v)
	case []any:
		var elem any
		for _, e := range v {
			if e != nil {
				elem = e
				break
			}
		}
		items, err := inferSchema(elem)
		if err != nil {
			return Schema{}, err
		}
		return Schema{Type: SchemaArray, Items: &items, Optional: true}, nil
	}
	return Schema{}, valueErrorf("unsupported value type %T", v)
}

// integerDecimalSchema is the inferred schema of an integer beyond int64.
func integerDecimalSchema() Schema {
	return Schema{Type: SchemaBytes, Optional: true, Name: LogicalDecimal, Version: 1,
		Parameters: []SchemaParam{{Key: "scale", Value: "0"}}}
}

// inferRowSchema describes rows as one optional struct: the union of their
// fields in order of first appearance, each typed by its first non-nil value.
func inferRowSchema(rows ...Row) (Schema, error) {
	s := Schema{Type: SchemaStruct, Optional: true, Fields: []Schema{}}
	typed := map[string]bool{}
	for _, r := range rows {
		for _, f := range r {
			fs, exists := s.FieldSchema(f.Name)
			if exists && (typed[f.Name] || f.Value == nil) {
				continue
			}
			inferred, err := inferSchema(f.Value)
			if err != nil {
				return Schema{}, inField(f.Name, err)
			}
			inferred.Field = f.Name
			if exists {
				*fs = inferred
			} else {
				s.Fields = append(s.Fields, inferred)
			}
			typed[f.Name] = f.Value != nil
		}
	}
	return s, nil
}

package transform

import "github.com/tributary-io/tributary/connect"

func insertFieldDefinition() Definition {
	return Definition{
		Name: "insert_field",
		Description: "Sets a value field to a static value or to a piece of record metadata " +
			"(topic, partition, offset, timestamp, key), replacing the field if it exists.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "field", Type: connect.TypeString, Required: true,
				Description: "dotted path of the field to set (ingested_by, meta.source); missing objects on the way are created"},
			{Name: "value", Type: connect.TypeString,
				Description: `the static value: a JSON literal (42, true, null, {"a":1}, "quoted text") is inserted as that JSON, anything else as a string`},
			{Name: "from", Type: connect.TypeString, Enum: []string{"topic", "partition", "offset", "timestamp", "key"},
				Description: "record metadata to insert instead of a static value: topic (string), partition and offset (numbers; set on the sink side), timestamp (epoch milliseconds, null when unset), key (an object, array or string key as that JSON, other keys as a string, null for a null key)"},
		}},
		New: newInsertField,
	}
}

type insertField struct {
	field path
	value any
	from  string
}

func newInsertField(cfg connect.Config) (Transform, error) {
	p, err := parsePath(cfg.Values["field"])
	if err != nil {
		return nil, fieldError("field", "%v", err)
	}
	t := &insertField{field: p, from: cfg.Values["from"]}
	v, hasValue := cfg.Values["value"]
	hasValue = hasValue && v != ""
	switch {
	case hasValue && t.from != "":
		return nil, fieldError("value", "give value or from, not both")
	case !hasValue && t.from == "":
		return nil, fieldError("value", "give value (a static value) or from (topic, partition, offset, timestamp, key)")
	case hasValue:
		t.value = literal(v)
	}
	return t, nil
}

// literal returns the JSON value that s spells, or s as a string when it
// is not JSON.
func literal(s string) any {
	if v, err := parseJSON([]byte(s)); err == nil {
		return v
	}
	return s
}

// Apply implements Transform.
func (t *insertField) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("insert_field", t.field.text, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	v := t.value
	switch t.from {
	case "topic":
		v = r.Topic
	case "partition":
		v = int64(r.Partition)
	case "offset":
		v = r.Offset
	case "timestamp":
		v = nil
		if !r.Timestamp.IsZero() {
			v = r.Timestamp.UnixMilli()
		}
	case "key":
		v = keyValue(r.Key)
	}
	if row, err = set(row, t.field, v); err != nil {
		return nil, badRecord("insert_field", t.field.text, "%v", err)
	}
	return withValue("insert_field", r, row)
}

// keyValue decodes a record key for use as a value: an object, array or
// string key as that JSON value (the payload, for a key with an embedded
// schema), nil for a null key, and any other key as its bytes in a string.
func keyValue(key []byte) any {
	if key == nil {
		return nil
	}
	if v, err := parseJSON(key); err == nil {
		switch v := payloadOf(v).(type) {
		case connect.Row, []any, string:
			return v
		}
	}
	return string(key)
}

// passOrFail returns r unchanged when err is nil (a record without fields
// to work on), or err.
func passOrFail(r connect.Record, err error) ([]connect.Record, error) {
	if err != nil {
		return nil, err
	}
	return []connect.Record{r}, nil
}

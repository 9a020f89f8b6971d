package transform

import (
	"encoding/json"

	"github.com/tributary-io/tributary/connect"
)

func keyFromFieldsDefinition() Definition {
	return Definition{
		Name: "key_from_fields",
		Description: "Sets the record key from value fields (Kafka's ValueToKey), so that records " +
			"with equal fields land on the same partition and compact together.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "fields", Type: connect.TypeList, Required: true,
				Description: "dotted paths of the value fields that make the key, in order; the key is a JSON object of them, each under the last part of its path, a missing field as null"},
			{Name: "raw", Type: connect.TypeBool, Default: "false",
				Description: "with one field, make the key its bare value instead of an object: a string's bytes (no quotes), a number's or boolean's text, an object or array as compact JSON, and a null key for null or a missing field"},
		}},
		New: newKeyFromFields,
	}
}

type keyFromFields struct {
	fields []path
	raw    bool
}

func newKeyFromFields(cfg connect.Config) (Transform, error) {
	items, err := cfg.List("fields")
	if err != nil {
		return nil, err
	}
	t := &keyFromFields{}
	if t.fields, err = parsePaths("fields", items); err != nil {
		return nil, err
	}
	if len(t.fields) == 0 {
		return nil, fieldError("fields", "give at least one field")
	}
	if t.raw, err = cfg.Bool("raw"); err != nil {
		return nil, err
	}
	if t.raw && len(t.fields) != 1 {
		return nil, fieldError("raw", "raw needs exactly one field, have %d", len(t.fields))
	}
	seen := map[string]string{}
	for _, p := range t.fields {
		if prev, dup := seen[p.last()]; dup {
			return nil, fieldError("fields", "%s and %s would both be %q in the key", prev, p.text, p.last())
		}
		seen[p.last()] = p.text
	}
	return t, nil
}

// Apply implements Transform. A tombstone keeps its key.
func (t *keyFromFields) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("key_from_fields", t.fields[0].text, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	if t.raw {
		v, _ := get(row, t.fields[0])
		switch v := v.(type) {
		case nil:
			r.Key = nil
		case string:
			r.Key = []byte(v)
		case json.Number:
			r.Key = []byte(v)
		default:
			r.Key = []byte(textOf(v))
		}
		return []connect.Record{r}, nil
	}
	key := make(connect.Row, 0, len(t.fields))
	for _, p := range t.fields {
		v, _ := get(row, p)
		key = append(key, connect.Field{Name: p.last(), Value: v})
	}
	b, err := encodeJSON(key)
	if err != nil {
		return nil, badRecord("key_from_fields", "", "encode the key: %v", err)
	}
	r.Key = b
	return []connect.Record{r}, nil
}

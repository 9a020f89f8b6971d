package transform

import (
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// Delete handling modes of unwrap, as Debezium's ExtractNewRecordState
// names them.
const (
	modeTombstone            = "tombstone"
	modeDrop                 = "drop"
	modeRewrite              = "rewrite"
	modeRewriteWithTombstone = "rewrite-with-tombstone"
)

// deletedField is the field that rewrite modes add.
const deletedField = "__deleted"

func unwrapDefinition() Definition {
	return Definition{
		Name: "unwrap",
		Description: "Replaces a Debezium change event with the row state after the change " +
			"(Debezium's ExtractNewRecordState), with Debezium's options and defaults.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "delete.tombstone.handling.mode", Type: connect.TypeString, Default: modeTombstone,
				Enum: []string{modeTombstone, modeDrop, modeRewrite, modeRewriteWithTombstone},
				Description: "tombstone: a delete event becomes a tombstone (null value), and the tombstone that follows it is dropped; " +
					"drop: delete events and tombstones are dropped; " +
					"rewrite: a delete event becomes its before state with __deleted: \"true\", other events get __deleted: \"false\", tombstones are dropped; " +
					"rewrite-with-tombstone: as rewrite, but tombstones are kept"},
			{Name: "add.fields", Type: connect.TypeList,
				Description: "change event fields to add to the row, each named with add.fields.prefix: op, ts_ms, ts_us and ts_ns from the envelope; " +
					"id, total_order and data_collection_order from transaction; any other name from source (table, lsn, db); " +
					"struct.field names the block (source.ts_ms becomes __source_ts_ms); field:name sets the new name (source.ts_ms:event_ms); fields the event lacks are skipped"},
			{Name: "add.fields.prefix", Type: connect.TypeString, Default: "__",
				Description: "prefix of the names of added fields"},
			{Name: "add.headers", Type: connect.TypeList,
				Description: "change event fields to add as record headers, named as for add.fields with add.headers.prefix; a string value as its text, other values as JSON; a tombstone gets op as \"d\""},
			{Name: "add.headers.prefix", Type: connect.TypeString, Default: "__",
				Description: "prefix of the names of added headers"},
			{Name: "route.by.field", Type: connect.TypeString,
				Description: "a row field whose value (from after, or from before for deletes) becomes the record's topic when it is a non-empty string"},
		}},
		New: newUnwrap,
	}
}

type unwrap struct {
	mode         string
	fields       []fieldRef
	headers      []fieldRef
	routeByField string
}

// fieldRef is a change event field to copy into the row or the headers.
type fieldRef struct {
	block string // "source", "transaction", or "" for the envelope
	field string
	name  string // the name of the added field or header
}

func newUnwrap(cfg connect.Config) (Transform, error) {
	t := &unwrap{mode: cfg.Values["delete.tombstone.handling.mode"], routeByField: cfg.Values["route.by.field"]}
	var err error
	if t.fields, err = fieldRefs(cfg, "add.fields", "add.fields.prefix"); err != nil {
		return nil, err
	}
	if t.headers, err = fieldRefs(cfg, "add.headers", "add.headers.prefix"); err != nil {
		return nil, err
	}
	return t, nil
}

// fieldRefs parses an add.fields or add.headers list as Debezium does.
func fieldRefs(cfg connect.Config, param, prefixParam string) ([]fieldRef, error) {
	items, err := cfg.List(param)
	if err != nil {
		return nil, err
	}
	prefix, err := cfg.String(prefixParam)
	if err != nil {
		return nil, err
	}
	var out []fieldRef
	for _, it := range items {
		ref, alias, hasAlias := strings.Cut(it, ":")
		block, field, qualified := strings.Cut(ref, ".")
		if !qualified {
			block, field = blockOf(ref), ref
		}
		if field == "" || block == "" && qualified || strings.Contains(field, ".") || hasAlias && (alias == "" || strings.Contains(alias, ":")) {
			return nil, fieldError(param, "%q is not a field (examples: op, table, source.ts_ms, source.ts_ms:event_ms)", it)
		}
		fr := fieldRef{block: block, field: field}
		switch {
		case hasAlias:
			fr.name = prefix + alias
		case qualified:
			fr.name = prefix + block + "_" + field
		default:
			fr.name = prefix + field
		}
		out = append(out, fr)
	}
	return out, nil
}

// blockOf returns the envelope block that holds an unqualified field, as
// Debezium decides it.
func blockOf(field string) string {
	switch field {
	case "op", "ts_ms", "ts_us", "ts_ns":
		return ""
	case "id", "total_order", "data_collection_order":
		return "transaction"
	}
	return "source"
}

// lookup returns the value of the field in the envelope, and whether the
// event has it. A field missing from its block is looked for in the
// envelope itself, where another transform may have put it; a field of a
// block that is null (transaction, during a snapshot) is null.
func (f fieldRef) lookup(env connect.Row) (any, bool) {
	if f.block == "" {
		return env.Get(f.field)
	}
	block, hasBlock := env.Get(f.block)
	if b, ok := block.(connect.Row); ok {
		if v, ok := b.Get(f.field); ok {
			return v, true
		}
	}
	if v, ok := env.Get(f.field); ok {
		return v, true
	}
	if hasBlock && block == nil {
		return nil, true
	}
	return nil, false
}

// Apply implements Transform.
func (t *unwrap) Apply(r connect.Record) ([]connect.Record, error) {
	if r.Value == nil {
		return t.tombstone(r)
	}
	v, err := parseJSON(r.Value)
	if err != nil {
		return []connect.Record{r}, nil
	}
	payload, schema := splitSchema(v)
	if payload == nil {
		// JSON null, or a null payload under a schema: how Kafka Connect's
		// JsonConverter writes a null value.
		return t.tombstone(r)
	}
	env, ok := changeEvent(payload, schema)
	if !ok {
		return []connect.Record{r}, nil
	}
	if op, _ := env.Get("op"); op == string(connect.OpTruncate) {
		return nil, nil
	}
	after, err := stateOf(env, "after")
	if err != nil {
		return nil, err
	}
	before, err := stateOf(env, "before")
	if err != nil {
		return nil, err
	}
	if after == nil && before == nil {
		// A truncate, or an event without state: Debezium drops it.
		return nil, nil
	}
	if len(t.headers) > 0 {
		hs := slices.Clip(r.Headers)
		for _, h := range t.headers {
			if v, ok := h.lookup(env); ok {
				hs = append(hs, connect.Header{Key: h.name, Value: headerValue(v)})
			}
		}
		r.Headers = hs
	}
	rewrite := t.mode == modeRewrite || t.mode == modeRewriteWithTombstone
	row := after
	deleted := "false"
	if after == nil {
		t.route(&r, before)
		switch t.mode {
		case modeDrop:
			return nil, nil
		case modeTombstone:
			r.Value = nil
			return []connect.Record{r}, nil
		}
		row, deleted = before, "true"
	} else {
		t.route(&r, after)
	}
	if rewrite {
		row.Set(deletedField, deleted)
	}
	for _, f := range t.fields {
		if v, ok := f.lookup(env); ok {
			row.Set(f.name, v)
		}
	}
	return withValue("unwrap", r, row)
}

// route sets the topic of r from the route.by.field of the row state.
func (t *unwrap) route(r *connect.Record, state connect.Row) {
	if t.routeByField == "" || state == nil {
		return
	}
	if topic, ok := state.Get(t.routeByField); ok {
		if s, ok := topic.(string); ok && s != "" {
			r.Topic = s
		}
	}
}

// tombstone handles a record with a null value: dropped, or kept with the
// op header, as the mode says.
func (t *unwrap) tombstone(r connect.Record) ([]connect.Record, error) {
	if t.mode != modeRewriteWithTombstone {
		return nil, nil
	}
	for _, h := range t.headers {
		if h.block == "" && h.field == "op" {
			r.Headers = append(slices.Clip(r.Headers), connect.Header{Key: h.name, Value: []byte(connect.OpDelete)})
		}
	}
	return []connect.Record{r}, nil
}

// changeEvent returns the payload of a record value as a Debezium change
// event envelope. It reports false for anything else: a heartbeat, a
// transaction boundary, a logical decoding message (op m), a value whose
// schema is not an envelope's.
func changeEvent(payload any, schema connect.Row) (connect.Row, bool) {
	if schema != nil {
		if name, ok := schema.Get("name"); ok {
			if s, ok := name.(string); ok && !strings.HasSuffix(s, ".Envelope") {
				return nil, false
			}
		}
	}
	env, ok := payload.(connect.Row)
	if !ok {
		return nil, false
	}
	op, _ := env.Get("op")
	switch op {
	case string(connect.OpTruncate):
		return env, true
	case string(connect.OpCreate), string(connect.OpUpdate), string(connect.OpDelete), string(connect.OpRead):
		if env.Index("after") >= 0 || env.Index("before") >= 0 {
			return env, true
		}
	}
	return nil, false
}

// stateOf returns the before or after state of an envelope: an object, or
// nil for null or missing.
func stateOf(env connect.Row, name string) (connect.Row, error) {
	v, _ := env.Get(name)
	switch v := v.(type) {
	case nil:
		return nil, nil
	case connect.Row:
		return v, nil
	default:
		return nil, badRecord("unwrap", name, "the change event's %s is %s, want an object or null", name, kindOf(v))
	}
}

// headerValue encodes a field value as a header value: a string as its
// bytes, null as a null header, anything else as JSON.
func headerValue(v any) []byte {
	switch v := v.(type) {
	case nil:
		return nil
	case string:
		return []byte(v)
	}
	return []byte(textOf(v))
}

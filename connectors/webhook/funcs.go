package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"text/template"
)

// funcs are the helpers templates may call, besides text/template's own
// (eq, and, or, not, len, index, printf, urlquery, ...).
var funcs = template.FuncMap{
	// json writes v as compact JSON (no HTML escaping): {{ json .Value.after }}.
	"json": toJSON,
	// default returns def when v is empty (null, "", 0, false, an empty
	// list or object): {{ default "unknown" (get .Value "after.city") }}.
	"default": func(def, v any) any {
		if isEmpty(v) {
			return def
		}
		return v
	},
	// get returns the field at a dotted path of v, or null when any part
	// is missing: {{ get .Value "after.email" }}.
	"get": get,
	// str converts v to text as it prints: {{ str .Value.after.id }}.
	"str":        toString,
	"lower":      func(v any) string { return strings.ToLower(toString(v)) },
	"upper":      func(v any) string { return strings.ToUpper(toString(v)) },
	"trim":       func(v any) string { return strings.TrimSpace(toString(v)) },
	"replace":    func(old, new string, v any) string { return strings.ReplaceAll(toString(v), old, new) },
	"pathEscape": func(v any) string { return url.PathEscape(toString(v)) },
	// join joins the items of a list: {{ join "," .Value.tags }}.
	"join": func(sep string, list any) string {
		rv := reflect.ValueOf(list)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return toString(list)
		}
		parts := make([]string, rv.Len())
		for i := range parts {
			parts[i] = toString(rv.Index(i).Interface())
		}
		return strings.Join(parts, sep)
	},
}

func toJSON(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("json: %w", err)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func toString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case *null:
		return ""
	case json.Number:
		return string(v)
	case fmt.Stringer:
		return v.String()
	case nil:
		return ""
	case map[string]any, []any:
		s, _ := toJSON(v)
		return s
	}
	return fmt.Sprint(v)
}

func isEmpty(v any) bool {
	switch v := v.(type) {
	case nil, *null:
		return true
	case string:
		return v == ""
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.String:
		return rv.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return rv.IsNil()
	}
	return rv.IsZero()
}

func get(v any, path string) any {
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return jsonNull
		}
		if v, ok = m[part]; !ok {
			return jsonNull
		}
	}
	return v
}

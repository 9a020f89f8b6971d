package transform

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// This file holds the transforms that rename, drop and mask value fields.

func renameFieldsDefinition() Definition {
	return Definition{
		Name:        "rename_fields",
		Description: "Renames value fields, keeping each in its place.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "renames", Type: connect.TypeList, Required: true,
				Description: "old:new pairs, applied in order; old is a dotted path (after.mail), new a plain name that replaces the last part (after.mail:email renames after.mail to after.email); a missing field is skipped, and a field already called new is replaced"},
		}},
		New: newRenameFields,
	}
}

type rename struct {
	from path
	to   string
}

type renameFields []rename

func newRenameFields(cfg connect.Config) (Transform, error) {
	items, err := cfg.List("renames")
	if err != nil {
		return nil, err
	}
	var t renameFields
	for _, it := range items {
		from, to, ok := strings.Cut(it, ":")
		from, to = strings.TrimSpace(from), strings.TrimSpace(to)
		if !ok || from == "" || to == "" || strings.Contains(to, ":") {
			return nil, fieldError("renames", "%q is not an old:new pair (example: mail:email)", it)
		}
		if strings.Contains(to, ".") {
			return nil, fieldError("renames", "in %q the new name %q has a dot: give the new name of the last part only (after.mail:email)", it, to)
		}
		p, err := parsePath(from)
		if err != nil {
			return nil, fieldError("renames", "%v", err)
		}
		t = append(t, rename{from: p, to: to})
	}
	if len(t) == 0 {
		return nil, fieldError("renames", "give at least one old:new pair")
	}
	return t, nil
}

// Apply implements Transform. A rename of a column of the row state (x of
// an unwrapped row, after.x of a change event) is made in the record's
// connect.UnavailableColumnsHeader too, so that the header keeps naming
// the fields whose values the source did not have.
func (t renameFields) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("rename_fields", t[0].from.text, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	var unavailable []string
	if h, ok := r.Header(connect.UnavailableColumnsHeader); ok {
		unavailable, _ = connect.ParseUnavailableColumns(h) // a malformed header is the sink's to report
	}
	_, envelope := changeEvent(row, nil)
	renamed := false
	for _, rn := range t {
		done := false
		row, _ = inObject(row, rn.from.parent(), false, func(obj connect.Row) (connect.Row, error) {
			old := rn.from.last()
			if obj.Index(old) < 0 || old == rn.to {
				return obj, nil
			}
			obj.Delete(rn.to)
			obj[obj.Index(old)].Name = rn.to
			done = true
			return obj, nil
		})
		parent := rn.from.parent()
		column := envelope && len(parent) == 1 && parent[0] == "after" || !envelope && len(parent) == 0
		if done && column && (slices.Contains(unavailable, rn.to) || slices.Contains(unavailable, rn.from.last())) {
			// The field called rn.to is replaced, and so is its listing.
			unavailable = slices.DeleteFunc(unavailable, func(c string) bool { return c == rn.to })
			for i, c := range unavailable {
				if c == rn.from.last() {
					unavailable[i] = rn.to
				}
			}
			renamed = true
		}
	}
	if renamed {
		hs := slices.Clone(r.Headers)
		for i := len(hs) - 1; i >= 0; i-- {
			if hs[i].Key == connect.UnavailableColumnsHeader {
				hs[i] = connect.UnavailableColumns(unavailable)
				break
			}
		}
		r.Headers = hs
	}
	return withValue("rename_fields", r, row)
}

func dropFieldsDefinition() Definition {
	return Definition{
		Name:        "drop_fields",
		Description: "Removes the listed value fields (fields), or all but the listed ones (keep).",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "fields", Type: connect.TypeList,
				Description: "dotted paths of the fields to remove; missing ones are skipped"},
			{Name: "keep", Type: connect.TypeList,
				Description: "dotted paths of the fields to keep, removing every other field (after.id keeps the after object with only its id); fields stay in their order"},
		}},
		New: newDropFields,
	}
}

type dropFields struct {
	drop []path
	keep *keepNode
	// first names a field for error messages.
	first string
}

// keepNode is a tree of the paths to keep: a node with all set keeps its
// whole value.
type keepNode struct {
	all      bool
	children map[string]*keepNode
}

func newDropFields(cfg connect.Config) (Transform, error) {
	hasDrop, hasKeep := cfg.Values["fields"] != "", cfg.Values["keep"] != ""
	switch {
	case hasDrop && hasKeep:
		return nil, fieldError("keep", "give fields (to remove) or keep (to keep only those), not both")
	case !hasDrop && !hasKeep:
		return nil, fieldError("fields", "give fields (to remove) or keep (to keep only those)")
	}
	t := &dropFields{}
	if hasDrop {
		items, err := cfg.List("fields")
		if err != nil {
			return nil, err
		}
		if t.drop, err = parsePaths("fields", items); err != nil {
			return nil, err
		}
		if len(t.drop) == 0 {
			return nil, fieldError("fields", "give at least one field to remove")
		}
		t.first = t.drop[0].text
		return t, nil
	}
	items, err := cfg.List("keep")
	if err != nil {
		return nil, err
	}
	paths, err := parsePaths("keep", items)
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fieldError("keep", "give at least one field to keep")
	}
	t.keep = &keepNode{}
	for _, p := range paths {
		n := t.keep
		for _, part := range p.parts {
			if n.children == nil {
				n.children = map[string]*keepNode{}
			}
			c, ok := n.children[part]
			if !ok {
				c = &keepNode{}
				n.children[part] = c
			}
			n = c
		}
		n.all = true
	}
	t.first = paths[0].text
	return t, nil
}

// Apply implements Transform.
func (t *dropFields) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("drop_fields", t.first, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	if t.keep != nil {
		row = prune(row, t.keep)
	}
	for _, p := range t.drop {
		row = remove(row, p)
	}
	return withValue("drop_fields", r, row)
}

// prune returns the fields of row that n keeps, in row's order. Below a
// node that keeps only some fields, an object is pruned in turn and a null
// kept; values of other kinds are dropped.
func prune(row connect.Row, n *keepNode) connect.Row {
	out := make(connect.Row, 0, len(n.children))
	for _, f := range row {
		c, ok := n.children[f.Name]
		if !ok {
			continue
		}
		if !c.all {
			switch v := f.Value.(type) {
			case connect.Row:
				f.Value = prune(v, c)
			case nil:
			default:
				continue
			}
		}
		out = append(out, f)
	}
	return out
}

func maskFieldsDefinition() Definition {
	return Definition{
		Name: "mask_fields",
		Description: "Hides the values of value fields: replaces them with a fixed text, or with a " +
			"SHA-256 digest so that equal values still match (for joins and counting).",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "fields", Type: connect.TypeList, Required: true,
				Description: "dotted paths of the fields to mask; missing fields and null values are left alone"},
			{Name: "replacement", Type: connect.TypeString, Default: "****",
				Description: "the string that replaces each value, whatever its type; ignored with hash"},
			{Name: "hash", Type: connect.TypeString, Enum: []string{"sha256"},
				Description: "replace each value with the lowercase hex SHA-256 digest of its text (objects and arrays as compact JSON) instead"},
			{Name: "hash.key", Type: connect.TypePassword,
				Description: "with hash, a secret key: the digest becomes HMAC-SHA256, so that guessed values cannot be checked against it without the key"},
		}},
		New: newMaskFields,
	}
}

type maskFields struct {
	fields      []path
	replacement string
	hash        bool
	key         []byte
}

func newMaskFields(cfg connect.Config) (Transform, error) {
	items, err := cfg.List("fields")
	if err != nil {
		return nil, err
	}
	t := &maskFields{}
	if t.fields, err = parsePaths("fields", items); err != nil {
		return nil, err
	}
	if len(t.fields) == 0 {
		return nil, fieldError("fields", "give at least one field to mask")
	}
	if t.replacement, err = cfg.String("replacement"); err != nil {
		return nil, err
	}
	t.hash = cfg.Values["hash"] != ""
	if key := cfg.Values["hash.key"]; key != "" {
		if !t.hash {
			return nil, fieldError("hash.key", "hash.key needs hash: sha256")
		}
		t.key = []byte(key)
	}
	return t, nil
}

// Apply implements Transform.
func (t *maskFields) Apply(r connect.Record) ([]connect.Record, error) {
	row, ok, err := readObject("mask_fields", t.fields[0].text, r.Value)
	if err != nil || !ok {
		return passOrFail(r, err)
	}
	var h hash.Hash
	if t.hash {
		if t.key != nil {
			h = hmac.New(sha256.New, t.key)
		} else {
			h = sha256.New()
		}
	}
	mask := func(v any) (any, error) {
		switch {
		case v == nil:
			return nil, nil
		case h != nil:
			h.Reset()
			h.Write([]byte(textOf(v)))
			return hex.EncodeToString(h.Sum(nil)), nil
		}
		return t.replacement, nil
	}
	for _, p := range t.fields {
		row, _ = replace(row, p, mask)
	}
	return withValue("mask_fields", r, row)
}

package transform

import (
	"fmt"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

// path is a dotted field path such as after.email: the names of nested
// object fields, outermost first.
type path struct {
	text  string
	parts []string
}

func (p path) String() string { return p.text }

// last returns the name of the field the path ends at.
func (p path) last() string { return p.parts[len(p.parts)-1] }

// parent returns the parts leading to the object that holds the field.
func (p path) parent() []string { return p.parts[:len(p.parts)-1] }

// parsePath parses a dotted field path.
func parsePath(s string) (path, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return path{}, fmt.Errorf("empty field path")
	}
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if p == "" {
			return path{}, fmt.Errorf("field path %q has an empty part; write names separated by single dots, like after.email", s)
		}
	}
	return path{text: s, parts: parts}, nil
}

// parsePaths parses the field paths of the list parameter param.
func parsePaths(param string, items []string) ([]path, error) {
	out := make([]path, 0, len(items))
	for _, it := range items {
		p, err := parsePath(it)
		if err != nil {
			return nil, fieldError(param, "%v", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// get returns the value at p in r and whether the field exists.
func get(r connect.Row, p path) (any, bool) {
	var cur any = r
	for _, name := range p.parts {
		obj, ok := cur.(connect.Row)
		if !ok {
			return nil, false
		}
		if cur, ok = obj.Get(name); !ok {
			return nil, false
		}
	}
	return cur, true
}

// inObject calls fn with the object at the path parts in r (r itself for
// none) and stores the object fn returns in its place. When a part is
// missing, or is not an object, it calls nothing and returns r unchanged,
// unless create is set: then missing parts and null ones become empty
// objects, and a part of another kind is an error.
func inObject(r connect.Row, parts []string, create bool, fn func(connect.Row) (connect.Row, error)) (connect.Row, error) {
	return walkObject(r, parts, 0, create, fn)
}

func walkObject(r connect.Row, parts []string, depth int, create bool, fn func(connect.Row) (connect.Row, error)) (connect.Row, error) {
	if depth == len(parts) {
		return fn(r)
	}
	name := parts[depth]
	i := r.Index(name)
	var child connect.Row
	if i >= 0 {
		switch v := r[i].Value.(type) {
		case connect.Row:
			child = v
		case nil:
			if !create {
				return r, nil
			}
		default:
			if !create {
				return r, nil
			}
			return r, fmt.Errorf("%s is %s, not an object", strings.Join(parts[:depth+1], "."), kindOf(v))
		}
	} else if !create {
		return r, nil
	}
	if child == nil {
		child = connect.Row{}
	}
	child, err := walkObject(child, parts, depth+1, create, fn)
	if err != nil {
		return r, err
	}
	if i >= 0 {
		r[i].Value = child
	} else {
		r = append(r, connect.Field{Name: name, Value: child})
	}
	return r, nil
}

// set sets the field at p to v, creating the objects on the way.
func set(r connect.Row, p path, v any) (connect.Row, error) {
	return inObject(r, p.parent(), true, func(obj connect.Row) (connect.Row, error) {
		obj.Set(p.last(), v)
		return obj, nil
	})
}

// replace calls fn with the value of the field at p, when it exists, and
// stores what fn returns.
func replace(r connect.Row, p path, fn func(any) (any, error)) (connect.Row, error) {
	return inObject(r, p.parent(), false, func(obj connect.Row) (connect.Row, error) {
		i := obj.Index(p.last())
		if i < 0 {
			return obj, nil
		}
		v, err := fn(obj[i].Value)
		if err != nil {
			return obj, err
		}
		obj[i].Value = v
		return obj, nil
	})
}

// remove deletes the field at p, if it exists.
func remove(r connect.Row, p path) connect.Row {
	r, _ = inObject(r, p.parent(), false, func(obj connect.Row) (connect.Row, error) {
		obj.Delete(p.last())
		return obj, nil
	})
	return r
}

package pipelines

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// decoder walks the yaml.Node tree of one file, converting values and
// collecting every problem with its position.
type decoder struct {
	file   string
	lines  []string // the file's lines, to place ${...} errors exactly
	lookup func(string) (string, bool)
	errs   ErrorList
	// merges counts mapping entries visited while resolving merge keys
	// (<<: *anchor). Merges of merges can grow exponentially, so the count is
	// bounded.
	merges int
}

// maxMerges bounds the work spent on merge keys in one file.
const maxMerges = 100_000

// maxMergeDepth bounds merges of merges, which also stops a mapping that
// merges itself.
const maxMergeDepth = 32

func (d *decoder) pos(n *yaml.Node) Pos {
	return Pos{File: d.file, Line: n.Line, Column: n.Column}
}

// errorf records a problem at node n.
func (d *decoder) errorf(n *yaml.Node, path, hint, format string, args ...any) {
	d.errorAt(d.pos(n), path, hint, format, args...)
}

func (d *decoder) errorAt(p Pos, path, hint, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: p, Path: path, Message: fmt.Sprintf(format, args...), Hint: hint})
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// describe names what n is, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "no value"
		}
		v := n.Value
		if utf8.RuneCountInString(v) > 40 {
			v = string([]rune(v)[:40]) + "..."
		}
		return strconv.Quote(v)
	case yaml.AliasNode:
		return "an alias"
	}
	return "a document"
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return fmt.Sprintf("%s[%d]", path, i) }

// entry is one key: value pair of a mapping.
type entry struct {
	key   *yaml.Node // a scalar
	value *yaml.Node // aliases resolved
}

// pairs returns the entries of mapping n in file order, with merge keys
// (<<: *anchor) resolved: explicit keys win over merged ones, and earlier
// merged mappings over later ones. Keys that are not scalars and keys given
// twice are reported.
func (d *decoder) pairs(n *yaml.Node, path string) []entry {
	return d.pairsDepth(n, path, 0)
}

func (d *decoder) pairsDepth(n *yaml.Node, path string, depth int) []entry {
	var (
		out    []entry
		merged []entry
		seen   = make(map[string]*yaml.Node)
	)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), resolve(n.Content[i+1])
		if k == nil || v == nil {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			merged = append(merged, d.merge(v, path, depth)...)
			continue
		}
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errorf(k, path, "", "a key must be a plain name, got %s", describe(k))
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorf(k, join(path, k.Value), "remove one of them", "key %q is given twice (first at %d:%d)", k.Value, first.Line, first.Column)
			continue
		}
		seen[k.Value] = k
		out = append(out, entry{k, v})
	}
	for _, e := range merged {
		if _, dup := seen[e.key.Value]; dup {
			continue
		}
		seen[e.key.Value] = e.key
		out = append(out, e)
	}
	return out
}

// merge returns the entries that the value v of a merge key brings in: a
// mapping, or a list of mappings.
func (d *decoder) merge(v *yaml.Node, path string, depth int) []entry {
	if depth >= maxMergeDepth {
		d.errorf(v, path, "", "merge keys (<<) nest deeper than %d levels", maxMergeDepth)
		return nil
	}
	switch v.Kind {
	case yaml.MappingNode:
		d.merges += len(v.Content) / 2
		if d.merges > maxMerges {
			if d.merges-len(v.Content)/2 <= maxMerges {
				d.errorf(v, path, "", "merge keys (<<) expand to more than %d entries", maxMerges)
			}
			return nil
		}
		return d.pairsDepth(v, path, depth+1)
	case yaml.SequenceNode:
		var out []entry
		seen := make(map[string]bool)
		for _, item := range v.Content {
			item = resolve(item)
			if item == nil || item.Kind != yaml.MappingNode {
				if item != nil {
					d.errorf(item, path, "", "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(item))
				}
				continue
			}
			for _, e := range d.merge(item, path, depth) {
				if !seen[e.key.Value] {
					seen[e.key.Value] = true
					out = append(out, e)
				}
			}
		}
		return out
	}
	d.errorf(v, path, "", "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(v))
	return nil
}

// fields checks that n is a mapping whose keys are all in valid, and returns
// its entries by key. A missing or empty (null) node gives an empty map.
// With extensions, keys starting with "x-" are accepted and ignored: they
// hold anchors for reuse elsewhere in the file.
func (d *decoder) fields(n *yaml.Node, path, what string, valid []string, extensions bool) map[string]entry {
	out := make(map[string]entry)
	if n == nil || isNull(n) {
		return out
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "keys: "+strings.Join(valid, ", "), "%s must be a mapping (key: value), got %s", what, describe(n))
		return nil
	}
	for _, e := range d.pairs(n, path) {
		name := e.key.Value
		if extensions && strings.HasPrefix(name, "x-") {
			continue
		}
		if !contains(valid, name) {
			d.errorf(e.key, join(path, name), choicesHint(name, "keys", valid), "unknown key %q in %s", name, what)
			continue
		}
		out[name] = e
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// scalar is a scalar value after ${VAR} expansion.
type scalar struct {
	value string
	vars  []string // environment variables whose values went into value
	null  bool     // no value was written
}

// scalar expands scalar node n. It reports n when it is not a scalar, and
// every problem with a ${...} reference; ok is false then.
func (d *decoder) scalar(n *yaml.Node, path, expected string) (scalar, bool) {
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, path, "", "expected %s, got %s", expected, describe(n))
		return scalar{}, false
	}
	if isNull(n) {
		return scalar{null: true}, true
	}
	v, vars, errs := expand(n.Value, d.lookup)
	for _, e := range errs {
		d.errorAt(d.envPos(n, e.offset), path, e.hint, "%s", e.message)
	}
	return scalar{value: v, vars: vars}, len(errs) == 0
}

// envPos returns the position of the ${ at byte offset off of scalar n's
// value. It is exact for values written on one line without escapes before
// the reference; otherwise it is the start of the value.
func (d *decoder) envPos(n *yaml.Node, off int) Pos {
	return d.writtenPos(n, n.Value[:off]+"${", off)
}

// valuePos returns the position of byte offset off of value, scalar n's
// value after ${VAR} expansion. It is exact when the text before off is
// written on the value's line as it is (no reference, no escape before
// it); otherwise it is the start of the value.
func (d *decoder) valuePos(n *yaml.Node, value string, off int) Pos {
	return d.writtenPos(n, value[:off+1], off)
}

// writtenPos returns the position of byte offset off of scalar n's value
// when the value's line, from the value's start, begins with written
// (which holds the text up to off and a little more); otherwise the start
// of the value.
func (d *decoder) writtenPos(n *yaml.Node, written string, off int) Pos {
	p := d.pos(n)
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0 || n.Line < 1 || n.Line > len(d.lines) {
		return p
	}
	start := n.Column - 1
	if n.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle) != 0 {
		start++
	}
	line := []rune(d.lines[n.Line-1])
	if start < 0 || start > len(line) {
		return p
	}
	if !strings.HasPrefix(string(line[start:]), written) {
		return p
	}
	p.Column = start + 1 + utf8.RuneCountInString(written[:off])
	return p
}

// str returns the expanded string value of n; null gives "".
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	s, ok := d.scalar(n, path, "a string")
	return s.value, ok
}

// integer returns the integer value of n, which must be at least min.
func (d *decoder) integer(n *yaml.Node, path string, min int) (int, bool) {
	expected := fmt.Sprintf("an integer ≥ %d", min)
	s, ok := d.scalar(n, path, expected)
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(s.value))
	if err != nil || v < min {
		d.errorf(n, path, "", "expected %s, got %s", expected, describeValue(s))
		return 0, false
	}
	return v, true
}

// boolean returns the true or false written at n.
func (d *decoder) boolean(n *yaml.Node, path string) (bool, bool) {
	const expected = "true or false"
	s, ok := d.scalar(n, path, expected)
	if !ok {
		return false, false
	}
	switch strings.TrimSpace(s.value) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	d.errorf(n, path, "", "expected %s, got %s", expected, describeValue(s))
	return false, false
}

// duration returns the positive Go duration written at n.
func (d *decoder) duration(n *yaml.Node, path string) (time.Duration, bool) {
	const expected = "a duration such as 500ms, 10s or 1m30s"
	s, ok := d.scalar(n, path, expected)
	if !ok {
		return 0, false
	}
	v, err := time.ParseDuration(strings.TrimSpace(s.value))
	if err != nil || v <= 0 {
		d.errorf(n, path, unitHint(s.value), "expected %s, got %s", expected, describeValue(s))
		return 0, false
	}
	return v, true
}

// unitHint is the hint for a value that is not a duration.
func unitHint(v string) string {
	if _, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
		return "a number needs a unit: ns, us, ms, s, m, h"
	}
	return "units: ns, us, ms, s, m, h"
}

// stringList returns the list of strings at n. Null gives an empty list; a
// scalar where a list is expected is an error.
func (d *decoder) stringList(n *yaml.Node, path, expected string) ([]string, []*yaml.Node, bool) {
	if isNull(n) {
		return nil, nil, true
	}
	if n.Kind != yaml.SequenceNode {
		hint := ""
		if n.Kind == yaml.ScalarNode {
			hint = fmt.Sprintf("write a list: [%s]", n.Value)
		}
		d.errorf(n, path, hint, "expected %s, got %s", expected, describe(n))
		return nil, nil, false
	}
	var (
		out   []string
		nodes []*yaml.Node
		ok    = true
	)
	for i, item := range n.Content {
		item = resolve(item)
		if item == nil {
			continue
		}
		s, good := d.scalar(item, index(path, i), "a string")
		if good && s.null {
			d.errorf(item, index(path, i), "", "expected a string, got no value")
			good = false
		}
		if !good {
			ok = false
			continue
		}
		out = append(out, s.value)
		nodes = append(nodes, item)
	}
	return out, nodes, ok
}

// describeValue describes the expanded value s of a scalar.
func describeValue(s scalar) string {
	if s.null {
		return "no value"
	}
	v := s.value
	if utf8.RuneCountInString(v) > 40 {
		v = string([]rune(v)[:40]) + "..."
	}
	if len(s.vars) > 0 {
		return fmt.Sprintf("%q (from ${%s})", v, strings.Join(s.vars, "}, ${"))
	}
	return strconv.Quote(v)
}

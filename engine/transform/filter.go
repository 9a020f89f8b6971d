package transform

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strconv"

	"github.com/tributary-io/tributary/connect"
)

func filterDefinition() Definition {
	return Definition{
		Name: "filter",
		Description: "Drops records that match a condition (action: drop), or keeps only those " +
			"(action: keep). A record matches when every condition given holds.",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "action", Type: connect.TypeString, Required: true, Enum: []string{"drop", "keep"},
				Description: "drop: drop the records that match and pass the others; keep: pass the records that match and drop the others"},
			{Name: "field", Type: connect.TypeString,
				Description: "dotted path of a value field to test (after.status, properties.plan); give it with exactly one of equals, not.equals, in, matches, exists"},
			{Name: "equals", Type: connect.TypeString,
				Description: "the field's value equals this: a string as text, a number by value (10 equals 10.0), or true, false, null; a missing field does not match"},
			{Name: "not.equals", Type: connect.TypeString,
				Description: "the field is missing or its value is not equal to this (equal as for equals)"},
			{Name: "in", Type: connect.TypeList,
				Description: "the field's value equals one of these (equal as for equals)"},
			{Name: "matches", Type: connect.TypeString,
				Description: "the field's value, as text (objects and arrays as compact JSON), matches this Go regular expression in whole; a missing field does not match"},
			{Name: "exists", Type: connect.TypeBool,
				Description: "true: the field is present, even if null; false: it is absent"},
			{Name: "topic.matches", Type: connect.TypeString,
				Description: "the record's topic matches this Go regular expression in whole"},
			{Name: "key.matches", Type: connect.TypeString,
				Description: "the record key, as text, matches this Go regular expression in whole; a null key never matches"},
			{Name: "tombstone", Type: connect.TypeBool,
				Description: "true: the record is a tombstone (its value is null); false: it is not"},
		}},
		New: newFilter,
	}
}

// filter keeps or drops records by a predicate: the conjunction of its
// conditions.
type filter struct {
	keep bool

	field *path
	test  func(v any, ok bool) bool

	topic, key *regexp.Regexp
	tombstone  *bool
}

func newFilter(cfg connect.Config) (Transform, error) {
	action, err := cfg.String("action")
	if err != nil {
		return nil, err
	}
	f := &filter{keep: action == "keep"}
	has := func(name string) bool { return cfg.Values[name] != "" }

	var ops []string
	for _, op := range []string{"equals", "not.equals", "in", "matches", "exists"} {
		if has(op) {
			ops = append(ops, op)
		}
	}
	switch {
	case has("field") && len(ops) == 0:
		return nil, fieldError("field", "give one of equals, not.equals, in, matches, exists to say what to test")
	case has("field") && len(ops) > 1:
		return nil, fieldError(ops[1], "give only one of equals, not.equals, in, matches, exists per filter (have %s and %s); chain filters to test more", ops[0], ops[1])
	case !has("field") && len(ops) > 0:
		return nil, fieldError("field", "%s needs field: the dotted path of the value field to test", ops[0])
	}
	if has("field") {
		p, err := parsePath(cfg.Values["field"])
		if err != nil {
			return nil, fieldError("field", "%v", err)
		}
		f.field = &p
		if f.test, err = fieldTest(cfg, ops[0]); err != nil {
			return nil, err
		}
	}
	if has("topic.matches") {
		if f.topic, err = wholeRegexp(cfg, "topic.matches"); err != nil {
			return nil, err
		}
	}
	if has("key.matches") {
		if f.key, err = wholeRegexp(cfg, "key.matches"); err != nil {
			return nil, err
		}
	}
	if has("tombstone") {
		b, err := cfg.Bool("tombstone")
		if err != nil {
			return nil, err
		}
		f.tombstone = &b
	}
	if f.field == nil && f.topic == nil && f.key == nil && f.tombstone == nil {
		return nil, fieldError("field", "a filter needs a condition: field with equals, not.equals, in, matches or exists; or topic.matches, key.matches, tombstone")
	}
	return f, nil
}

// fieldTest returns the test of a field value for the condition op.
func fieldTest(cfg connect.Config, op string) (func(v any, ok bool) bool, error) {
	switch op {
	case "equals":
		want := cfg.Values[op]
		return func(v any, ok bool) bool { return ok && valueEquals(v, want) }, nil
	case "not.equals":
		want := cfg.Values[op]
		return func(v any, ok bool) bool { return !ok || !valueEquals(v, want) }, nil
	case "in":
		set, err := cfg.List(op)
		if err != nil {
			return nil, err
		}
		return func(v any, ok bool) bool {
			if !ok {
				return false
			}
			for _, want := range set {
				if valueEquals(v, want) {
					return true
				}
			}
			return false
		}, nil
	case "matches":
		re, err := wholeRegexp(cfg, op)
		if err != nil {
			return nil, err
		}
		return func(v any, ok bool) bool { return ok && re.MatchString(textOf(v)) }, nil
	case "exists":
		want, err := cfg.Bool(op)
		if err != nil {
			return nil, err
		}
		return func(_ any, ok bool) bool { return ok == want }, nil
	}
	return nil, fmt.Errorf("unknown condition %q", op)
}

// wholeRegexp compiles the regular expression of param, anchored so that it
// must match the whole text, as Java's Pattern.matches (and so Kafka's
// topic predicates) do.
func wholeRegexp(cfg connect.Config, param string) (*regexp.Regexp, error) {
	expr := cfg.Values[param]
	re, err := regexp.Compile(`^(?:` + expr + `)$`)
	if err != nil {
		return nil, fieldError(param, "%q is not a valid regular expression: %v", expr, err)
	}
	return re, nil
}

// valueEquals compares a decoded value with a setting: a string by text, a
// number by text or by value, a boolean or null by its JSON literal, an
// object or array by its compact JSON.
func valueEquals(v any, want string) bool {
	switch v := v.(type) {
	case string:
		return v == want
	case json.Number:
		return string(v) == want || numberEquals(string(v), want)
	}
	return textOf(v) == want
}

// numberEquals compares two numbers in text by value. Two integers are
// compared exactly, so 64-bit ids (bigint keys, snowflake ids) that differ
// only beyond float64's 53 bits of precision are not equal; a number with a
// fraction or an exponent is compared as a float64 (10 equals 10.0).
func numberEquals(a, b string) bool {
	if isIntegerText(a) && isIntegerText(b) {
		x, okx := new(big.Int).SetString(a, 10)
		y, oky := new(big.Int).SetString(b, 10)
		return okx && oky && x.Cmp(y) == 0
	}
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	return err1 == nil && err2 == nil && x == y
}

// isIntegerText reports whether s is a decimal integer: an optional sign
// and digits only.
func isIntegerText(s string) bool {
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Apply implements Transform.
func (f *filter) Apply(r connect.Record) ([]connect.Record, error) {
	match, err := f.matches(r)
	if err != nil {
		return nil, err
	}
	if match == f.keep {
		return []connect.Record{r}, nil
	}
	return nil, nil
}

func (f *filter) matches(r connect.Record) (bool, error) {
	if f.tombstone != nil && r.IsTombstone() != *f.tombstone {
		return false, nil
	}
	if f.topic != nil && !f.topic.MatchString(r.Topic) {
		return false, nil
	}
	if f.key != nil && (r.Key == nil || !f.key.Match(r.Key)) {
		return false, nil
	}
	if f.field != nil {
		row, ok, err := readObject("filter", f.field.text, r.Value)
		if err != nil {
			return false, err
		}
		var v any
		var exists bool
		if ok {
			v, exists = get(row, *f.field)
		}
		if !f.test(v, exists) {
			return false, nil
		}
	}
	return true, nil
}

package iceberg

import (
	"fmt"
	"strconv"
	"strings"

	ib "github.com/apache/iceberg-go"
)

// partField is one field of a partition spec from the configuration.
type partField struct {
	source    string       // the source column
	transform ib.Transform // identity, year, month, day, hour, bucket[N], truncate[W]
}

// name returns the partition field's name, as Spark and Trino name them:
// the column for identity, else column_transform.
func (p partField) name() string {
	switch t := p.transform.(type) {
	case ib.IdentityTransform:
		return p.source
	case ib.BucketTransform:
		return p.source + "_bucket"
	case ib.TruncateTransform:
		return p.source + "_trunc"
	default:
		return p.source + "_" + t.String()
	}
}

// splitTop splits s at commas outside parentheses, trimming spaces and
// dropping empty items. YAML's flow lists ([day(ts), bucket(16, id)]) reach
// the connector joined with commas, so commas inside a transform's
// parentheses must not split it.
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) {
			switch s[i] {
			case '(':
				depth++
				continue
			case ')':
				depth--
				if depth < 0 {
					return nil, fmt.Errorf("%q: unbalanced parentheses", s)
				}
				continue
			case ',':
				if depth > 0 {
					continue
				}
			default:
				continue
			}
		}
		if item := strings.TrimSpace(s[start:i]); item != "" {
			out = append(out, item)
		}
		start = i + 1
	}
	if depth != 0 {
		return nil, fmt.Errorf("%q: unbalanced parentheses", s)
	}
	return out, nil
}

// parsePartition parses the partition setting: a list of column names
// (identity) and transforms: identity(c), year(c), month(c), day(c),
// hour(c), bucket(N, c), truncate(W, c).
func parsePartition(s string) ([]partField, error) {
	items, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	var out []partField
	seen := map[string]bool{}
	for _, item := range items {
		p, err := parsePartField(item)
		if err != nil {
			return nil, err
		}
		if seen[p.name()] {
			return nil, fmt.Errorf("%q: partition field %s appears twice", item, p.name())
		}
		seen[p.name()] = true
		out = append(out, p)
	}
	return out, nil
}

func parsePartField(item string) (partField, error) {
	open := strings.IndexByte(item, '(')
	if open < 0 {
		if !validColumn(item) {
			return partField{}, fmt.Errorf("%q is neither a column name nor a transform such as day(ts) or bucket(16, id)", item)
		}
		return partField{source: item, transform: ib.IdentityTransform{}}, nil
	}
	if !strings.HasSuffix(item, ")") {
		return partField{}, fmt.Errorf("%q: a transform ends with ')'", item)
	}
	fn := strings.ToLower(strings.TrimSpace(item[:open]))
	args := strings.Split(item[open+1:len(item)-1], ",")
	for i := range args {
		args[i] = strings.TrimSpace(args[i])
	}
	one := func(t ib.Transform) (partField, error) {
		if len(args) != 1 || !validColumn(args[0]) {
			return partField{}, fmt.Errorf("%q: %s takes one column, e.g. %s(ts)", item, fn, fn)
		}
		return partField{source: args[0], transform: t}, nil
	}
	width := func() (int, string, error) {
		if len(args) != 2 || !validColumn(args[1]) {
			return 0, "", fmt.Errorf("%q: %s takes a number and a column, e.g. %s(16, id)", item, fn, fn)
		}
		n, err := strconv.Atoi(args[0])
		if err != nil || n <= 0 || n > 1<<30 {
			return 0, "", fmt.Errorf("%q: %s's first argument must be a positive number", item, fn)
		}
		return n, args[1], nil
	}
	switch fn {
	case "identity":
		return one(ib.IdentityTransform{})
	case "year", "years":
		return one(ib.YearTransform{})
	case "month", "months":
		return one(ib.MonthTransform{})
	case "day", "days":
		return one(ib.DayTransform{})
	case "hour", "hours":
		return one(ib.HourTransform{})
	case "bucket":
		n, col, err := width()
		if err != nil {
			return partField{}, err
		}
		return partField{source: col, transform: ib.BucketTransform{NumBuckets: n}}, nil
	case "truncate":
		n, col, err := width()
		if err != nil {
			return partField{}, err
		}
		return partField{source: col, transform: ib.TruncateTransform{Width: n}}, nil
	}
	return partField{}, fmt.Errorf("%q: unknown transform %q (valid: identity, year, month, day, hour, bucket, truncate)", item, fn)
}

func validColumn(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c == '(' || c == ')' || c == ',' || c == ' ' || c == '\t' {
			return false
		}
	}
	return true
}

// pinnedColumn is one column of the schema setting.
type pinnedColumn struct {
	name     string
	typ      ib.Type
	required bool
}

// parseSchema parses the schema setting: "name type" items such as
// "id long not null, amount decimal(10, 2), ts timestamptz".
func parseSchema(s string) ([]pinnedColumn, error) {
	items, err := splitTop(s)
	if err != nil {
		return nil, err
	}
	var out []pinnedColumn
	seen := map[string]bool{}
	for _, item := range items {
		name, rest, ok := strings.Cut(item, " ")
		rest = strings.TrimSpace(rest)
		if !ok || rest == "" || !validColumn(name) {
			return nil, fmt.Errorf("%q: write a column as \"name type\", e.g. \"amount decimal(10,2)\"", item)
		}
		required := false
		lower := strings.ToLower(rest)
		if strings.HasSuffix(lower, "not null") {
			required = true
			rest = strings.TrimSpace(rest[:len(rest)-len("not null")])
		}
		t, err := parseType(rest)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", name, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("column %s appears twice", name)
		}
		seen[name] = true
		out = append(out, pinnedColumn{name: name, typ: t, required: required})
	}
	return out, nil
}

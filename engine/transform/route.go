package transform

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/connect"
)

func routeDefinition() Definition {
	return Definition{
		Name: "route",
		Description: "Sends records to another topic: one built from a template of record data, " +
			"or the topic rewritten by a regular expression (Kafka's RegexRouter).",
		Spec: connect.Spec{Params: []connect.Param{
			{Name: "topic", Type: connect.TypeString,
				Description: "the topic as a template: text with placeholders {topic}, {key}, {partition}, {offset}, {value.PATH} and {key.PATH} (a field of a JSON value or key, PATH dotted); a placeholder must give a string, number or boolean"},
			{Name: "regex", Type: connect.TypeString,
				Description: "a Go regular expression; a topic it matches in whole is replaced by replacement, other topics are kept"},
			{Name: "replacement", Type: connect.TypeString,
				Description: "with regex, the new topic; $1 stands for the first group, and so on; before a letter, digit or _ write ${1}, which a pipeline file spells $${1} (there ${...} takes an environment variable)"},
		}},
		New: newRoute,
	}
}

// maxTopicLength is Kafka's limit on the length of a topic name.
const maxTopicLength = 249

type route struct {
	template []segment

	regex       *regexp.Regexp
	replacement string
}

// segment is a literal part of a topic template (kind "") or a placeholder.
type segment struct {
	kind string // "", "topic", "key", "partition", "offset", "value", "key."
	text string // the literal, or the placeholder as written
	path path   // the field of "value" and "key."
}

func newRoute(cfg connect.Config) (Transform, error) {
	topic, regex, repl := cfg.Values["topic"], cfg.Values["regex"], cfg.Values["replacement"]
	switch {
	case topic != "" && regex != "":
		return nil, fieldError("regex", "give topic (a template) or regex with replacement, not both")
	case topic == "" && regex == "":
		return nil, fieldError("topic", "give topic (a template such as events.{value.type}) or regex with replacement")
	case regex != "" && repl == "":
		return nil, fieldError("replacement", "regex needs replacement: the new topic, with ${1} for the first group")
	case regex == "" && repl != "":
		return nil, fieldError("replacement", "replacement goes with regex")
	}
	if regex != "" {
		re, err := wholeRegexp(cfg, "regex")
		if err != nil {
			return nil, err
		}
		return &route{regex: re, replacement: repl}, nil
	}
	tmpl, err := parseTemplate(topic)
	if err != nil {
		return nil, fieldError("topic", "%v", err)
	}
	return &route{template: tmpl}, nil
}

// parseTemplate splits a topic template into literals and placeholders.
func parseTemplate(s string) ([]segment, error) {
	var out []segment
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			out = append(out, segment{text: s})
			break
		}
		if open > 0 {
			out = append(out, segment{text: s[:open]})
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("%q has a { without a closing }", s)
		}
		name := s[open+1 : open+end]
		seg := segment{kind: name, text: s[open : open+end+1]}
		switch {
		case name == "topic" || name == "key" || name == "partition" || name == "offset":
		case strings.HasPrefix(name, "value.") || strings.HasPrefix(name, "key."):
			kind, field, _ := strings.Cut(name, ".")
			p, err := parsePath(field)
			if err != nil {
				return nil, fmt.Errorf("placeholder %s: %v", seg.text, err)
			}
			seg.kind, seg.path = kind+".", p
		default:
			return nil, fmt.Errorf("unknown placeholder %s; valid ones are {topic}, {key}, {partition}, {offset}, {value.<path>}, {key.<path>}", seg.text)
		}
		out = append(out, seg)
		s = s[open+end+1:]
	}
	for _, seg := range out {
		if seg.kind == "" {
			if i := strings.IndexFunc(seg.text, func(r rune) bool { return !topicRune(r) }); i >= 0 {
				return nil, fmt.Errorf("%q cannot be part of a topic name; use letters, digits, '.', '_' and '-'", seg.text[i:i+1])
			}
		}
	}
	return out, nil
}

func topicRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
}

// checkTopic reports whether name is a valid Kafka topic name.
func checkTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the topic name is empty")
	case name == "." || name == "..":
		return fmt.Errorf("%q is not a valid topic name", name)
	case len(name) > maxTopicLength:
		return fmt.Errorf("topic name %.40q… is longer than %d characters", name, maxTopicLength)
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return !topicRune(r) }); i >= 0 {
		return fmt.Errorf("topic name %q has %q; topic names use letters, digits, '.', '_' and '-'", name, name[i:i+1])
	}
	return nil
}

// Apply implements Transform.
func (t *route) Apply(r connect.Record) ([]connect.Record, error) {
	var topic string
	if t.regex != nil {
		m := t.regex.FindStringSubmatchIndex(r.Topic)
		if m == nil {
			return []connect.Record{r}, nil
		}
		topic = string(t.regex.ExpandString(nil, t.replacement, r.Topic, m))
		if err := checkTopic(topic); err != nil {
			return nil, badRecord("route", "", "%v", err)
		}
		r.Topic = topic
		return []connect.Record{r}, nil
	}
	var (
		b           strings.Builder
		value, key  connect.Row
		valueParsed bool
		keyParsed   bool
	)
	for _, seg := range t.template {
		switch seg.kind {
		case "":
			b.WriteString(seg.text)
		case "topic":
			b.WriteString(r.Topic)
		case "partition":
			b.WriteString(strconv.FormatInt(int64(r.Partition), 10))
		case "offset":
			b.WriteString(strconv.FormatInt(r.Offset, 10))
		case "key":
			if r.Key == nil {
				return nil, badRecord("route", "", "%s: the record key is null", seg.text)
			}
			b.Write(r.Key)
		case "value.":
			if !valueParsed {
				row, ok, err := readObject("route", seg.path.text, r.Value)
				if err != nil {
					return nil, err
				}
				if !ok {
					return nil, badRecord("route", seg.path.text, "%s: the record value is null (a tombstone)", seg.text)
				}
				value, valueParsed = row, true
			}
			s, err := placeholderText(value, seg)
			if err != nil {
				return nil, badRecord("route", seg.path.text, "%v", err)
			}
			b.WriteString(s)
		case "key.":
			if !keyParsed {
				k, ok := keyValue(r.Key).(connect.Row)
				if !ok {
					return nil, badRecord("route", seg.path.text, "%s: the record key is not a JSON object", seg.text)
				}
				key, keyParsed = k, true
			}
			s, err := placeholderText(key, seg)
			if err != nil {
				return nil, badRecord("route", seg.path.text, "%v", err)
			}
			b.WriteString(s)
		}
	}
	topic = b.String()
	if err := checkTopic(topic); err != nil {
		return nil, badRecord("route", "", "%v", err)
	}
	r.Topic = topic
	return []connect.Record{r}, nil
}

// placeholderText returns the text of a field placeholder.
func placeholderText(obj connect.Row, seg segment) (string, error) {
	v, ok := get(obj, seg.path)
	if !ok {
		return "", fmt.Errorf("%s: the field is missing", seg.text)
	}
	switch v.(type) {
	case nil, connect.Row, []any:
		return "", fmt.Errorf("%s: the field is %s, want a string, number or boolean", seg.text, kindOf(v))
	}
	return textOf(v), nil
}

package webhook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"strings"
	"text/template"
	"time"

	"github.com/tributary-io/tributary/connect"
)

// textTemplate is a setting that may be a template: text without actions
// is kept as it is and costs nothing to render.
type textTemplate struct {
	static string             // the text, when t is nil
	t      *template.Template // nil for static text
}

// parseTemplate compiles the template text of setting name. Missing map
// keys are errors, so that a typo or an absent field fails the record
// instead of sending "<no value>".
func parseTemplate(name, text string) (*textTemplate, error) {
	if !strings.Contains(text, "{{") {
		return &textTemplate{static: text}, nil
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template: %w", trimTemplateError(err))
	}
	return &textTemplate{t: t}, nil
}

// render appends the template's output for data to buf.
func (t *textTemplate) render(buf *bytes.Buffer, data any) error {
	if t.t == nil {
		buf.WriteString(t.static)
		return nil
	}
	if err := t.t.Execute(buf, data); err != nil {
		return trimTemplateError(err)
	}
	return nil
}

// renderString returns the template's output for data.
func (t *textTemplate) renderString(data any) (string, error) {
	if t.t == nil {
		return t.static, nil
	}
	var b bytes.Buffer
	err := t.render(&b, data)
	return b.String(), err
}

// trimTemplateError drops text/template's "template: name:" prefix, which
// repeats what the caller says, and says in JSON's words what its message
// about a field of a null value (.Value.after of a delete) says in Go's.
func trimTemplateError(err error) error {
	msg := err.Error()
	rest, trimmed := strings.CutPrefix(msg, "template: ")
	if m := fieldOfNullRE.FindStringSubmatchIndex(rest); m != nil {
		var field string
		if m[2] >= 0 {
			field = rest[m[2]:m[3]]
		} else {
			field = rest[m[4]:m[5]]
		}
		hint := "read fields that may be null with get, which gives null"
		if e := exprRE.FindStringSubmatch(rest[:m[0]]); e != nil && strings.HasSuffix(e[1], "."+field) {
			if root, path, ok := strings.Cut(strings.TrimPrefix(e[1], "."), "."); ok {
				hint += fmt.Sprintf(": {{ get .%s %q }}", root, path)
			}
		}
		rest = rest[:m[0]] + "a field of a null value; " + hint
		trimmed = true
	}
	if trimmed {
		return errors.New(rest)
	}
	return err
}

var (
	// fieldOfNullRE matches text/template's message about a field of a
	// JSON null, which the templates see as a nil interface or a nil
	// *null; it ends the message.
	fieldOfNullRE = regexp.MustCompile(`(?:can't evaluate field (\w+) in type (?:interface \{\}|\*webhook\.null)|nil pointer evaluating \*webhook\.null\.(\w+))$`)
	// exprRE matches the field chain text/template names in its message:
	// at <.Value.after.id>.
	exprRE = regexp.MustCompile(`at <(\.\w+(?:\.\w+)+)>: $`)
)

// checkURL checks a rendered URL: absolute, http or https, with a host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q is not a URL: %w", raw, errors.Unwrap(err))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("%q has no host", raw)
	}
	return nil
}

// checkMethod checks a rendered HTTP method.
func checkMethod(m string) error {
	if m == "" || !isToken(m) {
		return fmt.Errorf("%q is not an HTTP method", m)
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2), as
// header names and methods are.
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return s != ""
}

func validHeaderName(s string) bool { return isToken(s) }

// headerTemplate is one configured header.
type headerTemplate struct {
	name  string
	value *textTemplate
}

// parseHeaders parses the headers setting: "Name: value" lines, or the
// items of a YAML list, which arrive joined by commas; a line starting
// with # is a comment. A comma starts a new
// header only where "Name:" follows it, so values may hold commas
// (Accept: a, b); a value whose comma is followed by "word:" must be
// written in the line form.
func parseHeaders(v string) ([]headerTemplate, error) {
	var out []headerTemplate
	var errs []error
	for _, line := range splitHeaders(v) {
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || !validHeaderName(name) {
			errs = append(errs, fmt.Errorf("%q is not a header line; write Name: value", line))
			continue
		}
		if strings.ContainsAny(value, "\r\n") {
			errs = append(errs, fmt.Errorf("header %s: the value holds a line break", name))
			continue
		}
		t, err := parseTemplate("header "+name, value)
		if err != nil {
			errs = append(errs, fmt.Errorf("header %s: %w", name, err))
			continue
		}
		out = append(out, headerTemplate{name: name, value: t})
	}
	return out, errors.Join(errs...)
}

func splitHeaders(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		start := 0
		for i := 0; i < len(line); i++ {
			if line[i] == ',' && startsHeader(line[i+1:]) {
				out = append(out, strings.TrimSpace(line[start:i]))
				start = i + 1
			}
		}
		out = append(out, strings.TrimSpace(line[start:]))
	}
	return out
}

// startsHeader reports whether s (after a comma) begins with "Name:".
func startsHeader(s string) bool {
	s = strings.TrimLeft(s, " \t")
	name, _, ok := strings.Cut(s, ":")
	return ok && isToken(name) && name[0] != '#'
}

// recordData is what the per-record templates see. Its methods run when a
// template names them, so a record's value is decoded only when a template
// reads it.
type recordData struct {
	rec *connect.Record
	id  string // made on first use

	value, key     any
	valueOK, keyOK bool
	headers        map[string]string
}

// Value returns the decoded record value: JSON decoded with exact numbers
// (json.Number) and nulls that print empty, or the text when it is not
// JSON; null for a tombstone.
func (d *recordData) Value() any {
	if !d.valueOK {
		d.value, d.valueOK = decode(d.rec.Value), true
	}
	return d.value
}

// Key returns the decoded record key, as Value does; null for a null key.
func (d *recordData) Key() any {
	if !d.keyOK {
		d.key, d.keyOK = decode(d.rec.Key), true
	}
	return d.key
}

// Headers returns the record headers, the last value of each name.
func (d *recordData) Headers() map[string]string {
	if d.headers == nil {
		d.headers = make(map[string]string, len(d.rec.Headers))
		for _, h := range d.rec.Headers {
			d.headers[h.Key] = string(h.Value)
		}
	}
	return d.headers
}

// Topic returns the topic the record was read from.
func (d *recordData) Topic() string { return d.rec.Topic }

// Partition returns the record's partition.
func (d *recordData) Partition() int32 { return d.rec.Partition }

// Offset returns the record's offset in its partition.
func (d *recordData) Offset() int64 { return d.rec.Offset }

// Timestamp returns the record's timestamp.
func (d *recordData) Timestamp() time.Time { return d.rec.Timestamp }

// ID returns the record's delivery id, msg_<topic>_<partition>_<offset>.
func (d *recordData) ID() string {
	if d.id == "" {
		d.id = recordMsgID(d.rec)
	}
	return d.id
}

// Tombstone reports whether the record has a null value.
func (d *recordData) Tombstone() bool { return d.rec.IsTombstone() }

// batchData is what batch.body sees.
type batchData struct {
	Items   []json.RawMessage // the records' bodies
	Records []*recordData     // the records, as the per-record templates see them
	ID      string            // the request's delivery id
}

// null is a JSON null in decoded values: a nil *null prints as an empty
// string, is false in {{if}}, and is null again under json.
type null struct{}

// String returns "".
func (*null) String() string { return "" }

// MarshalJSON returns null.
func (*null) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

var jsonNull = (*null)(nil)

// decode decodes b as one JSON value, numbers as json.Number and nulls as
// jsonNull; b that is not JSON comes back as a string, nil as jsonNull.
func decode(b []byte) any {
	if b == nil {
		return jsonNull
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(b)
	}
	if _, err := dec.Token(); err != io.EOF {
		return string(b)
	}
	return withNulls(v)
}

func withNulls(v any) any {
	switch v := v.(type) {
	case nil:
		return jsonNull
	case map[string]any:
		for k, e := range v {
			v[k] = withNulls(e)
		}
	case []any:
		for i, e := range v {
			v[i] = withNulls(e)
		}
	}
	return v
}

package pipelines

import (
	"fmt"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tributary-io/tributary/connect"
)

// setting is one connector, transform or topic setting as written.
type setting struct {
	key   *yaml.Node
	value *yaml.Node
	vars  []string // environment variables whose values went into it
	bad   bool     // its shape or a ${...} in it is wrong (already reported)
}

// settings is a config mapping converted to strings.
type settings struct {
	values map[string]string   // the good settings
	byKey  map[string]*setting // every setting
	order  []string            // keys in file order
}

// configEntries returns the entries of the config mapping n; nil when n is
// absent or null.
func (d *decoder) configEntries(n *yaml.Node, path string) []entry {
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, path, "write settings as key: value lines, or {key: value, ...}", "config must be a mapping, got %s", describe(n))
		return nil
	}
	return d.pairs(n, path)
}

// settings converts config entries to strings as Kafka Connect's configs
// are: a scalar as written (no value gives ""), a list of scalars joined by
// commas. Nested mappings are reported.
func (d *decoder) settings(entries []entry, path string) settings {
	s := settings{values: make(map[string]string), byKey: make(map[string]*setting)}
	for _, e := range entries {
		name := e.key.Value
		p := join(path, name)
		st := &setting{key: e.key, value: e.value}
		s.byKey[name] = st
		s.order = append(s.order, name)
		const expected = "a value or a list of values"
		switch e.value.Kind {
		case yaml.ScalarNode:
			v, ok := d.scalar(e.value, p, expected)
			st.vars, st.bad = v.vars, !ok
			if ok {
				s.values[name] = v.value
			}
		case yaml.SequenceNode:
			items := make([]string, 0, len(e.value.Content))
			for i, item := range e.value.Content {
				item = resolve(item)
				if item == nil {
					continue
				}
				v, ok := d.scalar(item, index(p, i), "a value")
				st.vars = append(st.vars, v.vars...)
				switch {
				case !ok:
					st.bad = true
				case v.null:
					d.errorf(item, index(p, i), "", "expected a value, got no value")
					st.bad = true
				case strings.Contains(v.value, ","):
					d.errorf(item, index(p, i), "list values are joined with commas", "list item contains a comma")
					st.bad = true
				}
				items = append(items, v.value)
			}
			if !st.bad {
				s.values[name] = strings.Join(items, ",")
			}
		default:
			hint := ""
			if e.value.Kind == yaml.MappingNode {
				hint = fmt.Sprintf("nested settings are not supported; write the name in full, e.g. %s.<name>: value", name)
			}
			d.errorf(e.value, p, hint, "expected %s, got %s", expected, describe(e.value))
			st.bad = true
		}
	}
	return s
}

// secrets returns the sorted keys of s whose values must be masked: those
// of secret parameters of spec (when known) and those from the environment.
func (s settings) secrets(spec *connect.Spec) []string {
	var out []string
	for _, k := range s.order {
		st := s.byKey[k]
		secret := len(st.vars) > 0
		if spec != nil {
			if p, ok := spec.Param(k); ok && p.IsSecret() {
				secret = true
			}
		}
		if secret {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// check validates s against spec, reporting each problem at the setting it
// is about; missing settings are reported at missingAt. what names the owner
// in messages, e.g. `source connector "postgres"`. Messages never show
// secret values.
func (d *decoder) check(spec connect.Spec, s settings, path, what string, missingAt *yaml.Node, skip func(name, value string) bool) {
	known := make(map[string]string, len(s.values))
	for _, k := range s.order {
		st := s.byKey[k]
		p, ok := spec.Param(k)
		if !ok {
			d.errorf(st.key, join(path, k), choicesHint(k, "settings", spec.Names()), "unknown setting %q for %s", k, what)
			continue
		}
		v, good := s.values[k]
		if !good || (skip != nil && skip(k, v)) {
			continue
		}
		if v == "" && p.Required && p.Default == "" {
			d.errorf(st.value, join(path, k), describeParam(p), "required setting %q of %s has no value", k, what)
			continue
		}
		known[k] = v
	}
	for _, fe := range spec.Validate(known) {
		p, known := spec.Param(fe.Param)
		st, present := s.byKey[fe.Param]
		switch {
		case !present && known && p.Required && p.Default == "":
			d.errorf(missingAt, path, describeParam(p), "missing required setting %q of %s", fe.Param, what)
		case !present:
			// The spec's whole-config check, about the config as a whole
			// or a setting left at its default.
			msg, where, hint := d.mask(spec, s, fe.Message), path, ""
			if known {
				where, hint = join(path, fe.Param), describeParam(p)
			} else if fe.Param != "" {
				msg = fe.Param + ": " + msg
			}
			d.errorf(missingAt, where, hint, "%s", msg)
		case st.bad || s.values[fe.Param] == "":
			// Reported above.
		default:
			msg, hint := d.mask(spec, s, fe.Message), describeParam(p)
			if !p.IsSecret() && len(st.vars) == 0 && len(p.Enum) > 0 && p.Type != connect.TypeList {
				if s := suggest(s.values[fe.Param], p.Enum); s != "" {
					hint = fmt.Sprintf("did you mean %q? %s", s, hint)
				}
			}
			if len(st.vars) > 0 {
				msg += fmt.Sprintf(" (from ${%s})", strings.Join(st.vars, "}, ${"))
			}
			d.errorf(st.value, join(path, fe.Param), hint, "%s", msg)
		}
	}
}

// mask hides in msg, a message about the settings s of spec, what
// MaskMessage hides (secret settings, the parts Redact masks), the values
// of settings that came from the environment, and every environment value
// they hold: a whole-config check may quote any setting, or a part of one
// (a header line holding a token).
func (d *decoder) mask(spec connect.Spec, s settings, msg string) string {
	secrets := specSecrets(spec, s.values)
	for _, k := range s.order {
		st := s.byKey[k]
		if len(st.vars) > 0 {
			secrets = append(secrets, s.values[k])
		}
		for _, name := range st.vars {
			if ev, ok := d.lookup(name); ok && len(ev) >= minMasked {
				secrets = append(secrets, ev)
			}
		}
	}
	return hideSecrets(msg, secrets)
}

// minMasked is the shortest environment value mask hides inside other
// text: a shorter one ("1", "on") would mask unrelated words.
const minMasked = 4

// describeParam is the hint for a problem with parameter p:
// "name: description (type, one of: a, b)".
func describeParam(p connect.Param) string {
	var b strings.Builder
	b.WriteString(p.Name)
	if p.Description != "" {
		b.WriteString(": ")
		b.WriteString(p.Description)
	}
	var kind []string
	if p.Type != "" {
		kind = append(kind, string(p.Type))
	}
	if len(p.Enum) > 0 {
		kind = append(kind, "one of: "+strings.Join(p.Enum, ", "))
	}
	if len(kind) > 0 {
		b.WriteString(" (" + strings.Join(kind, ", ") + ")")
	}
	return b.String()
}

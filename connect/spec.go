package connect

import (
	"errors"
	"fmt"
	"math"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ParamType is the type of one configuration parameter.
type ParamType string

// Parameter types. Values always travel as strings (as Kafka Connect's
// configs do); the type says how a string is parsed and validated.
const (
	TypeString   ParamType = "string"
	TypeInt      ParamType = "int"
	TypeFloat    ParamType = "float"
	TypeBool     ParamType = "bool"
	TypeDuration ParamType = "duration" // Go duration: 500ms, 10s, 1h30m
	TypeSize     ParamType = "size"     // bytes with an optional unit: 512, 64KiB, 1MB, 2GiB
	TypeList     ParamType = "list"     // comma-separated, or a YAML sequence
	TypePassword ParamType = "password" // a string that is always secret
)

// Param describes one configuration parameter of a connector or transform.
type Param struct {
	Name        string    `json:"name"`               // the key in the connector's config, e.g. "batch.size"
	Type        ParamType `json:"type"`               // how values are parsed and checked
	Required    bool      `json:"required,omitempty"` // a value (or a Default) must be given
	Default     string    `json:"default,omitempty"`  // the value used when none is given
	Secret      bool      `json:"secret,omitempty"`   // the value is never shown (see also TypePassword)
	Enum        []string  `json:"enum,omitempty"`     // the allowed values (each item's, for a list)
	Description string    `json:"description"`        // one or two sentences for docs and errors

	// Constraints beyond the type, checked by Check (so by Spec.Validate,
	// pipeline validation and the REST validate endpoint) before a
	// connector is opened. A connector declares here what its Open would
	// refuse, so that a bad value is reported where it is written instead
	// of failing the task at every restart.

	// Min and Max bound an int, float, duration or size value (inclusive),
	// written in the parameter's own syntax: "1", "0.5", "0s", "1MiB".
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
	// Positive requires an int, float, duration or size value above zero.
	Positive bool `json:"positive,omitempty"`
	// Format requires a string value of a given shape, such as
	// FormatHostPort.
	Format Format `json:"format,omitempty"`
	// Exclusive marks a resource that one connector of a worker holds
	// alone, such as the file a sink appends to: pipeline validation and
	// the REST API refuse a second connector of the same type with the
	// same value (compared as ExclusiveValue gives it).
	Exclusive bool `json:"exclusive,omitempty"`
}

// ExclusiveValue is the form in which the values of an Exclusive parameter
// are compared: trimmed, and cleaned as a path (./out.jsonl and out.jsonl
// are one file).
func ExclusiveValue(v string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return ""
	}
	return filepath.Clean(v)
}

// Format is the shape a string parameter's value must have.
type Format string

// Formats.
const (
	// FormatHostPort is a network address host:port, as net.Listen and
	// net.Dial take it; the host may be empty (":8088", every interface),
	// the port is a number from 0 to 65535.
	FormatHostPort Format = "host:port"
)

// IsSecret reports whether values of p must never be shown.
func (p Param) IsSecret() bool { return p.Secret || p.Type == TypePassword }

// Spec is the configuration specification of a connector: the parameters it
// accepts. It drives validation, the REST validate endpoint and generated docs.
type Spec struct {
	Params []Param `json:"params"` // in the order docs show them

	// Check, when set, checks a configuration as a whole, once every value
	// passed its parameter's checks: what the connector's Open would refuse
	// without touching the outside world (a template that does not parse,
	// settings that exclude each other). cfg has the defaults filled in.
	// It returns FieldErrors, joined with errors.Join when there are
	// several; any other error is a problem of the configuration as a
	// whole. Check travels with the Go value only: a plugin's spec has none,
	// and its Open still checks.
	Check func(cfg Config) error `json:"-"`

	// Redact, when set, returns the value of the setting name with the
	// secret parts of it masked: a credential in a header line or in a
	// URL's query, in a setting that is not secret as a whole. Mask
	// applies it, so that REST answers, status and logs never show those
	// parts. Unlike Check, a plugin connector's Redact works too: the
	// host asks the plugin (plugin protocol version 3 and later).
	Redact func(name, value string) string `json:"-"`
}

// Param returns the parameter called name.
func (s Spec) Param(name string) (Param, bool) {
	for _, p := range s.Params {
		if p.Name == name {
			return p, true
		}
	}
	return Param{}, false
}

// Names returns the parameter names in sorted order.
func (s Spec) Names() []string {
	names := make([]string, 0, len(s.Params))
	for _, p := range s.Params {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return names
}

// FieldError is one problem with one configuration value.
type FieldError struct {
	Param   string // the parameter name
	Message string // what is wrong, and what would be right
}

// Error returns "param: message", or the message alone when the problem
// names no parameter.
func (e FieldError) Error() string {
	if e.Param == "" {
		return e.Message
	}
	return e.Param + ": " + e.Message
}

// Validate checks cfg against the spec: unknown names, missing required
// values, values that do not parse as their type, values outside the enum
// or the bounds; then, when all of that passed, the spec's Check. It
// returns every problem, sorted by parameter name; nil means valid.
func (s Spec) Validate(cfg map[string]string) []FieldError {
	var errs []FieldError
	for name := range cfg {
		if _, ok := s.Param(name); !ok {
			errs = append(errs, FieldError{Param: name, Message: fmt.Sprintf("unknown parameter; valid ones are: %s", strings.Join(s.Names(), ", "))})
		}
	}
	for _, p := range s.Params {
		v, ok := cfg[p.Name]
		if !ok || v == "" {
			if p.Required && p.Default == "" {
				errs = append(errs, FieldError{Param: p.Name, Message: "required parameter is missing: " + p.Description})
			}
			continue
		}
		if err := p.Check(v); err != nil {
			errs = append(errs, FieldError{Param: p.Name, Message: err.Error()})
		}
	}
	if len(errs) == 0 && s.Check != nil {
		errs = fieldErrors(s.Check(Config{Values: s.WithDefaults(cfg), Spec: s}))
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Param < errs[j].Param })
	return errs
}

// fieldErrors flattens err (a FieldError, errors joined, or any other
// error) into FieldErrors; an error that names no parameter gets Param "".
func fieldErrors(err error) []FieldError {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []FieldError
		for _, e := range j.Unwrap() {
			out = append(out, fieldErrors(e)...)
		}
		return out
	}
	var fe FieldError
	if errors.As(err, &fe) {
		return []FieldError{fe}
	}
	return []FieldError{{Message: err.Error()}}
}

// WithDefaults returns cfg with the default of every unset parameter filled in.
func (s Spec) WithDefaults(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg)+len(s.Params))
	for k, v := range cfg {
		out[k] = v
	}
	for _, p := range s.Params {
		if _, ok := out[p.Name]; !ok && p.Default != "" {
			out[p.Name] = p.Default
		}
	}
	return out
}

// Mask returns a copy of cfg in which the values of secret parameters are
// replaced by "********", and the secret parts of other values by Redact.
func (s Spec) Mask(cfg map[string]string) map[string]string {
	out := make(map[string]string, len(cfg))
	for k, v := range cfg {
		if p, ok := s.Param(k); ok && p.IsSecret() && v != "" {
			v = Masked
		} else if s.Redact != nil && v != "" {
			v = s.Redact(k, v)
		}
		out[k] = v
	}
	return out
}

// Masked is what a secret value shows as.
const Masked = "********"

// Check reports whether v is a valid value for p.
func (p Param) Check(v string) error {
	if len(p.Enum) > 0 && p.Type != TypeList {
		for _, e := range p.Enum {
			if v == e {
				return nil
			}
		}
		return fmt.Errorf("%q is not one of: %s", v, strings.Join(p.Enum, ", "))
	}
	switch p.Type {
	case TypeInt:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("%q is not an integer", v)
		}
	case TypeFloat:
		if _, err := strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
	case TypeBool:
		if _, err := strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%q is not a boolean (true or false)", v)
		}
	case TypeDuration:
		if _, err := time.ParseDuration(v); err != nil {
			return fmt.Errorf("%q is not a duration (examples: 500ms, 10s, 1h30m)", v)
		}
	case TypeSize:
		if _, err := ParseSize(v); err != nil {
			return err
		}
	case TypeList:
		if len(p.Enum) > 0 {
			for _, item := range SplitList(v) {
				if err := (Param{Name: p.Name, Type: TypeString, Enum: p.Enum}).Check(item); err != nil {
					return err
				}
			}
		}
	}
	return p.checkConstraints(v)
}

// checkConstraints checks a value that parses as p's type against p's
// Min, Max, Positive and Format. A constraint that does not fit the type
// (a Min that does not parse, a Format on an int) is an error of the spec,
// reported as such: Registry.Register finds it through the default.
func (p Param) checkConstraints(v string) error {
	if p.Min == "" && p.Max == "" && !p.Positive && p.Format == "" {
		return nil
	}
	if p.Format != "" {
		if p.Type != TypeString && p.Type != "" {
			return fmt.Errorf("spec: format %q applies to string parameters, not %s", p.Format, p.Type)
		}
		if err := p.Format.check(v); err != nil {
			return err
		}
	}
	if p.Min == "" && p.Max == "" && !p.Positive {
		return nil
	}
	n, err := p.number(v)
	if err != nil {
		return err
	}
	if p.Positive && n <= 0 {
		return fmt.Errorf("%q must be positive (more than 0)", v)
	}
	for _, b := range []struct {
		bound string
		out   func(x float64) bool
		what  string
	}{
		{p.Min, func(x float64) bool { return n < x }, "at least"},
		{p.Max, func(x float64) bool { return n > x }, "at most"},
	} {
		if b.bound == "" {
			continue
		}
		x, err := p.number(b.bound)
		if err != nil {
			return fmt.Errorf("spec: bound %q of %s: %w", b.bound, p.Name, err)
		}
		if b.out(x) {
			return fmt.Errorf("%q must be %s %s", v, b.what, b.bound)
		}
	}
	return nil
}

// number parses v, a value of a numeric type, for comparisons: ints,
// durations (in nanoseconds) and sizes compare exactly below 2^53, far
// beyond any bound a spec declares.
func (p Param) number(v string) (float64, error) {
	switch p.Type {
	case TypeInt:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not an integer", v)
		}
		return float64(n), nil
	case TypeFloat:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("%q is not a number", v)
		}
		return f, nil
	case TypeDuration:
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration (examples: 500ms, 10s, 1h30m)", v)
		}
		return float64(d), nil
	case TypeSize:
		n, err := ParseSize(v)
		if err != nil {
			return 0, err
		}
		return float64(n), nil
	}
	return 0, fmt.Errorf("spec: min, max and positive apply to int, float, duration and size parameters, not %s", p.Type)
}

// check reports whether v has the format f.
func (f Format) check(v string) error {
	switch f {
	case FormatHostPort:
		_, port, err := net.SplitHostPort(v)
		if err != nil {
			var ae *net.AddrError
			if errors.As(err, &ae) {
				err = errors.New(ae.Err)
			}
			return fmt.Errorf("%q is not a host:port address (%v); e.g. 127.0.0.1:8080, or :8080 for every interface", v, err)
		}
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("%q is not a host:port address: the port %q is not a number from 0 to 65535", v, port)
		}
		return nil
	}
	return fmt.Errorf("spec: unknown format %q", f)
}

// SplitList splits a comma-separated list value, trimming spaces and
// dropping empty items.
func SplitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ParseSize parses a byte size: a plain integer, or a number followed by one
// of B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024).
func ParseSize(v string) (int64, error) {
	s := strings.TrimSpace(v)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') {
		i--
	}
	num, unit := s[:i], strings.TrimSpace(s[i:])
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%q is not a size (examples: 1048576, 64KiB, 10MB, 1GiB)", v)
	}
	mult := map[string]int64{
		"": 1, "B": 1,
		"KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
	}
	m, ok := mult[unit]
	if !ok {
		return 0, fmt.Errorf("%q has an unknown size unit %q (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", v, unit)
	}
	if n > math.MaxInt64/m {
		return 0, fmt.Errorf("%q is too large (at most %d bytes)", v, int64(math.MaxInt64))
	}
	return n * m, nil
}

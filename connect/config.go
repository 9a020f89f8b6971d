package connect

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config is what a connector instance is opened with: the task's identity,
// its settings and, for a source, where to resume. Values always travel as
// strings (as in Kafka Connect); the typed getters parse them by the Spec
// and fill in defaults.
//
// Config is safe to print and log: Format and LogValue mask the values of
// secret parameters.
type Config struct {
	// Pipeline is the name of the pipeline the connector belongs to.
	Pipeline string
	// Connector is the connector instance's name, unique in its pipeline
	// (the "name" of a source or sink in the pipeline file).
	Connector string
	// Task is the task number, from 0.
	Task int

	// Values are the connector's settings, by parameter name.
	Values map[string]string
	// Spec is the connector's configuration spec; the getters use it for
	// types and defaults.
	Spec Spec

	// Position is, for a source, the last position stored durably, to
	// resume after; nil on the first start. Sinks get nil.
	Position Position
}

// Validate checks Values against Spec and returns all problems joined, each
// a FieldError naming its parameter; nil means valid.
func (c Config) Validate() error {
	ferrs := c.Spec.Validate(c.Values)
	if len(ferrs) == 0 {
		return nil
	}
	errs := make([]error, len(ferrs))
	for i, fe := range ferrs {
		errs[i] = fe
	}
	return errors.Join(errs...)
}

// lookup returns the value of the parameter called name, or its default,
// and whether there is one. It fails for a name the spec does not define
// and for a missing required value.
func (c Config) lookup(name string) (string, bool, error) {
	p, ok := c.Spec.Param(name)
	if !ok {
		return "", false, FieldError{Param: name, Message: "not a parameter of this connector"}
	}
	if v, ok := c.Values[name]; ok && v != "" {
		return v, true, nil
	}
	if p.Default != "" {
		return p.Default, true, nil
	}
	if p.Required {
		return "", false, FieldError{Param: name, Message: "required parameter is missing"}
	}
	return "", false, nil
}

// typed returns the checked value of a parameter declared with type t.
func (c Config) typed(name string, t ParamType) (string, bool, error) {
	if p, ok := c.Spec.Param(name); ok && t != TypeString && p.Type != t {
		return "", false, FieldError{Param: name, Message: fmt.Sprintf("is a %s parameter, read as %s", p.Type, t)}
	}
	v, ok, err := c.lookup(name)
	if err != nil || !ok {
		return "", false, err
	}
	p, _ := c.Spec.Param(name)
	if err := p.Check(v); err != nil {
		return "", false, FieldError{Param: name, Message: err.Error()}
	}
	return v, true, nil
}

// String returns the value of a parameter as a string (for a string or
// password parameter; any other type comes back unparsed), its default, or
// "" when unset.
func (c Config) String(name string) (string, error) {
	v, _, err := c.typed(name, TypeString)
	return v, err
}

// Int returns the value of an int parameter, its default, or 0 when unset.
func (c Config) Int(name string) (int64, error) {
	v, ok, err := c.typed(name, TypeInt)
	if err != nil || !ok {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

// Float returns the value of a float parameter, its default, or 0 when unset.
func (c Config) Float(name string) (float64, error) {
	v, ok, err := c.typed(name, TypeFloat)
	if err != nil || !ok {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

// Bool returns the value of a bool parameter, its default, or false when
// unset.
func (c Config) Bool(name string) (bool, error) {
	v, ok, err := c.typed(name, TypeBool)
	if err != nil || !ok {
		return false, err
	}
	return strconv.ParseBool(v)
}

// Duration returns the value of a duration parameter, its default, or 0
// when unset.
func (c Config) Duration(name string) (time.Duration, error) {
	v, ok, err := c.typed(name, TypeDuration)
	if err != nil || !ok {
		return 0, err
	}
	return time.ParseDuration(v)
}

// Size returns the value of a size parameter in bytes, its default, or 0
// when unset.
func (c Config) Size(name string) (int64, error) {
	v, ok, err := c.typed(name, TypeSize)
	if err != nil || !ok {
		return 0, err
	}
	return ParseSize(v)
}

// List returns the items of a list parameter, its default, or nil when
// unset.
func (c Config) List(name string) ([]string, error) {
	v, ok, err := c.typed(name, TypeList)
	if err != nil || !ok {
		return nil, err
	}
	return SplitList(v), nil
}

// Masked returns the values with those of secret parameters replaced by
// Masked, for logs, status and REST answers.
func (c Config) Masked() map[string]string { return c.Spec.Mask(c.Values) }

// Format prints the config with secrets masked, whatever the verb (%v,
// %+v, %s, %#v), so that a config in a log line or an error never leaks one.
func (c Config) Format(f fmt.State, verb rune) {
	if verb == 'v' && f.Flag('#') {
		io.WriteString(f, "connect.Config")
	}
	io.WriteString(f, c.describe())
}

// LogValue renders the config for log/slog with secrets masked.
func (c Config) LogValue() slog.Value {
	masked := c.Masked()
	keys := sortedKeys(masked)
	values := make([]slog.Attr, len(keys))
	for i, k := range keys {
		values[i] = slog.String(k, masked[k])
	}
	attrs := []slog.Attr{
		slog.String("pipeline", c.Pipeline),
		slog.String("connector", c.Connector),
		slog.Int("task", c.Task),
		{Key: "values", Value: slog.GroupValue(values...)},
	}
	if c.Position != nil {
		attrs = append(attrs, slog.String("position", c.Position.String()))
	}
	return slog.GroupValue(attrs...)
}

func (c Config) describe() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{pipeline=%s connector=%s task=%d values={", c.Pipeline, c.Connector, c.Task)
	masked := c.Masked()
	for i, k := range sortedKeys(masked) {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%s", k, masked[k])
	}
	b.WriteByte('}')
	if c.Position != nil {
		fmt.Fprintf(&b, " position=%s", c.Position)
	}
	b.WriteByte('}')
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

package connect

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestParam_Check_Constraints(t *testing.T) {
	tests := []struct {
		name string
		p    Param
		v    string
		want string // "" for valid; else a substring of the error
	}{
		{"positive duration", Param{Type: TypeDuration, Positive: true}, "5s", ""},
		{"negative duration", Param{Type: TypeDuration, Positive: true}, "-5s", `"-5s" must be positive (more than 0)`},
		{"zero duration", Param{Type: TypeDuration, Positive: true}, "0s", `"0s" must be positive (more than 0)`},
		{"positive int", Param{Type: TypeInt, Positive: true}, "0", `"0" must be positive (more than 0)`},
		{"positive float", Param{Type: TypeFloat, Positive: true}, "0.001", ""},
		{"int at min", Param{Type: TypeInt, Min: "2"}, "2", ""},
		{"int below min", Param{Type: TypeInt, Min: "2"}, "1", `"1" must be at least 2`},
		{"int above max", Param{Type: TypeInt, Min: "100", Max: "599"}, "600", `"600" must be at most 599`},
		{"duration min 0", Param{Type: TypeDuration, Min: "0s"}, "-1ms", `"-1ms" must be at least 0s`},
		{"duration min 0 ok", Param{Type: TypeDuration, Min: "0s"}, "0s", ""},
		{"size min", Param{Type: TypeSize, Min: "1MiB"}, "512KiB", `"512KiB" must be at least 1MiB`},
		{"size min units", Param{Type: TypeSize, Min: "1MiB"}, "1MB", `"1MB" must be at least 1MiB`},
		{"size min exact", Param{Type: TypeSize, Min: "1MiB"}, "1048576", ""},
		{"float max", Param{Type: TypeFloat, Max: "1"}, "1.5", `"1.5" must be at most 1`},
		{"type still checked first", Param{Type: TypeDuration, Positive: true}, "5", "is not a duration"},
		{"host:port", Param{Type: TypeString, Format: FormatHostPort}, "127.0.0.1:8088", ""},
		{"any interface", Param{Type: TypeString, Format: FormatHostPort}, ":8088", ""},
		{"ipv6", Param{Type: TypeString, Format: FormatHostPort}, "[::1]:0", ""},
		{"missing port", Param{Type: TypeString, Format: FormatHostPort}, "127.0.0.1", `"127.0.0.1" is not a host:port address (missing port in address)`},
		{"empty port", Param{Type: TypeString, Format: FormatHostPort}, "localhost:", `the port "" is not a number`},
		{"port range", Param{Type: TypeString, Format: FormatHostPort}, "localhost:65536", `the port "65536" is not a number from 0 to 65535`},
		{"named port", Param{Type: TypeString, Format: FormatHostPort}, "localhost:http", `the port "http" is not a number`},
		{"bad bound is a spec error", Param{Name: "x", Type: TypeInt, Min: "one"}, "1", `spec: bound "one" of x`},
		{"bound on a string", Param{Type: TypeString, Positive: true}, "a", "spec: min, max and positive apply to int"},
		{"format on an int", Param{Type: TypeInt, Format: FormatHostPort}, "1", `spec: format "host:port" applies to string parameters`},
		{"unknown format", Param{Type: TypeString, Format: "email"}, "a", `spec: unknown format "email"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Check(tt.v)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Check(%q) = %v, want nil", tt.v, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Check(%q) = %v, want an error with %q", tt.v, err, tt.want)
			}
		})
	}
}

func TestSpec_Validate_Constraints(t *testing.T) {
	spec := Spec{Params: []Param{
		{Name: "commit.interval", Type: TypeDuration, Default: "60s", Positive: true},
		{Name: "listen", Type: TypeString, Default: "127.0.0.1:8088", Format: FormatHostPort},
		{Name: "files", Type: TypeInt, Default: "5", Min: "2"},
	}}
	got := spec.Validate(map[string]string{"commit.interval": "-5s", "listen": "127.0.0.1", "files": "1"})
	want := []FieldError{
		{Param: "commit.interval", Message: `"-5s" must be positive (more than 0)`},
		{Param: "files", Message: `"1" must be at least 2`},
		{Param: "listen", Message: `"127.0.0.1" is not a host:port address (missing port in address); e.g. 127.0.0.1:8080, or :8080 for every interface`},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate:\n got %v\nwant %v", got, want)
	}
	if got := spec.Validate(map[string]string{}); got != nil {
		t.Errorf("defaults: %v", got)
	}
	// The typed getters a connector's Open uses check the constraints too.
	c := Config{Spec: spec, Values: map[string]string{"commit.interval": "-5s"}}
	if _, err := c.Duration("commit.interval"); err == nil || !strings.Contains(err.Error(), "must be positive (more than 0)") {
		t.Errorf("Duration: %v", err)
	}
}

func TestRegistry_Register_DefaultBreaksConstraint(t *testing.T) {
	r := NewRegistry()
	err := r.Register(Connector{Name: "x", Kind: KindSink, NewSink: func() Sink { return nil },
		Spec: Spec{Params: []Param{{Name: "every", Type: TypeDuration, Default: "0s", Positive: true}}}})
	if err == nil || !strings.Contains(err.Error(), `default of "every"`) {
		t.Errorf("Register = %v, want the default refused", err)
	}
}

func TestSpec_Validate_Check(t *testing.T) {
	var seen map[string]string
	spec := Spec{Params: []Param{
		{Name: "a", Type: TypeString},
		{Name: "b", Type: TypeInt, Default: "3"},
	}, Check: func(cfg Config) error {
		seen = cfg.Values
		if cfg.Values["a"] != "bad" {
			return nil
		}
		return errors.Join(
			FieldError{Param: "b", Message: "does not go with a"},
			fmt.Errorf("wrapped: %w", FieldError{Param: "a", Message: "is bad"}),
			errors.New("the whole config is wrong"),
		)
	}}
	got := spec.Validate(map[string]string{"a": "bad"})
	want := []FieldError{
		{Param: "", Message: "the whole config is wrong"},
		{Param: "a", Message: "is bad"},
		{Param: "b", Message: "does not go with a"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate:\n got %v\nwant %v", got, want)
	}
	if seen["b"] != "3" {
		t.Errorf("Check saw %v, want the defaults filled in", seen)
	}
	// Check runs only once every value is valid on its own.
	seen = nil
	if got := spec.Validate(map[string]string{"a": "bad", "b": "x"}); len(got) != 1 || got[0].Param != "b" || seen != nil {
		t.Errorf("Validate = %v (Check saw %v), want only the type error", got, seen)
	}
	if got := spec.Validate(map[string]string{"a": "good"}); got != nil {
		t.Errorf("Validate = %v", got)
	}
	// Config.Validate, which the worker runs before it opens a connector,
	// runs the check too.
	if err := (Config{Spec: spec, Values: map[string]string{"a": "bad"}}).Validate(); err == nil || !strings.Contains(err.Error(), "the whole config is wrong") {
		t.Errorf("Config.Validate = %v", err)
	}
}

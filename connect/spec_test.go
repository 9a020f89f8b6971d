package connect

import (
	"reflect"
	"strings"
	"testing"
)

func TestSpec_Validate(t *testing.T) {
	spec := testSpec()
	tests := []struct {
		name string
		cfg  map[string]string
		want []FieldError
	}{
		{"valid", map[string]string{"host": "h", "password": "p"}, nil},
		{"missing required", map[string]string{"host": ""}, []FieldError{
			{Param: "host", Message: "required parameter is missing: Database host."},
			{Param: "password", Message: "required parameter is missing: Database password."},
		}},
		{"unknown and invalid, sorted by name", map[string]string{
			"host": "h", "password": "p", "zzz": "1", "port": "x", "mode": "sometimes", "ops": "c,z",
		}, []FieldError{
			{Param: "mode", Message: `"sometimes" is not one of: initial, never`},
			{Param: "ops", Message: `"z" is not one of: c, u, d`},
			{Param: "port", Message: `"x" is not an integer`},
			{Param: "zzz", Message: "unknown parameter; valid ones are: batch.bytes, host, mode, ops, password, poll, port, ratio, ssl, tables, token"},
		}},
		{"every type", map[string]string{
			"host": "h", "password": "p", "ratio": "0.x", "ssl": "yes", "poll": "10", "batch.bytes": "-1",
		}, []FieldError{
			{Param: "batch.bytes", Message: `"-1" is not a size (examples: 1048576, 64KiB, 10MB, 1GiB)`},
			{Param: "poll", Message: `"10" is not a duration (examples: 500ms, 10s, 1h30m)`},
			{Param: "ratio", Message: `"0.x" is not a number`},
			{Param: "ssl", Message: `"yes" is not a boolean (true or false)`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := spec.Validate(tt.cfg); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate:\n got %v\nwant %v", got, tt.want)
			}
		})
	}
	// A required parameter with a default is satisfied by the default.
	s := Spec{Params: []Param{{Name: "a", Type: TypeString, Required: true, Default: "x"}}}
	if got := s.Validate(nil); got != nil {
		t.Errorf("required with default: %v", got)
	}
}

func TestSpec_WithDefaultsAndMask(t *testing.T) {
	spec := testSpec()
	cfg := map[string]string{"host": "h", "password": "p", "token": "", "port": "6543"}
	got := spec.WithDefaults(cfg)
	want := map[string]string{
		"host": "h", "password": "p", "token": "", "port": "6543", "ratio": "0.5", "ssl": "false",
		"poll": "500ms", "batch.bytes": "1MiB", "mode": "initial",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("WithDefaults:\n got %v\nwant %v", got, want)
	}
	if cfg["ssl"] != "" {
		t.Error("WithDefaults changed its argument")
	}
	masked := spec.Mask(map[string]string{"host": "h", "password": "p", "token": "", "other": "o"})
	if want := map[string]string{"host": "h", "password": Masked, "token": "", "other": "o"}; !reflect.DeepEqual(masked, want) {
		t.Errorf("Mask = %v, want %v", masked, want)
	}
}

func TestSpec_ParamAndNames(t *testing.T) {
	spec := testSpec()
	if p, ok := spec.Param("port"); !ok || p.Default != "5432" {
		t.Errorf(`Param("port") = %+v, %v`, p, ok)
	}
	if _, ok := spec.Param("nope"); ok {
		t.Error(`Param("nope") found`)
	}
	names := spec.Names()
	if !reflect.DeepEqual(names, []string{"batch.bytes", "host", "mode", "ops", "password", "poll", "port", "ratio", "ssl", "tables", "token"}) {
		t.Errorf("Names = %v", names)
	}
	for _, tt := range []struct {
		p    Param
		want bool
	}{
		{Param{Type: TypePassword}, true},
		{Param{Type: TypeString, Secret: true}, true},
		{Param{Type: TypeString}, false},
	} {
		if got := tt.p.IsSecret(); got != tt.want {
			t.Errorf("%+v.IsSecret() = %v, want %v", tt.p, got, tt.want)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"1048576", 1048576},
		{"512B", 512},
		{" 10 MB ", 10_000_000},
		{"64KiB", 64 << 10},
		{"1GiB", 1 << 30},
		{"2TB", 2e12},
		{"8191TiB", 8191 << 40},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "MB", "-1", "1.5GiB", "10 parsecs", "1kb", "9999999TiB", "99999999999999999999"} {
		if got, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", in, got)
		}
	}
	if _, err := ParseSize("9999999TiB"); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("overflow error = %v", err)
	}
}

func TestSplitList(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"a", []string{"a"}},
		{" a , b,,c ", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		if got := SplitList(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitList(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSpec_Markdown(t *testing.T) {
	spec := Spec{Params: []Param{
		{Name: "url", Type: TypeString, Required: true, Description: "Endpoint URL,\nfor example https://x/y."},
		{Name: "secret", Type: TypePassword, Required: true, Description: "Signing secret (whsec_…)."},
		{Name: "api.key", Type: TypeString, Secret: true, Default: "dev-key", Description: "API key."},
		{Name: "method", Type: TypeString, Default: "POST", Enum: []string{"POST", "PUT"}, Description: "HTTP method."},
		{Name: "timeout", Type: TypeDuration, Default: "10s", Description: "Per request | total."},
	}}
	want := "| Parameter | Type | Default | Required | Allowed values | Description |\n" +
		"|---|---|---|---|---|---|\n" +
		"| `url` | string |  | yes |  | Endpoint URL, for example https://x/y. |\n" +
		"| `secret` | password (secret) |  | yes |  | Signing secret (whsec_…). |\n" +
		"| `api.key` | string (secret) | `********` | no |  | API key. |\n" +
		"| `method` | string | `POST` | no | `POST`, `PUT` | HTTP method. |\n" +
		"| `timeout` | duration | `10s` | no |  | Per request \\| total. |\n"
	if got := spec.Markdown(); got != want {
		t.Errorf("Markdown:\n%s\nwant:\n%s", got, want)
	}
	if got := (Spec{}).Markdown(); got != "_No parameters._\n" {
		t.Errorf("empty spec: %q", got)
	}
}

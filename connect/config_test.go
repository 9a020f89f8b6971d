package connect

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

func testSpec() Spec {
	return Spec{Params: []Param{
		{Name: "host", Type: TypeString, Required: true, Description: "Database host."},
		{Name: "port", Type: TypeInt, Default: "5432", Description: "Database port."},
		{Name: "password", Type: TypePassword, Required: true, Description: "Database password."},
		{Name: "token", Type: TypeString, Secret: true, Description: "API token."},
		{Name: "ratio", Type: TypeFloat, Default: "0.5", Description: "Sampling ratio."},
		{Name: "ssl", Type: TypeBool, Default: "false", Description: "Use TLS."},
		{Name: "poll", Type: TypeDuration, Default: "500ms", Description: "Poll interval."},
		{Name: "batch.bytes", Type: TypeSize, Default: "1MiB", Description: "Batch size."},
		{Name: "tables", Type: TypeList, Description: "Tables to capture."},
		{Name: "mode", Type: TypeString, Default: "initial", Enum: []string{"initial", "never"}, Description: "Snapshot mode."},
		{Name: "ops", Type: TypeList, Enum: []string{"c", "u", "d"}, Description: "Operations to keep."},
	}}
}

func TestConfig_Getters(t *testing.T) {
	c := Config{Spec: testSpec(), Values: map[string]string{
		"host": "db.local", "password": "s3cret", "ssl": "true", "poll": "2s",
		"batch.bytes": "64KiB", "tables": "public.a, public.b,", "ops": "c,d",
	}}
	check := func(name string, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, want %#v", name, got, want)
		}
	}
	s, err := c.String("host")
	check("host", s, "db.local", err)
	s, err = c.String("password")
	check("password", s, "s3cret", err)
	s, err = c.String("token")
	check("token (unset, no default)", s, "", err)
	s, err = c.String("mode")
	check("mode (default)", s, "initial", err)
	s, err = c.String("port")
	check("port read as a string", s, "5432", err)
	i, err := c.Int("port")
	check("port (default)", i, int64(5432), err)
	f, err := c.Float("ratio")
	check("ratio (default)", f, 0.5, err)
	b, err := c.Bool("ssl")
	check("ssl", b, true, err)
	d, err := c.Duration("poll")
	check("poll", d, 2*time.Second, err)
	n, err := c.Size("batch.bytes")
	check("batch.bytes", n, int64(64<<10), err)
	l, err := c.List("tables")
	check("tables", l, []string{"public.a", "public.b"}, err)
	l, err = c.List("ops")
	check("ops", l, []string{"c", "d"}, err)
	if err := c.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

func TestConfig_GetterErrors(t *testing.T) {
	c := Config{Spec: testSpec(), Values: map[string]string{
		"port": "fifty", "ssl": "maybe", "poll": "5", "batch.bytes": "1 parsec", "mode": "always", "ops": "c,x", "ratio": "half",
	}}
	tests := []struct {
		name string
		get  func() error
		want string
	}{
		{"unknown", func() error { _, err := c.String("nope"); return err }, "nope: not a parameter of this connector"},
		{"required", func() error { _, err := c.String("host"); return err }, "host: required parameter is missing"},
		{"int", func() error { _, err := c.Int("port"); return err }, `port: "fifty" is not an integer`},
		{"float", func() error { _, err := c.Float("ratio"); return err }, `ratio: "half" is not a number`},
		{"bool", func() error { _, err := c.Bool("ssl"); return err }, `ssl: "maybe" is not a boolean`},
		{"duration", func() error { _, err := c.Duration("poll"); return err }, `poll: "5" is not a duration`},
		{"size", func() error { _, err := c.Size("batch.bytes"); return err }, `batch.bytes: "1 parsec" has an unknown size unit`},
		{"enum", func() error { _, err := c.String("mode"); return err }, `mode: "always" is not one of: initial, never`},
		{"list enum", func() error { _, err := c.List("ops"); return err }, `ops: "x" is not one of: c, u, d`},
		{"wrong type", func() error { _, err := c.Int("host"); return err }, "host: is a string parameter, read as int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.get()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
			var fe FieldError
			if !errors.As(err, &fe) || !strings.HasPrefix(tt.want, fe.Param+":") {
				t.Errorf("error %v is not a FieldError naming the parameter", err)
			}
		})
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("Validate: no error")
	}
	for _, p := range []string{"host", "password", "port", "ssl", "poll", "batch.bytes", "mode", "ops", "ratio"} {
		if !strings.Contains(err.Error(), p+":") {
			t.Errorf("Validate error does not name %s: %v", p, err)
		}
	}
}

func TestConfig_SecretsNeverPrinted(t *testing.T) {
	c := Config{
		Pipeline: "shop", Connector: "orders-cdc", Task: 1,
		Spec:     testSpec(),
		Values:   map[string]string{"host": "db.local", "password": "hunter2", "token": "tok-123"},
		Position: Position(`{"lsn":42}`),
	}
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("open", "config", c)
	outputs := map[string]string{
		"%v":   fmt.Sprintf("%v", c),
		"%+v":  fmt.Sprintf("%+v", c),
		"%#v":  fmt.Sprintf("%#v", c),
		"%s":   fmt.Sprintf("%s", c),
		"slog": logged.String(),
	}
	for name, out := range outputs {
		if strings.Contains(out, "hunter2") || strings.Contains(out, "tok-123") {
			t.Errorf("%s leaks a secret: %s", name, out)
		}
		if !strings.Contains(out, "db.local") || !strings.Contains(out, Masked) || !strings.Contains(out, "orders-cdc") {
			t.Errorf("%s lacks the masked config: %s", name, out)
		}
	}
	if want := `{pipeline=shop connector=orders-cdc task=1 values={host=db.local password=******** token=********} position={"lsn":42}}`; outputs["%v"] != want {
		t.Errorf("%%v = %s\nwant %s", outputs["%v"], want)
	}
	if got := c.Masked(); got["password"] != Masked || got["host"] != "db.local" {
		t.Errorf("Masked = %v", got)
	}
}

package transform

import (
	"errors"
	"strings"
	"testing"
)

// TestNew_BlankList: a list setting that holds only spaces and commas names
// no field. drop_fields panicked on one (index out of range: it took the
// first of no paths); every transform refuses it as a *ConfigError naming
// the setting.
func TestNew_BlankList(t *testing.T) {
	for _, c := range []struct {
		typ, param string
		cfg        map[string]string
	}{
		{"drop_fields", "fields", nil},
		{"drop_fields", "keep", nil},
		{"mask_fields", "fields", nil},
		{"rename_fields", "renames", nil},
		{"key_from_fields", "fields", nil},
	} {
		for _, blank := range []string{" ", ",", " , ,"} {
			cfg := map[string]string{c.param: blank}
			tr, err := Builtin().New(c.typ, cfg)
			var ce *ConfigError
			if err == nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), c.param) {
				t.Errorf("New(%s, %s=%q) = %v, %v; want a *ConfigError naming %s", c.typ, c.param, blank, tr, err, c.param)
			}
		}
	}
}

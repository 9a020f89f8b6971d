package pipelines

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
)

func TestPipeline_Masked(t *testing.T) {
	p, err := LoadFile("testdata/valid/cdc.yaml", testOpts)
	if err != nil {
		t.Fatal(err)
	}
	before := fmt.Sprintf("%#v", p)
	m := p.Masked()

	checks := []struct {
		name      string
		got, want any
	}{
		// password is a secret parameter (and from the environment).
		{"source", m.Sources[0].Config, map[string]string{
			"url":      "postgres://replicator@localhost:5432/shop", // only the default was used
			"password": connect.Masked,
			"tables":   "public.customers,public.orders",
			"snapshot": "initial",
		}},
		// token is secret; url holds ${CRM_TENANT} from the environment.
		{"sink", m.Sinks[0].Config, map[string]string{
			"url":     connect.Masked,
			"token":   connect.Masked,
			"timeout": "5s",
		}},
		{"transform", m.Sinks[0].Transforms[1].Config, map[string]string{"fields": "email,phone"}},
		{"MaskedConfig", p.Sinks[0].MaskedConfig(), m.Sinks[0].Config},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}

	shown := fmt.Sprintf("%#v", m)
	for _, secret := range []string{"s3cret-pw", "tok-123", "acme"} {
		if strings.Contains(shown, secret) {
			t.Errorf("masked pipeline shows %q:\n%s", secret, shown)
		}
	}
	if after := fmt.Sprintf("%#v", p); after != before {
		t.Errorf("Masked changed the pipeline:\nbefore %s\nafter  %s", before, after)
	}
	m.Topics[0].Config["cleanup.policy"] = "delete"
	m.Sinks[0].Topics[0] = "changed"
	if p.Topics[0].Config["cleanup.policy"] != "compact" || p.Sinks[0].Topics[0] != "cdc.public.customers" {
		t.Error("the masked copy shares maps or slices with the pipeline")
	}
	if (*Pipeline)(nil).Masked() != nil {
		t.Error("nil.Masked() is not nil")
	}
}

func TestTransform_SecretSetting(t *testing.T) {
	cat := Specs{
		KindSource:    testCatalog[KindSource],
		KindTransform: {"sign": {Params: []connect.Param{{Name: "key", Type: connect.TypePassword, Required: true}}}},
	}
	p, err := Parse("p.yaml", []byte(`
version: 1
sources:
  - name: s
    connector: generator
    topic: t
    transforms: [{type: sign, key: abc}]
`), Options{Catalog: cat, LookupEnv: testEnv(nil)})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Masked().Sources[0].Transforms[0].Config["key"], connect.Masked; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := p.Sources[0].Transforms[0].Config["key"], "abc"; got != want {
		t.Errorf("unmasked: got %q, want %q", got, want)
	}
}

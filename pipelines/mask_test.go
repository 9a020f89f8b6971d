package pipelines

import (
	"fmt"
	"reflect"
	"strconv"
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

// redactKey is a Redact that masks the value of a URL's key= parameter,
// as the webhook connector's does with its hapikey.
func redactKey(name, value string) string {
	if name != "url" {
		return value
	}
	before, after, ok := strings.Cut(value, "key=")
	if !ok {
		return value
	}
	_, rest, _ := strings.Cut(after, "&")
	if rest != "" {
		rest = "&" + rest
	}
	return before + "key=" + connect.Masked + rest
}

func TestMaskMessage_SecretsAndRedactedParts(t *testing.T) {
	spec := connect.Spec{Params: []connect.Param{
		{Name: "url", Type: connect.TypeString},
		{Name: "token", Type: connect.TypeString, Secret: true},
	}, Redact: redactKey}
	cfg := map[string]string{"url": "ftp://h/p?key=K3Y-S3CRET&x=1", "token": `t"ok`}
	for _, c := range []struct{ msg, want string }{
		{`"ftp://h/p?key=K3Y-S3CRET&x=1" is not an http or https URL`, `"ftp://h/p?key=********&x=1" is not an http or https URL`},
		{`bad key K3Y-S3CRET`, `bad key ********`},
		{`token "t\"ok" is refused; t"ok`, `token "********" is refused; ********`},
		{`nothing secret`, `nothing secret`},
	} {
		if got := MaskMessage(spec, cfg, c.msg); got != c.want {
			t.Errorf("MaskMessage(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}

func TestRedactedParts(t *testing.T) {
	for _, c := range []struct {
		v, redacted string
		want        []string
	}{
		{"a?key=S&x=1", "a?key=" + connect.Masked + "&x=1", []string{"S"}},
		{"key=S", "key=" + connect.Masked, []string{"S"}},
		{"S1:S2", connect.Masked + ":" + connect.Masked, []string{"S1", "S2"}},
		{"Bearer T", "Bearer " + connect.Masked, []string{"T"}},
		// Not v with parts replaced: hidden whole.
		{"abc", "xyz" + connect.Masked, []string{"abc"}},
		{"abc", "a" + connect.Masked + "q", []string{"abc"}},
	} {
		if got := redactedParts(c.v, c.redacted); !reflect.DeepEqual(got, c.want) {
			t.Errorf("redactedParts(%q, %q) = %q, want %q", c.v, c.redacted, got, c.want)
		}
	}
}

// The loader masks a whole-config check's message as REST answers mask
// values: a credential the spec's Redact finds in a setting that is not
// secret as a whole never shows in the error.
func TestLoad_CheckMessageMasksRedactedParts(t *testing.T) {
	cat := Specs{KindSource: testCatalog[KindSource], KindSink: {"hook": {
		Params: []connect.Param{{Name: "url", Type: connect.TypeString, Required: true}},
		Check: func(cfg connect.Config) error {
			u, _ := cfg.String("url")
			return &connect.FieldError{Param: "url", Message: strconv.Quote(u) + " is not an http or https URL"}
		},
		Redact: redactKey,
	}}}
	_, err := Parse("p.yaml", []byte(`
version: 1
sources: [{name: s, connector: generator, topic: t}]
sinks: [{name: k, connector: hook, topics: [t], config: {url: "ftp://h/p?key=K3Y-S3CRET"}}]
`), Options{Catalog: cat, LookupEnv: testEnv(nil)})
	if err == nil {
		t.Fatal("loaded; want the check's error")
	}
	if msg := err.Error(); strings.Contains(msg, "K3Y-S3CRET") || !strings.Contains(msg, "key="+connect.Masked) {
		t.Errorf("error does not mask the URL's key:\n%s", msg)
	}
}

package rest

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
	"github.com/tributary-io/tributary/engine/transform"
	"github.com/tributary-io/tributary/pipelines"
)

const hashKey = "hmac-key-never-shown"

// startMaskedSink starts a sink as a pipeline file would: a masking
// transform with a secret key, and an error policy.
func startMaskedSink(t *testing.T, w *engine.Worker) engine.ConnectorSpec {
	t.Helper()
	spec := engine.ConnectorSpec{Pipeline: "p", Name: "snk", Kind: connect.KindSink, Connector: "null", Config: map[string]string{},
		Topics: []string{"t"}, Group: "g",
		Transforms: []engine.TransformSpec{
			{Type: "mask_fields", Config: map[string]string{"fields": "email", "hash": "sha256", "hash.key": hashKey}},
			{Type: "filter", Config: map[string]string{"action": "drop", "field": "op", "equals": "d"}},
			{Type: "mask_fields", Config: map[string]string{"fields": "phone"}},
		},
		Errors: engine.ErrorPolicy{Tolerance: "all", Retries: 10, BackoffInitial: 100 * time.Millisecond, BackoffMax: 10 * time.Second, DeadLetterTopic: "dlq.snk"},
	}
	if err := w.Start(t.Context(), spec, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	return spec
}

func TestREST_Config_TransformsRoundTrip(t *testing.T) {
	srv, w, logs := newTestServer(t)
	want := startMaskedSink(t, w)
	code, body := call(t, srv, "GET", "/connectors/snk/config", "")
	if code != 200 {
		t.Fatalf("GET config = %d %s", code, body)
	}
	if strings.Contains(body, hashKey) {
		t.Fatalf("the transform's secret shows: %s", body)
	}
	golden(t, "config_transforms", body)

	// PUT of GET's answer is a no-op: same transforms (the secret kept),
	// same error policy; the aliases the answer gave are kept as names.
	code, put := call(t, srv, "PUT", "/connectors/snk/config", body)
	if code != 200 || strings.Contains(put, hashKey) {
		t.Fatalf("PUT config = %d %s", code, put)
	}
	got, _ := w.Spec("snk")
	for i, name := range []string{"mask_fields", "filter", "mask_fields_2"} {
		want.Transforms[i].Name = name
	}
	if !reflect.DeepEqual(got.Transforms, want.Transforms) {
		t.Errorf("transforms after PUT:\n got %+v\nwant %+v", got.Transforms, want.Transforms)
	}
	if got.Errors != want.Errors {
		t.Errorf("errors after PUT: got %+v, want %+v", got.Errors, want.Errors)
	}
	if _, again := call(t, srv, "GET", "/connectors/snk/config", ""); again != body {
		t.Errorf("GET after PUT differs:\n%s\n%s", again, body)
	}

	// PATCH keeps what it does not name, and "transforms" rewrites the chain.
	if code, body := call(t, srv, "PATCH", "/connectors/snk/config", `{"errors.retries":"3"}`); code != 200 || !strings.Contains(body, `"transforms":"mask_fields,filter,mask_fields_2"`) {
		t.Fatalf("PATCH retries = %d %s", code, body)
	}
	if got, _ := w.Spec("snk"); got.Errors.Retries != 3 || len(got.Transforms) != 3 {
		t.Fatalf("after PATCH: %+v", got)
	}
	if code, body := call(t, srv, "PATCH", "/connectors/snk/config", `{"transforms.mask_fields.hash.key":"********"}`); code != 200 {
		t.Fatalf("PATCH with the masked secret = %d %s", code, body)
	}
	if got, _ := w.Spec("snk"); got.Transforms[0].Config["hash.key"] != hashKey {
		t.Fatalf("PATCH with the masked value replaced the secret: %+v", got.Transforms[0])
	}
	code, body = call(t, srv, "PATCH", "/connectors/snk/config", `{"transforms":"filter"}`)
	if code != 200 || strings.Contains(body, "transforms.mask_fields") {
		t.Fatalf("PATCH transforms = %d %s", code, body)
	}
	if got, _ := w.Spec("snk"); len(got.Transforms) != 1 || got.Transforms[0].Type != "filter" || got.Transforms[0].Config["equals"] != "d" {
		t.Fatalf("after PATCH transforms: %+v", got.Transforms)
	}
	if strings.Contains(logs.String(), hashKey) {
		t.Fatal("the transform's secret shows in the log")
	}
}

func TestREST_Config_TransformsOnCreate(t *testing.T) {
	srv, w, _ := newTestServer(t)
	cfg := map[string]string{"connector.class": "null", "topics": "t", "transforms": "pii",
		"transforms.pii.type": "mask_fields", "transforms.pii.fields": "email"}
	b, _ := json.Marshal(map[string]any{"name": "snk", "config": cfg})
	// The alias given is kept: the config reads back as it was written.
	if code, body := call(t, srv, "POST", "/connectors", string(b)); code != 201 || !strings.Contains(body, `"transforms":"pii"`) ||
		!strings.Contains(body, `"transforms.pii.fields":"email"`) || !strings.Contains(body, `"transforms.pii.type":"mask_fields"`) {
		t.Fatalf("create = %d %s", code, body)
	}
	if got, _ := w.Spec("snk"); len(got.Transforms) != 1 || got.Transforms[0].Name != "pii" || got.Transforms[0].Config["fields"] != "email" {
		t.Fatalf("spec transforms: %+v", got.Transforms)
	}
	for _, c := range []struct{ name, patch, want string }{
		{"unknown type", `{"transforms.x.type":"nope","transforms":"x"}`, "nope"},
		{"bad setting", `{"transforms":"x","transforms.x.type":"mask_fields","transforms.x.bogus":"1"}`, "bogus"},
		{"no type", `{"transforms":"x"}`, "transforms.x.type"},
		{"not listed", `{"transforms.y.type":"filter"}`, "not listed"},
	} {
		code, body := call(t, srv, "PATCH", "/connectors/snk/config", c.patch)
		if code != 400 || !strings.Contains(body, c.want) || !strings.Contains(body, `"error_code":400`) {
			t.Errorf("%s: PATCH %s = %d %s, want 400 naming %q", c.name, c.patch, code, body, c.want)
		}
	}
}

func TestREST_Config_ValidatesAsThePipelineLoader(t *testing.T) {
	srv, w, logs := newTestServer(t)
	startMaskedSink(t, w)
	for _, c := range []struct{ patch, want string }{
		{`{"errors.tolerance":"some"}`, "none, all"},
		{`{"tasks.max":"3"}`, "one task per connector"},
		{`{"tasks.max":"zero"}`, "positive integer"},
		{`{"errors.retries":"x"}`, "errors.retries"},
		{`{"errors.tolerance":"none"}`, "only used with errors.tolerance=all"},
	} {
		code, body := call(t, srv, "PATCH", "/connectors/snk/config", c.patch)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("PATCH %s = %d %s, want 400 with %q", c.patch, code, body, c.want)
		}
	}
	code, body := call(t, srv, "PATCH", "/connectors/snk/config", `{"tasks.max":"1","errors.retries":"5",
		"key.converter":"org.apache.kafka.connect.json.JsonConverter","value.converter.schemas.enable":"false","header.converter":"x"}`)
	if code != 200 {
		t.Fatalf("PATCH tasks.max=1 and converters = %d %s", code, body)
	}
	var info struct{ Config map[string]string }
	_ = json.Unmarshal([]byte(body), &info)
	if info.Config["errors.retries"] != "5" || info.Config["errors.deadletterqueue.topic.name"] != "dlq.snk" {
		t.Errorf("errors.* not shown: %v", info.Config)
	}
	for k := range maps.Keys(info.Config) {
		if strings.Contains(k, "converter") {
			t.Errorf("converter key %s reached the connector config", k)
		}
	}
	if !strings.Contains(logs.String(), "does not use converters") || !strings.Contains(logs.String(), "value.converter.schemas.enable") {
		t.Errorf("no warning about the ignored converter keys:\n%s", logs.String())
	}
}

func TestREST_UnknownRoutesAnswerJSON(t *testing.T) {
	srv, _, _ := newTestServer(t)
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/nope", 404},
		{"GET", "/connectors/a/b/c", 404},
		{"DELETE", "/connector-plugins", 405},
		{"POST", "/connectors/x/status", 405},
	} {
		code, body := call(t, srv, c.method, c.path, "")
		var e apiError
		if code != c.code || json.Unmarshal([]byte(body), &e) != nil || e.ErrorCode != c.code || e.Message == "" {
			t.Errorf("%s %s = %d %q, want %d with a JSON error body", c.method, c.path, code, body, c.code)
		}
	}
}

func TestREST_RootReportsTheCommit(t *testing.T) {
	_, w, logs := newTestServer(t)
	s := New(w, nil, "v1.2.3", slog.New(slog.NewTextHandler(logs, nil)))
	s.SetCommit("abc1234")
	srv := httptest.NewServer(s)
	defer srv.Close()
	code, body := call(t, srv, "GET", "/", "")
	if code != 200 || !strings.Contains(body, `"version":"v1.2.3"`) || !strings.Contains(body, `"commit":"abc1234"`) {
		t.Fatalf("GET / = %d %s", code, body)
	}
	// Without the embedded log (the kafka backend) the log endpoints say
	// what to use instead.
	code, body = call(t, srv, "GET", "/topics", "")
	if code != 404 || !strings.Contains(body, "embedded backend") || !strings.Contains(body, "kcat -b") {
		t.Fatalf("GET /topics without a log = %d %s", code, body)
	}
}

// A transform setting filled from the environment is a secret: a pipeline
// whose mask transform takes its replacement from ${SALT} never shows it
// over REST, not in GET …/config, nor after a PUT of that answer or a
// PATCH (which keep the secret), and the transform still has the value.
func TestREST_Config_TransformSecretsFromTheEnvironment(t *testing.T) {
	const salt = "salt-from-the-environment"
	srv, w, logs := newTestServer(t)
	catalog := pipelines.Specs{pipelines.KindSink: {"null": connect.Spec{}}, pipelines.KindTransform: {}}
	reg := transform.Builtin()
	for _, name := range reg.Names() {
		spec, _ := reg.Spec(name)
		catalog[pipelines.KindTransform][name] = spec
	}
	file := `version: 1
name: p
topics:
  - {name: t}
  - {name: u}
sinks:
  - name: snk
    connector: "null"
    topics: [t]
    transforms:
      - {type: mask_fields, fields: [email], replacement: "${SALT}"}
      - {type: mask_fields, fields: [phone], replacement: "x"}
`
	env := func(name string) (string, bool) { return salt, name == "SALT" }
	p, err := pipelines.Parse("p.yaml", []byte(file), pipelines.Options{Catalog: catalog, LookupEnv: env})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.StartPipeline(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		code, body := call(t, srv, "GET", "/connectors/snk/config", "")
		if code != 200 || strings.Contains(body, salt) {
			t.Fatalf("%s: GET config = %d %s, want the salt masked", step, code, body)
		}
		var cfg map[string]string
		if err := json.Unmarshal([]byte(body), &cfg); err != nil {
			t.Fatal(err)
		}
		if cfg["transforms.mask_fields.replacement"] != connect.Masked || cfg["transforms.mask_fields_2.replacement"] != "x" {
			t.Fatalf("%s: config %v, want only the replacement from the environment masked", step, cfg)
		}
		spec, _ := w.Spec("snk")
		if spec.Transforms[0].Config["replacement"] != salt {
			t.Fatalf("%s: the transform's replacement is %q, want the salt", step, spec.Transforms[0].Config["replacement"])
		}
	}
	check("pipeline")
	_, body := call(t, srv, "GET", "/connectors/snk/config", "")
	if code, put := call(t, srv, "PUT", "/connectors/snk/config", body); code != 200 || strings.Contains(put, salt) {
		t.Fatalf("PUT config = %d %s", code, put)
	}
	check("after PUT")
	if code, patched := call(t, srv, "PATCH", "/connectors/snk/config", `{"topics":"t,u"}`); code != 200 || strings.Contains(patched, salt) {
		t.Fatalf("PATCH config = %d %s", code, patched)
	}
	check("after PATCH")
	if code, info := call(t, srv, "GET", "/connectors/snk", ""); code != 200 || strings.Contains(info, salt) {
		t.Fatalf("GET connector = %d %s", code, info)
	}
	if strings.Contains(logs.String(), salt) {
		t.Fatal("the salt shows in the log")
	}
}

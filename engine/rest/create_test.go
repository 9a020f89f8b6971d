package rest

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
)

// Kafka Connect refuses a PUT …/config whose "name" differs from the URL's:
// 400 "Connector name configuration (b) doesn't match connector name in
// the URL (a)". Accepting it silently leaves the caller believing they
// configured connector b. A config naming the URL's connector, or none,
// is fine.
func TestPutConfig_NameMustMatchURL(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "PUT", "/connectors/a/config", `{"connector.class":"idle","name":"b","topic":"t"}`)
	if code != 400 || !strings.Contains(body, "Connector name configuration (b) doesn't match connector name in the URL (a)") {
		t.Errorf("PUT /connectors/a/config with name=b: %d %s; want 400 (Kafka Connect: name doesn't match the URL)", code, body)
	}
	if code, body := call(t, srv, "GET", "/connectors/b", ""); code != 404 {
		t.Errorf("GET /connectors/b after the refused PUT: %d %s; want 404", code, body)
	}
	for _, cfg := range []string{`{"connector.class":"idle","name":"a","topic":"t"}`, `{"connector.class":"idle","topic":"t"}`} {
		if code, body := call(t, srv, "PUT", "/connectors/a/config", cfg); code != 201 && code != 200 {
			t.Errorf("PUT /connectors/a/config %s: %d %s; want 201 or 200", cfg, code, body)
		}
	}
}

// POST /connectors with a body name and a different config "name": Kafka
// Connect answers 400 (checkAndPutConnectorConfigName).
func TestCreateConnector_NameMustMatchConfig(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","config":{"connector.class":"idle","name":"b","topic":"t"}}`)
	if code != 400 || !strings.Contains(body, "Connector name configuration (b) doesn't match connector name") {
		t.Errorf("POST name=a config.name=b: %d %s; want 400", code, body)
	}
	for _, name := range []string{"a", "b"} {
		if code, body := call(t, srv, "GET", "/connectors/"+name, ""); code != 404 {
			t.Errorf("GET /connectors/%s after the refused POST: %d %s; want 404", name, code, body)
		}
	}
}

// Kafka Connect's Jackson reads config values that are JSON numbers or
// booleans as strings ("tasks.max": 1 is common in copied examples): so
// do POST, PUT, PATCH and validate. An object or an array is a 400 naming
// the key.
func TestCreateConnector_NumberAndBooleanConfigValues(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","initial_state":"STOPPED","config":{"connector.class":"idle","tasks.max":1,"topic":"t"}}`)
	if code != 201 {
		t.Errorf(`POST with "tasks.max": 1: %d %s; want 201 (Kafka Connect: values coerced to strings)`, code, body)
	}
	code, body = call(t, srv, "PUT", "/connectors/a/config", `{"connector.class":"idle","tasks.max":1,"errors.log.enable":true,"topic":"t"}`)
	if code != 200 {
		t.Errorf(`PUT with "errors.log.enable": true: %d %s; want 200`, code, body)
	}
	code, body = call(t, srv, "PATCH", "/connectors/a/config", `{"producer.override.linger.ms":5}`)
	if code != 200 || !strings.Contains(body, `"producer.override.linger.ms":"5"`) {
		t.Errorf(`PATCH with "producer.override.linger.ms": 5: %d %s; want 200 with "5"`, code, body)
	}
	code, body = call(t, srv, "PUT", "/connector-plugins/idle/config/validate", `{"connector.class":"idle","tasks.max":2,"topic":"t"}`)
	if code != 200 || !strings.Contains(body, `"value":"2"`) {
		t.Errorf(`validate with "tasks.max": 2: %d %s; want 200 with the value "2"`, code, body)
	}
	for _, c := range []struct{ body, want string }{
		{`{"name":"b","config":{"connector.class":"idle","topic":{"x":1}}}`, `config \"topic\" is a JSON object`},
		{`{"name":"b","config":{"connector.class":"idle","topic":["t","u"]}}`, `config \"topic\" is a JSON array`},
	} {
		code, body := call(t, srv, "POST", "/connectors", c.body)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("POST %s: %d %s; want 400 saying %s", c.body, code, body, c.want)
		}
	}
}

// Kafka Connect reads initial_state case-insensitively
// (InitialState.forValue: valueOf(value.toUpperCase(Locale.ROOT))):
// "paused" creates a paused connector.
func TestCreateConnector_InitialStateCaseInsensitive(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"a","initial_state":"paused","config":{"connector.class":"idle","topic":"t"}}`)
	if code != 201 {
		t.Fatalf(`POST initial_state "paused": %d %s; want 201 (Kafka Connect upper-cases it)`, code, body)
	}
	if _, st := call(t, srv, "GET", "/connectors/a/status", ""); !strings.Contains(st, `"state":"PAUSED"`) {
		t.Errorf("status after initial_state paused: %s; want PAUSED", st)
	}
}

// Kafka Connect trims the name of POST /connectors ("String name =
// createRequest.name().trim()").
func TestCreateConnector_NameTrimmed(t *testing.T) {
	srv, _, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":" a ","initial_state":"STOPPED","config":{"connector.class":"idle","topic":"t"}}`)
	if code != 201 || !strings.Contains(body, `"name":"a"`) {
		t.Errorf(`POST name " a ": %d %s; want 201 for connector "a"`, code, body)
	}
}

// A worker knows its connectors by name alone, as Kafka Connect does: a
// POST /connectors naming a connector that a pipeline file started answers
// 409 "Connector NAME already exists", whatever its kind, and leaves the
// pipeline's connector as it was; a sink created over REST may not join a
// pipeline sink's group. A PUT …/config of such a name is Kafka Connect's
// update of that connector: it stays in its pipeline (and keeps the
// pipeline's offsets).
func TestCreateConnector_NameOfAPipelineConnector(t *testing.T) {
	srv, w, _ := newTestServer(t)
	for _, spec := range []engine.ConnectorSpec{
		{Pipeline: "alpha", Name: "gen", Kind: connect.KindSource, Connector: "idle", Topic: "t"},
		{Pipeline: "alpha", Name: "out", Kind: connect.KindSink, Connector: "null", Topics: []string{"t"}},
	} {
		if err := w.Start(t.Context(), spec, engine.StateRunning); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ name, body string }{
		{"gen", `{"name":"gen","config":{"connector.class":"idle","topic":"t2"}}`},
		{"out", `{"name":"out","config":{"connector.class":"idle","topic":"t2"}}`},
		{"out", `{"name":"out","initial_state":"STOPPED","config":{"connector.class":"null","topics":"t2"}}`},
	} {
		code, body := call(t, srv, "POST", "/connectors", tt.body)
		if want := `{"error_code":409,"message":"Connector ` + tt.name + ` already exists"}`; code != 409 || strings.TrimSpace(body) != want {
			t.Errorf("POST %s: %d %s; want 409 %s", tt.body, code, body, want)
		}
	}
	code, body := call(t, srv, "POST", "/connectors", `{"name":"copy","config":{"connector.class":"null","topics":"t2","group":"out"}}`)
	if code != 400 || !strings.Contains(body, `group: consumer group \"out\" is already used by sink out`) {
		t.Errorf("POST a sink in the group of the pipeline's sink out: %d %s; want 400", code, body)
	}
	for name, want := range map[string]engine.ConnectorSpec{
		"gen": {Pipeline: "alpha", Kind: connect.KindSource, Topic: "t"},
		"out": {Pipeline: "alpha", Kind: connect.KindSink, Group: "out"},
	} {
		spec, err := w.Spec(name)
		if err != nil || spec.Pipeline != want.Pipeline || spec.Kind != want.Kind || spec.Topic != want.Topic || spec.Group != want.Group {
			t.Errorf("%s after the refused requests: %+v %v; want pipeline %s, kind %s, topic %q, group %q", name, spec, err, want.Pipeline, want.Kind, want.Topic, want.Group)
		}
		if st, err := w.Status(name); err != nil || st.State != engine.StateRunning {
			t.Errorf("%s after the refused requests: %+v %v; want RUNNING", name, st, err)
		}
	}

	code, body = call(t, srv, "PUT", "/connectors/gen/config", `{"connector.class":"idle","topic":"t2"}`)
	if code != 200 {
		t.Errorf("PUT /connectors/gen/config: %d %s; want 200 (an update)", code, body)
	}
	if spec, err := w.Spec("gen"); err != nil || spec.Pipeline != "alpha" || spec.Topic != "t2" {
		t.Errorf("gen after the PUT: %+v %v; want pipeline alpha, topic t2", spec, err)
	}
}

package rest

import (
	"strings"
	"testing"
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

package rest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/connect"
	"github.com/tributary-io/tributary/engine"
)

// TestREST_Config_LingerRoundTrip maps Kafka Connect's
// producer.override.linger.ms to a source's linger, both ways: a
// connector created with it has the linger, GET shows it (also for a
// pipeline file's linger), PUT of GET's answer keeps it, and a bad value
// is a 400 naming the key.
func TestREST_Config_LingerRoundTrip(t *testing.T) {
	srv, w, _ := newTestServer(t)
	code, body := call(t, srv, "POST", "/connectors", `{"name":"src","config":{"connector.class":"idle","topic":"t","producer.override.linger.ms":"5"}}`)
	if code != 201 {
		t.Fatalf("POST = %d %s", code, body)
	}
	if spec, _ := w.Spec("src"); spec.Linger != 5*time.Millisecond {
		t.Fatalf("linger after POST: %v, want 5ms", spec.Linger)
	}
	code, body = call(t, srv, "GET", "/connectors/src/config", "")
	var cfg map[string]string
	if err := json.Unmarshal([]byte(body), &cfg); code != 200 || err != nil {
		t.Fatalf("GET config = %d %s", code, body)
	}
	if got := cfg["producer.override.linger.ms"]; got != "5" {
		t.Errorf("GET config shows producer.override.linger.ms=%q, want 5: %s", got, body)
	}
	if code, put := call(t, srv, "PUT", "/connectors/src/config", body); code != 200 {
		t.Fatalf("PUT of GET's answer = %d %s", code, put)
	}
	if spec, _ := w.Spec("src"); spec.Linger != 5*time.Millisecond {
		t.Errorf("linger after PUT of GET's answer: %v, want 5ms", spec.Linger)
	}
	if _, again := call(t, srv, "GET", "/connectors/src/config", ""); again != body {
		t.Errorf("GET after PUT differs:\n%s\n%s", again, body)
	}
	// Leaving it out (as PUT replaces the config) turns lingering off.
	if code, put := call(t, srv, "PUT", "/connectors/src/config", `{"connector.class":"idle","topic":"t"}`); code != 200 {
		t.Fatalf("PUT without linger = %d %s", code, put)
	}
	if spec, _ := w.Spec("src"); spec.Linger != 0 {
		t.Errorf("linger after PUT without it: %v, want 0", spec.Linger)
	}
	if _, body := call(t, srv, "GET", "/connectors/src/config", ""); strings.Contains(body, "linger") {
		t.Errorf("GET config shows a linger of 0: %s", body)
	}

	// A pipeline file's linger shows too, in ms.
	if err := w.Start(t.Context(), engine.ConnectorSpec{Pipeline: "p", Name: "file", Kind: connect.KindSource, Connector: "idle", Topic: "t",
		Config: map[string]string{}, Linger: 20 * time.Millisecond}, engine.StateRunning); err != nil {
		t.Fatal(err)
	}
	if _, body := call(t, srv, "GET", "/connectors/file/config", ""); !strings.Contains(body, `"producer.override.linger.ms":"20"`) {
		t.Errorf("GET config of a pipeline source with a 20ms linger: %s", body)
	}

	for _, v := range []string{"-1", "5ms", "x"} {
		code, body := call(t, srv, "PUT", "/connectors/bad/config", `{"connector.class":"idle","topic":"t","producer.override.linger.ms":"`+v+`"}`)
		if code != 400 || !strings.Contains(body, "Invalid value "+v+" for configuration producer.override.linger.ms") {
			t.Errorf("PUT with producer.override.linger.ms=%s = %d %s, want 400 naming the key", v, code, body)
		}
	}
	// Other producer overrides are still the connector's, so unknown.
	code, body = call(t, srv, "PUT", "/connectors/bad/config", `{"connector.class":"idle","topic":"t","producer.override.batch.size":"100"}`)
	if code != 400 || !strings.Contains(body, "producer.override.batch.size: unknown parameter") {
		t.Errorf("PUT with producer.override.batch.size = %d %s, want 400: unknown parameter", code, body)
	}
}
